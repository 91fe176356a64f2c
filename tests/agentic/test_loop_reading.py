"""The sentence under the agentic table, from hand-counted records (the traces of tests/agentic/test_metrics.py).

Hand count of the six records: answerable = rescued, lost_gold, futile, straight (4); their first attempts
found the gold in lost_gold and straight (2 of 4), so 2 first-attempt misses; looped = all but straight (5):
rescued 1 (its gold was new: 1 of the 2 misses), harmed 1, futile 3, undetermined 0.
"""
from __future__ import annotations

from evalkit.analysis.loop_reading import loop_reading, loop_readings
from evalkit.analysis.report import comparison_table
from evalkit.metrics.agentic import aggregate_loops
from evalkit.records import EvalSetRef, RunSummary, VariantSummary

from .test_metrics import futile, harmed, lost_gold, rescued, straight, unanswerable_refused


def test_counts_behind_the_sentence_by_hand():
    agg = aggregate_loops([rescued(), harmed(), lost_gold(), futile(), straight(), unanswerable_refused()])
    assert (agg["n_first_attempt_queries"], agg["n_first_attempt_hits"]) == (4.0, 2.0)


def test_a_loop_that_rescued():
    agg = aggregate_loops([rescued(), harmed(), lost_gold(), futile(), straight(), unanswerable_refused()])
    assert loop_reading("v", agg) == ("v: reflection rescued 1 of the 5 queries it looped on (1 of the 2 first-attempt "
                                      "misses found their gold later; harmed 1, futile 3): it harmed as many as it "
                                      "rescued, the loop does not pay")
    agg = aggregate_loops([rescued(), lost_gold(), futile(), straight()])  # no harm: no verdict against it
    assert loop_reading("v", agg) == ("v: reflection rescued 1 of the 3 queries it looped on (1 of the 2 first-attempt "
                                      "misses found their gold later; harmed 0, futile 2)")


def test_a_loop_that_never_rescued_says_consider_removing_it():
    # answerable lost_gold (first hit 1), futile (0), straight (1): the first attempt found the gold in 2 of 3
    agg = aggregate_loops([lost_gold(), futile(), straight(), unanswerable_refused()])
    assert loop_reading("agentic_reflect", agg) == (
        "agentic_reflect: reflection never rescued a query here: it looped on 3 (3 futile, 0 harmed); the first "
        "attempt already found the gold in 2 of 3 answerable queries; consider removing the loop")


def test_a_loop_that_never_ran():
    agg = aggregate_loops([straight(), straight()])
    assert loop_reading("m", agg) == ("m: the loop never ran here: every query passed its gate on the first attempt "
                                      "(the first attempt already found the gold in 2 of 2 answerable queries); this "
                                      "eval set does not exercise the loop")


def test_the_sentence_is_printed_under_the_agentic_table_and_variants_without_loops_get_none():
    agg = aggregate_loops([lost_gold(), futile(), straight(), unanswerable_refused()])
    ref = EvalSetRef(name="tiny", version=1, sha256="a" * 64, n_queries=4)
    summary = RunSummary(eval_set=ref, variants={
        "bm25": VariantSummary(metrics={"hit@5": 0.5}, n_failed=0, n_queries=4, n_excluded=1),
        "agentic_reflect": VariantSummary(metrics={"hit@5": 0.5, **agg}, n_failed=0, n_queries=4, n_excluded=1)},
        **{k: v for k, v in _summary_defaults().items()})
    assert loop_readings(summary) == [loop_reading("agentic_reflect", agg)]
    text = comparison_table(summary)
    block = text.split("agentic (reflection loops)", 1)[1]
    assert "agentic_reflect: reflection never rescued a query here" in " ".join(block.split())
    assert "n_first_attempt" not in text  # the counts are in the sentence, not columns


def _summary_defaults() -> dict:
    import dataclasses

    return {f.name: None for f in dataclasses.fields(RunSummary) if f.name not in ("eval_set", "variants")
            and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
