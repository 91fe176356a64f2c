"""Moved to :mod:`evalkit.importers.dataset` (one importers package); this name is kept for old imports."""
from evalkit.importers.dataset import *  # noqa: F403
from evalkit.importers.dataset import __all__ as __all__  # noqa: F401
