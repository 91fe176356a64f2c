"""``score --run`` builds its records one query at a time as they are written (issue 34); every record and
the summary are what writing them all from memory gives.

A run over the tiny eval set with shuffled lines, tied scores, a query it lacks, a stray
document and a separate retrieval run is scored once; its records are written streamed
(:class:`evalkit.scoring.rankings.RunRecords`, the writer keeping a view without rankings)
and, from the very same ``Scored``, as a list built in full first (how every record was
written before). The per-query records must be equal field by field (clock readings set
aside, :func:`evalkit.runstore.comparable_records`), as must the two summaries; and the
records are checked against what they were made from: each ranking against the run read
on its own, each mean against the per-query values.
"""
from __future__ import annotations

import json
import random
import statistics
from dataclasses import replace
from pathlib import Path

import pytest
from fakes import DOCS, QUESTIONS

from evalkit.run.runner import RunOptions
from evalkit.runfile import read_run
from evalkit.runstore import comparable, comparable_records
from evalkit.scoring import score_run, write_scored
from evalkit.scoring.rankings import RunRecords

METRICS = ("recall@20", "recall@3", "hit@1", "hit@5", "mrr@10", "ndcg@10", "precision@5")


def make_run(path: Path, seed: int, depth: int, skip: str | None = None) -> Path:
    """A TREC run of ``depth`` documents a query (ties half of the time, a stray id), lines shuffled."""
    rng = random.Random(seed)
    ids = [d[0] for d in DOCS] + ["not-in-corpus"]
    lines = []
    for qid, *_ in QUESTIONS:
        if qid == skip:
            continue
        for r, d in enumerate(rng.sample(ids, depth)):
            lines.append(f"{qid} Q0 {d} {r + 1} {rng.choice([1.0, 0.5, 0.5]) if seed % 2 else rng.uniform(0, 9):.4f} t")
    rng.shuffle(lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write(scored, output: Path) -> dict:
    write_scored(scored, RunOptions(output=output, mlflow=False, progress=False), echo=lambda m: None)
    return comparable(json.loads(output.read_text(encoding="utf-8")))


@pytest.mark.parametrize("two_stages", [False, True])
def test_streamed_records_equal_the_records_written_from_memory(tiny, tmp_path: Path, two_stages: bool):
    es, _ = tiny
    run = make_run(tmp_path / "final.trec", 1, 5, skip="q4")
    stage1 = make_run(tmp_path / "stage1.trec", 2, 6) if two_stages else None
    scored = score_run(run, f"{es}@v1", "mine", retrieval_run=stage1, metrics=METRICS, scoring=None)
    assert isinstance(scored.results, RunRecords)
    assert any("q4" in n for n in scored.notices) and any("not-in-corpus" in n for n in scored.notices)

    streamed = write(scored, tmp_path / "streamed" / "s.json")
    held = write(replace(scored, results=list(scored.results)), tmp_path / "held" / "s.json")
    records = comparable_records(tmp_path / "streamed" / "s.json", "mine")
    assert records == comparable_records(tmp_path / "held" / "s.json", "mine")
    assert len(records) == len(QUESTIONS)
    assert streamed["variants"] == held["variants"]
    assert [json.loads(r)["query_id"] for r in records] == [q for q, *_ in QUESTIONS]  # eval-set order

    final, first = read_run(run), read_run(stage1) if stage1 else None
    rows = [json.loads(r) for r in records]
    for row in rows:
        want = final.get(row["query_id"])
        assert row["reranked"] == ([{"doc_id": d, "score": s} for d, s in want.docs] if want else [])
        want1 = (first or final).get(row["query_id"])
        assert row["retrieved"] == ([{"doc_id": d, "score": s} for d, s in want1.docs] if want1 else [])
        assert row["trace"][0]["wrote"]["reranked"] == [e["doc_id"] for e in row["reranked"]]
    answerable = [r for r in rows if r["gold_doc_ids"]]
    for m in METRICS:
        assert streamed["variants"]["mine"]["metrics"][m] == pytest.approx(
            statistics.fmean(r["metrics"][m] for r in answerable), abs=1e-12)


def test_records_read_twice_are_the_same(tiny, tmp_path: Path):
    """Each read builds the records anew (nothing is kept between reads); the two builds are equal, clock included."""
    es, _ = tiny
    scored = score_run(make_run(tmp_path / "r.trec", 3, 4), f"{es}@v1", "x", metrics=METRICS)
    first, again = list(scored.results), list(scored.results)
    assert [r.to_dict() for r in first] == [r.to_dict() for r in again]
    assert first[0] is not again[0] and first[0].reranked is not again[0].reranked
    assert scored.results[-1].to_dict() == first[-1].to_dict() and len(scored.results[1:3]) == 2
    with pytest.raises(IndexError):
        scored.results[len(QUESTIONS)]


def make_sorted_run(path: Path, seed: int, depth: int) -> Path:
    """A TREC run as search engines write one (rank order, one space between columns), so that
    :func:`evalkit.runfile_columns.read_trec_columns` reads it, with ties, a stray id and a query left out."""
    rng = random.Random(seed)
    ids = [d[0] for d in DOCS] + ["not-in-corpus"]
    lines = []
    for qid, *_ in QUESTIONS:
        if qid == "q2":
            continue
        scores = sorted((rng.choice([3.0, 1.25, 1.25, rng.uniform(0, 9)]) for _ in range(depth)), reverse=True)
        lines += [f"{qid} Q0 {d} {r + 1} {s:.6f} bench" for r, (d, s) in enumerate(zip(rng.sample(ids, depth), scores))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def record_by_record(es_path: Path, run: Path, name: str, metrics: tuple[str, ...], read_at: float):
    """The records of a scored run made the way ``score --run`` made them before issue 34's rework: the run
    read by the line reader, then per query its ``{doc_id, score}`` entries, its metrics and its own trace
    event (:func:`evalkit.scoring.scored.scored_trace`) into a ``QueryResult``."""
    from evalkit.records import QueryResult
    from evalkit.run.query import score_outputs
    from evalkit.runfile import _read_trec
    from evalkit.scoring.scored import eval_set_with_corpus, scored_trace

    es, ref = eval_set_with_corpus(f"{es_path}@v1")
    rankings = _read_trec(str(run), run.read_text(encoding="utf-8").splitlines())
    out = []
    for rec in es.records:
        r = rankings.get(rec.id)
        ids = list(r.ids) if r else []
        docs = [{"doc_id": d, "score": s} for d, s in zip(r.ids, r.scores)] if r else []
        scores, _ = score_outputs(rec, list(docs), docs, metrics)
        trace = scored_trace(name, {"retrieved": list(ids), "reranked": list(ids)}, None, None, "retriever", read_at)
        out.append(QueryResult(query_id=rec.id, question=rec.question, gold_doc_ids=list(rec.relevant_doc_ids),
                               retrieved=list(docs), reranked=docs, metrics=scores, trace=trace, outcome="completed",
                               type=rec.type, lang=rec.lang))
    return ref, out


def test_records_and_summary_are_byte_for_byte_those_made_record_by_record(tiny, tmp_path: Path, monkeypatch):
    """Issue 34 made ``score --run`` cheaper (the run read column-wise, one trace event shared, nothing of the
    engine imported); the files it writes are, byte for byte, the files of the record-by-record path, and every
    per-query value is pytrec_eval's."""
    import time

    import pytrec_eval

    from evalkit import redact
    from evalkit.records import RunSummary
    from evalkit.run.summarise import variant_summary
    from evalkit.runfile_columns import read_trec_columns

    es, _ = tiny
    run = make_sorted_run(tmp_path / "bench.trec", 7, 6)
    assert read_trec_columns(run.read_bytes()) is not None  # the column reader, not the line reader, reads it
    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.25)  # when the run was read: in every trace event
    metrics = ("recall@20", "hit@5", "mrr@10", "ndcg@10")
    out = tmp_path / "out" / "bench.json"
    scored = score_run(run, f"{es}@v1", "bench", metrics=metrics)
    write_scored(scored, RunOptions(output=out, mlflow=False, progress=False), echo=lambda m: None)
    written = json.loads(out.read_text(encoding="utf-8"))

    ref, expected = record_by_record(es, run, "bench", metrics, 1_800_000_000.25)
    lines = (out.with_suffix("") / "bench" / "per_query.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines == [redact.dumps_line(r.to_dict()) + "\n" for r in expected]
    variant = variant_summary(expected, metrics, judge=None, source=scored.source,
                              seconds=written["variants"]["bench"]["seconds"])
    variant.timing = {}  # a run file gives no latencies
    summary = RunSummary(eval_set=ref, variants={"bench": variant}, git_commit=written["git_commit"],
                         scoring=scored.scoring.to_dict())
    assert out.read_text(encoding="utf-8") == redact.dumps(summary.to_dict(), indent=2, ensure_ascii=False) + "\n"

    # every per-query value against pytrec_eval's on the same run and the eval set's gold documents
    qrels = {q: {d: 1 for d in gold} for q, _, gold, kind in QUESTIONS if gold}
    theirs_run: dict[str, dict[str, float]] = {}
    for line in run.read_text(encoding="utf-8").splitlines():
        q, _, d, _, s, _ = line.split()
        theirs_run.setdefault(q, {})[d] = float(s)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"recall", "success", "ndcg_cut", "recip_rank"}).evaluate(
        {q: theirs_run.get(q, {"none": 0.0}) for q in qrels})
    checked = 0
    for line in lines:
        rec = json.loads(line)
        if rec["query_id"] not in qrels:
            assert set(rec["metrics"]) == {"degraded"}  # unanswerable: no retrieval metric
            continue
        m = theirs[rec["query_id"]]
        rr = m["recip_rank"] if m["recip_rank"] >= 0.1 - 1e-12 else 0.0
        want = {"recall@20": m["recall_20"], "hit@5": m["success_5"], "mrr@10": rr, "ndcg@10": m["ndcg_cut_10"]}
        assert {k: rec["metrics"][k] for k in want} == pytest.approx(want, abs=1e-12), rec["query_id"]
        checked += 1
    assert checked == len(qrels) and any(r["metrics"]["hit@5"] for r in map(json.loads, lines))


