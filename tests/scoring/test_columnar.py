"""``score --run`` on a run read as columns (:mod:`evalkit.scoring.columnar`) writes what the record-by-record path writes.

Each case scores one TREC run twice from the very same ``Scored``: through
:class:`~evalkit.scoring.columnar.ColumnarRecords` (metrics over the whole run, lines put
together from their parts, the secret scan on the parts) and as the list of records
:meth:`RunRecords.build` makes one at a time (what every line was written from before);
``per_query.jsonl`` must be the same bytes and the summaries the same. The metrics are also
checked against :func:`evalkit.run.query.score_outputs` on the rankings the line reader reads.

The eval set has graded and binary gold, an unanswerable question, a query the run lacks,
ids with quotes, backslashes and Chinese, a document id longer than a trace keeps and a
query of more documents than a trace keeps, ties, and a stray document.
"""
from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from evalkit.evalsets import freeze
from evalkit.metrics import Scoring
from evalkit.run.query import score_outputs
from evalkit.run.runner import RunOptions
from evalkit.runfile import _read_trec
from evalkit.runstore import VariantStore
from evalkit.scoring import score_run, write_scored
from evalkit.scoring.columnar import ColumnarRecords

METRICS = ("recall@20", "recall@3", "hit@1", "hit@5", "mrr@10", "mrr@3", "ndcg@10", "ndcg@3", "precision@5",
           "retrieval:ndcg@120")
LONG = "long-" + "x" * 170  # longer than a trace keeps a string (MAX_TRACE_CHARS)
DOC_IDS = [f"d{i:03d}" for i in range(150)] + ['q"uote', "back\\slash", "文档-1", LONG]


def make_set(folder: Path, ids: list[str], questions: list[dict]) -> Path:
    """An eval set of ``questions`` over a corpus of ``ids``, frozen as v1."""
    folder.mkdir(parents=True, exist_ok=True)
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": d, "title": "", "text": f"text of {d}"}) + "\n" for d in ids),
                      encoding="utf-8")
    es = folder / "set.jsonl"
    es.write_text("".join(json.dumps({"type": "single", "lang": "en", **q}) + "\n" for q in questions),
                  encoding="utf-8")
    freeze(es, corpus=str(corpus))
    return es


QUESTIONS = [
    {"id": "g1", "question": "graded", "relevant_doc_ids": ["d001", "d002", "文档-1"],
     "relevance": {"d001": 2, "d002": 1, "文档-1": 3}},
    {"id": "g2", "question": "graded, one at level 2", "relevant_doc_ids": ["d010", 'q"uote'],
     "relevance": {"d010": 1, 'q"uote': 2}},
    {"id": "b1", "question": "binary", "relevant_doc_ids": ["d003", "back\\slash", LONG]},
    {"id": "b2", "question": "deep", "relevant_doc_ids": ["d120"], "type": "multi_hop"},
    {"id": "none", "question": "unanswerable", "relevant_doc_ids": [], "type": "unanswerable"},
    {"id": "gone", "question": "not in the run", "relevant_doc_ids": ["d004"]},
] + [{"id": f"r{i}", "question": f"random {i}", "relevant_doc_ids": [f"d{i:03d}", f"d{i + 50:03d}"]}
     for i in range(30)]


