"""The learned abstention stage (evalkit.models.abstention): the real e5 model and the shipped weights.

What is checked: the probability is the logistic of the shipped weights on e5's vector (recomputed by
hand); the stage only ever adds abstentions, on replies the rules call a plain or a partial answer (each at
its own threshold), and is on unless a config says ``none`` (tests/scoring/test_abstention_learned.py,
tests/nodes/test_generate.py); a reply that loops or only quotes its evidence is left to the rules; a bad name is
refused; the shipped weights are what benchmarks/abstention_train.py fits from the splits they name.
"""
from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest
from stage_tally import Tally, tally

from evalkit.models import abstention as stage
from evalkit.models.embedders import E5Embedder
from evalkit.text.abstention import detect_abstention

REPO = Path(__file__).resolve().parents[2]
WEIGHTS = REPO / "evalkit" / "models" / "data" / "abstention_e5.json"
# a refusal in a wording the rules do not know (written for this test; not in any split)
UNSEEN_REFUSAL = ("Good question! Our onboarding guide covers laptops, badges and the VPN, and HR can walk you "
                  "through the rest.")
ANSWERS = ["The hotel allowance is 900 per night in tier-one cities.", "出差住宿标准为一线城市每晚900元。",
           "No, contractors are not eligible for the bonus.", "Invoices above 5000 need director approval [doc-a]."]


def test_the_probability_is_the_logistic_of_the_shipped_weights_on_e5s_vector():
    data = json.loads(WEIGHTS.read_text(encoding="utf-8"))
    texts = [UNSEEN_REFUSAL, *ANSWERS]
    vectors = E5Embedder(num_threads=1).encode_passages(texts)
    by_hand = [1 / (1 + math.exp(-(math.fsum(w * float(v) for w, v in zip(data["weights"], vec, strict=True))
                                   + data["bias"]))) for vec in vectors]
    assert stage.learned("e5").probabilities(texts) == pytest.approx(by_hand, abs=1e-9)
    assert stage.learned("e5").threshold == data["threshold"]
    assert stage.learned("e5").threshold_partial == data["threshold_partial"]


def test_it_only_adds_abstentions_to_what_the_rules_call_an_answer():
    kept = {"The documents do not mention the parking fee.": "refusal",             # the rules' refusal
            "The warranty lasts two years; the documents don't say whether it covers batteries.": "partial",
            "": "empty",
            "Sorry, the service is temporarily unavailable, please try again later.": "error_reply"}
    for text, reason in kept.items():
        assert stage.detect(text, model="e5") == detect_abstention(text)
        assert detect_abstention(text).reason == reason
    # a user's not_pattern keeps an answer an answer, whatever the model thinks
    mine = stage.detect(UNSEEN_REFUSAL, model="e5", not_patterns=["onboarding guide"])
    assert (mine.abstained, mine.reason) == (False, "user_not_pattern")
    found = stage.detect(UNSEEN_REFUSAL, model="e5")
    assert (found.abstained, found.reason) == (True, "learned") and found.matched.startswith("e5 p=")
    assert detect_abstention(UNSEEN_REFUSAL).reason == "answer"  # the rules alone miss it
    for text in ANSWERS:  # plain answers stay answers
        assert stage.detect(text, model="e5") == detect_abstention(text)
    # no model (or none): the rules' finding exactly
    for text in [UNSEEN_REFUSAL, *ANSWERS, *kept]:
        assert stage.detect(text) == detect_abstention(text) == stage.detect(text, model=stage.OFF)


# a refusal the rules read as a partial answer (the second sentence looks like content); written for this test
# ("... The reservations desk handles changes" became a refusal when "who handles it" became a referral)
PARTIAL_REFUSAL = ("Unfortunately I cannot look up your booking. The reservations desk processes changes to existing "
                   "bookings.")


def test_a_partial_answer_is_read_at_its_own_threshold_and_never_without_one(monkeypatch):
    assert detect_abstention(PARTIAL_REFUSAL).reason == "partial"
    p = stage.probability("e5", PARTIAL_REFUSAL)
    shipped = stage.learned("e5")
    assert shipped.threshold_partial is not None and p >= shipped.threshold_partial  # the shipped weights take it
    found = stage.detect(PARTIAL_REFUSAL, model="e5")
    assert (found.abstained, found.reason) == (True, "learned") and "(partial by the rules)" in found.matched
    # the same probability, other thresholds: the partial threshold decides, not the answer's one
    for partial, answer, abstained in ((None, 0.0, False), (p + 0.01, 0.0, False), (p, 1.1, True)):
        monkeypatch.setattr(stage, "learned", lambda name, t=partial, a=answer: stage.LearnedAbstention(
            name, shipped.weights, shipped.bias, a, shipped.embedder, t))
        assert stage.detect(PARTIAL_REFUSAL, model="e5").abstained is abstained


