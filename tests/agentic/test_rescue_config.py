"""graph_configs/agentic_rescue.yaml: a loop built to rescue queries, and the words under the agentic table.

The run is ``demo_slice_run`` (tests/conftest.py: every bundled config on 12 demo questions, real
models). Its counts are checked against the same config run with ``max_attempts: 1`` on the same
slice: for a retrieval-only variant the rescued queries are exactly those whose final hit@5 is 1
while the one-attempt run's is 0, the harmed ones the reverse. The sentence under the agentic table
(evalkit.analysis.loop_reading) is recomputed from the per-query records.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from evalkit.analysis.loop_reading import loop_reading
from evalkit.evalsets import load_eval_set
from evalkit.graph import config_from_dict
from evalkit.run.runner import RunOptions, run_eval
from evalkit.runstore import read_results

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "graph_configs" / "agentic_rescue.yaml"


@pytest.fixture(scope="module")
def runs(demo_slice_run: Path, tmp_path_factory) -> dict:
    """agentic_rescue's records from the bundled slice run, and the max_attempts: 1 run of the same slice."""
    data = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    data["name"] = "agentic_rescue_max1"
    data["nodes"]["grade"]["params"]["max_attempts"] = 1
    eval_set = load_eval_set(str(demo_slice_run.parent.parent / "slice.jsonl"))
    out = tmp_path_factory.mktemp("rescue") / "max1.json"
    run_eval(eval_set, [config_from_dict(data, source=str(CONFIG))], RunOptions(output=out, mlflow=False, progress=False),
             echo=lambda _: None)
    full = {r.query_id: r for r in read_results(demo_slice_run.with_suffix("") / "agentic_rescue" / "per_query.jsonl")}
    once = {r.query_id: r for r in read_results(out.with_suffix("") / data["name"] / "per_query.jsonl")}
    summary = json.loads(demo_slice_run.read_text(encoding="utf-8"))
    return {"full": full, "once": once, "metrics": summary["variants"]["agentic_rescue"]["metrics"]}


def test_rescued_are_exactly_the_queries_the_second_attempt_turned_into_hits(runs):
    full, once, m = runs["full"], runs["once"], runs["metrics"]
    assert set(full) == set(once) and len(full) == 12
    answerable = [q for q, r in full.items() if r.gold_doc_ids]
    def hit(r):
        return r.metrics["hit@5"]
    rescued = {q for q in answerable if hit(full[q]) == 1.0 and hit(once[q]) == 0.0}
    harmed = {q for q in answerable if hit(full[q]) == 0.0 and hit(once[q]) == 1.0}
    looped = {q for q, r in full.items() if r.metrics.get("looped")}
    assert rescued, "the slice must exercise a rescue (measured 2026-12-04: 2, both first-attempt misses)"
    assert {q for q, r in full.items() if r.metrics.get("rescued")} == rescued
    assert {q for q, r in full.items() if r.metrics.get("harmed")} == harmed
    futile = {q for q in looped & set(answerable) if hit(full[q]) == hit(once[q])}
    assert {q for q, r in full.items() if r.metrics.get("futile")} == futile
    # unanswerable questions have no retrieval outcome: looped there is undetermined
    assert m["loop_undetermined"] == len(looped - set(answerable))
    assert (m["rescued"], m["harmed"], m["futile"]) == (len(rescued), len(harmed), len(futile))
    assert not any(r.metrics.get("looped") for r in once.values())  # max_attempts 1 never loops
    for q in set(full) - looped:  # no loop: the very same ranking either way
        assert [d["doc_id"] for d in full[q].reranked] == [d["doc_id"] for d in once[q].reranked], q
    assert m["n_first_attempt_queries"] == len(answerable)
    assert m["n_first_attempt_hits"] == sum(hit(once[q]) for q in answerable)  # attempt 1 = the one-attempt run


def test_the_sentence_under_the_table_is_the_records_hand_count(runs):
    full, once = runs["full"], runs["once"]
    answerable = [q for q, r in full.items() if r.gold_doc_ids]
    flags = {k: sum(1 for r in full.values() if r.metrics.get(k)) for k in
             ("rescued", "harmed", "futile", "loop_undetermined", "rescued_new_docs")}
    looped = sum(1 for r in full.values() if r.metrics.get("looped"))
    first_hits = sum(1 for q in answerable if once[q].metrics["hit@5"] == 1.0)
    text = loop_reading("agentic_rescue", runs["metrics"])
    if flags["rescued"]:
        assert (f"agentic_rescue: reflection rescued {flags['rescued']} of the {looped} queries it looped on "
                f"({flags['rescued_new_docs']} of the {len(answerable) - first_hits} first-attempt misses found their "
                f"gold later; harmed {flags['harmed']}, futile {flags['futile']}") in text
    elif looped:
        assert text.startswith(f"agentic_rescue: reflection never rescued a query here: it looped on {looped} "
                               f"({flags['futile']} futile, {flags['harmed']} harmed")
        assert f"the first attempt already found the gold in {first_hits} of {len(answerable)}" in text
    else:
        assert text.startswith("agentic_rescue: the loop never ran here")