HEAVY = ("pydantic", "evalkit.graph.node", "evalkit.nodes.builtin", "evalkit.judges.offline", "evalkit.analysis.labels",
         "evalkit.text.refusal_rules", "evalkit.text.error_replies", "evalkit.run.runner", "evalkit.scoring.scorer")


def test_score_run_loads_none_of_the_engine_judges_or_text_rules(tiny, tmp_path: Path):
    """``evalkit score --run`` runs no graph, judge or text rule: a process that scores a run imports none of
    them (issue 34: they were ~0.7 s of its start-up, the text rules' regular expressions compiled at import)."""
    import os
    import subprocess
    import sys

    es, _ = tiny
    run = make_sorted_run(tmp_path / "bench.trec", 3, 4)
    script = ("import os, sys\nfrom evalkit.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
              "print('LOADED', sorted(m for m in sys.modules if m in os.environ['HEAVY'].split(',')))\n")
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", script, "score", "--run", str(run), "--eval-set", f"{es}@v1",
                          "--name", "x", "--output", str(tmp_path / "o" / "x.json"), "--no-mlflow"],
                         cwd=repo, capture_output=True, text=True, timeout=120, env={**os.environ, "HEAVY": ",".join(HEAVY)})
    loaded = [ln for ln in out.stdout.splitlines() if ln.startswith("LOADED")]
    assert (tmp_path / "o" / "x" / "x" / "per_query.jsonl").is_file(), out.stdout + out.stderr
    assert loaded == ["LOADED []"], out.stdout[-2000:] + out.stderr[-2000:]
