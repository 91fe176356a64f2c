"""Every bundled graph config exports in every format, and the files read back to the run's numbers.

The run is ``demo_slice_run`` (tests/conftest.py): every ``graph_configs/*.yaml`` on
12 questions of the bundled demo (every type, both languages, two unanswerable) with
real models. ``evalkit export`` writes parquet, CSV and TREC from it.
Read back with pandas and pytrec_eval, every value is checked against the per-query
records the runner wrote.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import pytrec_eval
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.interop.export import FIXED_COLUMNS, LIST_COLUMNS

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted((REPO / "graph_configs").glob("*.yaml"))
N_ANSWERABLE = 10  # of the slice's 12 questions (tests/conftest.py: demo_slice_run)


@pytest.fixture
def bundled_run(demo_slice_run: Path) -> Path:
    return demo_slice_run
def _rows(run: Path, variant: str) -> list[dict]:
    return [json.loads(x) for x in (run.with_suffix("") / variant / "per_query.jsonl").read_text(encoding="utf-8")
            .splitlines() if x.strip()]


def _same(a, b) -> bool:
    if isinstance(b, float) and math.isnan(b):
        return a is None or (isinstance(a, float) and math.isnan(a))
    return a == pytest.approx(b)


def test_parquet_and_csv_hold_every_per_query_value(bundled_run: Path):
    runner = CliRunner()
    for fmt in ("parquet", "csv"):
        res = runner.invoke(cli, ["export", str(bundled_run), "--format", fmt])
        assert res.exit_code == 0, res.output
    parquet = pd.read_parquet(bundled_run.with_suffix(".parquet"))
    csv = pd.read_csv(bundled_run.with_suffix(".csv"))
    assert list(parquet.columns) == list(csv.columns)                   # one header, the same in both files
    assert len(set(parquet.columns)) == len(parquet.columns)             # unique names
    assert list(parquet.columns[:len(FIXED_COLUMNS)]) == list(FIXED_COLUMNS)
    metrics = list(parquet.columns[len(FIXED_COLUMNS):])
    assert {"answered", "abstained", "faithfulness", "hit@5", "rescued"} <= set(metrics)
    assert "hallucination_rate" not in metrics                           # variant-level only: no per-query column
    variants = [p.stem for p in CONFIGS]
    assert parquet["variant"].unique().tolist() == variants             # summary order (each file's name = its stem)
    checked = 0
    for variant in variants:
        rows = _rows(bundled_run, variant)
        p = parquet[parquet.variant == variant].reset_index(drop=True)
        c = csv[csv.variant == variant].reset_index(drop=True)
        assert p["query_id"].tolist() == [r["query_id"] for r in rows] == c["query_id"].tolist()
        for i, r in enumerate(rows):
            for m in metrics:
                want = r["metrics"].get(m)
                want = float("nan") if want is None else float(want)
                assert _same(p.at[i, m], want) and _same(c.at[i, m], want), (variant, r["query_id"], m)
                checked += 1
            gen = r.get("generation") or {}
            assert list(p.at[i, "gold_doc_ids"]) == r["gold_doc_ids"] == json.loads(c.at[i, "gold_doc_ids"])
            assert list(p.at[i, "cited_docs"]) == list(gen.get("used_documents") or [])
            assert list(p.at[i, "evidence_passages"]) == [e[0] for e in gen.get("evidence") or []]
            if gen:
                assert p.at[i, "answer"] == gen["answer"]
            else:
                assert pd.isna(p.at[i, "answer"])
            assert p.at[i, "n_final"] == len(r["reranked"]) and p.at[i, "top_doc"] == (r["reranked"] or [{}])[0].get("doc_id")
            if gen:                                                     # the per-query flag and the record agree
                assert p.at[i, "answered"] == float(gen["answered"]) and p.at[i, "abstained"] == float(gen["abstained"])
    assert checked > 12 * 12 * 4
    for col in LIST_COLUMNS:
        assert csv[col].map(lambda x: isinstance(json.loads(x), list)).all()


# evalkit metric -> (stage of the TREC run, trec_eval measure)
TREC = {"recall@20": ("retrieval", "recall_20"), "hit@5": ("final", "success_5"), "ndcg@10": ("final", "ndcg_cut_10")}


def test_trec_files_rescore_to_the_run_with_pytrec_eval(bundled_run: Path, tmp_path: Path):
    out = tmp_path / "trec"
    res = CliRunner().invoke(cli, ["export", str(bundled_run), "--format", "trec", "-o", str(out)])
    assert res.exit_code == 0, res.output
    with (out / "qrels.txt").open() as f:
        qrels = pytrec_eval.parse_qrel(f)
    assert len(qrels) == N_ANSWERABLE
    for config in CONFIGS:
        rows = {r["query_id"]: r for r in _rows(bundled_run, config.stem) if r["gold_doc_ids"]}
        for stage in ("retrieval", "final"):
            with (out / f"{config.stem}.{stage}.run").open() as f:
                run = pytrec_eval.parse_run(f)
            measures = {m for s, m in TREC.values() if s == stage}
            scores = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
            for name, (s, measure) in TREC.items():
                if s != stage:
                    continue
                for qid, r in rows.items():
                    got = scores.get(qid, {}).get(measure, 0.0)     # an empty ranking is absent in trec_eval: 0
                    assert got == pytest.approx(r["metrics"][name], abs=1e-9), (config.stem, qid, name)
