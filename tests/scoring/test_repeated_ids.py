"""A document named more than once: counted once in a ranking, kept for every passage of an answer.

Issue 35's root bug: ``parse_ranked`` dropped repeated ids, so a ragas file whose
``retrieved_context_ids`` name one document per passage (two chunks of doc-b) no longer
paired its ids with its contexts, and every citation of the answer turned invalid. And a
context given as text only (ragas without ids) never found its document. Tiny corpus
(tests/fakes.py); q3 = "hotel allowance invoice per night", gold doc-b, doc-g, doc-e.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.index.corpus import load_corpus
from evalkit.runfile import first_ranks, parse_ranked
from evalkit.scoring import score_answers, score_run
from evalkit.scoring.locate import CorpusLocator

B1 = "Hotels\nHotel allowance is 600 per night"  # doc-b cut in two chunks, each with its title line
B2 = "Hotels\nin tier one cities."
G = "Travel hotel nights need an invoice for the allowance."  # doc-g, whole, no title
ANSWER = "The hotel allowance is 600 per night in tier one cities [doc-b]. Hotel nights need an invoice [doc-g]."


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_parse_ranked_keeps_repeats_and_first_ranks_keeps_the_first():
    ranked = parse_ranked(["doc-b", "doc-b", {"doc_id": "doc-g", "score": 0.5}], "f", 1)
    assert ranked == [("doc-b", 3.0), ("doc-b", 2.0), ("doc-g", 0.5)]
    assert first_ranks(ranked) == [("doc-b", 3.0), ("doc-g", 0.5)]


def test_a_repeated_document_counts_once_in_a_ranking(tiny, tmp_path: Path):
    es, _ = tiny
    twice = _write(tmp_path / "twice.jsonl", [{"id": "q3", "retrieved": ["doc-b", "doc-b", "doc-g"]}])
    once = _write(tmp_path / "once.jsonl", [{"id": "q3", "retrieved": ["doc-b", "doc-g"]}])
    metrics = ("recall@20", "precision@5", "ndcg@3")
    a = next(r for r in score_run(twice, f"{es}@v1", "t", metrics=metrics).results if r.query_id == "q3")
    b = next(r for r in score_run(once, f"{es}@v1", "o", metrics=metrics).results if r.query_id == "q3")
    assert a.metrics == b.metrics
    assert a.metrics["recall@20"] == pytest.approx(2 / 3)  # doc-b, doc-g of 3 gold
    assert a.metrics["precision@5"] == pytest.approx(2 / 5)  # not 3/5: doc-b once


def test_locator_finds_the_document_a_passage_was_cut_from(tiny):
    es, _ = tiny
    locate = CorpusLocator(load_corpus(es.parent / "corpora" / "tiny.jsonl")).doc_of
    assert locate(B1) == "doc-b" and locate(B2) == "doc-b"  # title line + a piece of the text
    assert locate("Travel   hotel nights\nneed an invoice") == "doc-g"  # re-wrapped whitespace
    assert locate("Retry\nHotel allowance is 600") is None  # another document's title: not doc-b's chunk
    assert locate("defaults to") == "doc-e"  # twice, but in one document
    assert locate("the") is None  # in several documents: ambiguous
    assert locate("nowhere in the corpus") is None
    assert locate("   ") is None


@pytest.mark.parametrize("form", ["ragas_ids", "ragas_text_only", "ragas_hf"])
def test_two_passages_of_one_document_score_as_given_with_explicit_ids(tiny, tmp_path: Path, form: str):
    pytest.importorskip("datasets")
    es, _ = tiny
    explicit = _write(tmp_path / "explicit.jsonl", [{
        "id": "q3", "answer": ANSWER, "retrieved": ["doc-b", "doc-g"],
        "contexts": [{"doc_id": "doc-b", "text": B1}, {"doc_id": "doc-b", "text": B2}, {"doc_id": "doc-g", "text": G}]}])
    row = {"user_input": "hotel allowance invoice per night", "response": ANSWER, "retrieved_contexts": [B1, B2, G]}
    if form != "ragas_text_only":
        row["retrieved_context_ids"] = ["doc-b", "doc-b", "doc-g"]
    if form == "ragas_hf":
        import datasets

        other = tmp_path / "hf"
        datasets.Dataset.from_list([row]).save_to_disk(str(other))
    else:
        other = _write(tmp_path / f"{form}.jsonl", [row])
    metrics = ("recall@20", "precision@5", "mrr@10")
    want = next(r for r in score_answers(explicit, "e", eval_set=f"{es}@v1", metrics=metrics).results
                if r.query_id == "q3")
    got = next(r for r in score_answers(other, "o", eval_set=f"{es}@v1", metrics=metrics).results
               if r.query_id == "q3")
    assert got.metrics == want.metrics
    assert [e[:2] for e in got.generation["evidence"]] == [["doc-b@1", "doc-b"], ["doc-b@2", "doc-b"],
                                                           ["doc-g", "doc-g"]]
    assert got.generation["used_documents"] == ["doc-b", "doc-g"] and got.generation["invalid_citations"] == []
    assert got.metrics["invalid_citation_rate"] == 0.0 and got.metrics["citations"] == 2.0
    assert got.metrics["recall@20"] == pytest.approx(2 / 3)  # ranking doc-b, doc-g: each once
    findings = got.generation["citation_findings"]
    assert findings and findings[0]["cited"] == ["doc-b@1", "doc-b@2"]  # a document citation cites all its passages