def test_an_unknown_model_name_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="unknown abstention model 'e6'.*e5"):
        stage.check_name("e6")


def test_a_configs_model_is_a_stage_or_none_and_unset_means_the_default():
    assert [stage.config_name(v) for v in ("e5", "none", "off", "False", False, " None ")] == [
        "e5", "none", "none", "none", "none", "none"]
    assert (stage.resolve(None), stage.resolve("none"), stage.resolve("e5")) == ("e5", None, "e5")
    for bad in (True, 5, "e6"):
        with pytest.raises(ValueError, match="unknown abstention model.*choices: e5, or none"):
            stage.config_name(bad)


def test_a_generate_nodes_unknown_model_fails_at_load():
    from evalkit.nodes.generate import AbstentionParams

    assert AbstentionParams().model == stage.DEFAULT == "e5"
    assert AbstentionParams(model="e5").model == "e5" and AbstentionParams(model=False).model == "none"
    with pytest.raises(ValueError, match="unknown abstention model"):
        AbstentionParams(model="bert")


@pytest.mark.integration
def test_the_shipped_weights_are_what_the_training_script_fits():
    """benchmarks/abstention_train.py, run again: the same C, threshold and splits, weights within 1e-4."""
    spec = importlib.util.spec_from_file_location("abstention_train", REPO / "benchmarks" / "abstention_train.py")
    assert spec is not None and spec.loader is not None
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    shipped = json.loads(WEIGHTS.read_text(encoding="utf-8"))
    if train.engine_probe() != shipped["engine_probe"]:
        pytest.skip("this CPU's e5 vectors differ in their last digits from those the shipped weights were fitted on "
                    "(engine_probe in evalkit/models/data/abstention_e5.json): a fit here is another fit; the split "
                    "counts still hold (tests/stage_tally.py); check the fit on a machine whose probe matches")
    fresh, report = train.train()
    assert train.same_fit(shipped, fresh), report
    assert not train.same_fit({**shipped, "threshold": 0.5}, fresh)  # the comparison can fail
    moved = [*shipped["weights"]]
    moved[0] += 0.01  # ~7x the bound the thread-count noise needs: still a different fit
    assert not train.same_fit({**shipped, "weights": moved}, fresh)


def test_the_engine_probe_sees_a_change_in_the_last_digit():
    """The probe that tells whether this machine's e5 reads as the fitting machine's: one float32 ulp moves it."""
    spec = importlib.util.spec_from_file_location("abstention_train", REPO / "benchmarks" / "abstention_train.py")
    assert spec is not None and spec.loader is not None
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    vectors = np.full((train.PROBE, 384), 0.05, dtype=np.float32)
    nudged = vectors.copy()
    nudged[3, 7] = np.nextafter(nudged[3, 7], np.float32(1))
    assert train.engine_probe(vectors) == train.engine_probe(vectors.copy()) != train.engine_probe(nudged)


def _counts(name: str) -> dict[str, Tally]:
    """The stage's (tp, fp, fn) per language on a split; a reply within the engine's noise of its threshold may be
    read either way (tests/stage_tally.py)."""
    return tally(REPO / "benchmarks" / "data" / name)


