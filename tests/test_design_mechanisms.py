"""reports/mechanisms.md's design-mechanism table: its counts are the table's, every config it names exists and
every trace field it names is a declared state field (so a rename cannot leave the report pointing nowhere)."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import evalkit.nodes.builtin  # noqa: F401  (node modules declare their own fields, e.g. http_call)
from evalkit.graph.schema import FIELDS

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "reports" / "mechanisms.md"


def _rows() -> list[list[str]]:
    text = REPORT.read_text(encoding="utf-8")
    section = text[text.index("## The four source designs"):]
    return [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()
            if re.match(r"\| \d+ \|", line)]


def test_the_printed_counts_are_the_tables():
    rows = _rows()
    assert [int(r[0]) for r in rows] == list(range(1, len(rows) + 1))
    assert all(r[3] in "YPN" and r[4] in "YPN" for r in rows)
    text = REPORT.read_text(encoding="utf-8")
    m = re.search(r"start (\d+) Y / (\d+) P / (\d+) N of (\d+); now (\d+) Y / (\d+) P / (\d+) N of (\d+)", text)
    assert m, "the counts sentence is missing"
    start, now = Counter(r[3] for r in rows), Counter(r[4] for r in rows)
    assert [int(x) for x in m.groups()] == [start["Y"], start["P"], start["N"], len(rows),
                                            now["Y"], now["P"], now["N"], len(rows)]
    still = {int(n) for n in re.findall(r"#(\d+)", text[text.index("Still N:"):].split("(and")[0])}
    assert still == {int(r[0]) for r in rows if r[4] == "N"}


def test_every_named_config_exists_and_every_trace_field_is_declared():
    for row in _rows():
        for path in re.findall(r"graph_configs/[\w/]+\.yaml", row[5]):
            assert (REPO / path).exists(), (row[0], path)
        for name in re.findall(r"`([a-z_0-9]+)`", row[6]):
            assert name in FIELDS, (row[0], name)