def make_run(path: Path, seed: int) -> Path:
    """A TREC run in rank order (what the column reader reads), ties in scores, one stray document."""
    rng = random.Random(seed)
    lines = []
    for q in QUESTIONS:
        if q["id"] == "gone":
            continue
        depth = 130 if q["id"] == "b2" else rng.choice([1, 5, 12, 40])
        docs = rng.sample(DOC_IDS + ["stray-doc"], depth)
        for g in q["relevant_doc_ids"][:2]:
            if g not in docs and rng.random() < 0.7:
                docs[rng.randrange(depth)] = g
        docs = list(dict.fromkeys(docs))
        scores = sorted((rng.choice([5.0, 2.5, 2.5, round(rng.uniform(0, 9), 4)]) for _ in docs), reverse=True)
        lines += [f"{q['id']} Q0 {d} {r + 1} {s} sys" for r, (d, s) in enumerate(zip(docs, scores))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def written(scored, output: Path) -> tuple[bytes, dict]:
    """``per_query.jsonl``'s bytes and the summary (its timing of the write set aside)."""
    write_scored(scored, RunOptions(output=output, mlflow=False, progress=False), echo=lambda m: None)
    summary = json.loads(output.read_text(encoding="utf-8"))
    for v in summary["variants"].values():
        v.pop("seconds")
    return (output.with_suffix("") / scored.name / "per_query.jsonl").read_bytes(), summary


def both_paths(scored, tmp_path: Path, monkeypatch, slow_lines: int = 0) -> tuple[bytes, bytes]:
    """The records written by the columnar path and by the record-by-record path, after checking the summaries;
    ``slow_lines``: how many lines the columnar path must leave to the record-by-record path."""
    assert isinstance(scored.results, ColumnarRecords)
    calls = []
    encoded_line = VariantStore.encoded_line
    monkeypatch.setattr(VariantStore, "encoded_line", lambda self, r: calls.append(r.query_id) or encoded_line(self, r))
    fast, fast_summary = written(scored, tmp_path / "fast" / "out.json")
    assert len(calls) == slow_lines
    slow, slow_summary = written(replace(scored, results=list(scored.results)), tmp_path / "slow" / "out.json")
    assert fast_summary == slow_summary
    return fast, slow


@pytest.mark.parametrize(("seed", "level", "ties"), [(1, 1, "pipeline"), (2, 2, "pipeline"), (3, 1, "trec"),
                                                       (4, 3, "trec")])
def test_columnar_lines_are_the_record_by_record_lines(tmp_path: Path, monkeypatch, seed: int, level: int,
                                                       ties: str):
    es = make_set(tmp_path / "set", DOC_IDS, QUESTIONS)
    run = make_run(tmp_path / "run.trec", seed)
    scoring = Scoring(relevance_level=level, ties=ties)
    scored = score_run(run, f"{es}@v1", "mine", metrics=METRICS, scoring=scoring)
    assert any("stray-doc" in n for n in scored.notices) and any("gone" in n for n in scored.notices)
    fast, slow = both_paths(scored, tmp_path, monkeypatch)
    assert fast == slow
    rows = [json.loads(line) for line in fast.splitlines()]
    assert [r["query_id"] for r in rows] == [q["id"] for q in QUESTIONS]
    deep = next(r for r in rows if r["query_id"] == "b2")
    assert len(deep["reranked"]) == 130 and deep["trace"][0]["wrote"]["reranked"]["n"] == 130  # cut as traces are
    assert any(LONG in json.dumps(r["reranked"]) for r in rows)

    # every metric as score_outputs computes it on the rankings the line reader reads
    rankings = _read_trec(str(run), run.read_text(encoding="utf-8").splitlines())
    records = scored.results.records
    for record, row in zip(records, rows):
        r = rankings.get(record.id)
        docs = [{"doc_id": d, "score": s} for d, s in zip(r.ids, r.scores)] if r else []
        want, _ = score_outputs(record, docs, docs, METRICS, scoring=scoring)
        assert row["metrics"] == want  # the same floats, not merely close
        assert row["reranked"] == docs


def test_a_secret_in_a_document_id_or_a_query_id_is_masked_as_before(tmp_path: Path, monkeypatch):
    """A secret environment value in a query id and a document id, and a key-shaped document id: those
    queries' lines are masked exactly as the record-by-record path masks them; the others are untouched."""
    secret = "hunter2-s3cr3t-value"
    monkeypatch.setenv("EVALKIT_TEST_API_KEY", secret)
    shaped = "sk-" + "A" * 24
    ids = DOC_IDS[:20] + [f"doc-{secret}", shaped]
    questions = [{"id": f"q-{secret}", "question": "secret id", "relevant_doc_ids": ["d001"]},
                 {"id": "plain", "question": "a plain one", "relevant_doc_ids": ["d002"]},
                 {"id": "shaped", "question": "key-shaped document", "relevant_doc_ids": [shaped]}]
    es = make_set(tmp_path / "set", ids, questions)
    run = tmp_path / "run.trec"
    run.write_text("".join(f"{q} Q0 {d} {r + 1} {10 - r} sys\n" for q, docs in
                           ((f"q-{secret}", ["d001", "d003"]), ("plain", ["d002", f"doc-{secret}"]),
                            ("shaped", [shaped, "d004"]), ) for r, d in enumerate(docs)), encoding="utf-8")
    scored = score_run(run, f"{es}@v1", "mine", metrics=METRICS)
    fast, slow = both_paths(scored, tmp_path, monkeypatch, slow_lines=3)  # the secret's value: its whole chunk
    assert fast == slow
    assert secret.encode() not in fast and shaped.encode() not in fast and b"***" in fast
    rows = [json.loads(line) for line in fast.splitlines()]
    assert rows[0]["query_id"] == "q-***" and rows[1]["reranked"][1]["doc_id"] == "doc-***"
    assert rows[2]["reranked"][0]["doc_id"] == "***"


def test_a_key_shaped_document_id_or_query_id_sends_only_its_queries_the_slow_way(tmp_path: Path, monkeypatch):
    """Without a secret value in the environment, only the queries whose own strings or ranked documents hold a
    key shape or an assignment (words a secret starts with) are written the record-by-record way, masked as
    before; the others are put together from their parts."""
    shaped, shaped_query = "sk-" + "B" * 24, "ghp_" + "C" * 24
    es = make_set(tmp_path / "set", DOC_IDS[:10] + [shaped], [
        {"id": "a", "question": "a", "relevant_doc_ids": ["d001"]},
        {"id": "b", "question": "b", "relevant_doc_ids": ["d002"]},
        {"id": "c", "question": "token=abcdef123", "relevant_doc_ids": ["d003"]},
        {"id": shaped_query, "question": "d", "relevant_doc_ids": ["d004"]}])
    run = tmp_path / "run.trec"
    run.write_text(f"a Q0 d001 1 3 sys\na Q0 {shaped} 2 1 sys\nb Q0 d002 1 2 sys\nc Q0 d003 1 2 sys\n"
                   f"{shaped_query} Q0 d004 1 2 sys\n", encoding="utf-8")
    fast, slow = both_paths(score_run(run, f"{es}@v1", "mine", metrics=METRICS), tmp_path, monkeypatch, slow_lines=3)
    assert fast == slow
    for secret in (shaped, shaped_query, "abcdef123"):
        assert secret.encode() not in fast


def test_a_secret_value_in_a_plain_line_sends_its_chunk_the_slow_way(tmp_path: Path, monkeypatch):
    """A secret value that is no trigger word and shows in no string of the line (a score's digits): found in
    the chunk, whose lines are then written as before (``json.dumps`` of the masked record: its strings masked,
    its numbers as they are)."""
    monkeypatch.setenv("EVALKIT_TEST_TOKEN", "777777")
    es = make_set(tmp_path / "set", DOC_IDS[:10], [{"id": "a", "question": "a", "relevant_doc_ids": ["d001"]},
                                                   {"id": "b", "question": "b", "relevant_doc_ids": ["d002"]}])
    run = tmp_path / "run.trec"
    run.write_text("a Q0 d001 1 3.777777 sys\na Q0 d002 2 1.5 sys\nb Q0 d002 1 2.0 sys\n", encoding="utf-8")
    fast, slow = both_paths(score_run(run, f"{es}@v1", "mine", metrics=METRICS), tmp_path, monkeypatch, slow_lines=2)
    assert fast == slow and fast.startswith(b'{"query_id": "a", ')


def test_write_all_resumes_short_writes():
    """``write_all`` writes every buffer in order through a pipe, whose writes come back short."""
    import os
    import threading

    from evalkit.runstore import write_all

    buffers = [b"abc", memoryview(b"0123456789")[2:5], b"", b"xyz" * 1000] * 3000
    read_end, write_end = os.pipe()
    got: list[bytes] = []

    def drain() -> None:
        while chunk := os.read(read_end, 777):
            got.append(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    write_all(write_end, buffers)
    os.close(write_end)
    reader.join()
    os.close(read_end)
    assert b"".join(got) == b"".join(bytes(b) for b in buffers)
