"""Build hook: the wheel carries the demo data as package data, from the one copy in the repository.

``eval_sets/`` and ``graph_configs/`` stay where they are (a clone reads them there); a
wheel build copies them into ``evalkit/_bundled/`` so that ``evalkit demo`` works from an
installed wheel outside any clone (``evalkit/bundled.py`` finds either). Everything else
is in pyproject.toml. An editable install (``pip install -e .``, setup.sh) copies nothing.
"""
from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
BUNDLED = ("eval_sets", "graph_configs")  # keep in step with evalkit/bundled.py
SKIP_SUFFIXES = (".py", ".pyc")  # eval_sets/tools/ holds the script that made the demo slices: not data


def bundled_files() -> list[Path]:
    """The data files a wheel carries, relative to the repository."""
    return sorted(p.relative_to(HERE) for name in BUNDLED for p in (HERE / name).rglob("*")
                  if p.is_file() and p.suffix not in SKIP_SUFFIXES and "__pycache__" not in p.parts)


class BuildWithDemoData(build_py):
    """``build_py`` plus a copy of the demo data into ``<build>/evalkit/_bundled/``."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for rel in bundled_files():
            target = Path(self.build_lib) / "evalkit" / "_bundled" / rel
            self.mkpath(str(target.parent))
            self.copy_file(str(HERE / rel), str(target))


setup(cmdclass={"build_py": BuildWithDemoData})
