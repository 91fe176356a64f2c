"""Where the bundled demo data is: the clone's folders, else the copy an installed wheel carries.

A clone (and an editable install) reads ``eval_sets/`` and ``graph_configs/`` at the top
of the repository. A wheel carries the same files as ``evalkit/_bundled/<folder>/``
(copied at build time by setup.py: one copy in git), found with ``importlib.resources``.
"""
from __future__ import annotations

import importlib.resources
import shutil
from pathlib import Path

from evalkit.errors import EvalkitError

FOLDERS = ("eval_sets", "graph_configs")  # keep in step with setup.py's BUNDLED
CLONE = Path(__file__).resolve().parents[1]


def in_clone() -> bool:
    """Whether this evalkit runs from a source checkout (its pyproject.toml and demo folders beside it)."""
    return (CLONE / "pyproject.toml").is_file() and all((CLONE / name).is_dir() for name in FOLDERS)


def bundled_dir(name: str) -> Path:
    """The folder holding the bundled ``name`` (``eval_sets`` or ``graph_configs``)."""
    if name not in FOLDERS:
        raise ValueError(f"no bundled folder '{name}'; valid: {', '.join(FOLDERS)}")
    if in_clone():
        return CLONE / name
    packaged = Path(str(importlib.resources.files("evalkit") / "_bundled" / name))
    if packaged.is_dir():
        return packaged
    raise EvalkitError(f"the bundled {name}/ is missing from this evalkit installation ({packaged}); reinstall "
                       "evalkit-ragraph from a wheel or a clone (docs/install.md)")


def copy_bundled(dest: Path) -> list[Path]:
    """Copy the bundled folders into ``dest`` (refusing to overwrite); return the folders written."""
    out = []
    for name in FOLDERS:
        target = Path(dest) / name
        if target.exists():
            raise EvalkitError(f"{target} already exists; choose another folder, or move it away first")
    for name in FOLDERS:
        target = Path(dest) / name
        shutil.copytree(bundled_dir(name), target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "tools"))
        out.append(target)
    return out