def test_the_split_written_after_the_weights_is_measured_as_reported():
    """Split 14 (written blind after these weights were fitted on splits dev to 13, measured once, with a
    decision rule written before it was opened): rules + learned stage precision 0.919, recall 0.567 (rules
    alone 0.870 / 0.333; the weights before, fitted on dev to 11: 0.912 / 0.517). Splits 12 and 13 measured
    the weights before in the same way (1.000 / 0.533 and 0.969 / 0.517); they are training data now."""
    # weights refitted 2026-12-06 (same splits; the rules' new refusal wordings move the threshold's choice), with
    # those rules: 0.921 / 0.583 (a permission refusal the rules now read as a partial answer is not the model's to decide)
    # training data since 2026-12-06's second refit (splits dev to 17; the rules of that day: "it depends" in place
    # of an answer, the speaker who cannot do what was asked, a referral to staff is no content): in-sample
    # and again with split 18 and its rules (dev to 18; thresholds 0.85 for answers, 0.95 for partial answers):
    # (22, 2, 8) and (21, 2, 9); with split 20 (threshold 0.90) and the loop rule (r14-009, r14-103 loop) as below
    # with dev to 26 (2026-12-06, session 6; partial answers at 0.90): two more Chinese refusals, in-sample
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (20, 2, 10), zh: (22, 2, 8)}
    assert _counts("abstention_test14.jsonl") == {"en": (20, 2, 10), "zh": (23, 2, 7)}


def test_the_fifteenth_split_is_measured_as_reported():
    """Split 15 (realistic refusals, written blind 2026-12-06 after the rules and these weights were final, measured
    once): rules + learned stage precision 1.000, recall 0.817 (rules alone 1.000 / 0.717; the rules and weights of
    the day before: 1.000 / 0.800)."""
    # training data since the second refit of 2026-12-06 (in-sample; out of split: 0.950, abstention_train.py)
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (29, 0, 1), zh: (29, 0, 1)}
    assert _counts("abstention_test15.jsonl") == {"en": (30, 0, 0), "zh": (30, 0, 0)}


def test_the_eighteenth_split_is_measured_as_reported():
    """Split 18 (realistic refusals, written blind 2026-12-06, opened after the rules and these weights, fitted on
    splits dev to 17, were committed; measured once): rules + learned stage precision 1.000, recall 0.883 (en 0.933,
    zh 0.833; rules alone 1.000 / 0.733). The rules and weights before (cdc2153): 1.000 / 0.767."""
    # training data since the third fit of 2026-12-06 (dev to 18), with the rules it taught: in-sample,
    # (30, 0, 0) and (28, 0, 2); fitted with split 20 too, the threshold for answers is 0.90 (was 0.85): as below
    # (26, 0, 4); with the rules learned from split 21 and the fit on dev to 21 (thresholds 0.90 / 0.90): (27, 0, 3);
    # fitted on dev to 22 (partial answers at 0.95 again: 0.90 falls under the precision target): as below
    # with dev to 26: one more Chinese refusal, in-sample
    assert _counts("abstention_test18.jsonl") == {"en": (30, 0, 0), "zh": (27, 0, 3)}


def test_the_nineteenth_split_is_measured_as_reported():
    """Split 19 (realistic refusals, written blind 2026-12-06, opened after the rules and these weights, fitted on
    splits dev to 18, were committed; measured once): rules + learned stage precision 1.000, recall 0.950 (en 0.967,
    zh 0.933; rules alone 0.850). The rules and weights at the session's start (cdc2153): 1.000 / 0.883; after splits
    16 and 17 (6da1261): 1.000 / 0.917. One split of 60 refusals: a 95% Wilson interval of 0.86-0.98."""
    # development data since the rules learned from split 21 (r19-110: "it varies", what the specifics depend on),
    # and the fit on dev to 21: (29, 0, 1) and (29, 0, 1)
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (29, 0, 1), zh: (29, 0, 1)}
    assert _counts("abstention_test19.jsonl") == {"en": (29, 0, 1), "zh": (30, 0, 0)}


def test_the_twenty_first_split_is_measured_as_reported():
    """Split 21 (realistic refusals, written blind 2026-12-06 from split 19's brief, opened after the fit with split 20
    and the loop rule were committed; measured once): rules + learned stage precision 1.000, recall 0.917 (en 0.967,
    zh 0.867; rules alone 1.000 / 0.883). The rules and weights at the session's start (aae3fe4): the same."""
    # training data since (the fit on dev to 21) and development data of the rules learned from its misses: in-sample
    assert _counts("abstention_test21.jsonl") == {"en": (30, 0, 0), "zh": (29, 0, 1)}


