"""The named-metric registry (evalkit.metrics.catalog): every metric evalkit computes is registered once,
with a direction the analysis commands read instead of guessing from the name."""
from __future__ import annotations

import pytest

from evalkit.analysis import concerns, direction
from evalkit.metrics import catalog
from evalkit.metrics.answer import aggregate_answers, score_answer
from evalkit.metrics.catalog import NamedMetric, named_metric, register_metrics


def _answer_rows() -> list[tuple[bool, dict]]:
    """Three queries: a judged answer with one unsupported claim of three, an abstention, an unanswerable answered."""
    judged = {"claims": [{"verdict": "supported"}, {"verdict": "supported"}, {"verdict": "unsupported"}]}
    q1 = score_answer(answerable=True, answered=True, abstained=False, judgement=judged, answer="5000 元 [d1]",
                      reference="5,000元", cited_docs=["d1"], invalid_citations=1, gold=["d1"],
                      correctness={"verdict": "correct"})
    q2 = score_answer(answerable=True, answered=False, abstained=True, judgement=None, answer="", reference="x",
                      cited_docs=[], invalid_citations=0, gold=["d2"])
    q3 = score_answer(answerable=False, answered=True, abstained=False, judgement={"claims": []}, answer="y",
                      reference=None, cited_docs=[], invalid_citations=0, gold=[])
    return [(True, q1), (True, q2), (False, q3)]


def test_every_answer_metric_computed_is_registered():
    rows = _answer_rows()
    names = {k for _, m in rows for k in m} | set(aggregate_answers(rows))
    assert names >= {"faithfulness", "hallucinated", "hallucination_rate", "answer_em", "n_answered"}
    assert [n for n in sorted(names) if named_metric(n) is None] == []


def test_directions_come_from_the_registry():
    # hallucination_rate: 1 unsupported answer of 1 answered answerable judged -> lower is better
    assert direction.sign("hallucination_rate") == -1 and direction.sign("faithfulness") == 1
    assert direction.direction("abstain_rate_unanswerable") == "higher"
    assert direction.direction("abstain_rate_answerable") == "lower"
    assert direction.is_descriptive("block_rate") and direction.is_descriptive("n_answered")
    assert not direction.is_descriptive("hallucinated")
    # a ranking metric: higher; a name in no registry: higher, never guessed from its parts
    assert direction.higher_is_better("ndcg@10") and direction.higher_is_better("invalid_harm_latency")


def test_parameterised_names_match_their_pattern():
    assert named_metric("attempt3_hit@5").name == "attempt<N>_hit@5"
    assert concerns.header("attempt3_hit@5") == "hit@5(3)" and concerns.header("route_share.hr") == "hr"
    assert direction.sign("degraded.timeout") == -1 and concerns.is_count("degraded.timeout")


def test_per_query_hint_names_the_flag_and_the_defining_module():
    hint = direction.per_query_hint("tenant_leak_rate")
    assert "use 'tenant_leak'" in hint and "evalkit/metrics/tenancy.py" in hint
    assert direction.per_query_hint("hallucinated") == ""


def test_a_name_is_registered_once_and_definitions_are_checked():
    with pytest.raises(ValueError, match="registered twice"):
        register_metrics("answers", NamedMetric("faithfulness", "higher", "score", "again"))
    with pytest.raises(ValueError, match="direction must be one of"):
        register_metrics("answers", NamedMetric("x_test_metric", "up", "score", "d"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="one line"):
        register_metrics("answers", NamedMetric("y_test_metric", "higher", "score", "a\nb"))
    assert named_metric("x_test_metric") is None and named_metric("y_test_metric") is None


def test_every_registered_metric_has_a_definition_unit_and_known_concern():
    for m in catalog.all_metrics():
        assert m.definition and m.unit in catalog.UNITS and m.concern in catalog.CONCERNS, m.name
        assert m.direction in catalog.DIRECTIONS and m.source.startswith("evalkit.metrics."), m.name


def test_answers_table_columns_follow_the_registry_order():
    cols = [m.name for m in catalog.columns("answers")]
    assert cols[:3] == ["faithfulness", "hallucination_rate", "hallucinated"]
    # cited_gold_precision sits in the answers table (the name-part rule had put it under "other")
    assert concerns.concern("cited_gold_precision") == "answers"
    assert concerns.ordered(["answer_em", "n_answered", "faithfulness", "zzz"]) == [
        "faithfulness", "answer_em", "n_answered", "zzz"]
