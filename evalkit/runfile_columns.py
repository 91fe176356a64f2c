"""A TREC run file read column-wise (pyarrow), for runs of a million lines.

Reading a 10,000-query x 100-document run line by line (``str.split``, a ``float`` and
two dict look-ups per line) took 4.3 s of ``evalkit score --run``'s 7.45 s and most of its
720 MB (every line a string, every ``(qid, docid)`` a tuple key); pytrec_eval scored the
same files in 1.36 s (issue 34, ``benchmarks/score_run_scale.py``). Here pyarrow's CSV
reader parses the columns, and the checks the line reader makes (six columns, a finite
score, one run tag, no document twice for a query) are made on whole columns.

:func:`read_trec_columns` answers only for a file it reads exactly as the line reader
would: one space (or tab) between columns, no blank or space-led lines, no whitespace
other than that, and none of the faults the checks look for. For anything else it returns
``None`` and the caller reads the file line by line, which gives the same rankings or the
error naming the line and field (:func:`evalkit.scoring.runfile.read_run`). Scores are
parsed by Arrow, correctly rounded as Python's ``float`` is, so every number is the same.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

# what makes str.split() / str.splitlines() cut where a single-space reader would not: other ASCII
# whitespace; and, in a file that is not all ASCII, the non-ASCII whitespace Python splits on (NEL, NBSP,
# U+1680, U+2000-200A, U+2028/9, U+202F, U+205F, U+3000) in UTF-8. Found with bytes.find (one memchr
# each, ~2 ms for a 35 MB run; one regex over the whole file took seconds). Two spaces in a row, a line
# that starts or ends with a space and a blank line are found by the CSV reader itself: an empty field
# or a row of another width (four two-byte searches took ~0.13 s of a 10,000 x 100 run, issue 34)
_ODD_BYTES = (b"\x0b", b"\x0c", b"\r", b"\x1c", b"\x1d", b"\x1e", b"\x1f")
_ODD_UTF8 = re.compile(rb"\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]|\xe2\x81\x9f|\xe3\x80\x80")
COLUMNS = ("qid", "q0", "docid", "rank", "score", "tag")


@dataclass
class RunTable:
    """A TREC run as columns: its queries in file order, each query's rows together in trec_eval order.

    ``bounds[i]:bounds[i + 1]`` are the rows of query ``query_ids[i]`` (first on line
    ``first_lines[i]``); a row is a document (``doc_codes``, an index into the distinct
    ``doc_ids``) and its score. What :mod:`evalkit.scoring.columnar` scores without making
    a Python object per row; :meth:`rankings` gives the per-query lists the line reader gives.
    """

    query_ids: list[str]
    first_lines: list[int]
    bounds: np.ndarray
    doc_ids: list[str]
    doc_codes: np.ndarray
    scores: np.ndarray

    def rankings(self) -> list[tuple[str, int, list[str], list[float]]]:
        """``[(qid, first line, doc ids, scores)]`` in file order, each query's in trec_eval order."""
        # object arrays of the very id strings: per query a list is cut from them, with no int or float made per
        # row that is not kept (a million temporary objects left ~50 MB of fragmented heap behind)
        docs = np.array(self.doc_ids, dtype=object)[self.doc_codes]
        b = self.bounds.tolist()
        return [(q, line, docs[s:e].tolist(), self.scores[s:e].tolist())
                for q, line, s, e in zip(self.query_ids, self.first_lines, b[:-1], b[1:])]


def read_trec_columns(data: bytes) -> list[tuple[str, int, list[str], list[float]]] | None:
    """``[(qid, first line, doc ids, scores)]`` in file order, each query's in trec_eval order, or ``None``.

    ``data`` is the file's bytes (a UTF-8 BOM allowed). ``None`` means "read it line by
    line": the file is laid out in a way this reader does not vouch for, or holds a fault
    the line reader names (see the module docstring).
    """
    table = read_trec_table(data)
    return None if table is None else table.rankings()


def read_trec_table(data: bytes) -> RunTable | None:
    """The run in ``data`` as a :class:`RunTable`, or ``None`` (read it line by line), as :func:`read_trec_columns`."""
    columns = _columns(data)
    if columns is None:
        return None
    return _table(*columns)


