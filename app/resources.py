"""Where the web app's templates, static files, migrations and translations are, in a checkout and in a
wheel.

A checkout keeps them as top-level folders beside the ``app`` package; a wheel carries them inside it
(see ``setup.py``). One lookup serves both, so no code path depends on an editable install.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PACKAGE_DIR", "resource_dir"]

PACKAGE_DIR = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """The folder ``name`` (templates, static, migrations or locales): inside the package, else beside it."""
    for base in (PACKAGE_DIR, PACKAGE_DIR.parent):
        candidate = base / name
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"the {name}/ folder of Elicitation Studio is neither in {PACKAGE_DIR} nor beside it"
    )
