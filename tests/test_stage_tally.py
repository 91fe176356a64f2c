"""The split counter the abstention-stage tests use (tests/stage_tally.py): a reply near its threshold may be read
either way, every other reply only as it was. Hand-counted cases; no model runs."""
from __future__ import annotations

from stage_tally import Tally


def test_a_borderline_refusal_may_be_found_or_missed():
    found = Tally((28, 0, 2), (("r-1", True, 0.9003, 0.9),))  # read here as abstained
    assert found == (28, 0, 2) and found == (27, 0, 3)
    assert found != (29, 0, 1) and found != (28, 1, 2)
    missed = Tally((28, 0, 2), (("r-1", True, 0.8996, 0.9),))  # read here as an answer
    assert missed == (29, 0, 1) and missed != (27, 0, 3)


def test_a_borderline_answer_may_be_a_false_abstention_or_not():
    flagged = Tally((30, 1, 0), (("r-2", False, 0.8021, 0.8),))
    assert flagged == (30, 0, 0) and flagged == (30, 1, 0) and flagged != (30, 2, 0)


def test_without_a_borderline_reply_only_the_count_read_here_is_equal():
    assert Tally((1, 0, 0)) == (1, 0, 0) and Tally((1, 0, 0)) != (0, 0, 1)
    assert {"en": Tally((1, 0, 0))} == {"en": (1, 0, 0)} and {"en": Tally((1, 0, 0))} != {"en": (1, 0, 1)}


def test_two_borderline_replies_give_every_combination():
    both = Tally((10, 0, 2), (("a", True, 0.899, 0.9), ("b", True, 0.901, 0.9)))
    assert both.readings() == {(10, 0, 2), (11, 0, 1), (9, 0, 3)}
