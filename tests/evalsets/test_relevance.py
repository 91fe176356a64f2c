"""Graded relevance end to end: the eval set format, a graded TREC import, a run, and trec_eval on its export."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytrec_eval

from evalkit.errors import EvalSetError
from evalkit.evalsets import load_eval_set
from evalkit.evalsets.evalset import parse_record
from evalkit.graph import config_from_dict
from evalkit.metrics import Scoring
from evalkit.run.runner import RunOptions, run_eval
from evalkit.runstore import read_results

BASE = {"id": "q1", "question": "what?", "relevant_doc_ids": ["d1", "d2"], "type": "single", "lang": "en"}


def test_relevance_is_optional_and_kept():
    assert parse_record("f.jsonl", 1, json.dumps(BASE)).grades == {"d1": 1, "d2": 1}
    rec = parse_record("f.jsonl", 1, json.dumps({**BASE, "relevance": {"d2": 3, "d1": 1}}))
    assert rec.relevance == {"d1": 1, "d2": 3} and rec.grades == {"d1": 1, "d2": 3}
    assert rec.to_dict()["relevance"] == {"d1": 1, "d2": 3}
    assert "relevance" not in parse_record("f.jsonl", 1, json.dumps(BASE)).to_dict()  # binary lines unchanged


@pytest.mark.parametrize("relevance, message", [
    (["d1"], "expected an object {doc id: grade}"),
    ({"d1": 2, "d2": 0}, "grade of 'd2' must be a positive integer"),
    ({"d1": 2, "d2": 1.5}, "grade of 'd2' must be a positive integer"),
    ({"d1": 2, "d2": True}, "grade of 'd2' must be a positive integer"),
    ({"d1": 2}, "'d2' is in relevant_doc_ids but has no grade"),
    ({"d1": 2, "d2": 1, "d9": 1}, "'d9' has a grade but is not in relevant_doc_ids"),
])
def test_bad_relevance_names_file_line_field(relevance, message):
    with pytest.raises(EvalSetError) as info:
        parse_record("set.jsonl", 7, json.dumps({**BASE, "relevance": relevance}))
    assert str(info.value).startswith("set.jsonl:7: relevance: ") and message in str(info.value)


# ---------------------------------------------------------------- import -> run -> export -> trec_eval

DOCS = {"d1": "aspirin lowers fever in adults", "d2": "aspirin and fever in children, a trial",
        "d3": "fever fever fever aspirin", "d4": "statins lower cholesterol", "d5": "cholesterol and diet",
        "d6": "cholesterol statins trial in adults"}
QUERIES = {"q1": "aspirin fever", "q2": "cholesterol statins", "q3": "fever trial adults"}
QRELS = [("q1", "d1", 2), ("q1", "d2", 1), ("q1", "d3", 0), ("q2", "d4", 3), ("q2", "d5", 1), ("q2", "d6", 2),
         ("q3", "d2", 1), ("q3", "d1", 1)]


@pytest.fixture
def graded_set(tmp_path: Path) -> Path:
    from evalkit.importers import BeirFiles, import_beir

    src = tmp_path / "src"
    src.mkdir()
    (src / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n"
                                              for d, t in DOCS.items()))
    (src / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES.items()))
    (src / "qrels.txt").write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in QRELS))  # TREC qrels, grades 0-3
    result = import_beir(BeirFiles(src / "corpus.jsonl", src / "queries.jsonl", src / "qrels.txt"), "graded",
                         tmp_path / "sets")
    assert result.n_graded == 2  # q1 and q2 have grades other than 1; q3 stays binary
    return result.eval_set_path


@pytest.mark.parametrize("scoring", [Scoring(), Scoring(relevance_level=2), Scoring(ties="trec"),
                                     Scoring(relevance_level=2, ties="trec")])
def test_a_graded_run_equals_trec_eval_on_its_export(tmp_path: Path, graded_set: Path, scoring: Scoring):
    from evalkit.interop.export import export_trec

    es = load_eval_set(f"{graded_set}@v1")
    assert es.records[0].relevance == {"d1": 2, "d2": 1}  # d3 judged 0: not relevant, not kept
    config = config_from_dict({"name": "bm25", "chunking": {"method": "document"},
                               "nodes": {"retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "en"}}}},
                               "edges": {"start": "retrieve", "retrieve": "end"}})
    out = tmp_path / "r" / "graded.json"
    metrics = ("ndcg@3", "ndcg@10", "recall@2", "hit@1", "precision@2", "mrr@10")
    run_eval(es, [config], RunOptions(output=out, metrics=metrics, mlflow=False, progress=False, scoring=scoring))
    assert json.loads(out.read_text())["scoring"] == scoring.to_dict()
    rows = read_results(out.with_suffix("") / "bm25" / "per_query.jsonl")
    assert rows[1].gold_relevance == {"d4": 3, "d5": 1, "d6": 2}
    export_trec(out, tmp_path / "trec")  # default scores: the order this run scored
    with open(tmp_path / "trec" / "qrels.txt") as f:
        qrels = pytrec_eval.parse_qrel(f)
    assert qrels["q2"] == {"d4": 3, "d5": 1, "d6": 2}
    with open(tmp_path / "trec" / "bm25.final.run") as f:
        run = pytrec_eval.parse_run(f)
    level = scoring.relevance_level
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.3,10", "recall.2", "success.1", "P.2", "recip_rank"},
                                            relevance_level=level).evaluate(run)
    for r in rows:
        t = theirs[r.query_id]
        assert r.metrics["ndcg@3"] == pytest.approx(t["ndcg_cut_3"], abs=1e-9)
        assert r.metrics["ndcg@10"] == pytest.approx(t["ndcg_cut_10"], abs=1e-9)
        assert r.metrics["recall@2"] == pytest.approx(t["recall_2"], abs=1e-9)
        assert r.metrics["hit@1"] == pytest.approx(t["success_1"], abs=1e-9)
        assert r.metrics["precision@2"] == pytest.approx(t["P_2"], abs=1e-9)
        assert r.metrics["mrr@10"] == pytest.approx(t["recip_rank"], abs=1e-9)  # rankings are shorter than 10


def test_runs_scored_differently_are_not_compared(tmp_path: Path, graded_set: Path):
    from evalkit.analysis.compare import compare_variants, resolve_variants
    from evalkit.analysis.pairing import DifferentEvalSetsError
    from evalkit.analysis.runs import load_run

    es = load_eval_set(f"{graded_set}@v1")
    config = config_from_dict({"name": "bm25", "nodes": {"retrieve": {"type": "retrieve", "params": {"bm25": {}}}},
                               "edges": {"start": "retrieve", "retrieve": "end"}})
    for name, scoring in (("a", Scoring()), ("b", Scoring(relevance_level=2))):
        run_eval(es, [config], RunOptions(output=tmp_path / f"{name}.json", mlflow=False, progress=False,
                                          scoring=scoring))
    runs = [load_run(str(tmp_path / f"{n}.json")) for n in "ab"]
    with pytest.raises(DifferentEvalSetsError, match="relevance level 1, ties pipeline.*relevance level 2"):
        compare_variants(resolve_variants(runs, "a:bm25,b:bm25"), None)


def test_import_dataset_keeps_a_relevance_column(tmp_path: Path):
    from evalkit.interop.importers import import_dataset

    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in DOCS.items()))
    (tmp_path / "q.jsonl").write_text(json.dumps({"question": "aspirin fever", "gold": ["d1", "d2"],
                                                  "grades": {"d1": 2, "d2": 1, "d3": 0}}) + "\n")
    result = import_dataset(tmp_path / "q.jsonl", "qa", tmp_path / "sets", corpus=tmp_path / "c.jsonl",
                            mapping={"relevant_doc_ids": "gold", "relevance": "grades"})
    record = load_eval_set(f"{result.eval_set_path}@v1").records[0]
    assert record.relevance == {"d1": 2, "d2": 1}  # the 0 is "judged not relevant": dropped
