"""Readers for the files retrieval benchmarks ship: corpus JSONL, queries JSONL/TSV, BEIR/TREC qrels.

Formats are detected from contents, gzip from its magic bytes; every malformed line
raises :class:`ImportFormatError` naming the file and the line.
"""
from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.errors import LocatedError

_QRELS_HEADER = ("query-id", "corpus-id", "score")
_QUERY_HEADER_IDS = ("_id", "id", "qid", "query-id", "query_id")
_GZIP_MAGIC = b"\x1f\x8b"


class ImportFormatError(LocatedError):
    """An input file of an import that cannot be read: names the file, the line and the field."""


def _open_binary(path: Path) -> Any:
    """Open ``path`` for reading bytes, decompressing gzip when the file starts with its magic bytes."""
    try:
        with open(path, "rb") as fh:
            magic = fh.read(2)
        return gzip.open(path, "rb") if magic == _GZIP_MAGIC else open(path, "rb")
    except OSError as exc:
        raise ImportFormatError(str(path), "", f"cannot read file ({exc.strerror or exc})") from exc


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, text without its ending)`` of every non-blank line; bad UTF-8 or gzip names the line."""
    lineno = 0
    with _open_binary(path) as fh:
        try:
            for lineno, raw in enumerate(fh, start=1):
                try:
                    line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8").rstrip("\r\n")
                except UnicodeDecodeError as exc:
                    raise ImportFormatError(str(path), "", f"not valid UTF-8 (byte {exc.start} of the line)",
                                            line=lineno) from exc
                if line.strip():
                    yield lineno, line
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise ImportFormatError(str(path), "", f"corrupt or truncated gzip data ({exc})",
                                    line=lineno + 1) from exc


def _first_line(path: Path) -> tuple[int, str] | None:
    for item in _lines(path):
        return item
    return None


def _as_id(value: Any) -> str | None:
    """A BEIR id: a non-empty string, or an integer (written as its decimal string)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _json_object(path: Path, lineno: int, line: str) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(str(path), "", f"not valid JSON ({exc.msg} at column {exc.colno})",
                                line=lineno) from exc
    if not isinstance(obj, dict):
        raise ImportFormatError(str(path), "", "each line must be a JSON object", line=lineno)
    return obj