def test_the_twenty_second_split_is_measured_as_reported():
    """Split 22 (realistic refusals, written blind 2026-12-06 from split 19's brief, opened after the rules learned from
    split 21 and these weights, fitted on dev to 21, were committed; measured once): rules + learned stage precision
    0.981, recall 0.883 (en 1.000 / 0.900, zh 0.963 / 0.867; rules alone 0.980 / 0.800). The rules and weights at the
    session's start (aae3fe4): 0.964 / 0.900; after the fit with split 20 (d4faa60): 0.963 / 0.867. One split of 60
    refusals: a 95% Wilson interval of 0.78-0.94 for 53/60."""
    # training data since the fit on dev to 22 (thresholds 0.90 / 0.95): in-sample, one English partial answer fewer
    # with dev to 26: one more refusal in each language, in-sample; with dev to 28 (partial answers at 0.85): one more
    # Chinese refusal
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (27, 0, 3), zh: (28, 1, 2)}
    assert _counts("abstention_test22.jsonl") == {"en": (29, 0, 1), "zh": (29, 1, 1)}


def test_the_twenty_third_split_is_measured_as_reported():
    """Split 23 (realistic refusals, written blind 2026-12-06 from split 19's brief, imported unread and opened after
    the stage became the default and was fitted on dev to 22 (1872805); measured once): rules + learned stage precision
    0.981, recall 0.883 (en 1.000 / 0.867, zh 0.964 / 0.900; rules alone 0.979 / 0.783). The rules and weights at the
    session's start (54da2fe, fitted on dev to 21, partial answers at 0.90): 0.982 / 0.900. One split of 60 refusals:
    a 95% Wilson interval of 0.78-0.94 for 53/60."""
    # training data since the fit on dev to 26 (2026-12-06, session 6): one more refusal in each language
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (27, 0, 3), zh: (28, 1, 2)}
    assert _counts("abstention_test23.jsonl") == {"en": (28, 0, 2), "zh": (29, 1, 1)}


def test_the_twenty_fourth_split_is_measured_as_reported():
    """Split 24 (realistic refusals, written blind 2026-12-06 from split 19's brief, imported unread and opened at
    a5b7299, the stage on by default and fitted on dev to 22; measured once): rules + learned stage precision 0.983,
    recall 0.967 (en 0.968 / 1.000, zh 1.000 / 0.933; rules alone 0.981 / 0.850). The weights at the session's start
    (54da2fe): the same. One split of 60 refusals: a 95% Wilson interval of 0.89-0.99 for 58/60."""
    # r24-039's "one checked bag" is content since 2026-12-07 (it read as what the speaker searched): no false abstention
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (30, 0, 0), zh: (28, 0, 2)}
    assert _counts("abstention_test24.jsonl") == {"en": (30, 0, 0), "zh": (29, 0, 1)}


def test_the_twenty_fifth_and_sixth_splits_are_measured_as_reported():
    """Splits 25 and 26 (realistic refusals, written blind 2026-12-06 from split 19's brief by two fresh writers,
    imported unread at 0357ec2 and measured once there, with the stage fitted on dev to 22; a refit on dev to 24 was
    dropped before they were opened): split 25 rules + learned stage precision 1.000, recall 0.933 (rules alone
    1.000 / 0.867); split 26 1.000 / 0.917 (rules alone 1.000 / 0.833). With splits 19 to 24 written from the same
    brief: 440 of 480 refusals, 0.917 (95% Wilson interval 0.89-0.94)."""
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (29, 0, 1), zh: (27, 0, 3)}
    assert _counts("abstention_test25.jsonl") == {"en": (29, 0, 1), "zh": (28, 0, 2)}
    # training data since the fit on dev to 26 (2026-12-06, session 6): split 26 one more English refusal in-sample
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (28, 0, 2), zh: (28, 0, 2)}
    assert _counts("abstention_test26.jsonl") == {"en": (28, 0, 2), "zh": (30, 0, 0)}


def test_the_twenty_seventh_and_eighth_splits_are_measured_as_reported():
    """Splits 27 and 28 (realistic refusals, written blind 2026-12-06 from split 19's brief by two fresh writers while
    the stage was fitted on dev to 26, imported unread at ed6aab3 and measured once there): split 27 rules + learned
    stage precision 0.982, recall 0.933 (rules alone 0.979 / 0.783); split 28 1.000 / 0.967 (rules alone 1.000 /
    0.817). The weights fitted on dev to 22 (the session's start, 652fc63): 0.900 and 0.933. Both splits: 114 of 120
    refusals, 0.950 (95% Wilson interval 0.89-0.98); the ten splits from this brief, each by the rules and weights
    of its day: 554 of 600, 0.923 (0.90-0.94)."""
    # training data since the fit on dev to 28 (2026-12-07): in-sample, one more English refusal of 27; and r27-032's
    # "the first checked bag costs $35" is content (it read as what the speaker searched): no false abstention
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (29, 0, 1), zh: (28, 0, 2)}
    assert _counts("abstention_test27.jsonl") == {"en": (29, 0, 1), "zh": (29, 0, 1)}
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (29, 0, 1), zh: (29, 0, 1)}
    assert _counts("abstention_test28.jsonl") == {"en": (30, 0, 0), "zh": (30, 0, 0)}


