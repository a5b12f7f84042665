"""Elicitation Studio web app: FastAPI shell around the `elicitation` core."""

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("elicitation-studio")
except PackageNotFoundError:  # a checkout on sys.path without an install
    __version__ = "0+unknown"
