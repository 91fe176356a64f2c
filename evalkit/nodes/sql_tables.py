"""The ``sql`` node's database: CSV / parquet tables in an in-memory SQLite, queried read-only.

:func:`load_table` reads one table named in a config (CSV with a header row, UTF-8; parquet when
pyarrow is installed), infers each column's type (INTEGER, REAL or TEXT: a column is numeric when
every non-empty cell parses as a number; an empty cell is NULL) and checks what the node relies on:
a unique, non-empty header; every row as wide as the header; the ``key`` column present with unique,
non-empty values (a row's stable id is ``<table>:<key value>``). A problem raises
:class:`TableError` naming the file, the line and the column, and what to do.

:class:`ReadOnlyDB` holds the tables and runs queries under three locks, so that nothing a question
or a model writes can change or leak the data or hang a run:

1. :func:`check_select`: one statement, and it starts with ``SELECT`` (anything else, several
   statements, or an empty text is refused before SQLite sees it);
2. an SQLite authorizer that allows only reading columns, ``SELECT`` and functions, and denies
   the non-deterministic or unsafe ones (``random``, ``randomblob``, ``load_extension``):
   ``INSERT``, ``DROP``, ``ATTACH``, ``PRAGMA``... fail even inside a ``SELECT``;
3. ``PRAGMA query_only``, and a progress handler that stops a query after ``timeout_s``.

At most ``limit`` rows are fetched (``truncated`` says more were there).
"""
from __future__ import annotations

import csv
import re
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.errors import LocatedError, did_you_mean

DENIED_FUNCTIONS = frozenset({"random", "randomblob", "load_extension", "zeroblob"})
ALLOWED_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION})
PROGRESS_STEPS = 1000  # SQLite VM instructions between two deadline checks


class TableError(LocatedError):
    """A table file the ``sql`` node cannot use: names the file, the line and the column."""


class UnsafeSQL(ValueError):
    """A query refused before or while it ran: not one SELECT, a denied action, past the deadline."""

    def __init__(self, message: str, kind: str = "unsafe_sql"):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Table:
    """One loaded table: its name, columns (in file order) with their SQLite types, and rows."""

    name: str
    path: str
    columns: tuple[str, ...]
    types: dict[str, str]
    rows: tuple[tuple[Any, ...], ...]

    def values(self, column: str) -> list[Any]:
        i = self.columns.index(column)
        return [r[i] for r in self.rows]


@dataclass(frozen=True)
class QueryResult:
    """What a query returned: column names, rows (at most the limit), whether more were there."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool = False
    elapsed_ms: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)


def _number(text: str) -> int | float | None:
    """``text`` as an int or float (thousands separators allowed), else None."""
    t = text.strip().replace(",", "")
    if re.fullmatch(r"[+-]?\d+", t):
        return int(t)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?", t):
        return float(t)
    return None


def _typed(header: list[str], cells: list[list[str]]) -> tuple[dict[str, str], list[tuple[Any, ...]]]:
    """Column types (INTEGER / REAL / TEXT) and the rows with typed values ('' -> None)."""
    types: dict[str, str] = {}
    for j, col in enumerate(header):
        present = [row[j] for row in cells if row[j].strip()]
        nums = [_number(v) for v in present]
        if present and all(n is not None for n in nums):
            types[col] = "INTEGER" if all(isinstance(n, int) for n in nums) else "REAL"
        else:
            types[col] = "TEXT"
    rows = []
    for row in cells:
        typed: list[Any] = []
        for col, v in zip(header, row):
            if not v.strip():
                typed.append(None)
            elif types[col] == "TEXT":
                typed.append(v.strip())
            else:
                n = _number(v)
                typed.append(float(n) if types[col] == "REAL" and n is not None else n)
        rows.append(tuple(typed))
    return types, rows


def _read_csv(path: Path) -> tuple[list[str], list[list[str]], list[int]]:
    """Header, rows of strings and each row's line number (1-based; line 1 is the header)."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header is None:
                raise TableError(str(path), "", "the file is empty; write a header row of column names, then rows")
            rows: list[list[str]] = []
            lines: list[int] = []
            for row in reader:
                if not any(c.strip() for c in row):
                    continue
                if len(row) != len(header):
                    raise TableError(str(path), f"row {len(rows) + 1}",
                                     f"{len(row)} cells but the header has {len(header)} columns; quote cells "
                                     "holding commas (\"a, b\")", line=reader.line_num)
                rows.append(row)
                lines.append(reader.line_num)
    except UnicodeDecodeError as exc:
        raise TableError(str(path), "", f"not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8") from None
    except csv.Error as exc:
        raise TableError(str(path), "", f"not a readable CSV file ({exc})") from None
    return [h.strip() for h in header], rows, lines