def test_the_twenty_ninth_and_thirtieth_splits_are_measured_as_reported():
    """Splits 29 and 30 (realistic refusals, written blind 2026-12-07 from split 19's brief by two fresh writers while
    the stage was fitted on dev to 28, imported unread at d9f5bcd and measured once there): split 29 rules + learned
    stage precision 1.000, recall 0.950 (rules alone 1.000 / 0.817); split 30 0.983 / 0.983 (rules alone 0.982 /
    0.917). The weights fitted on dev to 26 read them the same. Both: 116 of 120 refusals, 0.967 (95% Wilson interval
    0.92-0.99); the twelve splits from this brief, each by the rules and weights of its day: 670 of 720, 0.931
    (0.91-0.95). The misses: three tickets or messages logged with a promise to reply (已为您提交报修申请…与您联系),
    one answer withheld because two sources disagree."""
    # r30-068's "one checked bag" is content since (it read as what the speaker searched): its false abstention went
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (30, 0, 0), zh: (27, 0, 3)}
    assert _counts("abstention_test29.jsonl") == {"en": (30, 0, 0), "zh": (30, 0, 0)}
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (30, 0, 0), zh: (29, 0, 1)}
    assert _counts("abstention_test30.jsonl") == {"en": (30, 0, 0), "zh": (30, 0, 0)}


def test_the_thirty_first_to_thirty_fourth_splits_are_measured_as_reported():
    """Splits 31-34 (realistic refusals, written blind 2026-12-07 from split 19's brief by four fresh writers, imported
    unread and measured once with the weights fitted on dev to 28; 33 and 34 written after 31 and 32 were read, with
    nothing changed in between): rules + learned stage precision 1.000 on all four, recall 0.933, 0.917, 0.950 and
    0.967 (rules alone 0.783, 0.867, 0.733, 0.833). Pooled: 226 of 240, 0.942 (95% Wilson interval 0.90-0.96); the
    sixteen splits from this brief, each by the rules and weights of its day: 896 of 960, 0.933 (0.92-0.95). A
    refit on dev to 30 was dropped before 31 and 32 were opened (reports/judges.md)."""
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (29, 0, 1), zh: (27, 0, 3)}
    # r31-058 sits on the threshold: p 0.8987 with the weights before the refit on this session's machine, 0.8996
    # after (it read >= 0.9 on the machines before: the engine's vectors differ in the last digits between CPUs)
    # the rules and the refit of 2026-12-07 (fifth session) on this machine's e5 vectors: was {en: (29, 0, 1), ...}
    assert _counts("abstention_test31.jsonl") == {"en": (28, 0, 2), "zh": (28, 0, 2)}
    # r32-117 is the rules' refusal since the second session of 2026-12-07 (the service's sympathy and a ticket logged)
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (30, 0, 0), zh: (26, 0, 4)}
    assert _counts("abstention_test32.jsonl") == {"en": (30, 0, 0), "zh": (29, 0, 1)}
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (27, 0, 3), zh: (30, 0, 0)}
    assert _counts("abstention_test33.jsonl") == {"en": (28, 0, 2), "zh": (30, 0, 0)}
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (28, 0, 2), zh: (30, 0, 0)}
    assert _counts("abstention_test34.jsonl") == {"en": (30, 0, 0), "zh": (30, 0, 0)}
    # the pooled figure and its 95% Wilson score interval, recomputed from the counts above
    k, n, z = 29 + 27 + 29 + 26 + 27 + 30 + 28 + 30, 240, 1.959964  # as measured (r32-117 then missed)
    centre, half = k / n + z * z / (2 * n), z * math.sqrt(k / n * (1 - k / n) / n + z * z / (4 * n * n))
    assert k == 226 and (round((centre - half) / (1 + z * z / n), 2), round((centre + half) / (1 + z * z / n), 2)) \
        == (0.90, 0.96)


