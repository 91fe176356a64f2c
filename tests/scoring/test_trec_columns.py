"""The column-wise TREC reader gives exactly what the line reader gives, or hands the file to it (issue 34).

Generated runs (seeded) hold what a real run holds: queries in shuffled line order, tied
scores (trec_eval breaks them by document id, descending), non-ASCII document ids, tabs,
CRLF line ends and a BOM. Every ranking read column-wise equals the line reader's; files
the column reader does not vouch for (two spaces, blank lines, NBSP, a document twice, two
run tags, a NaN score, a qrels line) are read by the line reader, with the same result or
error. Then ``score_run``: every per-query record written through the column reader equals
the record written through the line reader (the path every number came from before), and
its metrics equal pytrec_eval's per query.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from evalkit.errors import LocatedError
from evalkit.runfile import _read_trec, read_run
from evalkit.runfile_columns import read_trec_columns
from evalkit.scoring import scorer

DOCS = [f"d{i}" for i in range(40)] + ["文档-甲", "doc-é", "Doc-Z", "doc-z"]


def run_lines(seed: int, n_queries: int = 12, depth: int = 15, shuffled: bool = True) -> list[str]:
    """TREC lines of ``n_queries`` queries with ties (scores drawn from 4 values half of the time): shuffled,
    or in rank order (queries grouped, scores descending, tied documents in random order)."""
    rng = random.Random(seed)
    lines = []
    for q in range(n_queries):
        tied = rng.random() < 0.5
        scores = [rng.choice([1.0, 2.5, 2.5, -0.75]) if tied else round(rng.uniform(-5, 30), 4) for _ in range(depth)]
        if not shuffled:
            scores.sort(reverse=True)
        for r, (d, score) in enumerate(zip(rng.sample(DOCS, depth), scores)):
            lines.append(f"q{q} Q0 {d} {r + 1} {score} tagA")
    if shuffled:
        rng.shuffle(lines)
    return lines


def line_reader(text: str) -> dict:
    return {q: (r.line, r.ids, r.scores) for q, r in _read_trec("run", text.splitlines()).items()}


def column_reader(data: bytes) -> dict:
    got = read_trec_columns(data)
    assert got is not None, "the column reader declined a plain file"
    return {q: (line, ids, scores) for q, line, ids, scores in got}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("layout", ["plain", "tabs", "crlf", "bom", "trailing-newlines", "rank-order"])
def test_columns_equal_the_line_reader(seed: int, layout: str):
    text = "\n".join(run_lines(seed, shuffled=layout != "rank-order")) + "\n"
    data = {"plain": text, "rank-order": text, "tabs": text.replace(" ", "\t"), "crlf": text.replace("\n", "\r\n"),
            "bom": "\ufeff" + text, "trailing-newlines": text + "\n\n"}[layout].encode("utf-8")
    expected = line_reader(data.decode("utf-8-sig"))
    got = column_reader(data)
    assert list(got) == list(expected)  # queries in order of first appearance
    assert got == expected  # first line, document order (ties by id descending) and every score


def test_tied_scores_are_ordered_by_document_id_descending():
    # q1: three documents tied at 2.0 -> d9, d10, d1 by string order descending ("d9" > "d10" > "d1")
    data = b"q1 Q0 d1 1 2.0 t\nq1 Q0 d10 2 2.0 t\nq1 Q0 d9 3 2.0 t\nq1 Q0 d5 4 3 t\n"
    assert column_reader(data) == {"q1": (1, ["d5", "d9", "d10", "d1"], [3.0, 2.0, 2.0, 2.0])}
    # in rank order but for the ties (the path that sorts only them); q2 after q1, its own ties
    data = (b"q1 Q0 d5 1 3 t\nq1 Q0 d1 2 2.0 t\nq1 Q0 d10 3 2.0 t\nq1 Q0 d9 4 2.0 t\nq1 Q0 d0 5 1 t\n"
            b"q2 Q0 d2 1 2.0 t\nq2 Q0 d3 2 2.0 t\n")
    assert column_reader(data) == {"q1": (1, ["d5", "d9", "d10", "d1", "d0"], [3.0, 2.0, 2.0, 2.0, 1.0]),
                                   "q2": (6, ["d3", "d2"], [2.0, 2.0])}


@pytest.mark.parametrize("text", [
    "q1 Q0 d1 1 2.0 t\nq1  Q0 d2 2 1.0 t\n",  # two spaces
    "q1 Q0 d1 1 2.0 t\n\nq2 Q0 d2 1 1.0 t\n",  # a blank line inside (line numbers shift)
    " q1 Q0 d1 1 2.0 t\n",  # a space-led line
    "q1 Q0 d1 1 2.0 t\nq2 Q0  d2 1.0 t\n",  # five columns and two spaces: six fields, one empty
    "q1 Q0 d1 1 2.0 \nq2 Q0 d2 1 1.0 t\n",  # a space-ended line of five columns: an empty sixth field
    "q1 Q0 d1 1 2.0 t \nq2 Q0 d2 1 1.0 t\n",  # a space-ended line inside the file
    "q1 Q0 d1 1 2.0 t\n \nq2 Q0 d2 1 1.0 t\n",  # a line of one space
    "q1 Q0 d1\u00a0x 1 2.0 t\n",  # NBSP splits for str.split()
    "q1 Q0 d1 1 2.0 t\nq1 Q0 d1 2 1.0 t\n",  # a document twice
    "q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 b\n",  # two run tags
    "q1 Q0 d1 1 nan t\n",  # NaN
    "q1 Q0 d1 1 1_0 t\n",  # Python reads 1_0 as 10, Arrow does not
    "q1 0 d1 1\n",  # a qrels line
    "q1 Q0 d1 1 2.0 t extra\n",  # seven columns
    "",  # nothing
])
def test_files_the_column_reader_does_not_vouch_for_go_to_the_line_reader(tmp_path: Path, text: str):
    assert read_trec_columns(text.encode("utf-8")) is None
    path = tmp_path / "run.trec"
    path.write_text(text, encoding="utf-8")
    try:
        expected = line_reader(text)
    except LocatedError as exc:
        with pytest.raises(LocatedError) as got:
            read_run(path, "trec")
        assert str(got.value) == str(exc).replace("run:", f"{path}:", 1)
        return
    if not expected:
        with pytest.raises(LocatedError, match="holds no ranking"):
            read_run(path, "trec")
        return
    assert {q: (r.line, r.ids, r.scores) for q, r in read_run(path, "trec").items()} == expected


def _scored_records(es: Path, run: Path, retrieval: Path | None = None) -> list[dict]:
    scored = scorer.score_run(run, f"{es}@v1", "mine", retrieval_run=retrieval,
                              metrics=("recall@20", "recall@3", "hit@1", "hit@5", "mrr@10", "ndcg@10", "precision@5"))
    out = []
    for r in scored.results:
        d = json.loads(json.dumps(r.to_dict()))
        for event in d["trace"]:
            event.pop("started_at")  # when evalkit read the file
        out.append(d)
    return out


def test_score_run_records_equal_the_line_readers_and_pytrec_eval(tiny, tmp_path: Path, monkeypatch):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from fakes import DOCS as TINY_DOCS
    from fakes import QUESTIONS

    es, _ = tiny
    ids = [d[0] for d in TINY_DOCS]
    rng = random.Random(34)
    lines, stage1 = [], []
    for qid, *_ in QUESTIONS:
        for r, d in enumerate(rng.sample(ids, 5)):
            lines.append(f"{qid} Q0 {d} {r + 1} {rng.choice([1.0, 0.5, 0.5, 0.25])} t")
        for r, d in enumerate(rng.sample(ids, 6)):
            stage1.append(f"{qid} Q0 {d} {r + 1} {round(rng.uniform(0, 9), 3)} t")
    rng.shuffle(lines)
    run, retrieval = tmp_path / "run.trec", tmp_path / "stage1.trec"
    run.write_text("\n".join(lines) + "\n", encoding="utf-8")
    retrieval.write_text("\n".join(stage1) + "\n", encoding="utf-8")
    assert read_trec_columns(run.read_bytes()) is not None  # the column reader is the one exercised
    now = [_scored_records(es, run), _scored_records(es, run, retrieval)]
    monkeypatch.setattr("evalkit.runfile_columns.read_trec_columns", lambda data: None)
    before = [_scored_records(es, run), _scored_records(es, run, retrieval)]
    assert now == before  # every field of every per-query record
    # and the final-stage metrics are pytrec_eval's (the eval set's gold documents as qrels)
    qrels = {q: {d: 1 for d in g} for q, _, g, _ in QUESTIONS if g}
    trec_run: dict[str, dict[str, float]] = {}
    for line in lines:
        q, _, d, _, s, _ = line.split()
        trec_run.setdefault(q, {})[d] = float(s)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "P.5", "success.1,5"}).evaluate(trec_run)
    for record in now[0]:
        if record["query_id"] not in qrels:
            continue
        m, t = record["metrics"], theirs.get(record["query_id"], {})
        assert m["ndcg@10"] == pytest.approx(t.get("ndcg_cut_10", 0.0), abs=1e-12)
        assert m["precision@5"] == pytest.approx(t.get("P_5", 0.0), abs=1e-12)
        assert m["hit@1"] == t.get("success_1", 0.0) and m["hit@5"] == t.get("success_5", 0.0)