def iter_corpus(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line, {"id", "title", "text", "metadata"})`` for each document of a BEIR corpus JSONL.

    ``_id`` (or ``id``) and ``text`` are required; ``title`` may be missing or null;
    ``metadata`` (an object) and every other field end up in ``metadata``. Duplicate
    ids are an error naming both lines.
    """
    path = Path(path)
    seen: dict[str, int] = {}
    for lineno, line in _lines(path):
        if lineno == 1 and not line.lstrip().startswith("{"):
            raise ImportFormatError(str(path), "", 'the corpus must be JSONL with one {"_id", "title", "text"} '
                                    f"object per line; this line starts {line[:40]!r}", line=lineno)
        obj = _json_object(path, lineno, line)
        key = "_id" if "_id" in obj else "id"
        doc_id = _as_id(obj.get(key))
        if doc_id is None:
            raise ImportFormatError(str(path), "_id", f"missing or empty document id, got {obj.get(key)!r}",
                                    line=lineno)
        text = obj.get("text")
        if not isinstance(text, str):
            raise ImportFormatError(str(path), "text", f"document '{doc_id}' has no 'text' string", line=lineno)
        title = obj.get("title")
        if title is None:
            title = ""
        if not isinstance(title, str):
            raise ImportFormatError(str(path), "title", f"document '{doc_id}': title must be a string, "
                                    f"got {type(title).__name__}", line=lineno)
        meta = obj.get("metadata")
        if meta is None:
            meta = {}
        if not isinstance(meta, dict):
            raise ImportFormatError(str(path), "metadata", f"document '{doc_id}': metadata must be an object",
                                    line=lineno)
        extra = {k: v for k, v in obj.items() if k not in ("_id", "id", "title", "text", "metadata")}
        if doc_id in seen:
            raise ImportFormatError(str(path), "_id", f"duplicate document id '{doc_id}' (first on line "
                                    f"{seen[doc_id]})", line=lineno)
        seen[doc_id] = lineno
        yield lineno, {"id": doc_id, "title": title, "text": text, "metadata": {**meta, **extra}}


def read_queries(path: str | Path) -> tuple[dict[str, str], str]:
    """Read queries as ``{id: text}`` (file order) and the detected format (``jsonl`` or ``tsv``).

    JSONL lines are ``{"_id", "text"}`` objects; TSV lines are ``id<TAB>text`` (the text
    is everything after the first tab). A TSV header such as ``_id<TAB>text`` is skipped.
    """
    path = Path(path)
    first = _first_line(path)
    if first is None:
        raise ImportFormatError(str(path), "", "the queries file is empty")
    fmt = "jsonl" if first[1].lstrip().startswith("{") else "tsv"
    queries: dict[str, str] = {}
    where: dict[str, int] = {}
    for lineno, line in _lines(path):
        if fmt == "jsonl":
            obj = _json_object(path, lineno, line)
            qid = _as_id(obj.get("_id", obj.get("id")))
            if qid is None:
                raise ImportFormatError(str(path), "_id", "missing or empty query id", line=lineno)
            text = obj.get("text")
            if not isinstance(text, str) or not text.strip():
                raise ImportFormatError(str(path), "text", f"query '{qid}' has no text", line=lineno)
        else:
            if "\t" not in line:
                raise ImportFormatError(str(path), "", "expected 'id<TAB>text' (a TSV of queries) or a JSON "
                                        f"object (JSONL); got {line[:60]!r}", line=lineno)
            qid, text = (part.strip() for part in line.split("\t", 1))
            if lineno == first[0] and qid.lower() in _QUERY_HEADER_IDS:
                continue
            if not qid:
                raise ImportFormatError(str(path), "", "empty query id before the tab", line=lineno)
            if not text:
                raise ImportFormatError(str(path), "", f"query '{qid}' has no text after the tab", line=lineno)
        if qid in queries:
            raise ImportFormatError(str(path), "", f"duplicate query id '{qid}' (first on line {where[qid]})",
                                    line=lineno)
        queries[qid], where[qid] = " ".join(text.split()), lineno
    if not queries:
        raise ImportFormatError(str(path), "", "the queries file holds no queries")
    return queries, fmt


@dataclass
class Qrels:
    """Judgements ``{query id: {doc id: rel}}`` (file order) and the line each came from."""

    judgements: dict[str, dict[str, int]]
    lines: dict[tuple[str, str], int]
    format: str

    def __len__(self) -> int:
        return sum(len(d) for d in self.judgements.values())

    def positive(self, qid: str) -> list[str]:
        return [d for d, rel in self.judgements.get(qid, {}).items() if rel > 0]


def read_qrels(path: str | Path) -> Qrels:
    """Read BEIR TSV (``query-id corpus-id score``) or TREC (``qid iter docid rel``) qrels.

    The format is chosen from the first line: a ``query-id`` header or three columns
    mean BEIR, four mean TREC; every later line must have the same number of columns.
    Relevance must be an integer. A pair judged twice with different grades is an error.
    """
    path = Path(path)
    first = _first_line(path)
    if first is None:
        raise ImportFormatError(str(path), "", "the qrels file is empty")
    head = first[1].split()
    if [h.lower() for h in head] == list(_QRELS_HEADER) or len(head) == 3:
        fmt, ncols, cols = "beir-tsv", 3, "query-id corpus-id score"
    elif len(head) == 4:
        fmt, ncols, cols = "trec", 4, "qid iter docid rel"
    else:
        raise ImportFormatError(str(path), "", f"unknown qrels format: expected 3 columns ({' '.join(_QRELS_HEADER)},"
                                f" BEIR) or 4 (qid iter docid rel, TREC), got {len(head)}: {first[1][:60]!r}",
                                line=first[0])
    judgements: dict[str, dict[str, int]] = {}
    lines: dict[tuple[str, str], int] = {}
    for lineno, line in _lines(path):
        parts = line.split("\t") if fmt == "beir-tsv" and "\t" in line else line.split()
        parts = [p.strip() for p in parts]
        if lineno == first[0] and [p.lower() for p in parts] == list(_QRELS_HEADER):
            continue
        if len(parts) != ncols:
            raise ImportFormatError(str(path), "", f"expected {ncols} columns ({cols}, the format of line "
                                    f"{first[0]}), got {len(parts)}: {line[:60]!r}", line=lineno)
        qid, doc_id, rel_text = (parts[0], parts[1], parts[2]) if fmt == "beir-tsv" else (parts[0], parts[2], parts[3])
        try:
            rel = int(rel_text)
        except ValueError:
            try:
                as_float = float(rel_text)
            except ValueError:
                as_float = None
            if as_float is None or not as_float.is_integer():
                raise ImportFormatError(str(path), "", f"relevance must be an integer, got {rel_text!r}",
                                        line=lineno) from None
            rel = int(as_float)
        if not qid or not doc_id:
            raise ImportFormatError(str(path), "", "empty query or document id", line=lineno)
        by_doc = judgements.setdefault(qid, {})
        if doc_id in by_doc and by_doc[doc_id] != rel:
            raise ImportFormatError(str(path), "", f"query '{qid}', document '{doc_id}' judged {rel} here but "
                                    f"{by_doc[doc_id]} on line {lines[(qid, doc_id)]}; keep one judgement",
                                    line=lineno)
        if doc_id not in by_doc:
            by_doc[doc_id] = rel
            lines[(qid, doc_id)] = lineno
    if not judgements:
        raise ImportFormatError(str(path), "", "the qrels file holds no judgements")
    return Qrels(judgements=judgements, lines=lines, format=fmt)


# ---------------------------------------------------------------------------------------- writing