def test_short_and_plain_answers_stay_answers():
    """Bare names and one-sentence answers were the stage's false abstentions: with the weights fitted on dev to 18,
    10 of the 280 short answers of tests/judges/data/judge_short_answers.jsonl ("Johann Sebastian Bach",
    "Musicians") and 3 of the 384 of judge_multidoc_blind.jsonl read as refusals. Split 20 (short and plain replies
    of QA systems, written blind) joined the training data; neither set was trained on. Now: 1 and 0 (a hand count
    of the stage's findings, every reply an answer)."""
    judges = REPO / "tests" / "judges" / "data"
    short = [json.loads(x) for x in (judges / "judge_short_answers.jsonl").read_text(encoding="utf-8").splitlines()]
    replies = [r[k] for r in short for k in ("hallucinated_answer", "right_answer_sentence")]
    wrong = [t for t in replies if stage.detect(t, model="e5").abstained]
    assert len(replies) == 280 and [t[:11] for t in wrong] == ["Irwin Shaw."]
    multidoc = [json.loads(x)["answer"] for x in (judges / "judge_multidoc_blind.jsonl").read_text(
        encoding="utf-8").splitlines()]
    assert len(multidoc) == 384 and not [t for t in multidoc if stage.detect(t, model="e5").abstained]


def test_the_other_labelled_answers_and_the_demos_llm_answers_stay_answers():
    """The counts reports/judges.md quotes for the stage on answers nobody trained it on (every reply an answer): 0 of
    the 1,562 other multi-document answers (1 since the fit on dev to 26: "《长河》的导演林嘉树出生于福建厦门。", p 0.907;
    0 of the 192 of held-out sets P and Q, written after it; 0 of the 192 of R and S, written after the fit on dev to 28,
    and 0 of the 192 of T and U, written after them; 0 of the 192 of V and W, written after the refit of 2026-12-07, and 0 of the 192 of X and Y, written the same day
    after them, and 0 of the 192 of Z and AA, written the next session, and of AB to AE, the session after),
    2 of the 1,333 paraphrases (1 since the fit on dev to 28), 0 of the 276 judge-set and comparison answers;
    of the 34 SmolLM2 demo answers the rules call answers, only q024 ("The answer is no. ... The answer is not
    possible to answer based on the given information.")."""
    def answers(path: Path) -> list[str]:
        return [json.loads(x)["answer"] for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]

    judges, bench = REPO / "tests" / "judges" / "data", REPO / "benchmarks" / "data"
    for files, n, read in ((("judge_multidoc_held_out.jsonl", "judge_multidoc.jsonl"), 3098, 1),
                           (("judge_comparisons_held_out.jsonl",), 60, 0)):
        texts = [t for f in files for t in answers(judges / f)]
        assert (len(texts), sum(stage.detect(t, model="e5").abstained for t in texts)) == (n, read), files
    for name, n, read in (("judge_paraphrases.jsonl", 1333, 1), ("judge_cases.jsonl", 216, 0)):
        texts = answers(bench / name)
        assert (len(texts), sum(stage.detect(t, model="e5").abstained for t in texts)) == (n, read), name
    demo = [json.loads(x) for x in (REPO / "eval_sets" / "demo_llm_answers.jsonl").read_text(
        encoding="utf-8").splitlines() if x.strip()]
    answered = [r for r in demo if not detect_abstention(r["answer"]).abstained]
    assert len(answered) == 34
    assert [r["id"] for r in answered if stage.detect(r["answer"], model="e5").abstained] == ["q024"]


