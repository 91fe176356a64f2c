"""Which table each metric is printed in (evalkit.analysis.concerns): the judge's three verdicts sit together."""
from __future__ import annotations

import pytest

from evalkit.analysis.concerns import concern, header


@pytest.mark.parametrize("name,table", [
    ("hallucination_rate", "answers"), ("hallucinated", "answers"), ("unverified_rate", "answers"),
    ("unverified", "answers"), ("claims_unverified", "answers"), ("n_no_checkable_claims", "answers"),
    ("faithfulness", "answers"), ("n_claims_escalated", "cost"), ("n_claims_judged", "cost"),
    ("recall@20", "retrieval"), ("rescued", "agentic")])
def test_each_metric_has_its_table(name, table):
    assert concern(name) == table


def test_the_answers_table_headers_of_the_new_figures():
    assert (header("unverified_rate"), header("n_no_checkable_claims"), header("n_claims_escalated")) == (
        "unverif", "no-claims", "claims to model")