def _read_parquet(path: Path) -> tuple[list[str], list[list[str]], list[int]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise TableError(str(path), "", "reading parquet needs pyarrow: pip install pyarrow, or save the table "
                         "as CSV") from None
    table = pq.read_table(path)
    header = [str(c) for c in table.column_names]
    cols = [table.column(c).to_pylist() for c in header]
    rows = [["" if v is None else str(v) for v in r] for r in zip(*cols)]
    return header, rows, [i + 2 for i in range(len(rows))]  # "line" = row number + 1, as in a CSV


READERS = {".csv": _read_csv, ".parquet": _read_parquet, ".pq": _read_parquet}


def load_table(name: str, path: Path, key: str) -> Table:
    """Read and check one table file (see the module docstring); :class:`TableError` when it is unusable."""
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise TableError(str(path), "", f"unknown table format '{path.suffix}'; use one of "
                         f"{', '.join(sorted(READERS))}")
    if not path.is_file():
        raise TableError(str(path), "", "no such file; give the table's path relative to the config's folder")
    header, cells, lines = reader(path)
    for j, col in enumerate(header):
        if not col:
            raise TableError(str(path), f"column {j + 1}", "empty column name in the header row", line=1)
        if header.index(col) != j:
            raise TableError(str(path), col, "this column name appears twice in the header row", line=1)
    if key not in header:
        raise TableError(str(path), key, f"the key column is not in the header{did_you_mean(key, header)}", line=1)
    k = header.index(key)
    seen: dict[str, int] = {}
    for row, line in zip(cells, lines):
        value = row[k].strip()
        if not value:
            raise TableError(str(path), key, "empty key: every row needs its own key value (its stable id)",
                             line=line)
        if value in seen:
            raise TableError(str(path), key, f"key '{value}' repeats line {seen[value]}; keys must be unique",
                             line=line)
        seen[value] = line
    types, rows = _typed(header, cells)
    return Table(name=name, path=str(path), columns=tuple(header), types=types, rows=tuple(rows))


def quote_identifier(name: str) -> str:
    """``name`` as an SQLite identifier ("double quotes", inner quotes doubled): never a value."""
    return '"' + name.replace('"', '""') + '"'


_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)


def check_select(sql: str) -> str:
    """``sql`` stripped of one trailing ``;`` when it is a single SELECT; :class:`UnsafeSQL` otherwise."""
    text = sql.strip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    if not text:
        raise UnsafeSQL("empty query", kind="bad_sql")
    if not re.match(r"(?is)select\b", text):
        first = text.split(None, 1)[0][:20]
        raise UnsafeSQL(f"only a single SELECT may run; the query starts with '{first}'")
    if not sqlite3.complete_statement(text + ";") or _splits(text):
        raise UnsafeSQL("only a single SELECT may run; the query holds several statements or an unclosed quote")
    return text


def _splits(text: str) -> bool:
    """Whether ``text`` holds a ``;`` outside quotes and comments (a second statement)."""
    body = _COMMENT.sub(" ", text)
    body = re.sub(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\]", "''", body)
    return ";" in body


class ReadOnlyDB:
    """The loaded tables in one in-memory SQLite, queried read-only (see the module docstring)."""

    def __init__(self, tables: Sequence[Table]):
        self.tables = {t.name: t for t in tables}
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        for t in tables:
            cols = ", ".join(f"{quote_identifier(c)} {t.types[c]}" for c in t.columns)
            self._conn.execute(f"CREATE TABLE {quote_identifier(t.name)} ({cols})")
            marks = ", ".join("?" for _ in t.columns)
            self._conn.executemany(f"INSERT INTO {quote_identifier(t.name)} VALUES ({marks})", t.rows)
        self._conn.commit()
        self._conn.execute("PRAGMA query_only = ON")
        self._conn.set_authorizer(self._authorize)
        self._deadline = 0.0

    @staticmethod
    def _authorize(action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None) -> int:
        if action not in ALLOWED_ACTIONS:
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in DENIED_FUNCTIONS:
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    def _progress(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0

    def query(self, sql: str, params: Sequence[Any] = (), limit: int = 20, timeout_s: float = 2.0) -> QueryResult:
        """Rows of one read-only SELECT with ``?`` parameters; :class:`UnsafeSQL` when refused or too slow."""
        text = check_select(sql)
        t0 = time.monotonic()
        with self._lock:
            self._deadline = t0 + timeout_s
            self._conn.set_progress_handler(self._progress, PROGRESS_STEPS)
            try:
                cur = self._conn.execute(text, tuple(params))
                rows = cur.fetchmany(limit + 1)
                columns = tuple(d[0] for d in cur.description or ())
                cur.close()
            except sqlite3.DatabaseError as exc:
                msg = str(exc)
                if "interrupted" in msg:
                    raise UnsafeSQL(f"the query ran past its {timeout_s:g} s limit", kind="timeout") from None
                kind = "unsafe_sql" if "not authorized" in msg or "readonly" in msg else "bad_sql"
                raise UnsafeSQL(f"SQLite refused the query: {msg}", kind=kind) from None
            except (sqlite3.ProgrammingError, sqlite3.Warning) as exc:
                raise UnsafeSQL(f"only a single SELECT may run: {exc}") from None
            finally:
                self._conn.set_progress_handler(None, 0)
        return QueryResult(columns=columns, rows=tuple(tuple(r) for r in rows[:limit]), truncated=len(rows) > limit,
                           elapsed_ms=round((time.monotonic() - t0) * 1000.0, 3))
