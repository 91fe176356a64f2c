"""A document or answer holding U+2028 / U+2029 / U+0085 (JSON leaves them unescaped) is one JSON line, not three.

``str.splitlines`` cuts at them; every JSON-lines reader cuts at ``\\n`` only (evalkit.fileio.jsonl_lines).
"""
from __future__ import annotations

import json

from evalkit.fileio import jsonl_lines
from evalkit.index.corpus import load_corpus


def test_jsonl_lines_cut_at_newline_only():
    text = '{"a": "x\u2028y"}\r\n{"b": "\u2029\u0085"}\n'
    assert jsonl_lines(text) == ['{"a": "x\u2028y"}', '{"b": "\u2029\u0085"}', ""]
    assert [json.loads(x) for x in jsonl_lines(text) if x] == [{"a": "x\u2028y"}, {"b": "\u2029\u0085"}]


def test_a_corpus_document_with_a_line_separator_loads_whole(tmp_path):
    path = tmp_path / "corpus.jsonl"
    docs = [{"id": "d1", "text": "first part\u2028second part"}, {"id": "d2", "text": "para\u2029graph\u0085end"}]
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    corpus = load_corpus(path)
    assert [d.id for d in corpus.documents] == ["d1", "d2"]
    assert corpus.documents[0].text == "first part\u2028second part"