def test_a_reply_that_loops_is_left_to_the_rules(monkeypatch):
    """A looping generation is no refusal in new words: the stage does not read it (the demo's SmolLM2 states a
    wrong hotel cap, then repeats a citation; the stage read it as a refusal, p=0.925, hiding a hallucination)."""
    loop = "The nightly hotel cap for a business trip to Shenzhen is 2026.\n\n" + "The answer is:\n[fin-006] (score 0.821)\n\n" * 8
    assert stage.loops(loop)
    assert stage.detect(loop, model="e5") == detect_abstention(loop) and not stage.detect(loop, model="e5").abstained
    # whatever the weights make of it (0.925 with those fitted on dev to 13, 0.891 on dev to 26): never read
    monkeypatch.setattr(stage, "probability", lambda name, text: pytest.fail(f"the stage read a loop: {text[:40]}"))
    assert stage.detect(loop, model="e5") == detect_abstention(loop)
    # natural replies that repeat a little do not loop; short ones never do
    assert not stage.loops("我不知道。文档中没有提到杭州门店的开业年份。文档中没有提到杭州门店的开业年份。文档中没有提到。我不知道。")
    assert not stage.loops("No. " * 30)  # 120 bytes: under LOOP_MIN_BYTES
    # every labelled reply that loops, by hand: the six broken generations the writers of splits 12-14 labelled
    # abstained (a repeated phrase or sentence), and nothing else
    found = []
    for path in sorted([*(REPO / "benchmarks" / "data").glob("*.jsonl"), *(REPO / "tests" / "judges" / "data").glob(
            "*.jsonl")]):
        for line in path.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            found += [r.get("id") for k in ("answer", "hallucinated_answer", "right_answer_sentence")
                      if isinstance(r.get(k), str) and stage.loops(r[k])]
    assert found == ["r12-076", "r12-109", "r13-003", "r13-050", "r14-009", "r14-103"]


def test_a_reply_that_only_quotes_its_evidence_is_left_to_the_rules():
    """An extractive system's reply is the passages' words: the demo's extractive variants answer a comparison with
    the titles of the two reports they found, which the stage read as refusals (p 0.95); with the passages shown
    beside it, the stage does not read it. A reply with words of its own is read as before."""
    passages = ["Q1 2025 Sales Report - North China\nPeriod: 1 January - 31 March 2025. Revenue: CNY 21.5 million.",
                "Q2 2025 Sales Report - North China\nPeriod: 1 April - 30 June 2025. Revenue: CNY 19.8 million."]
    titles = "Q1 2025 Sales Report - North China [sales-007]\nQ2 2025 Sales Report - North China [sales-008]"
    assert stage.probability("e5", titles) >= stage.learned("e5").threshold
    assert stage.quotes(titles, passages) and stage.quotes(titles.upper().replace(" - ", "  -\t"), passages)
    assert stage.detect(titles, model="e5", evidence=passages) == detect_abstention(titles)
    assert stage.detect(titles, model="e5").reason == "learned"  # without its evidence the stage reads it
    # words of its own on any line, another passage, or a reply too short to be a quote: the stage reads it
    assert not stage.quotes(titles + "\nNeither report gives the growth rate.", passages)
    assert not stage.quotes(titles, ["Q1 2025 Sales Report - North China"])
    assert not stage.quotes("Revenue [s-1]", passages) and not stage.quotes(titles, [])
    assert stage.detect(UNSEEN_REFUSAL, model="e5", evidence=passages).reason == "learned"


def test_the_demos_reference_answers_as_evalkit_score_reads_them():
    """reports/judges.md: scored with the stage on by default (benchmarks/reference_score.py runs `evalkit score` on
    them), none of the 107 answerable reference answers reads as a refusal, and 9 of the 13 unanswerable questions'
    reference refusals do (the rules alone: 6; the weights fitted on dev to 22: 8). Recomputed here with each answer's gold documents as its evidence."""
    docs = {d["id"]: d.get("title", "") + "\n" + d["text"] for d in map(json.loads, (
        REPO / "eval_sets" / "corpora" / "demo_kb.jsonl").read_text(encoding="utf-8").splitlines()) if d}
    rows = [json.loads(x) for x in (REPO / "eval_sets" / "demo_kb.jsonl").read_text(encoding="utf-8").splitlines()
            if x.strip()]

    def refusals(answerable: bool, model: str | None) -> int:
        return sum(stage.detect(r["reference_answer"], model=model, question=r["question"],  # as score passes it
                                evidence=[docs[d] for d in r["relevant_doc_ids"]]).abstained
                   for r in rows if bool(r["relevant_doc_ids"]) is answerable)

    assert sum(bool(r["relevant_doc_ids"]) for r in rows) == 107 and len(rows) == 120
    assert refusals(True, stage.DEFAULT) == 0
    # 8 with the weights fitted on dev to 22, 9 on dev to 26, 11 on dev to 28 (2026-12-07); read with the question, the
    # same (its two misses are partial answers, which the question does not read)
    assert (refusals(False, stage.DEFAULT), refusals(False, None)) == (11, 6)
