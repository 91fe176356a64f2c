"""Every relative link of the READMEs and docs/ pages leads somewhere: the file exists and, for a
``page.md#anchor`` link, the page has a heading with that anchor (GitHub's rule: lower case,
punctuation dropped, spaces as hyphens)."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", REPO / "README.zh-CN.md", *sorted((REPO / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    return {anchor(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, flags=re.MULTILINE)}


def test_anchor_rule_by_hand():
    assert anchor("Graph configs (`graph_configs/`)") == "graph-configs-graph_configs"
    assert anchor("The cache: `.evalkit_cache/`, or `$EVALKIT_CACHE`") == "the-cache-evalkit_cache-or-evalkit_cache"
    assert anchor("评估你自己的数据") == "评估你自己的数据"


def test_every_relative_link_resolves():
    broken = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
        for target in _LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto
            path, _, frag = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif frag and dest.suffix == ".md" and frag not in anchors(dest):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)
