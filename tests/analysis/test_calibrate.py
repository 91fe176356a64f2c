"""evalkit calibrate: thresholds by hand, objectives, bootstrap, per-reranker results, configs, MLflow."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from evalkit.analysis.calibrate import calibrate, candidates, choose, collect, curve, figures, roc_auc
from evalkit.analysis.guard_config import with_guard
from evalkit.analysis.runs import load_run
from evalkit.cli import cli
from evalkit.errors import EvalkitError
from evalkit.graph import config_from_dict, load_graph_config

from .conftest import qr, write_run

MODEL = "bi-encoder:test-model@1"


def _rows(pos: list[float], neg: list[float], *, threshold: float | None = 0.35, miss: list[float] = ()) -> list:
    """Unanswerable queries scored ``pos``, answerable hits ``neg``, answerable misses ``miss`` (gold not in top 5)."""
    def trace(score: float) -> list[dict]:
        ev = [{"step": 0, "node": "rerank", "type": "rerank", "started_at": 0.0, "duration_ms": 1.0,
               "wrote": {"rerank_model": MODEL}, "edge": "guard", "edge_reason": "default", "error": None}]
        if threshold is not None:
            ev.append({"step": 1, "node": "guard", "type": "guard", "started_at": 0.0, "duration_ms": 0.1,
                       "wrote": {"guard_threshold": threshold, "guard_triggered": score < threshold},
                       "edge": "end", "edge_reason": "default", "error": None})
        return ev
    rows = [qr(f"u{i}", [], top1=s, retrieved=["x"], trace=trace(s)) for i, s in enumerate(pos)]
    rows += [qr(f"a{i}", ["g"], {"hit@5": 1.0}, top1=s, retrieved=["g"], trace=trace(s)) for i, s in enumerate(neg)]
    rows += [qr(f"m{i}", ["g"], {"hit@5": 0.0}, top1=s, retrieved=["x"], trace=trace(s)) for i, s in enumerate(miss)]
    return rows


def test_separable_scores_by_hand():
    s = collect(_rows([0.1, 0.2, 0.3], [0.5, 0.6, 0.7, 0.8]), "v")
    assert s.rerankers == [MODEL] and s.current_threshold == 0.35 and s.excluded == 0
    c = calibrate(s, "f1", n_resamples=500)
    assert c.chosen["threshold"] == pytest.approx(0.4)           # midpoint between 0.3 and 0.5
    assert (c.chosen["precision"], c.chosen["recall"], c.chosen["f1"]) == (1.0, 1.0, 1.0)
    assert c.auc == 1.0 and c.n_positive == 3
    lo, hi = c.threshold_ci
    assert 0.3 <= lo <= 0.4 <= hi <= 0.55                        # resampled midpoints stay in (max pos, min neg)
    assert c.relative["threshold"] == pytest.approx(np.percentile([0.5, 0.6, 0.7, 0.8], 10))
    assert c.current["threshold"] == 0.35 and c.current["recall"] == 1.0
    assert calibrate(s, "precision", 0.9, n_resamples=200).chosen["threshold"] == pytest.approx(0.4)
    assert calibrate(s, "recall", 2 / 3, n_resamples=200).chosen["threshold"] == pytest.approx(0.25)


def test_f1_choice_is_the_brute_force_maximum_and_curves_are_consistent():
    rng = np.random.default_rng(3)
    pos, neg = list(rng.normal(0.4, 0.1, 15)), list(rng.normal(0.6, 0.1, 40))
    s = collect(_rows(pos, neg), "v")
    c = curve(s.scores, s.positive)
    i = choose(c, "f1")
    for t in candidates(s.scores):
        abstain = s.scores < t
        tp = np.sum(abstain & s.positive)
        f1 = 2 * tp / (abstain.sum() + s.positive.sum()) if tp else 0.0
        assert f1 <= c["f1"][i] + 1e-12
    assert np.all(np.diff(c["recall"]) >= 0) and np.all(np.diff(c["fpr"]) >= 0)
    # AUC equals the probability that a positive scores lower than a negative
    assert roc_auc(s.scores, s.positive) == pytest.approx(np.mean([p < n for p in pos for n in neg]))


def test_precision_objective_takes_the_best_recall_meeting_the_target():
    # pos 0.1 0.3 0.45; neg 0.2 0.5 0.6 0.7. Precision by t: 0.15 -> 1, 0.25 -> 1/2, 0.375 -> 2/3,
    # 0.475 -> 3/4, 0.55 -> 3/5 ...
    s = collect(_rows([0.1, 0.3, 0.45], [0.2, 0.5, 0.6, 0.7]), "v")
    c = calibrate(s, "precision", 0.8, n_resamples=200)
    assert c.chosen["threshold"] == pytest.approx(0.15) and c.chosen["precision"] == 1.0
    c = calibrate(s, "precision", 0.7, n_resamples=200)
    assert c.chosen["threshold"] == pytest.approx(0.475) and c.chosen["precision"] == pytest.approx(0.75)
    # pos 0.1 0.5; neg 0.3 0.6 0.7: t 0.55 and 0.65 both reach recall 1 with precision >= 0.5;
    # the lower one abstains on fewer answerable queries (precision 2/3 against 1/2)
    s = collect(_rows([0.1, 0.5], [0.3, 0.6, 0.7]), "v")
    c = calibrate(s, "precision", 0.5, n_resamples=100)
    assert c.chosen["threshold"] == pytest.approx(0.55) and c.chosen["precision"] == pytest.approx(2 / 3)
    none = calibrate(collect(_rows([0.9], [0.1, 0.2]), "v"), "precision", 0.99, n_resamples=100)
    assert none.chosen is None and none.threshold_ci is None


def test_positive_definition_is_an_option():
    rows = _rows([0.1], [0.8, 0.9], miss=[0.2, 0.85])
    assert collect(rows, "v", "unanswerable").positive.sum() == 1
    s = collect(rows, "v", "unanswerable-or-miss")
    assert s.positive.sum() == 3 and calibrate(s, positive="unanswerable-or-miss", n_resamples=100).n_positive == 3
    with pytest.raises(EvalkitError, match="valid: unanswerable, unanswerable-or-miss"):
        collect(rows, "v", "everything")


def test_refuses_without_scores_or_without_both_classes():
    with pytest.raises(EvalkitError, match="no top-1 rerank scores"):
        collect([qr("q", ["g"], {"hit@5": 1.0})], "v")
    with pytest.raises(EvalkitError, match="no positive query"):
        calibrate(collect(_rows([], [0.5, 0.6]), "v"))


def test_seeded_and_figures_are_pngs():
    s = collect(_rows([0.1, 0.35, 0.3], [0.32, 0.6, 0.7, 0.8]), "v")
    a, b = calibrate(s, n_resamples=300, seed=4), calibrate(s, n_resamples=300, seed=4)
    assert a.threshold_ci == b.threshold_ci and a.out_of_bag == b.out_of_bag
    rows = _rows([0.1, 0.35, 0.3], [0.32, 0.6, 0.7, 0.8])
    shuffled = calibrate(collect(rows[::-1], "v"), n_resamples=300, seed=4)   # record order does not matter
    assert shuffled.threshold_ci == a.threshold_ci and shuffled.precision_ci == a.precision_ci
    figs = figures(a, s)
    assert set(figs) == {"histogram.png", "roc.png", "pr.png"}
    assert all(png.startswith(b"\x89PNG") for png in figs.values())


def test_two_rerankers_get_two_thresholds(rerankers: Path, tmp_path: Path):
    """e5 and MiniLM score on different scales: each gets its own threshold, and the report says so."""
    res = CliRunner().invoke(cli, ["calibrate", str(rerankers), "--no-mlflow", "--resamples", "300",
                                   "--out-dir", str(tmp_path / "cal")])
    assert res.exit_code == 0, res.output
    out = res.output
    assert "variant rerank_e5" in out and "variant rerank_minilm" in out
    assert "multilingual-e5" in out and "MiniLM" in out
    assert "rerankers differ" in out and "valid for its own reranker only" in out
    t = {v: json.loads((tmp_path / "cal" / v / "calibration.json").read_text())["chosen"]["threshold"]
         for v in ("rerank_e5", "rerank_minilm")}
    assert t["rerank_e5"] > 0.7 and t["rerank_minilm"] < 0.6     # e5 cosines sit far higher than MiniLM's
    assert (tmp_path / "cal" / "rerank_e5" / "roc.png").read_bytes().startswith(b"\x89PNG")


def test_write_config_absolute_and_relative(rerankers: Path, tmp_path: Path):
    out = tmp_path / "guard.yaml"
    res = CliRunner().invoke(cli, ["calibrate", str(rerankers), "--variant", "rerank_e5", "--no-mlflow",
                                   "--resamples", "200", "--out-dir", str(tmp_path / "c"), "--write-config", str(out)])
    assert res.exit_code == 0, res.output
    cal = json.loads((tmp_path / "c" / "rerank_e5" / "calibration.json").read_text())
    text = out.read_text()
    assert text.startswith("# calibrated by `evalkit calibrate`") and "multilingual-e5" in text.splitlines()[1]
    config = load_graph_config(out)
    assert config.name == "rerank_e5_calibrated"
    assert config.nodes["guard"]["params"]["mode"] == "absolute"
    assert config.nodes["guard"]["params"]["threshold"] == pytest.approx(cal["chosen"]["threshold"], abs=1e-6)
    rel = tmp_path / "rel.yaml"
    res = CliRunner().invoke(cli, ["calibrate", str(rerankers), "--variant", "rerank_e5", "--no-mlflow",
                                   "--resamples", "200", "--out-dir", str(tmp_path / "c"), "--write-config", str(rel),
                                   "--rule", "relative", "--percentile", "20"])
    assert res.exit_code == 0, res.output
    params = load_graph_config(rel).nodes["guard"]["params"]
    from evalkit.nodes.guard import Guard, GuardParams

    guard = Guard("guard", GuardParams(**params))       # the node reads the run's per_query.jsonl itself
    cal = json.loads((tmp_path / "c" / "rerank_e5" / "calibration.json").read_text())
    assert guard.threshold == pytest.approx(cal["relative"]["threshold"])
    res = CliRunner().invoke(cli, ["calibrate", str(rerankers), "--no-mlflow", "--write-config", str(rel)])
    assert res.exit_code == 2 and "exactly one --variant" in res.output


def test_with_guard_inserts_a_guard_after_the_reranker():
    config = config_from_dict({"name": "r", "nodes": {
        "retrieve": {"type": "retrieve", "params": {"bm25": {}}}, "rerank": {"type": "rerank", "params": {}}},
        "edges": {"start": "retrieve", "retrieve": "rerank", "rerank": "end"}})
    new = with_guard(config, threshold=0.42)
    assert new.edges == {"start": "retrieve", "retrieve": "rerank", "rerank": "guard", "guard": "end"}
    assert new.routes == {"guard": {"field": "guard_triggered", "cases": {True: "end"}}}
    assert new.nodes["guard"]["params"] == {"mode": "absolute", "threshold": 0.42, "min_documents": 1,
                                            "evidence_k": 5}
    assert config_from_dict(new.to_dict()).to_dict() == new.to_dict()      # round-trips through the loader


def test_figures_logged_to_the_variants_mlflow_run(tmp_path: Path, mlflow_store):
    from mlflow import MlflowClient

    mlflow_store(tmp_path)
    mlflow_store(tmp_path / "bare")
    path = write_run(tmp_path, "ml", {"v": _rows([0.1, 0.2, 0.3], [0.5, 0.6, 0.7, 0.8])}, log_mlflow=True)
    run = load_run(path)
    child = run.variant("v").mlflow_run_id
    res = CliRunner().invoke(cli, ["calibrate", str(path), "--resamples", "200"])
    assert res.exit_code == 0, res.output
    assert f"to the variant's run {child}" in res.output
    client = MlflowClient(run.tracking_uri)
    logged = {Path(a.path).name for a in client.list_artifacts(child, "calibration/f1-unanswerable")}
    assert logged == {"histogram.png", "roc.png", "pr.png", "calibration.json"}
    assert client.get_run(child).data.tags["evalkit.calibrate.threshold"] == "0.400000"
    # a run without MLflow ids: a new run in the store beside the results
    bare = write_run(tmp_path / "bare", "bare", {"v": _rows([0.1, 0.2], [0.5, 0.6])})
    res = CliRunner().invoke(cli, ["calibrate", str(bare), "--resamples", "200"])
    assert res.exit_code == 0 and "to a new run" in res.output and (tmp_path / "bare" / "mlflow.db").exists()
