"""Choice questions (evalkit.judges.choices): the option the evidence's values rule out, checked by hand."""
from __future__ import annotations

import pytest

from evalkit.judges.choices import Choice, choice_of, wrong_choice
from evalkit.judges.offline import OfflineJudge

BANDS = [("The Exies", "The Exies are an American rock band formed in 1997 in Los Angeles."),
         ("Circus Diablo", "Circus Diablo is an American rock band formed in early 2006 by Billy Morrison.")]
BRIDGES = [("杭州湾跨海大桥", "杭州湾跨海大桥全长36公里，2008年5月通车。"),
           ("胶州湾大桥", "胶州湾大桥全长41.58公里，2011年6月通车。")]


@pytest.mark.parametrize("question, expected", [
    ("Which band was formed first The Exies or Circus Diablo ?", Choice("The Exies", "Circus Diablo", "early")),
    ("Who is the oldest, Sid Haig or Vic Darchinyan?", Choice("Sid Haig", "Vic Darchinyan", "older")),
    ("Between Iain Banks and Irwin Shaw, which writer was born later?", Choice("Iain Banks", "Irwin Shaw", "late")),
    ("哪座桥更长，杭州湾跨海大桥还是胶州湾大桥？", Choice("杭州湾跨海大桥", "胶州湾大桥", "max")),
    ("杭州湾跨海大桥和胶州湾大桥哪个通车更早？", Choice("杭州湾跨海大桥", "胶州湾大桥", "early")),
    ("Which singer is American, Mark King or Nick Hexum?", None),  # no word that orders the two
    ("When was The Exies formed?", None),                            # no two options
])
def test_the_options_and_the_choice_word_are_read(question: str, expected: Choice | None) -> None:
    assert choice_of(question) == expected


@pytest.mark.parametrize("answer, wrong", [
    ("Circus Diablo", True),
    ("Circus Diablo came first; its founders were already established musicians.", True),
    ("The Exies", False),
    ("The Exies, formed in 1997, came well before Circus Diablo.", False),
    ("Unlike Circus Diablo, The Exies were formed first.", False),  # names both before the choice word: not read
    ("Both bands formed in the 1990s.", False),                     # picks neither
])
def test_the_pick_the_evidence_rules_out_is_wrong(answer: str, wrong: bool) -> None:
    reason = wrong_choice("Which band was formed first, The Exies or Circus Diablo?", answer, BANDS)
    assert (reason is not None) is wrong
    if wrong:
        assert reason == ("the evidence decides the choice against it: The Exies 1997, Circus Diablo 2006, "
                          "so the answer is The Exies")


def test_older_means_the_earlier_birth_date_and_chinese_lengths_compare_as_numbers() -> None:
    people = [("Sid Haig", "Sid Haig (born July 14, 1939) is an American actor."),
              ("Vic Darchinyan", "Vic Darchinyan (born 7 January 1976) is an Armenian-Australian boxer.")]
    q = "Who is older, Sid Haig or Vic Darchinyan?"
    assert wrong_choice(q, "Vic Darchinyan is older, since he was born in 1976.", people) is not None
    assert wrong_choice(q, "Sid Haig.", people) is None
    q_zh = "哪座桥更长，杭州湾跨海大桥还是胶州湾大桥？"
    assert wrong_choice(q_zh, "杭州湾跨海大桥更长。", BRIDGES) is not None
    assert wrong_choice(q_zh, "胶州湾大桥更长，全长41.58公里。", BRIDGES) is None


def test_no_value_for_an_option_or_equal_values_decide_nothing() -> None:
    q = "Which band was formed first, The Exies or Circus Diablo?"
    assert wrong_choice(q, "Circus Diablo", [BANDS[0], ("Circus Diablo", "Circus Diablo is a rock band.")]) is None
    same = [BANDS[0], ("Circus Diablo", "Circus Diablo is a rock band formed in 1997.")]
    assert wrong_choice(q, "Circus Diablo", same) is None


