"""A variant's analysis view kept beside its ``per_query.jsonl``, so the next command reads it in a third of the time.

``compare``, ``gate`` and ``report`` each read every record of every variant they analyse and keep
what :data:`evalkit.recordview.ANALYSIS` keeps of it. At 8 variants x 10,000 queries that is
1.5 GB of JSON parsed and cut again by each command: ~20 s of the ~25 s each spent reading
(issue 34). The first command to read a variant writes what it kept to ``per_query.view`` in the
variant's folder; the next ones load that instead of parsing the records again.

The view file answers for one exact ``per_query.jsonl``: its header holds the 128-bit xxh3 digest and
the length of the records file's bytes (0.01 s for 176 MB; SHA-256 took 0.11 s, 1 s a command at
1.5 GB, and guards against nothing more here: whoever can write the view can write the records),
the view's ranking depth and this module's :data:`FORMAT`; the body's own digest guards against a
damaged view. A view
whose header does not match, that is cut short or does not parse is ignored and written again, so a
re-run, ``--resume``, a hand edit or a half-written view never reaches a figure. A moved or copied
results folder keeps its views (nothing in them is a path). msgpack keeps every parsed JSON value
exactly (64-bit integers, floats bit for bit, NaN included, strings, key order); a record it cannot
keep (an integer past 64 bits, a lone surrogate) leaves the file without a view, read each time as before.

The body is msgpack (``ormsgpack``, data only: loading a view runs no code). Each trace event's
:class:`~evalkit.recordview.CompactWrote` is an extension value holding its items; a value it
holds as JSON bytes is stored as the offset and length of those same bytes in the records file where
it finds them there (evalkit writes its records with orjson, so it does), else as the bytes. A view
of a run with 100-document traces takes about 15% of its records file on disk.

A folder that cannot be written gets no view (each command reads the records, as before). Reads of
whole records (:data:`~evalkit.recordview.WHOLE`: ``export``, ``calibrate``, ``label``) neither
read nor write views. ``EVALKIT_NO_VIEWS=1`` turns views off, both ways.
"""
from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path
from typing import Any

import ormsgpack
import xxhash

from evalkit.gcpause import gc_paused
from evalkit.recordfile import VIEW_FILE, read_rows
from evalkit.recordview import CompactWrote, RecordView

__all__ = ["FORMAT", "read_kept_rows", "view_path", "views_on"]

FORMAT = 1
"""The view file's layout; a view of another format is ignored and written again."""
_WROTE, _SPAN = 1, 2  # msgpack extension types: a CompactWrote's items; (offset, length) of bytes in the records file
_SPAN_STRUCT = struct.Struct("<QQ")


def view_path(records: Path) -> Path:
    """Where the view of the records file ``records`` lives."""
    return records.with_name(VIEW_FILE)


def views_on() -> bool:
    """Whether views are read and written (``EVALKIT_NO_VIEWS`` unset, empty or ``0``)."""
    return os.environ.get("EVALKIT_NO_VIEWS", "") in ("", "0")


def read_kept_rows(path: Path, view: RecordView, summary: Path | str | None = None) -> list[tuple[int, dict[str, Any]]]:
    """What ``view`` keeps of each record of the ``per_query.jsonl`` at ``path``, with its line number: from the
    view file when it matches the records byte for byte, else read from the records (and the view written).

    The records are held to the end, as :func:`evalkit.recordfile.read_rows` with ``hold=True``.
    Raises what that raises for a damaged records file (the file, line and fix).
    """
    data = Path(path).read_bytes()
    if view.whole or not views_on():
        return read_rows(path, summary, hold=True, keep=None if view.whole else view.keep,
                         keep_orjson=None if view.whole else view.keep_compact, data=data)
    header = _header(data, view)
    target = view_path(Path(path))
    rows = _load(target, header, data)
    if rows is not None:
        return rows
    rows = read_rows(path, summary, hold=True, keep=view.keep, keep_orjson=view.keep_compact, data=data)
    _save(target, header, rows, data)
    return rows


def _header(data: bytes, view: RecordView) -> dict[str, Any]:
    return {"format": FORMAT, "depth": view.ranking_depth, "records_xxh3": xxhash.xxh3_128_hexdigest(data),
            "records_bytes": len(data)}


