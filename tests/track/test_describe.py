"""``evalkit run --dry-run`` states what MLflow will receive, and logs nothing."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from evalkit.cli import cli

REPO = Path(__file__).resolve().parents[2]


def test_dry_run_lists_what_mlflow_will_receive(tmp_path: Path):
    out = tmp_path / "res" / "x.json"
    res = CliRunner().invoke(cli, ["run", "--eval-set", str(REPO / "eval_sets" / "demo_kb.jsonl"),
                                   "--graph-config", str(REPO / "graph_configs" / "bm25.yaml"),
                                   "--graph-config", str(REPO / "graph_configs" / "rag_extractive.yaml"),
                                   "--output", str(out), "--dry-run"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())                      # the lines are wrapped at 118 columns
    assert f"MLflow: store sqlite:///{(tmp_path / 'res' / 'mlflow.db').as_posix()}" in text
    assert f"artifacts in {tmp_path / 'res' / 'mlartifacts'}" in text and "background worker" in text
    assert "eval set demo_kb@v1 as dataset input" in text
    assert "<metric>/<variant> (hit@5, mrr@10, ndcg@10, recall@20 + faithfulness, hallucination_rate" in text
    assert "2 child run(s), one per variant" in text
    assert "plus its first 10 other queries (--trace-all: all 120)" in text
    assert "assessments per trace: hit@5, mrr@10, ndcg@10, recall@20, faithfulness, hallucinated" in text
    lines = res.output.splitlines()
    mlflow_lines = lines[next(i for i, line in enumerate(lines) if line.startswith("MLflow: store")):]
    assert len(mlflow_lines) >= 4 and max(len(line) for line in mlflow_lines) <= 120
    assert not (tmp_path / "res").exists()                   # nothing logged, nothing written

    res = CliRunner().invoke(cli, ["run", "--eval-set", str(REPO / "eval_sets" / "demo_kb.jsonl"),
                                   "--graph-config", str(REPO / "graph_configs" / "bm25.yaml"),
                                   "--output", str(out), "--dry-run", "--trace-all", "--trace-limit", "5"])
    text = " ".join(res.output.split())
    assert "all 120 queries of each variant (120 traces), at most 5 per variant" in text
    res = CliRunner().invoke(cli, ["run", "--eval-set", str(REPO / "eval_sets" / "demo_kb.jsonl"),
                                   "--graph-config", str(REPO / "graph_configs" / "bm25.yaml"),
                                   "--output", str(out), "--dry-run", "--no-mlflow"])
    assert "MLflow" not in res.output
