"""``--skip-invalid``: rows an import dropped, and the report that lists them.

Without the flag an import stops at the first bad row (a gold id the corpus does not
hold, a malformed field), naming file, line and field, and writes nothing. With it, each
such row is dropped and listed in ``OUT/NAME.skipped.tsv`` beside the eval set, one row
per problem::

    file<TAB>line<TAB>field<TAB>value<TAB>problem
    qa.jsonl<TAB>417<TAB>relevant_doc_ids<TAB>What<TAB>gold id not in the corpus corpus.jsonl

It is written by Python's ``csv`` module (tab-separated, a cell holding a tab, a quote or
a newline quoted), so ``csv``, pandas (``sep="\\t"``) and spreadsheets read it back; a
string value is written as is, any other value as JSON, cut to 200 characters. Nothing is dropped silently: the import's summary says how many rows were
skipped and where the report is, and an import with no row left fails.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.errors import LocatedError
from evalkit.fileio import write_atomic

SUFFIX = ".skipped.tsv"
HEADER = ("file", "line", "field", "value", "problem")
MAX_VALUE = 200


@dataclass
class Skipped:
    """One dropped row: where it was, which field, the offending value, what is wrong."""

    file: str
    line: int | None
    field: str
    value: Any
    problem: str

    @classmethod
    def from_error(cls, exc: LocatedError, value: Any = None) -> Skipped:
        return cls(exc.file, exc.line, exc.where, value, exc.message)

    def cells(self) -> list[str]:
        value = self.value if isinstance(self.value, str) else json.dumps(value_of(self.value), ensure_ascii=False)
        value = value if len(value) <= MAX_VALUE else value[:MAX_VALUE - 3] + "..."
        return [self.file, "" if self.line is None else str(self.line), self.field, value,
                " ".join(self.problem.split())]


@dataclass
class SkipReport:
    """The rows dropped by one import (``enabled`` False: the import fails on the first instead)."""

    enabled: bool
    rows: list[Skipped] = field(default_factory=list)

    def add(self, skipped: Skipped) -> None:
        self.rows.append(skipped)

    def __len__(self) -> int:
        return len(self.rows)

    def lines_skipped(self) -> set[tuple[str, int | None]]:
        return {(r.file, r.line) for r in self.rows}

    def write(self, set_path: Path) -> Path | None:
        """Write ``NAME.skipped.tsv`` beside ``set_path`` (an old report is removed when nothing was skipped)."""
        path = report_path(set_path)
        if not self.rows:
            path.unlink(missing_ok=True)
            return None
        def rows(fh: Any) -> None:
            writer = csv.writer(fh, delimiter="\t", lineterminator="\n")
            writer.writerow(HEADER)
            writer.writerows(r.cells() for r in self.rows)

        write_atomic(path, rows, hint="choose another --out-dir")
        return path


def report_path(set_path: Path) -> Path:
    """``OUT/NAME.jsonl`` -> ``OUT/NAME.skipped.tsv``."""
    return Path(set_path).with_name(Path(set_path).stem + SUFFIX)


def value_of(value: Any) -> Any:
    """A JSON-ready copy of a cell (numpy arrays and other objects included)."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, dict):
        return {str(k): value_of(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [value_of(v) for v in value]
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)