def _load(target: Path, header: dict[str, Any], data: bytes) -> list[tuple[int, dict[str, Any]]] | None:
    """The rows of the view at ``target`` if it answers for ``header``; None if it is absent, stale or damaged."""
    try:
        outer = ormsgpack.unpackb(target.read_bytes())
        if type(outer) is not dict or outer.get("header") != header or type(body := outer.get("body")) is not bytes \
                or outer.get("body_xxh3") != xxhash.xxh3_128_hexdigest(body):
            return None
        with gc_paused(hold=True):
            rows = ormsgpack.unpackb(body, ext_hook=_Unpacker(data))
            return [(lineno, _reshared(record)) for lineno, record in rows]
    except (OSError, ValueError, TypeError, KeyError, struct.error, ormsgpack.MsgpackDecodeError):
        return None


class _Unpacker:
    """The extension hook that turns a view's extension values back into what was kept (no closure: a function
    that named itself would make a reference cycle holding the records file's bytes until a collection)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __call__(self, tag: int, payload: bytes) -> Any:
        if tag == _SPAN:
            start, length = _SPAN_STRUCT.unpack(payload)
            if start + length > len(self.data):
                raise ValueError("a span past the end of the records file")
            return self.data[start:start + length]
        if tag == _WROTE:
            return CompactWrote.of_held(ormsgpack.unpackb(payload, ext_hook=self))
        raise ValueError(f"unknown extension type {tag}")


def _reshared(record: dict[str, Any]) -> dict[str, Any]:
    """A record as the view kept it: a ``reranked`` equal to ``retrieved`` is that list (held once)."""
    if type(record.get("reranked")) is list and record["reranked"] == record.get("retrieved"):
        record["reranked"] = record["retrieved"]
    return record


def _save(target: Path, header: dict[str, Any], rows: list[tuple[int, dict[str, Any]]], data: bytes) -> None:
    """Write the view of ``rows`` to ``target`` through a temporary file and a rename; a folder that cannot be
    written, or a record that does not pack, leaves no view (the next command reads the records again)."""
    starts = _line_starts(data)
    packer = _Packer(data)

    def packed(lineno: int, record: dict[str, Any]) -> bytes:
        # the line's bytes, where its held values are looked for (a line number the file does not have: none)
        packer.lo = starts[lineno - 1] if lineno <= len(starts) else len(data)
        packer.hi = starts[lineno] - 1 if lineno < len(starts) else len(data)
        return ormsgpack.packb([lineno, record], default=packer)

    try:
        body = _array_of(packed(n, r) for n, r in rows)
        blob = ormsgpack.packb({"header": header, "body": body, "body_xxh3": xxhash.xxh3_128_hexdigest(body)})
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except (OSError, TypeError, ormsgpack.MsgpackEncodeError):
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
        os.replace(tmp, target)
    except OSError:
        Path(tmp).unlink(missing_ok=True)


class _Packer:
    """The ``default`` hook that packs a :class:`CompactWrote` of the line ``data[lo:hi]``: its items as an extension
    value, each value it holds as JSON bytes as the span of those bytes in the line when they are there."""

    def __init__(self, data: bytes) -> None:
        self.data, self.lo, self.hi = data, 0, 0

    def __call__(self, value: Any) -> Any:
        if type(value) is not CompactWrote:
            raise TypeError(f"cannot keep a {type(value).__name__} in a view")
        items = {k: self._span_or_bytes(v) if type(v) is bytes else v for k, v in value.held_items()}
        return ormsgpack.Ext(_WROTE, ormsgpack.packb(items, default=self))

    def _span_or_bytes(self, value: bytes) -> Any:
        at = self.data.find(value, self.lo, self.hi)
        return value if at < 0 else ormsgpack.Ext(_SPAN, _SPAN_STRUCT.pack(at, len(value)))


def _line_starts(data: bytes) -> list[int]:
    """The offset where each line of ``data`` starts (line n at index n - 1)."""
    starts, at = [0], data.find(b"\n")
    while at >= 0:
        starts.append(at + 1)
        at = data.find(b"\n", at + 1)
    return starts


def _array_of(items: Any) -> bytes:
    """A msgpack array of already packed items."""
    parts = list(items)
    n = len(parts)
    head = bytes([0x90 | n]) if n < 16 else (b"\xdc" + n.to_bytes(2, "big") if n < 1 << 16 else
                                             b"\xdd" + n.to_bytes(4, "big"))
    return head + b"".join(parts)