def _columns(data: bytes) -> tuple[Any, Any, np.ndarray] | None:
    """Query ids and document ids (dictionary-encoded) and scores; None when the layout or a check sends the
    file to the line reader. Views of ``data``, not copies, where the layout allows (a 60 MB run is read
    in ~60 MB more)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv

    if b"\r\n" in data:
        data = data.replace(b"\r\n", b"\n")
    if b"\t" in data:
        data = data.replace(b"\t", b" ")
    start = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    end = len(data)
    while end > start and data[end - 1] == 0x0A:  # trailing newlines
        end -= 1
    if not _plain_layout(data, start, end):
        return None
    view = memoryview(data)[start:end]
    pool = pa.system_memory_pool()  # malloc gives a freed column back; the default pool kept ~140 MB of a 1M-line run
    try:
        table = csv.read_csv(pa.py_buffer(view), memory_pool=pool,
                             read_options=csv.ReadOptions(column_names=list(COLUMNS), use_threads=False),
                             parse_options=csv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False,
                                                            escape_char=False, newlines_in_values=False,
                                                            ignore_empty_lines=False),
                             convert_options=csv.ConvertOptions(
                                 column_types={c: pa.float64() if c == "score" else pa.string() for c in COLUMNS},
                                 strings_can_be_null=False, quoted_strings_can_be_null=False, null_values=[]))
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # a row of another width (a blank line too), a score that is no
        return None  # number, bad UTF-8
    # six fields cut at single spaces are str.split()'s six exactly when none is empty (no space doubled, none
    # leading or trailing a line)
    if any(pc.min(pc.binary_length(table.column(c), memory_pool=pool), memory_pool=pool).as_py() == 0
           for c in COLUMNS if c != "score"):
        return None
    scores = table.column("score")
    if scores.null_count or not pc.all(pc.is_finite(scores, memory_pool=pool), memory_pool=pool).as_py():
        return None
    if len(pc.unique(table.column("tag"), memory_pool=pool)) != 1:
        return None
    qids = pc.dictionary_encode(table.column("qid"), memory_pool=pool).combine_chunks(memory_pool=pool)
    docs = pc.dictionary_encode(table.column("docid"), memory_pool=pool).combine_chunks(memory_pool=pool)
    return qids, docs, np.concatenate([values(c, np.float64) for c in scores.chunks])


def values(array: Any, dtype: type) -> np.ndarray:
    """A fixed-width Arrow array without nulls as a numpy view of its data buffer. ``Array.to_numpy``
    imports pandas (~0.12 s and ~20 MB of a ``score --run``) to ask whether the array is one of its own."""
    if array.null_count or array.type.bit_width != 8 * np.dtype(dtype).itemsize:
        raise TypeError(f"an Arrow {array.type} array with {array.null_count} nulls is no {np.dtype(dtype)} buffer")
    return np.frombuffer(array.buffers()[1], dtype=dtype)[array.offset:array.offset + len(array)]


def _plain_layout(data: bytes, start: int, end: int) -> bool:
    """Whether ``data[start:end]`` (CRLF and tabs already made LF and spaces) holds no whitespace but spaces and
    newlines, so that ``str.splitlines`` and ``str.split`` cut it where a reader of single spaces and newlines
    cuts it, given no field comes out empty (checked on the columns); searched in place: a slice of a 60 MB
    run would be a copy."""
    if end <= start or data[start] in b" \n" or data[end - 1] == 0x20:
        return False
    if any(data.find(b, start, end) != -1 for b in _ODD_BYTES):
        return False
    return (start == 0 and data.isascii()) or _ODD_UTF8.search(data, start, end) is None


def _table(qenc: Any, denc: Any, score: np.ndarray) -> RunTable | None:
    """Group the rows by query (first appearance order) and sort each as trec_eval does; None on a repeated document."""
    qcode = values(qenc.indices, np.int32).astype(np.int64)  # codes follow first appearance: sorting by them keeps file order
    dcode = values(denc.indices, np.int32).astype(np.int64)
    n_docs = len(denc.dictionary)
    pair = qcode * n_docs + dcode
    pair.sort(kind="stable")  # runs grouped by query are nearly sorted: ~3x faster than quicksort on them
    if (pair[1:] == pair[:-1]).any():
        return None  # a document twice for one query: the line reader names both lines
    doc_names = denc.dictionary.to_pylist()
    # document ids in Python's string order (code points; UTF-8 byte order is the same), as the line reader's sort
    doc_rank = np.empty(n_docs, dtype=np.int64)
    doc_rank[sorted(range(n_docs), key=doc_names.__getitem__)] = np.arange(n_docs)
    order = trec_order(qcode, score, doc_rank[dcode])
    qs = qcode[order]
    starts = np.flatnonzero(np.diff(qs, prepend=-1))
    # each query's first line: codes follow first appearance, so a query starts where its code exceeds every earlier
    first_row = np.flatnonzero(np.diff(np.maximum.accumulate(qcode), prepend=-1) > 0)
    qnames = qenc.dictionary.to_pylist()
    return RunTable(query_ids=[qnames[q] for q in qs[starts].tolist()], first_lines=(first_row + 1).tolist(),
                    bounds=np.append(starts, len(qs)), doc_ids=doc_names, doc_codes=dcode[order],
                    scores=score[order])


def trec_order(qcode: np.ndarray, score: np.ndarray, doc_rank: np.ndarray) -> np.ndarray:
    """Row order grouping queries by code, each by score descending then document id descending (trec_eval).

    A run written in rank order (the usual case) is checked in one pass and not sorted; one whose
    only disorder is among tied scores (scores written to 6 decimals tie often) has just those runs
    of ties put in document order, by one stable sort of nearly sorted keys (a full lexsort of a
    million rows took 0.4 s).
    """
    dq, ds, dr = np.diff(qcode), np.diff(score), np.diff(doc_rank)
    if ((dq > 0) | ((dq == 0) & ((ds < 0) | ((ds == 0) & (dr < 0))))).all():
        return np.arange(len(qcode))
    if ((dq > 0) | ((dq == 0) & (ds <= 0))).all():  # queries grouped, scores non-increasing: only ties disorder
        tie_run = np.cumsum(np.concatenate(([0], (dq != 0) | (ds != 0))))
        width = int(doc_rank.max()) + 1
        return np.argsort(tie_run * width + (width - 1 - doc_rank), kind="stable")
    return np.lexsort((-doc_rank, -score, qcode))
