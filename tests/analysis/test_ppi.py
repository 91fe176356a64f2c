"""Prediction-powered inference: the estimator against hand computations and scipy, the
judge's agreement, and the label files (sampling, reading, stale answers)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from evalkit.analysis.labels import LabelError, answer_sha, corrected_estimates, draw_sample, read_labels
from evalkit.analysis.ppi import Stratum, agreement, difference, ppi_mean, stratified_ppi, z_value
from evalkit.records import QueryResult

Y = [1, 0, 1, 1]             # labels of the labelled answers
F = [1, 0, 0, 1]             # the judge on them
FU = [1, 1, 0, 0, 1, 0]      # the judge on the 6 unlabelled answers


def test_z_matches_scipy():
    for c in (0.8, 0.9, 0.95, 0.99):
        assert z_value(c) == pytest.approx(stats.norm.ppf(1 - (1 - c) / 2), rel=1e-9)


def test_plain_ppi_by_hand():
    e = ppi_mean(Y, F, FU, lam=1.0)
    # estimate: mean(FU) - mean(F - Y) = 0.5 - (-0.25) = 0.75
    assert e.estimate == pytest.approx(0.75)
    # variance: var(FU, ddof 1) / 6 + var(F - Y, ddof 1) / 4 = 0.3 / 6 + 0.25 / 4 = 0.1125
    assert e.se == pytest.approx(math.sqrt(0.1125))
    half = stats.norm.ppf(0.975) * math.sqrt(0.1125)
    assert (e.ci_low, e.ci_high) == pytest.approx((0.75 - half, 0.75 + half))
    assert (e.n_labelled, e.n_total, e.lam) == (4, 10, 1.0)


def test_ppi_plus_plus_lambda_by_hand():
    # lambda as JUDGING.md writes it, on all the labels (one stratum, a fixed lambda)
    y, f, fu = np.array(Y, float), np.array(F, float), np.array(FU, float)

    def lam_of(yy, ff):
        cov = np.cov(yy, ff, ddof=1)[0, 1]
        var_f = np.var(np.concatenate([ff, fu]), ddof=1)
        return float(np.clip(cov / ((1 + len(yy) / len(fu)) * var_f), 0, 1))

    assert lam_of(y, f) == pytest.approx((1 / 6) / ((1 + 4 / 6) * np.var(np.r_[f, fu], ddof=1)))
    # "auto" cross-fits: labels 0, 2 use the lambda of labels 1, 3 and the other way round
    lam = np.array([lam_of(y[[1, 3]], f[[1, 3]]), lam_of(y[[0, 2]], f[[0, 2]])] * 2)
    est = lam.mean() * fu.mean() - (lam * f - y).mean()
    var = lam.mean() ** 2 * np.var(fu, ddof=1) / 6 + np.var(lam * f - y, ddof=1) / 4
    e = ppi_mean(Y, F, FU)
    assert e.lam == pytest.approx(lam.mean()) and e.estimate == pytest.approx(est) and e.se == pytest.approx(
        math.sqrt(var))
    fixed = ppi_mean(Y, F, FU, lam=lam_of(y, f))
    assert fixed.estimate == pytest.approx(lam_of(y, f) * fu.mean() - (lam_of(y, f) * f - y).mean())


def test_a_useless_judge_falls_back_to_the_labels():
    y = [1, 0, 1, 0, 1, 1, 0, 0]
    e = ppi_mean(y, [1] * 8, [1] * 50)  # a constant judge
    labels_only = np.mean(y), np.std(y, ddof=1) / math.sqrt(8)
    assert e.lam == 0.0 and e.estimate == pytest.approx(labels_only[0]) and e.se == pytest.approx(labels_only[1])


def test_stratified_by_hand_with_the_between_strata_term():
    a = Stratum([1, 0], [1, 0], [1, 1, 0])      # N_a = 5, labels only (lam 1 to keep the arithmetic simple)
    b = Stratum([0, 0, 1], [0, 0, 0], [0, 0])   # N_b = 5
    e = stratified_ppi({"a": a, "b": b}, lam=1.0)
    ea, eb = ppi_mean(*a.__dict__.values(), lam=1.0), ppi_mean(*b.__dict__.values(), lam=1.0)
    w = 0.5
    est = w * ea.estimate + w * eb.estimate
    between = (w * (ea.estimate - est) ** 2 + w * (eb.estimate - est) ** 2) / 10
    assert e.estimate == pytest.approx(est)
    assert e.se == pytest.approx(math.sqrt(w * w * ea.se ** 2 + w * w * eb.se ** 2 + between))
    assert (e.n_labelled, e.n_total) == (5, 10)


def test_everything_labelled_is_the_label_mean():
    e = ppi_mean([1, 0, 1], [0, 0, 0], [])
    assert e.estimate == pytest.approx(2 / 3) and e.lam == 0.0


def test_difference_and_its_p_value():
    a, b = ppi_mean(Y, F, FU, lam=1.0), ppi_mean([0, 0, 1, 0], F, FU, lam=1.0)
    d, se, lo, hi, p = difference(a, b)
    assert d == pytest.approx(b.estimate - a.estimate) and se == pytest.approx(math.hypot(a.se, b.se))
    assert p == pytest.approx(2 * stats.norm.sf(abs(d) / se))
    assert (lo, hi) == pytest.approx((d - stats.norm.ppf(0.975) * se, d + stats.norm.ppf(0.975) * se))


def test_agreement_counts():
    a = agreement([1, 1, 0, 0, 1], [1, 0, 0, 1, 1])
    assert (a.tp, a.fp, a.tn, a.fn) == (2, 1, 1, 1)
    assert a.precision == pytest.approx(2 / 3) and a.recall == pytest.approx(2 / 3)
    assert a.balanced_accuracy == pytest.approx((2 / 3 + 1 / 2) / 2)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="labels but"):
        ppi_mean([1, 0], [1], [0])
    with pytest.raises(ValueError, match="no labelled answer"):
        ppi_mean([], [], [0, 1])


# --- label files --------------------------------------------------------------------------------
def result(qid: str, typ: str, hall: float, faith: float, answer: str = "a", gold: bool = True) -> QueryResult:
    return QueryResult(query_id=qid, question=f"q {qid}", gold_doc_ids=["d"] if gold else [], retrieved=[],
                       reranked=[], metrics={"hallucinated": hall, "faithfulness": faith}, trace=[], type=typ,
                       generation={"answer": answer, "answered": True, "evidence": [], "judgement": {"claims": []}})


def test_sample_is_stratified_seeded_and_keeps_two_per_stratum():
    results = [result(f"s{i:02d}", "single", 0, 1) for i in range(30)] + \
              [result(f"m{i:02d}", "multi_hop", 0, 1) for i in range(3)]
    s = draw_sample(results, 10, seed=1, strata="type")
    by = {}
    for r, meta in s:
        by.setdefault(meta["stratum"], []).append(r.query_id)
    assert sorted(len(v) for v in by.values()) == [2, 8] and len(s) == 10
    assert [r.query_id for r, _ in draw_sample(results, 10, seed=1, strata="type")] == [r.query_id for r, _ in s]
    assert [r.query_id for r, _ in draw_sample(results, 10, seed=2, strata="type")] != [r.query_id for r, _ in s]


def _line(r: QueryResult, claims, hall, variant="v", answer=None) -> str:
    return json.dumps({"query_id": r.query_id, "variant": variant, "answer_sha": answer_sha(r.question, answer or "a"),
                       "claims": [{"supported": c} for c in claims], "hallucinated": hall,
                       "sample": {"stratum": r.type}})


def test_read_labels_derives_the_answer_label_from_the_claims(tmp_path):
    r = result("q1", "single", 0, 1)
    p = tmp_path / "l.jsonl"
    p.write_text("\n".join([_line(r, [True, False], None), _line(r, [True, True], None), _line(r, [True, None], None),
                            _line(r, [True], True)]) + "\n", encoding="utf-8")
    labs = read_labels(p)
    assert [lab.hallucinated for lab in labs] == [True, False, None, True]
    assert [lab.faithfulness for lab in labs] == [0.5, 1.0, 1.0, 1.0]


def test_a_bad_label_line_names_the_file_line_and_field(tmp_path):
    p = tmp_path / "l.jsonl"
    r = result("q1", "single", 0, 1)
    p.write_text(_line(r, [True], None) + "\n" + _line(r, ["yes"], None) + "\n", encoding="utf-8")
    with pytest.raises(LabelError, match=r"l.jsonl:2: claims\[0\].supported: expected true, false or null"):
        read_labels(p)
    p.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(LabelError, match=r"l.jsonl:1: not JSON"):
        read_labels(p)


def test_corrected_estimates_by_hand_and_stale_answers(tmp_path):
    # 6 answerable answers, one stratum: the judge flags q1, q2; a person labels q1 (yes), q3 (yes), q4 (no)
    results = [result(f"q{i}", "single", float(i <= 2), 0.5) for i in range(1, 7)]
    results[5] = result("q6", "single", 0.0, 0.5, answer="changed")  # its labelled answer changed since
    p = tmp_path / "l.jsonl"
    p.write_text("\n".join([_line(results[0], [False], True), _line(results[2], [False], True),
                            _line(results[3], [True], False), _line(results[5], [True], False),
                            _line(results[0], [True], False, variant="other")]) + "\n", encoding="utf-8")
    c = corrected_estimates(results, read_labels(p), "v")
    assert c.stale == 1 and c.n_labels == 3
    # labelled q1, q3, q4; unlabelled q2, q5, q6 (binary labels: the small-stratum pseudo-labels, as evalkit reports)
    expected = ppi_mean([1, 1, 0], [1, 0, 0], [1, 0, 0], pseudo_labels=True)
    e = c.estimates["hallucination_rate"]
    assert e.estimate == pytest.approx(expected.estimate) and e.se == pytest.approx(expected.se)
    assert c.raw["hallucination_rate"] == pytest.approx(2 / 6)
    assert (c.agreement.tp, c.agreement.fn, c.agreement.tn) == (1, 1, 1)
    assert corrected_estimates(results, read_labels(p), "nobody") is None
