"""Root test configuration: a derandomized hypothesis profile so CI runs are reproducible."""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("ci")
