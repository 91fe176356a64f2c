"""``evalkit score --run``: rankings produced elsewhere, scored with the runner's own metric code.

The done-means check: a TREC run exported from a variant (``evalkit export --format trec``)
and re-scored gives that variant's numbers to the last digit, every per-query metric,
for a one-stage variant and for a two-stage one (``--retrieval-run``), on the tiny set
and on the bundled demo (``graph_configs/bm25.yaml`` on ``demo_kb@v1``). Independent
recomputation: pytrec_eval on a hand-made run with tied scores. Hostile inputs: ids not
in the eval set, another document id scheme, two runs in one file, duplicates, bad lines.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytrec_eval
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import LocatedError
from evalkit.interop.export import export_trec
from evalkit.metrics import score_query
from evalkit.run.runner import RunOptions
from evalkit.scoring import read_run, score_run, write_scored

REPO = Path(__file__).resolve().parents[2]


def _score_cli(*args: str) -> object:
    return CliRunner().invoke(cli, ["score", *args, "--no-mlflow"], catch_exceptions=False)


@pytest.mark.parametrize("variant", ["bm25", "reversed"])
def test_exported_trec_run_rescored_gives_every_per_query_metric(tiny, tmp_path: Path, variant: str, per_query,
                                                                  metrics):
    es, run = tiny
    export_trec(run, tmp_path / "trec")
    out = tmp_path / "scored.json"
    args = ["--eval-set", f"{es}@v1", "--run", str(tmp_path / "trec" / f"{variant}.final.run"),
            "--retrieval-run", str(tmp_path / "trec" / f"{variant}.retrieval.run"), "--name", f"{variant}_scored",
            "--output", str(out), *[a for m in metrics for a in ("--metric", m)]]
    res = _score_cli(*args)
    assert res.exit_code == 0, res.output
    ours, theirs = per_query(run, variant), per_query(out, f"{variant}_scored")
    assert [r["query_id"] for r in ours] == [r["query_id"] for r in theirs]
    assert len({v for r in ours for v in r["metrics"].values()}) > 3  # the comparison has teeth
    for a, b in zip(ours, theirs, strict=True):
        assert a["metrics"] == b["metrics"], a["query_id"]               # exact, not approx
        assert [d["doc_id"] for d in a["reranked"]] == [d["doc_id"] for d in b["reranked"]]
    summary_a = json.loads(run.read_text())["variants"][variant]["metrics"]
    summary_b = json.loads(out.read_text())["variants"][f"{variant}_scored"]["metrics"]
    assert summary_a == summary_b


def test_two_stage_variant_needs_its_retrieval_run_for_recall(tiny, tmp_path: Path, per_query):
    """Without --retrieval-run the final ranking stands in for both stages: recall@1 then reads the reversed list."""
    es, run = tiny
    export_trec(run, tmp_path)
    scored = score_run(tmp_path / "reversed.final.run", f"{es}@v1", "x", metrics=("recall@1", "hit@1"))
    original = {r["query_id"]: r for r in per_query(run, "reversed")}
    answerable = [r for r in scored.results if r.gold_doc_ids]
    assert all(r.metrics["hit@1"] == original[r.query_id]["metrics"]["hit@1"] for r in answerable)

    def first_stage_recall(qid: str, gold: list[str]) -> float:
        return score_query([d["doc_id"] for d in original[qid]["retrieved"]], [], gold, ("recall@1",))["recall@1"]

    assert any(r.metrics["recall@1"] != first_stage_recall(r.query_id, r.gold_doc_ids) for r in answerable)


def test_demo_bm25_variant_round_trips_to_the_last_digit(tmp_path: Path, per_query):
    """The bundled demo: evalkit run -> evalkit export --format trec -> evalkit score --run, all through the CLI."""
    runner = CliRunner()
    out = tmp_path / "demo.json"
    res = runner.invoke(cli, ["run", "--eval-set", str(REPO / "eval_sets" / "demo_kb.jsonl@v1"), "--graph-config",
                              str(REPO / "graph_configs" / "bm25.yaml"), "--output", str(out), "--no-mlflow",
                              "--no-progress"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["export", str(out), "--format", "trec", "--output", str(tmp_path / "trec")])
    assert res.exit_code == 0, res.output
    scored = tmp_path / "scored.json"
    res = _score_cli("--eval-set", str(REPO / "eval_sets" / "demo_kb.jsonl@v1"), "--run",
                     str(tmp_path / "trec" / "bm25.final.run"), "--name", "bm25_trec", "--output", str(scored))
    assert res.exit_code == 0, res.output
    ours, theirs = per_query(out, "bm25"), per_query(scored, "bm25_trec")
    assert len(ours) == 120 and sum(bool(r["gold_doc_ids"]) for r in ours) > 90
    for a, b in zip(ours, theirs, strict=True):
        assert (a["query_id"], a["metrics"]) == (b["query_id"], b["metrics"])
    assert json.loads(out.read_text())["variants"]["bm25"]["metrics"] == \
        json.loads(scored.read_text())["variants"]["bm25_trec"]["metrics"]
    # a scored variant pairs with a graph variant of the same eval set: compare and gate accept them
    res = runner.invoke(cli, ["compare", str(out), str(scored), "--variants", "demo:bm25,scored:bm25_trec",
                              "--resamples", "200"])
    assert res.exit_code == 0, res.output
    assert "scored:bm25_trec vs demo:bm25" in res.output and "+0.0000" in res.output
    res = runner.invoke(cli, ["gate", "--baseline", str(out), "--candidate", str(scored), "--metric", "ndcg@10",
                              "--max-drop", "0", "--resamples", "200"])
    assert res.exit_code == 1  # max-drop 0 with a zero difference: the bound 0 is not > 0 (strict), so no PASS
    res = runner.invoke(cli, ["gate", "--baseline", str(out), "--candidate", str(scored), "--metric", "ndcg@10",
                              "--max-drop", "0.001", "--resamples", "200"])
    assert res.exit_code == 0, res.output


def test_trec_ties_follow_trec_eval_and_numbers_match_pytrec_eval(tiny, tmp_path: Path):
    """A hand-made run with tied scores: evalkit orders as trec_eval does (score desc, doc id desc)."""
    es, _ = tiny
    run = tmp_path / "ties.run"
    run.write_text("q1 Q0 doc-b 1 2.0 mine\nq1 Q0 doc-a 2 2.0 mine\nq1 Q0 doc-c 3 1.0 mine\n"
                   "q3 Q0 doc-a 1 5 mine\nq3 Q0 doc-g 2 5 mine\nq3 Q0 doc-b 3 4 mine\nq3 Q0 doc-e 4 -1 mine\n"
                   "q4 Q0 doc-c 1 0.5 mine\n")
    assert read_run(run)["q1"].doc_ids() == ["doc-b", "doc-a", "doc-c"]   # tie 2.0: 'doc-b' > 'doc-a'
    assert read_run(run)["q3"].doc_ids() == ["doc-g", "doc-a", "doc-b", "doc-e"]
    scored = score_run(run, f"{es}@v1", "ties", metrics=("ndcg@10", "hit@1", "recall@3", "precision@5"))
    qrels = {r.query_id: {d: 1 for d in r.gold_doc_ids} for r in scored.results if r.gold_doc_ids}
    with run.open() as f:
        theirs = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "success_1", "recall_3", "P_5"}).evaluate(
            pytrec_eval.parse_run(f))
    mapping = {"ndcg@10": "ndcg_cut_10", "hit@1": "success_1", "recall@3": "recall_3", "precision@5": "P_5"}
    checked = 0
    for r in scored.results:
        if not r.gold_doc_ids:
            continue
        for ours, measure in mapping.items():
            assert r.metrics[ours] == pytest.approx(theirs.get(r.query_id, {}).get(measure, 0.0), abs=1e-12)
            checked += 1
    assert checked == 20
    assert next(r for r in scored.results if r.query_id == "q1").metrics["hit@1"] == 0.0  # doc-b first, not gold


def test_jsonl_run_and_per_query_file_as_run(tiny, tmp_path: Path, per_query, metrics):
    es, run = tiny
    rows = per_query(run, "bm25")
    jsonl = tmp_path / "run.jsonl"  # ids only, the evalkit per_query rows as they are, and {doc_id, score}
    jsonl.write_text("".join(json.dumps({"id": r["query_id"], "retrieved": [d["doc_id"] for d in r["reranked"]]})
                             + "\n" for r in rows[:3]) + "".join(json.dumps(r) + "\n" for r in rows[3:]))
    scored = score_run(jsonl, f"{es}@v1", "j", metrics=metrics)
    assert [r.metrics for r in scored.results] == [r["metrics"] for r in rows]
    dup = tmp_path / "dup.jsonl"  # a passage-level list mapped to documents: the first rank of a document counts
    dup.write_text(json.dumps({"id": "q1", "retrieved": ["doc-b", "doc-b", "doc-a"]}) + "\n")
    q1 = score_run(dup, f"{es}@v1", "d", metrics=("mrr@10",)).results[0]
    assert [d["doc_id"] for d in q1.reranked] == ["doc-b", "doc-a"] and q1.metrics["mrr@10"] == 0.5


def test_missing_queries_score_as_empty_rankings_and_are_announced(tiny, tmp_path: Path):
    es, _ = tiny
    run = tmp_path / "partial.run"
    run.write_text("q1 Q0 doc-a 1 3 t\nq2 Q0 doc-d 1 3 t\n")
    scored = score_run(run, f"{es}@v1", "p", metrics=("hit@5",))
    assert [r.metrics.get("hit@5") for r in scored.results] == [1.0, 1.0, 0.0, 0.0, None, 0.0]
    assert any("4 of 6 eval-set queries have no line" in n and "q3" in n for n in scored.notices)
    summary = write_scored(scored, RunOptions(output=tmp_path / "p.json", mlflow=False))
    assert summary.variants["p"].metrics["hit@5"] == pytest.approx(2 / 5)  # 5 answerable queries, 2 hits


def test_unknown_query_ids_are_listed_never_dropped(tiny, tmp_path: Path):
    es, _ = tiny
    run = tmp_path / "other.run"
    run.write_text("q1 Q0 doc-a 1 3 t\n" + "".join(f"x{i} Q0 doc-a 1 3 t\n" for i in range(8)))
    with pytest.raises(LocatedError) as err:
        score_run(run, f"{es}@v1", "o")
    msg = str(err.value)
    assert msg.startswith(f"{run}:2: id: 8 query id(s) are not in eval set tiny v1")
    assert "'x0' (line 2)" in msg and "'x4' (line 6)" in msg and "... and 3 more" in msg and "'x5'" not in msg


@pytest.mark.parametrize("text, where", [
    ("q1 Q0 doc-a 1 3\n", "expected 6 columns"),
    ("q1 0 doc-a 1\n", "looks like a qrels line"),
    ("q1 Q0 doc-a 1 high t\n", "score: column 5 must be a number"),
    ("q1 Q0 doc-a 1 nan t\n", "finite"),
    ("q1 Q0 doc-a 1 3 t\nq1 Q0 doc-a 2 2 t\n", ":2: docid: document 'doc-a' is listed twice"),
    ("q1 Q0 doc-a 1 3 bm25.retrieval\nq1 Q0 doc-b 1 3 bm25.final\n", ":2: tag: a second run tag"),
])
def test_bad_trec_lines_name_file_line_and_field(tiny, tmp_path: Path, text: str, where: str):
    es, _ = tiny
    run = tmp_path / "bad.run"
    run.write_text(text)
    with pytest.raises(LocatedError, match=where.replace("(", r"\(")) as err:
        score_run(run, f"{es}@v1", "b")
    assert str(err.value).startswith(str(run))


@pytest.mark.parametrize("line, where", [
    ("{not json", "1: not valid JSON"),
    ('{"retrieved": []}', "1: id: missing"),
    ('{"id": "q1"}', "1: retrieved: missing"),
    ('{"id": "q1", "retrieved": "doc-a"}', "1: retrieved: expected a list"),
    ('{"id": "q1", "retrieved": [{"doc_id": "doc-a", "score": "high"}]}', "1: retrieved[0].score"),
    ('{"id": "q1", "retrieved": [null]}', "1: retrieved[0]: expected a document id"),
    ('{"id": "q1", "query_id": "q2", "retrieved": []}', "1: id: 'id' and 'query_id' differ"),
])
def test_bad_jsonl_run_lines(tiny, tmp_path: Path, line: str, where: str):
    es, _ = tiny
    run = tmp_path / "bad.jsonl"
    run.write_text(line + "\n")
    with pytest.raises(LocatedError, match=where.replace("[", r"\[").replace("(", r"\(")):
        score_run(run, f"{es}@v1", "b")


def test_duplicate_jsonl_query_and_foreign_id_scheme_are_refused(tiny, tmp_path: Path):
    es, _ = tiny
    run = tmp_path / "dup.jsonl"
    run.write_text('{"id": "q1", "retrieved": ["doc-a"]}\n{"id": "q1", "retrieved": ["doc-b"]}\n')
    with pytest.raises(LocatedError, match=r":2: id: query 'q1' is listed twice \(first on line 1\)"):
        score_run(run, f"{es}@v1", "d")
    foreign = tmp_path / "foreign.run"
    foreign.write_text("q1 Q0 D1 1 3 t\nq2 Q0 D4 1 3 t\n")
    with pytest.raises(LocatedError, match="none of the 2 document ids is in the corpus"):
        score_run(foreign, f"{es}@v1", "f")
    some = tmp_path / "some.run"
    some.write_text("q1 Q0 doc-a 1 3 t\nq1 Q0 D9 2 2 t\n")
    assert any("1 document id(s)" in n and "D9" in n for n in score_run(some, f"{es}@v1", "s").notices)


def test_cli_refuses_mixed_modes_and_writes_run_files(tiny, tmp_path: Path):
    es, run = tiny
    export_trec(run, tmp_path)
    res = CliRunner().invoke(cli, ["score", "--run", str(tmp_path / "bm25.final.run"), "--name", "x", "--output",
                                   str(tmp_path / "x.json")])
    assert res.exit_code == 2 and "--run needs --eval-set" in res.output
    res = CliRunner().invoke(cli, ["score", "--eval-set", f"{es}@v1", "--name", "x", "--output", str(tmp_path / "x.json")])
    assert res.exit_code == 2 and "give one of --run" in res.output
    res = _score_cli("--eval-set", f"{es}@v1", "--run", str(tmp_path / "bm25.final.run"), "--name", "x",
                     "--output", str(tmp_path / "x.json"))
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "x.json").read_text())
    assert summary["eval_set"]["name"] == "tiny" and summary["eval_set"]["kind"] == "eval_set"
    assert Path(summary["eval_set"]["path"]).is_absolute()
    assert summary["variants"]["x"]["source"]["kind"] == "run"
    meta = json.loads((tmp_path / "x" / "x" / "run.json").read_text())
    assert meta["eval_set_sha256"] == summary["eval_set"]["sha256"] and meta["source"]["sha256"]


def test_scored_output_is_logged_to_mlflow_and_read_by_report_and_export(tiny, tmp_path: Path):
    """The same files and MLflow runs as `evalkit run`: report, export and load_run read them unchanged."""
    from evalkit.analysis.runs import load_run

    es, run = tiny
    export_trec(run, tmp_path / "trec")
    out = tmp_path / "scored.json"
    res = CliRunner().invoke(cli, ["score", "--eval-set", f"{es}@v1", "--run", str(tmp_path / "trec" / "bm25.final.run"),
                                   "--name", "bm25_trec", "--output", str(out)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    summary = json.loads(out.read_text())
    run_id = summary["variants"]["bm25_trec"]["mlflow_run_id"]
    assert run_id and summary["mlflow"]["parent_run_id"]
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=summary["mlflow"]["tracking_uri"])
    child = client.get_run(run_id)
    assert child.data.params["source.kind"] == "run" and child.data.metrics["ndcg_at_10"] == \
        pytest.approx(summary["variants"]["bm25_trec"]["metrics"]["ndcg@10"])
    from_mlflow = load_run(summary["mlflow"]["parent_run_id"], summary["mlflow"]["tracking_uri"])
    assert from_mlflow.results("bm25_trec")[0].metrics == load_run(out).results("bm25_trec")[0].metrics
    res = CliRunner().invoke(cli, ["report", str(out), "--no-mlflow"], catch_exceptions=False)
    assert res.exit_code == 0 and "bm25_trec: funnel" in res.output
    res = CliRunner().invoke(cli, ["export", str(out), "--format", "csv"], catch_exceptions=False)
    assert res.exit_code == 0
    import pandas as pd

    table = pd.read_csv(out.with_suffix(".csv"))
    assert len(table) == 6 and set(table["variant"]) == {"bm25_trec"}


def test_relevance_level_and_trec_ties_as_in_run_match_pytrec_eval(tmp_path: Path):
    """``score --relevance-level 2 --ties trec`` on a graded set and a JSONL run with ties = pytrec_eval -l 2."""
    from fakes import DOCS

    from evalkit.evalsets import freeze

    (tmp_path / "corpora").mkdir()
    corpus = tmp_path / "corpora" / "graded.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in DOCS))
    graded = {"g1": {"doc-a": 2, "doc-b": 1}, "g2": {"doc-c": 1, "doc-d": 3}, "g3": {"doc-e": 2}}
    es = tmp_path / "graded.jsonl"
    es.write_text("".join(json.dumps({"id": q, "question": f"question {q}", "relevant_doc_ids": sorted(g),
                                      "relevance": g, "type": "single", "lang": "en"}) + "\n"
                          for q, g in graded.items()))
    freeze(es, corpus=str(corpus))
    ranked = {"g1": [("doc-b", 3.0), ("doc-c", 2.0), ("doc-a", 2.0)],     # doc-c / doc-a tied
              "g2": [("doc-c", 1.0), ("doc-d", 1.0), ("doc-f", 0.5)],     # the grade-3 document tied with a grade-1
              "g3": [("doc-a", 4.0), ("doc-g", 1.0), ("doc-e", 1.0)]}
    run = tmp_path / "run.jsonl"
    run.write_text("".join(json.dumps({"id": q, "retrieved": [{"doc_id": d, "score": s} for d, s in r]}) + "\n"
                           for q, r in ranked.items()))
    metrics = ["recall@2", "mrr@10", "ndcg@10", "hit@1", "precision@2"]
    want = pytrec_eval.RelevanceEvaluator(graded, {"recall_2", "recip_rank", "ndcg_cut_10", "success_1", "P_2"},
                                          relevance_level=2).evaluate(
        {q: {d: s for d, s in r} for q, r in ranked.items()})
    names = {"recall@2": "recall_2", "mrr@10": "recip_rank", "ndcg@10": "ndcg_cut_10", "hit@1": "success_1",
             "precision@2": "P_2"}
    out = tmp_path / "r" / "s.json"
    args = ["--eval-set", f"{es}@v1", "--run", str(run), "--run-format", "jsonl", "--name", "mine",
            "--output", str(out), *[a for m in metrics for a in ("--metric", m)]]
    res = _score_cli(*args, "--relevance-level", "2", "--ties", "trec")
    assert res.exit_code == 0, res.output
    summary = json.loads(out.read_text())
    assert summary["scoring"] == {"relevance_level": 2, "ties": "trec"}  # compare and gate read it from here
    lines = [json.loads(x) for x in (out.with_suffix("") / "mine" / "per_query.jsonl").read_text().splitlines()]
    for line in lines:
        for ours, theirs in names.items():
            assert line["metrics"][ours] == pytest.approx(want[line["query_id"]][theirs], abs=1e-12), (line, ours)
    # the defaults (level 1, the file's own order) give other numbers on this run: the options are applied
    plain = tmp_path / "p" / "s.json"
    assert _score_cli(*[a if a != str(out) else str(plain) for a in args]).exit_code == 0
    plain_lines = [json.loads(x) for x in (plain.with_suffix("") / "mine" / "per_query.jsonl").read_text().splitlines()]
    assert [x["metrics"] for x in plain_lines] != [x["metrics"] for x in lines]
    assert json.loads(plain.read_text())["scoring"] == {"relevance_level": 1, "ties": "pipeline"}
