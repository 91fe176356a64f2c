"""``read_rows`` reads lines as bytes (no decode of the whole file) and returns what the text reader returned.

The text reader (``_rows_of_text``: decode the file, cut it at ``\\n``, parse each line) is the reference:
every file here is read both ways and compared by ``repr`` with line numbers; a file the bytes reader
leaves (a line to refuse, a line blank only to ``str.strip``) must raise exactly the text reader's error.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit import redact
from evalkit.recordfile import RecordsFileError, _rows_of_bytes, _rows_of_text, read_rows, record_parser
from evalkit.records import QueryResult
from evalkit.recordview import ANALYSIS


def _record(i: int, **extra: object) -> dict[str, object]:
    """A per-query record with 30-document rankings (longer than the analysis view keeps) and a trace."""
    r = QueryResult(query_id=f"q{i:03d}", question=f"问题 {i} \u2028 sep", gold_doc_ids=[f"d{i}"],
                    retrieved=[{"doc_id": f"d{j}", "score": 1.0 / (j + 1)} for j in range(30)],
                    reranked=[{"doc_id": f"d{j}", "score": -0.0 if j == 0 else j * 1e-300} for j in range(30)],
                    metrics={"hit@5": float(i % 2), "ndcg@10": 1 / 3},
                    trace=[{"step": 0, "node": "retrieve", "wrote": {"channel_hits": {
                        "bm25": [[f"p{j}", f"d{j}", 0.5 / (j + 1)] for j in range(25)]}}}])
    return {**r.to_dict(), **extra}


def _text_rows(path: Path, keep=None) -> list[tuple[int, str]]:
    data = path.read_bytes()
    return [(n, repr(r)) for n, r in _rows_of_text(path, data, None, keep, record_parser(data))]


def _write(path: Path, text: str | bytes) -> Path:
    (path.write_bytes if isinstance(text, bytes) else lambda t: path.write_text(t, encoding="utf-8"))(text)
    return path


GOOD = "\n".join(redact.dumps_line(_record(i)) for i in range(5))
FILES = {
    "plain": GOOD + "\n",
    "crlf and blank lines": GOOD.replace("\n", "\r\n") + "\r\n\n   \n\t\n",
    "no final newline": GOOD,
    "nan and a lone surrogate": GOOD + '\n{"query_id": "q9", "x": NaN}\n{"query_id": "q10", "y": "\\ud800"}\n',
    "unicode separators in a value": GOOD + "\n" + json.dumps({"query_id": "q7", "a": "x\u2029\x85y"},
                                                            ensure_ascii=False) + "\n",
}


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize("view", [None, ANALYSIS.keep])
def test_the_bytes_reader_returns_what_the_text_reader_returns(tmp_path, name, view):
    path = _write(tmp_path / "per_query.jsonl", FILES[name])
    data = path.read_bytes()
    assert record_parser(data) is not json.loads
    fast = [(n, repr(r)) for n, r in _rows_of_bytes(data, view, view)]
    assert fast == _text_rows(path, view)
    assert [(n, repr(r)) for n, r in read_rows(path, keep=view)] == fast


BAD = {
    "a torn line": (GOOD + "\n" + GOOD[:100] + "\n").encode(),
    "invalid UTF-8 after a torn line": (GOOD + "\n" + GOOD[:100] + "\n").encode() + b'{"query_id": "\xff"}\n',
    "a torn line after invalid UTF-8": b'{"query_id": "\xff"}\n' + (GOOD[:100] + "\n").encode(),
    "not a record": (GOOD + '\n["q1"]\n').encode(),
    "no query id": (GOOD + '\n{"query_id": 3}\n').encode(),
    "a byte order mark": b"\xef\xbb\xbf" + GOOD.encode(),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_refused_file_raises_the_text_readers_error(tmp_path, name):
    path = _write(tmp_path / "per_query.jsonl", BAD[name])
    with pytest.raises(RecordsFileError) as text_error:
        _text_rows(path)
    with pytest.raises(RecordsFileError) as error:
        read_rows(path)
    assert str(error.value) == str(text_error.value)


def test_a_line_blank_only_to_str_strip_is_skipped_as_before(tmp_path):
    """``"\\x1c"`` and U+3000 are whitespace to ``str.strip`` but not to ``bytes.strip``: the text reader decides."""
    path = _write(tmp_path / "per_query.jsonl", GOOD + "\n\x1c\n\u3000\n" + GOOD + "\n")
    assert [(n, repr(r)) for n, r in read_rows(path)] == _text_rows(path)
    assert [n for n, _ in read_rows(path)] == [1, 2, 3, 4, 5, 8, 9, 10, 11, 12]