def test_the_judge_calls_the_wrong_pick_unsupported_though_the_name_is_in_the_evidence() -> None:
    judge = OfflineJudge()
    q = "Which band was formed first, The Exies or Circus Diablo?"
    wrong = judge.judge(q, "Circus Diablo", BANDS).claims
    assert [c.verdict for c in wrong] == ["unsupported"] and "the answer is The Exies" in wrong[0].reason
    assert "unsupported" not in {c.verdict for c in judge.judge(q, "The Exies", BANDS).claims}


@pytest.mark.parametrize("question, expected", [
    # found on the fresh set C (its development data since): options before the question word; 之间; a comma
    ("Isla Perdita or Tormund Island, which island is larger?", Choice("Isla Perdita", "Tormund Island", "max")),
    ("Halvorsen Tower or Meridian Plaza One: which building is taller?",
     Choice("Halvorsen Tower", "Meridian Plaza One", "max")),
    ("星垣科技和海川电器，哪家公司成立得更晚？", Choice("星垣科技", "海川电器", "late")),
    ("在东川大学和西岭师范大学之间，哪所学校历史更悠久？", Choice("东川大学", "西岭师范大学", "older")),
])
def test_more_ways_to_name_the_two_options(question: str, expected: Choice) -> None:
    assert choice_of(question) == expected


def test_the_value_may_sit_in_a_later_sentence_and_units_of_one_measure_compare() -> None:
    peaks = [("Mount Tarrow", "Mount Tarrow is a peak in British Columbia. Its summit stands at 4,980 m."),
             ("Pico Serrano", "Pico Serrano is a volcano in Chile. It reaches an elevation of 5,420 metres.")]
    q = "Which mountain is higher, Mount Tarrow or Pico Serrano?"
    assert wrong_choice(q, "Mount Tarrow", peaks) is not None and wrong_choice(q, "Pico Serrano", peaks) is None
    bridges = [("临江湾大桥", "临江湾大桥2009年建成通车，全长3.6公里。"), ("青澜跨海大桥", "青澜跨海大桥2015年建成，大桥全长4100米。")]
    q_zh = "哪座桥更长，临江湾大桥还是青澜跨海大桥？"
    assert wrong_choice(q_zh, "临江湾大桥", bridges) is not None      # 4,100 m > 3.6 km
    assert wrong_choice(q_zh, "青澜跨海大桥", bridges) is None


def test_two_values_of_one_measure_for_an_option_decide_nothing() -> None:
    plants = [("云雾杜鹃", "云雾杜鹃是常绿灌木，高可达4米。"), ("高山箭竹", "高山箭竹生长于山地，秆高1至3米，叶长5厘米。")]
    assert wrong_choice("哪种植物能长得更高，云雾杜鹃还是高山箭竹？", "高山箭竹", plants) is None


@pytest.mark.parametrize("answer, wrong", [
    # found by the cascade's tests: a sentence that states a value, or names an option after the choice word, picks
    # nothing; the option before the word, or before 比, is the pick
    ("Circus Diablo released an album in 2007.", False),          # names one option, states a value, no choice word
    ("That is about nine years more than Circus Diablo.", False),  # the option after the choice word
    ("Circus Diablo.", True),                                       # the option as the whole answer
    ("Circus Diablo was formed first.", True),
])
def test_what_an_answer_picks(answer: str, wrong: bool) -> None:
    reason = wrong_choice("Which band was formed first, The Exies or Circus Diablo?", answer, BANDS)
    assert (reason is not None) is wrong


def test_a_bi_comparison_picks_the_option_before_bi() -> None:
    q = "哪座桥更长，杭州湾跨海大桥还是胶州湾大桥？"
    assert wrong_choice(q, "杭州湾跨海大桥比胶州湾大桥更长。", BRIDGES) is not None
    assert wrong_choice(q, "胶州湾大桥比杭州湾跨海大桥更长。", BRIDGES) is None
