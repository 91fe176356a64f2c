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
