"""``python -m app.cli``: the same as the ``elicit`` console script."""

import sys

from . import main

sys.exit(main())
