"""The design seeds (graph_configs/seeds/): each loads, is left out of `evalkit demo` (which runs only the top
level of graph_configs/), and runs on a slice of the demo with the mechanisms its comment names in its trace."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from demo_slices import demo_rows, freeze_slice

from evalkit.graph import load_graph_config

REPO = Path(__file__).resolve().parents[1]
SEEDS = sorted((REPO / "graph_configs" / "seeds").glob("*.yaml"))


def test_one_seed_per_design_each_loads():
    assert [p.stem for p in SEEDS] == ["agentic_reflection", "blueprint", "graphrag_scheduler", "module_graph"]
    for path in SEEDS:
        assert load_graph_config(path).name == f"seed_{path.stem}"


def test_the_demo_does_not_run_the_seeds():
    from click.testing import CliRunner

    from evalkit.commands.demo import demo

    result = CliRunner().invoke(demo, ["--config", "seed_blueprint"])
    assert result.exit_code == 2 and "no bundled config 'seed_blueprint'" in result.output


def _slice(folder: Path) -> Path:
    """Six demo questions (one of each type) over their gold documents and 10 others, frozen as an eval set."""
    rows, docs = demo_rows()
    picked: dict[str, dict] = {}
    for r in rows:
        picked.setdefault(r["type"], r)
    return freeze_slice(folder, "seed", list(picked.values()), docs, 10)


# per seed: state fields that must be written for at least one query (the mechanisms its comment names)
FIRES = {"seed_module_graph": {"rewrite_source", "guard_triggered", "evidence_tiers", "self_check_decision"},
         "seed_graphrag_scheduler": {"scheduler_class", "tool_stats", "graph_evidence", "graph_communities"},
         "seed_blueprint": {"compression", "evidence_text", "evidence"},
         "seed_agentic_reflection": {"safety", "channel_hits", "grade_decision", "plan", "retrieval_relaxed"}}


@pytest.mark.integration
def test_every_seed_runs_on_the_demo_and_its_mechanisms_fire(tmp_path: Path):
    from evalkit.evalsets import load_eval_set
    from evalkit.run.runner import RunOptions, run_eval

    configs = [load_graph_config(p) for p in SEEDS]
    out = tmp_path / "results" / "seed.json"
    summary = run_eval(load_eval_set(str(_slice(tmp_path))), configs,
                       RunOptions(output=out, progress=False, mlflow=False), echo=lambda m: None)
    for cfg in configs:
        v = summary.variants[cfg.name]
        assert v.n_failed == 0 and v.n_queries == 6, cfg.name
        rows = [json.loads(x) for x in (out.parent / "seed" / cfg.name / "per_query.jsonl")
                .read_text(encoding="utf-8").splitlines()]
        wrote = {k for r in rows for e in r["trace"] for k in (e["wrote"] or {})}
        assert FIRES[cfg.name] <= wrote, (cfg.name, FIRES[cfg.name] - wrote)
    rows = [json.loads(x) for x in (out.parent / "seed" / "seed_agentic_reflection" / "per_query.jsonl")
            .read_text(encoding="utf-8").splitlines()]
    assert any("title" in e["wrote"].get("channel_hits", {}) for r in rows for e in r["trace"] if e["wrote"])
