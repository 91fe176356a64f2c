"""Rescue accounting credits the loop with what it changed: on every bundled looping config, the
per-query rescued / harmed / futile flags equal the outcome differences against the same config
run with ``max_attempts: 1`` on its gates (the counterfactual, computed here by running it)."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from evalkit.evalsets import freeze, load_eval_set
from evalkit.graph import config_from_dict, node_types
from evalkit.graph.schema import Role
from evalkit.run.runner import RunOptions, run_eval

REPO = Path(__file__).resolve().parents[2]


def _looping_configs() -> list[str]:
    """Every bundled config with a gate (a grader or checker node): the configs whose loops are credited."""
    types = node_types()
    out = []
    for path in sorted((REPO / "graph_configs").glob("**/*.yaml")):
        nodes = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("nodes") or {}
        if any(getattr(types.get(spec.get("type")), "role", None) in (Role.GRADER, Role.CHECKER)
               for spec in nodes.values()):
            out.append(str(path.relative_to(REPO / "graph_configs")))
    return out


LOOPING = _looping_configs()
# agentic_reflect loops on these demo questions (measured on the full demo, 2026-12-01: 14 of 120, 9 of them
# unanswerable), plus a few it answers straight; modular_rag's offline self-check passes every extractive answer
# on the demo, so it never loops there (its equality check below still runs on every query)
LOOPED = ("q030", "q032", "q067", "q077", "q096", "q109", "q110", "q111", "q113", "q114", "q115", "q116", "q118",
          "q120")
STRAIGHT = ("q001", "q002", "q003", "q050", "q108")


@pytest.fixture(scope="module")
def subset(tmp_path_factory):
    """The demo questions agentic_reflect loops on, and a few it does not."""
    lines = (REPO / "eval_sets" / "demo_kb.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    keep = [line for line in lines if json.loads(line)["id"] in LOOPED + STRAIGHT]
    path = tmp_path_factory.mktemp("cf") / "demo_cf.jsonl"
    path.write_text("".join(keep), encoding="utf-8")
    freeze(path, corpus=str(REPO / "eval_sets" / "corpora" / "demo_kb.jsonl"))
    return load_eval_set(f"{path}@v1")


def one_attempt(data: dict) -> dict:
    out = copy.deepcopy(data)
    types = node_types()
    out["name"] = f"{data['name']}_max1"
    gates = [n for n, spec in out["nodes"].items() if types[spec["type"]].role in (Role.GRADER, Role.CHECKER)]
    assert gates, "a looping config has a gate"
    for n in gates:
        out["nodes"][n].setdefault("params", {})["max_attempts"] = 1
    return out


@pytest.mark.parametrize("name", LOOPING)
def test_rescue_counts_equal_the_max_attempts_1_counterfactual(subset, tmp_path: Path, name: str):
    data = yaml.safe_load((REPO / "graph_configs" / name).read_text(encoding="utf-8"))
    configs = [config_from_dict(data, source=str(REPO / "graph_configs" / name)),
               config_from_dict(one_attempt(data), source=str(REPO / "graph_configs" / name))]
    out = tmp_path / "run.json"
    run_eval(subset, configs, RunOptions(output=out, mlflow=False, progress=False), echo=lambda _: None)
    from evalkit.runstore import read_results

    full = {r.query_id: r for r in read_results(out.with_suffix("") / configs[0].name / "per_query.jsonl")}
    once = {r.query_id: r for r in read_results(out.with_suffix("") / configs[1].name / "per_query.jsonl")}
    looped = [q for q, r in full.items() if r.metrics.get("looped")]
    if name == "agentic_reflect.yaml":
        assert looped, "the subset must exercise the loop"
    counts = {"rescued": 0, "harmed": 0, "futile": 0}
    for q, r in full.items():
        good, stop1 = r.metrics.get("final_good"), once[q].metrics.get("final_good")
        assert once[q].metrics.get("looped") in (0.0, None)  # max_attempts 1 never loops
        if not r.metrics.get("looped"):
            assert good == stop1, q  # no loop: the same outcome either way
            continue
        assert r.metrics["counterfactual_good"] == stop1, q  # the trace-derived counterfactual is the real one
        if good is None or stop1 is None:
            assert r.metrics["rescued"] is None
            continue
        want = {"rescued": good == 1.0 and stop1 == 0.0, "harmed": good == 0.0 and stop1 == 1.0,
                "futile": good == stop1}
        for flag, expected in want.items():
            assert r.metrics[flag] == float(expected), (q, flag)
            counts[flag] += expected
    from evalkit.metrics.agentic import aggregate_loops

    agg = aggregate_loops(list(full.values()))
    assert {k: agg[k] for k in counts} == {k: float(v) for k, v in counts.items()}
