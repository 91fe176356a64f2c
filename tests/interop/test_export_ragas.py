"""``evalkit export --format ragas``: the demo's answers out to ragas and back, with the same numbers.

The demo's answering pipeline (rag_extractive: e5 retrieval and re-scoring, the extractive
generator, the offline judge) runs on the 12-question demo slice (``demo_slice_answers``).
Its answers are exported as ragas samples, loaded by the installed ragas
(``EvaluationDataset.from_jsonl``), and scored back with ``evalkit score --answers``
three ways: the exported JSONL, the same samples as a Hugging Face dataset saved to disk
(``datasets.Dataset.from_list``), and the JSONL without ``retrieved_context_ids`` (contexts
as texts only, as most ragas users have them). Every answer metric of every query must equal
the run's own; the retrieval metrics, which a ragas sample can only give for the evidence
passages' documents, are recomputed here with pytrec_eval from the file.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.scoring import score_answers

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
RANKING = {"recall@20": "recall_20", "hit@5": "success_5", "mrr@10": "recip_rank", "ndcg@10": "ndcg_cut_10"}


@pytest.fixture(scope="module")
def exported(demo_slice_answers: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ragas_export") / "slice.ragas"
    res = CliRunner().invoke(cli, ["export", str(demo_slice_answers), "--format", "ragas", "--output", str(out)],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "rag_extractive.jsonl" in res.output
    return out / "rag_extractive.jsonl"


def _native(summary: Path) -> dict[str, dict]:
    path = summary.with_suffix("") / "rag_extractive" / "per_query.jsonl"
    return {r["query_id"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def _eval_set(summary: Path) -> str:
    return f"{summary.parent.parent / 'slice.jsonl'}@v1"


def test_the_export_is_a_ragas_dataset_with_the_passage_texts(exported: Path, demo_slice_answers: Path):
    pytest.importorskip("ragas")
    from ragas import EvaluationDataset

    from evalkit.analysis.labels import passage_texts
    from evalkit.analysis.runs import load_run

    ds = EvaluationDataset.from_jsonl(str(exported))
    native = _native(demo_slice_answers)
    assert len(ds.samples) == len(native) == 12
    texts = passage_texts(load_run(demo_slice_answers), "rag_extractive")
    for sample, row in zip(ds.samples, native.values(), strict=True):
        g = row["generation"]
        assert sample.user_input == row["question"] and sample.response == g["answer"]
        assert sample.retrieved_contexts == [texts[e[0]] for e in g["evidence"]]
        assert sample.retrieved_context_ids == [e[1] for e in g["evidence"]]
        assert sample.reference == g["reference_answer"]
        assert (sample.reference_context_ids or []) == row["gold_doc_ids"]
    # the slice exercises the root bug: some answer was shown two passages of one document
    assert any(len({e[1] for e in r["generation"]["evidence"]}) < len(r["generation"]["evidence"])
               for r in native.values())


@pytest.mark.parametrize("form", ["jsonl", "hf_dataset", "texts_only"])
def test_scored_back_every_answer_metric_of_every_query_is_the_runs(exported: Path, demo_slice_answers: Path,
                                                                    tmp_path: Path, form: str):
    samples = [json.loads(x) for x in exported.read_text(encoding="utf-8").splitlines()]
    source: Path = exported
    if form == "hf_dataset":
        import datasets

        source = tmp_path / "hf"
        datasets.Dataset.from_list(samples).save_to_disk(str(source))
    elif form == "texts_only":
        source = tmp_path / "texts_only.jsonl"
        source.write_text("".join(json.dumps({k: v for k, v in s.items() if k != "retrieved_context_ids"},
                                             ensure_ascii=False) + "\n" for s in samples), encoding="utf-8")
    scored = score_answers(source, "back", eval_set=_eval_set(demo_slice_answers), evidence_k=3)
    native = _native(demo_slice_answers)
    assert [r.query_id for r in scored.results] == list(native)
    answer_metrics = 0
    for got in scored.results:
        want = native[got.query_id]["metrics"]
        answer = {m: v for m, v in want.items() if m not in RANKING}
        assert {m: got.metrics.get(m) for m in answer} == answer, got.query_id
        assert got.generation["used_documents"] == native[got.query_id]["generation"]["used_documents"]
        answer_metrics += len(answer)
    assert answer_metrics > 12 * 10
    means = {m: [r.metrics[m] for r in scored.results if r.metrics.get(m) is not None]
             for m in ("citation_recall", "citation_precision", "invalid_citation_rate")}
    assert means["citation_recall"] and min(means["citation_recall"]) >= 0  # defined: citations resolved
    assert sum(means["invalid_citation_rate"]) / len(means["invalid_citation_rate"]) < 0.5  # not the old 1.0


def test_retrieval_metrics_of_a_ragas_file_are_those_of_its_evidence_documents(exported: Path,
                                                                              demo_slice_answers: Path):
    import pytrec_eval

    samples = [json.loads(x) for x in exported.read_text(encoding="utf-8").splitlines()]
    scored = {r.query_id: r for r in score_answers(exported, "back", eval_set=_eval_set(demo_slice_answers),
                                                   evidence_k=3, metrics=list(RANKING)).results}
    qrels = {s["id"]: {d: 1 for d in s["reference_context_ids"]} for s in samples if s.get("reference_context_ids")}
    run = {}
    for s in samples:
        ids = list(dict.fromkeys(s["retrieved_context_ids"]))  # trec_eval: a document once, at its first rank
        run[s["id"]] = {d: float(len(ids) - i) for i, d in enumerate(ids)} or {"__none__": 0.0}
    want = pytrec_eval.RelevanceEvaluator(qrels, set(RANKING.values())).evaluate({q: run[q] for q in qrels})
    for qid, values in want.items():
        for ours, theirs in RANKING.items():
            if ours == "mrr@10":  # evalkit's mrr@k is recip_rank on the run cut to k: no ranking here is longer
                assert len(run[qid]) <= 10
            assert math.isclose(scored[qid].metrics[ours], values[theirs], abs_tol=1e-9), (qid, ours)
