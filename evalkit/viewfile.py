"""A variant's analysis view kept beside its ``per_query.jsonl``, so the next command reads it in a third of the time.

``compare``, ``gate`` and ``report`` each read every record of every variant they analyse and keep
what :data:`evalkit.recordview.ANALYSIS` keeps of it. At 8 variants x 10,000 queries that is
1.5 GB of JSON parsed and cut again by each command: ~20 s of the ~25 s each spent reading
(issue 34). The first command to read a variant writes what it kept to ``per_query.view`` in the
variant's folder; the next ones load that instead of parsing the records again.

The view file answers for one exact ``per_query.jsonl``: its header holds the 128-bit xxh3 digest and
the length of the records file's bytes (0.01 s for 176 MB; SHA-256 took 0.11 s, 1 s a command at
1.5 GB, and guards against nothing more here: whoever can write the view can write the records),
the view's ranking depth and this module's :data:`FORMAT`; the digest of its own items guards against
a damaged view. A view whose header does not match, that is cut short or does not parse is ignored and
written again, so a re-run, ``--resume``, a hand edit or a half-written view never reaches a figure. A moved or copied
results folder keeps its views (nothing in them is a path). msgpack keeps every parsed JSON value
exactly (64-bit integers, floats bit for bit, NaN included, strings, key order); a record it cannot
keep (an integer past 64 bits, a lone surrogate) leaves the file without a view, read each time as before.

The body is msgpack (``ormsgpack``, data only: loading a view runs no code). Each trace event's
:class:`~evalkit.recordview.CompactWrote` is an extension value holding its items; a value it
holds as JSON bytes is stored as the offset and length of those same bytes in the records file where
it finds them there (evalkit writes its records with orjson, so it does), else as the bytes. The 8
views of a run with 100-document traces took 22% of its records files on disk (333 MB beside 1.53 GB).

``evalkit run``, when it logs to MLflow in the background, writes each variant's view with
:func:`prepare_view` in the time it would only wait for the logger at the end, so even the first command
after a run loads views. Two processes writing the same view write the same bytes, each through a file
of its own renamed over it.

A folder that cannot be written gets no view (each command reads the records, as before). Reads of
whole records (:data:`~evalkit.recordview.WHOLE`: ``export``, ``calibrate``, ``label``) neither
read nor write views. ``EVALKIT_NO_VIEWS=1`` turns views off, both ways.
"""
from __future__ import annotations

import os
import stat
import struct
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import ormsgpack
import xxhash

from evalkit.gcpause import gc_paused
from evalkit.recordfile import VIEW_FILE, NotFast, fast_rows, needs_json, read_rows
from evalkit.recordview import ANALYSIS, CompactWrote, RecordView

__all__ = ["FORMAT", "prepare_view", "read_kept_rows", "view_path", "views_on"]

FORMAT = 2
"""The view file's layout; a view of another format is ignored and written again."""
_MAGIC = b"EKVIEW\r\n"  # what a view file starts with
_WROTE, _SPAN = 1, 2  # msgpack extension types: a CompactWrote's items; (offset, length) of bytes in the records file
_SPAN_STRUCT = struct.Struct("<QQ")
_BLOCK = 1 << 18  # bytes of the records file :func:`prepare_view` reads at a time (8 MB blocks took 46 MB more at
# the peak for a 265 MB file, 256 KB 2 MB, and were no faster)


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
    header = _header(xxhash.xxh3_128_hexdigest(data), len(data), view)
    target = view_path(Path(path))
    rows = _load(target, header, data)
    if rows is not None:
        return rows
    rows = read_rows(path, summary, hold=True, keep=view.keep, keep_orjson=view.keep_compact, data=data)
    starts = [*_line_starts(data), len(data) + 1]
    _write(target, header, (_packed(n, r, data, starts[n - 1], starts[n] - 1) if n < len(starts) else
                            _packed(n, r, data, 0, 0) for n, r in rows), Path(path))
    return rows


def prepare_view(path: Path, view: RecordView = ANALYSIS) -> bool:
    """Write the view of the records at ``path`` now, without holding them (a block of lines at a time), so the
    first ``compare``, ``gate`` or ``report`` loads it: what ``evalkit run`` does with time it would spend
    waiting. Writes exactly the file :func:`read_kept_rows` writes; leaves none (returns False) where that
    would read the records as text (a run of 19 digits, a line orjson cannot read as ``json`` does), and
    never raises: a view is only ever a faster way to read."""
    try:
        if not views_on() or view.whole:
            return False
        with open(path, "rb") as fh:
            digest, size = xxhash.xxh3_128(), 0
            for block in iter(lambda: fh.read(_BLOCK), b""):
                digest.update(block)
                size += len(block)
        header = _header(digest.hexdigest(), size, view)
        target = view_path(Path(path))
        if _trailer(target) == header:
            return True
        read = xxhash.xxh3_128()

        def unchanged() -> dict[str, Any]:  # the records read for the view are the ones the header names
            if read.hexdigest() != header["records_xxh3"]:
                raise NotFast
            return header

        _write(target, unchanged, _streamed(Path(path), view, read), Path(path))
        return _trailer(target) == header
    except Exception:  # noqa: BLE001 - a records file that cannot be read fast, changed or vanished: no view
        return False


