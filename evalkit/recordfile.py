"""Reading a ``per_query.jsonl`` back: every line parsed exactly as ``json.loads`` reads it, fast, and a
damaged line refused with its file, line and the fix.

Split from :mod:`evalkit.runstore` (which writes these files and re-exports every name here): the
readers and the error a damaged file raises; the collector pauses they use are :mod:`evalkit.gcpause`'s.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from evalkit.errors import LocatedError
from evalkit.fileio import jsonl_lines
from evalkit.gcpause import gc_paused
from evalkit.records import QueryResult

VIEW_FILE = "per_query.view"
"""What ``compare``, ``gate`` and ``report`` keep of a ``per_query.jsonl``, beside it (:mod:`evalkit.viewfile`)."""


class RecordsFileError(LocatedError):
    """A ``per_query.jsonl`` line that is not a whole record: cut short, edited, or written by two runs at once."""

    exit_code = 7  # `evalkit gate`'s code for records that do not hold one whole record per query


def records_fix(summary: Path | str | None = None) -> str:
    """What to do about a damaged ``per_query.jsonl``: ``--resume`` re-runs the queries whose lines are not whole."""
    return ("the file was cut short or edited (a run killed mid-line, a full disk, or two runs writing at once); "
            f"`evalkit run --resume {summary or 'SUMMARY.json'}` runs those queries again")


_DIGITS = bytes(0x39 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))  # every digit -> "9", the rest " "


def record_parser(data: bytes) -> Callable[[str], Any]:
    """How to read the JSON lines of ``data`` exactly as ``json.loads`` does, as fast as that allows.

    orjson (~2x faster) reads every finite float and every 64-bit integer as ``json`` does, and
    refuses ``NaN``/``Infinity``, lone surrogates and overflowing floats (``json`` then reads them, or
    raises its own message); but it reads an integer beyond 64 bits as a float. Such an integer has
    19 digits or more in a row, so a file that has a run that long anywhere is read by ``json`` alone
    (one scan of the bytes: 0.14 s for 96 MB; tests/run/test_record_parser.py compares the two).
    """
    return json.loads if needs_json(data) else _orjson_or_json


def _orjson_or_json(line: str) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


def read_rows(path: Path, summary: Path | str | None = None, hold: bool = False,
              keep: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
              keep_orjson: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
              data: bytes | None = None) -> list[tuple[int, dict[str, Any]]]:
    """The JSON objects of a ``per_query.jsonl`` with their 1-based line numbers (blank lines skipped).

    ``hold``: the caller keeps them to the end (see :func:`gc_paused`). ``keep``: what to hold of
    each object, applied as its line is parsed (:class:`evalkit.recordview.RecordView`), so
    the whole objects of a file are never held together; ``keep_orjson`` (default ``keep``): what to
    hold of an object orjson parsed, whose values orjson writes back exactly. ``data``: the file's bytes,
    when the caller has read them already.

    Raises:
        RecordsFileError: ``file:line``, what is wrong with that line, and what to do (``summary``
            is the run's summary JSON, named in the fix).
    """
    data = Path(path).read_bytes() if data is None else data
    parse_record = record_parser(data)
    with gc_paused(hold):
        if parse_record is not json.loads:
            try:
                return _rows_of_bytes(data, keep, keep_orjson or keep)
            except NotFast:
                pass  # a line to refuse or that orjson cannot read as json does: read as before, which says why
        return _rows_of_text(path, data, summary, keep, parse_record)


class NotFast(Exception):
    """A line :func:`fast_rows` leaves to :func:`_rows_of_text` (which reads the whole file again)."""


def needs_json(data: bytes) -> bool:
    """Whether ``data`` holds a run of 19 digits or more: then only ``json`` reads its lines exactly
    (see :func:`record_parser`); a line never holds part of a run of another line."""
    return b"9" * 19 in data.translate(_DIGITS)


def _rows_of_bytes(data: bytes, keep: Callable[[dict[str, Any]], dict[str, Any]] | None,
                   keep_orjson: Callable[[dict[str, Any]], dict[str, Any]] | None) -> list[tuple[int, Any]]:
    """:func:`read_rows` of a file without a 19-digit run, read line by line as bytes (:func:`fast_rows`)."""
    return [(lineno, row) for lineno, _, _, row in fast_rows(data, keep, keep_orjson)]


def fast_rows(data: bytes, keep: Callable[[dict[str, Any]], dict[str, Any]] | None,
              keep_orjson: Callable[[dict[str, Any]], dict[str, Any]] | None,
              first_line: int = 1) -> Iterator[tuple[int, int, int, Any]]:
    """Each record line of ``data`` (a file without a 19-digit run) as it is read: its line number (from
    ``first_line``), where it starts and stops in ``data``, and what is kept of it.

    What :func:`_rows_of_text` returns, without decoding the whole file to one string and cutting that again
    (0.6 s of 2.7 s for a 176 MB file), nor copying each line (the copies, freed among the records kept, left
    a 10,000-record file's held records taking ~1.9x their memory): lines are cut at newline bytes, which UTF-8 never holds inside a
    character, so they are numbered as that text's lines are; a line orjson refuses is decoded and read by
    ``json`` (NaN, a lone surrogate); one that is blank only to ``str.strip``, not valid UTF-8, not JSON or
    not a record raises :class:`NotFast`, and the file is read as text, which refuses it as it always did.
    """
    view = memoryview(data)  # lines as slices of it: no copy of each line, which would fragment the heap
    start, lineno = 0, first_line - 1
    while True:
        lineno += 1
        end = data.find(b"\n", start)
        stop = len(data) if end < 0 else end
        line = view[start:stop]
        if stop > start and (data[start] == _OPEN_BRACE or bytes(line).strip()):
            yield lineno, start, stop, _row_of_line(line, keep, keep_orjson)
        if end < 0:
            return
        start = end + 1


_OPEN_BRACE = ord("{")  # what every record's line starts with: no blank test needed for it


def _row_of_line(line: memoryview, keep: Callable[[dict[str, Any]], dict[str, Any]] | None,
                 keep_orjson: Callable[[dict[str, Any]], dict[str, Any]] | None) -> Any:
    """One line's record as :func:`_rows_of_bytes` holds it; :class:`NotFast` for a line it leaves."""
    hold = keep_orjson
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        hold = keep
        try:
            obj = json.loads(bytes(line).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise NotFast from None
    if not isinstance(obj, dict) or not isinstance(obj.get("query_id"), str):
        raise NotFast
    return obj if hold is None else hold(obj)


def _rows_of_text(path: Path, data: bytes, summary: Path | str | None,
                  keep: Callable[[dict[str, Any]], dict[str, Any]] | None,
                  parse_record: Callable[[str], Any]) -> list[tuple[int, Any]]:
    """:func:`read_rows` of ``data`` decoded as one text, cut into lines; every refusal names its line."""
    fix = records_fix(summary)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad_line = data[: exc.start].count(b"\n") + 1
        raise RecordsFileError(str(path), "", f"not valid UTF-8; {fix}", line=bad_line) from None
    rows = []
    for lineno, line in enumerate(jsonl_lines(text), start=1):
        if not line.strip():
            continue
        try:
            obj = parse_record(line)
        except json.JSONDecodeError as exc:
            raise RecordsFileError(str(path), "", f"not a whole JSON record ({exc.msg}, column {exc.colno}); "
                                   f"{fix}", line=lineno) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("query_id"), str):
            raise RecordsFileError(str(path), "", f"not a per-query record (no query_id); {fix}", line=lineno)
        rows.append((lineno, obj if keep is None else keep(obj)))
    return rows


def result_from_row(path: Path, lineno: int, row: dict[str, Any], summary: Path | str | None = None) -> QueryResult:
    """``QueryResult.from_dict(row)``; a record missing a field, or with one of the wrong type, names its line."""
    try:
        return QueryResult.from_dict(row)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RecordsFileError(str(path), "", f"not a per-query record ({type(exc).__name__}: {exc}); "
                               f"{records_fix(summary)}", line=lineno) from None


def read_results(path: Path, hold: bool = False) -> list[QueryResult]:
    """Load a per_query.jsonl file; a torn or invalid line raises :class:`RecordsFileError` naming it.

    ``hold``: the caller keeps the results while it works (inside :func:`evalkit.gcpause.long_lived_frozen`,
    they join its frozen generation, so the collections its work triggers do not walk them), as
    :func:`read_rows`'s. The records are parsed and built into results with the collector off either way.
    """
    with gc_paused(hold):
        return [result_from_row(path, n, row) for n, row in read_rows(path)]