def _streamed(path: Path, view: RecordView, read: Any) -> Iterator[bytes]:
    """Each record line of ``path`` packed as :func:`read_kept_rows` packs it, read a block of whole lines at a
    time (``read``: an xxh3 digest, updated with every byte read); raises :class:`NotFast` where that would
    read the file as text."""
    with open(path, "rb") as fh, gc_paused():
        offset, line, rest = 0, 1, b""
        for chunk in iter(lambda: fh.read(_BLOCK), b""):
            read.update(chunk)
            cut = chunk.rfind(b"\n") + 1
            if not cut:  # no line ends in this chunk: it continues the line begun before
                rest += chunk
                continue
            block, rest = rest + chunk[:cut], chunk[cut:]
            yield from _block_rows(block, offset, line, view)
            offset, line = offset + len(block), line + block.count(b"\n")
        if rest:
            yield from _block_rows(rest, offset, line, view)


def _block_rows(block: bytes, offset: int, line: int, view: RecordView) -> Iterator[bytes]:
    if needs_json(block):
        raise NotFast
    for lineno, lo, hi, row in fast_rows(block, view.keep, view.keep_compact, first_line=line):
        yield _packed(lineno, row, block, lo, hi, offset)


def _header(digest: str, size: int, view: RecordView) -> dict[str, Any]:
    return {"format": FORMAT, "depth": view.ranking_depth, "records_xxh3": digest, "records_bytes": size}


def _trailer(target: Path) -> dict[str, Any] | None:
    """The header of the view at ``target`` (None: absent or not a view), read from its end."""
    try:
        with open(target, "rb") as fh:
            fh.seek(-4, os.SEEK_END)
            n = int.from_bytes(fh.read(4), "big")
            fh.seek(-4 - n, os.SEEK_END)
            trailer = ormsgpack.unpackb(fh.read(n))
        return trailer.get("header") if type(trailer) is dict else None
    except (OSError, ValueError, TypeError, ormsgpack.MsgpackDecodeError):
        return None


def _load(target: Path, header: dict[str, Any], data: bytes) -> list[tuple[int, dict[str, Any]]] | None:
    """The rows of the view at ``target`` if it answers for ``header``; None if it is absent, stale or damaged."""
    try:
        blob = memoryview(target.read_bytes())
        n = int.from_bytes(blob[-4:], "big")
        trailer = ormsgpack.unpackb(blob[-4 - n:-4])
        body = blob[len(_MAGIC):-4 - n]  # the array: its head (0xdd, 32-bit count), then the items
        if blob[:len(_MAGIC)] != _MAGIC or type(trailer) is not dict or trailer.get("header") != header \
                or bytes(body[:5]) != b"\xdd" + int(trailer["count"]).to_bytes(4, "big") \
                or trailer.get("items_xxh3") != xxhash.xxh3_128_hexdigest(body[5:]):
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


def _packed(lineno: int, record: dict[str, Any], data: bytes, lo: int, hi: int, offset: int = 0) -> bytes:
    """``[lineno, record]`` packed; a value held as JSON bytes found in ``data[lo:hi]`` (its line) is stored as its
    span there, shifted by ``offset`` (where ``data`` starts in the records file)."""
    return ormsgpack.packb([lineno, record], default=_Packer(data, lo, hi, offset))


def _write(target: Path, header: dict[str, Any] | Callable[[], dict[str, Any]], items: Iterable[bytes],
           records: Path) -> None:
    """Write the view of the packed ``items`` to ``target`` through a temporary file and a rename, item by item:
    the magic, a msgpack array of the items (its 32-bit length filled in at the end), then the trailer (the
    header, asked for once the items are written when it is a function, the count and the items' digest) and
    the trailer's length, readable by whoever may read ``records`` (the records file: its permission bits). A
    folder that cannot be written, or a record that does not pack, leaves no view."""
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(_MAGIC + b"\xdd" + bytes(4))
            digest, count = xxhash.xxh3_128(), 0
            for item in items:
                fh.write(item)
                digest.update(item)
                count += 1
            trailer = ormsgpack.packb({"header": header() if callable(header) else header, "count": count, "items_xxh3": digest.hexdigest()})
            fh.write(trailer + len(trailer).to_bytes(4, "big"))
            fh.seek(len(_MAGIC) + 1)
            fh.write(count.to_bytes(4, "big"))
        os.chmod(tmp, stat.S_IMODE(records.stat().st_mode))  # mkstemp makes it the owner's alone
        os.replace(tmp, target)
    except (OSError, TypeError, ValueError, OverflowError, ormsgpack.MsgpackEncodeError, NotFast):
        Path(tmp).unlink(missing_ok=True)


class _Packer:
    """The ``default`` hook that packs a :class:`CompactWrote` of the line ``data[lo:hi]``: its items as an extension
    value, each value it holds as JSON bytes as the span of those bytes in the records file (``data`` starts at
    ``offset`` in it) when they are in the line, else as the bytes."""

    def __init__(self, data: bytes, lo: int, hi: int, offset: int) -> None:
        self.data, self.lo, self.hi, self.offset = data, lo, hi, offset

    def __call__(self, value: Any) -> Any:
        if type(value) is not CompactWrote:
            raise TypeError(f"cannot keep a {type(value).__name__} in a view")
        items = {k: self._span_or_bytes(v) if type(v) is bytes else v for k, v in value.held_items()}
        return ormsgpack.Ext(_WROTE, ormsgpack.packb(items, default=self))

    def _span_or_bytes(self, value: bytes) -> Any:
        at = self.data.find(value, self.lo, self.hi)
        return value if at < 0 else ormsgpack.Ext(_SPAN, _SPAN_STRUCT.pack(self.offset + at, len(value)))


def _line_starts(data: bytes) -> list[int]:
    """The offset where each line of ``data`` starts (line n at index n - 1)."""
    starts, at = [0], data.find(b"\n")
    while at >= 0:
        starts.append(at + 1)
        at = data.find(b"\n", at + 1)
    return starts


