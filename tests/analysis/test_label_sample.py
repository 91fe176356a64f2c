"""Labels where they pay (issue 32): strata by the judge's verdict class, Neyman allocation, and the
corrected estimate with stratum weights, each checked against a computation made here."""
from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

from evalkit.analysis.label_sample import error_shares, neyman_allocation, verdict_class
from evalkit.analysis.labels import (
    Label,
    LabelError,
    answer_sha,
    corrected_estimates,
    draw_sample,
    prior_error_shares,
    read_labels,
)
from evalkit.records import QueryResult

ROOT = Path(__file__).resolve().parents[2]


def answer(qid: str, unsupported: int, unverified: int, *, faith: float | None = None) -> QueryResult:
    """An answered, answerable query whose judge found ``unsupported`` / ``unverified`` claims (of 4)."""
    supported = 4 - unsupported - unverified
    faith = supported / 4 if faith is None else faith
    metrics = {"claims_supported": float(supported), "claims_unsupported": float(unsupported),
               "claims_unverified": float(unverified), "faithfulness": faith,
               "hallucinated": float(unsupported > 0), "unverified": float(unverified > 0 and unsupported == 0)}
    return QueryResult(qid, f"question {qid}", ["d1"], [], [], metrics, [], type="single",
                       generation={"answered": True, "answer": f"answer {qid}", "evidence": []})


def population(n_unsup: int, n_unver: int, n_sup: int) -> list[QueryResult]:
    return ([answer(f"u{i:03d}", 1, 0) for i in range(n_unsup)] + [answer(f"v{i:03d}", 0, 1) for i in range(n_unver)]
            + [answer(f"s{i:03d}", 0, 0) for i in range(n_sup)])


# --- the verdict class --------------------------------------------------------------------------
def test_the_verdict_class_of_an_answer():
    assert verdict_class(answer("a", 1, 2)) == "unsupported"  # an unsupported claim wins over unverified ones
    assert verdict_class(answer("b", 0, 1)) == "unverified"
    assert verdict_class(answer("c", 0, 0)) == "supported"
    old = QueryResult("d", "q", ["d1"], [], [], {"hallucinated": 0.0, "unverified": 1.0, "faithfulness": 0.5}, [])
    assert verdict_class(old) == "unverified"  # a run from before the claim counts


# --- allocation ---------------------------------------------------------------------------------
def test_neyman_allocation_by_hand():
    # N_h S_h with the prior (0.5 / 0.5 / 0.1 -> S = 0.5, 0.5, 0.3): 5, 10, 51 of 66; n = 40 ->
    # ideal 3.03, 6.06, 30.91 -> floors 3, 6, 30 and the one left over to the largest remainder (supported)
    sizes = {"unsupported": 10, "unverified": 20, "supported": 170}
    assert neyman_allocation(sizes, {"unsupported": 0.5, "unverified": 0.5, "supported": 0.3}, 40) == \
        {"supported": 31, "unsupported": 3, "unverified": 6}
    # proportional would give 2, 4, 34: the unsure classes are labelled at a higher rate
    assert 3 / 10 > 31 / 170 and 6 / 20 > 31 / 170


def test_neyman_allocation_keeps_the_minimum_and_the_cap():
    # ideal 20 * (0.5, 1.5, 60) / 62 = 0.16, 0.48, 19.35: both small strata get their minimum (1 answer, 2)
    assert neyman_allocation({"unsupported": 1, "unverified": 3, "supported": 200},
                             {"unsupported": 0.5, "unverified": 0.5, "supported": 0.3}, 20) == \
        {"supported": 17, "unsupported": 1, "unverified": 2}
    # ideal 40 * (4, 20, 10) / 34 = 4.7 > 4 answers: a gets all 4, the other 36 go 24 / 12 (weights 20 : 10)
    assert neyman_allocation({"a": 4, "b": 40, "c": 100}, {"a": 1.0, "b": 0.5, "c": 0.1}, 40) == \
        {"a": 4, "b": 24, "c": 12}
    # ideal 30 * (2, 25, 15) / 42 = 1.43, 17.86, 10.71: a at its minimum 2; 28 left -> 17.5 / 10.5, the tie
    # of remainders goes to the larger N_h S_h (b)
    assert neyman_allocation({"a": 4, "b": 50, "c": 50}, {"a": 0.5, "b": 0.5, "c": 0.3}, 30) == \
        {"a": 2, "b": 18, "c": 10}
    # ideal 10 * (13, 13, 24) / 50 = 2.6, 2.6, 4.8: floors 2, 2, 4 and the 2 left over to the largest
    # remainders: c (0.8), then a (0.6, tied with b on N_h S_h: by name); rounding each would give 11
    assert neyman_allocation({"a": 13, "b": 13, "c": 24}, {"a": 1.0, "b": 1.0, "c": 1.0}, 10) == \
        {"a": 3, "b": 2, "c": 5}
    with pytest.raises(ValueError, match="positive spread"):
        neyman_allocation({"a": 3}, {"a": 0.0}, 2)


def test_the_sample_follows_the_allocation_is_seeded_and_records_its_strata():
    pop = population(10, 20, 170)
    s = draw_sample(pop, 40, seed=7)
    counts: dict[str, int] = {}
    for r, meta in s:
        counts[meta["stratum"]] = counts.get(meta["stratum"], 0) + 1
        assert meta["stratum"] == verdict_class(r)
        assert meta["stratum_size"] == {"unsupported": 10, "unverified": 20, "supported": 170}[meta["stratum"]]
        assert (meta["seed"], meta["strata_by"], meta["population"]) == (7, "verdict", 200)
        assert meta["error_share"] == {"unsupported": 0.5, "unverified": 0.5, "supported": 0.1}[meta["stratum"]]
    assert counts == {"unsupported": 3, "unverified": 6, "supported": 31}
    assert all(meta["stratum_labelled"] == counts[meta["stratum"]] for _, meta in s)
    assert [r.query_id for r, _ in draw_sample(pop, 40, seed=7)] == [r.query_id for r, _ in s]
    assert [r.query_id for r, _ in draw_sample(pop, 40, seed=8)] != [r.query_id for r, _ in s]


def test_error_shares_from_earlier_labels_by_hand(tmp_path: Path):
    # unsupported: 4 labels, 1 correct answer (a judge error) -> (1 + 2 * 0.5) / (4 + 2); supported: 2 labels,
    # 1 hallucination -> (1 + 2 * 0.1) / (2 + 2); unverified: no label -> the prior 0.5
    pairs = [("unsupported", True)] * 3 + [("unsupported", False), ("supported", True), ("supported", False)]
    assert error_shares(pairs) == pytest.approx({"unsupported": 2 / 6, "unverified": 0.5, "supported": 1.2 / 4})
    pop = population(4, 0, 2)
    labels = [Label(r.query_id, "v", answer_sha(r.question, r.generation["answer"]), verdict_class(r), hall, None)
              for r, hall in zip(pop, [True, True, True, False, True, False], strict=True)]
    labels.append(Label("s000", "other", "x", "supported", True, None))  # another variant's: ignored
    assert prior_error_shares(pop, labels, "v") == pytest.approx(error_shares(pairs))


# --- the corrected estimate ---------------------------------------------------------------------
def _labels_file(path: Path, items: list[tuple[QueryResult, bool]], strata_by: str = "verdict",
                 stratum: str | None = None) -> Path:
    path.write_text("".join(json.dumps({
        "query_id": r.query_id, "variant": "v", "answer_sha": answer_sha(r.question, r.generation["answer"]),
        "claims": [{"supported": not hall}], "hallucinated": hall,
        "sample": {"stratum": stratum or verdict_class(r), "strata_by": strata_by, "seed": 0}}) + "\n"
        for r, hall in items), encoding="utf-8")
    return path


def test_the_corrected_hallucination_rate_with_verdict_strata_by_hand(tmp_path: Path):
    # 3 unsupported answers (2 labelled: yes, no), 3 unverified (2 labelled: yes, no), 6 supported (3 labelled:
    # no, no, no). The judge's "hallucinated" is constant in each verdict stratum, so PPI++ weighs it 0 and the
    # estimate is the stratified mean of the labels.
    pop = population(3, 3, 6)
    by_id = {r.query_id: r for r in pop}
    labelled = {"u000": 1, "u001": 0, "v000": 1, "v001": 0, "s000": 0, "s001": 0, "s002": 0}
    path = _labels_file(tmp_path / "l.jsonl", [(by_id[q], bool(y)) for q, y in labelled.items()])
    c = corrected_estimates(pop, read_labels(path), "v")
    e = c.estimates["hallucination_rate"]

    sizes = {"u": 3, "v": 3, "s": 6}
    ys = {h: np.array([y for q, y in labelled.items() if q[0] == h], float) for h in sizes}
    w = {h: sizes[h] / 12 for h in sizes}
    theta = {h: ys[h].mean() for h in sizes}
    est = sum(w[h] * theta[h] for h in sizes)

    def var_with_pseudo(y: np.ndarray) -> float:  # the residuals -y plus pseudo-labels 0 and 1 of weight 1/4
        x = np.r_[-y, 0.0, -1.0]
        wt = np.r_[np.ones(len(y)), 0.25, 0.25]
        m = np.average(x, weights=wt)
        return float(np.sum(wt * (x - m) ** 2) / (wt.sum() - 1))

    var = sum(w[h] ** 2 * var_with_pseudo(ys[h]) / len(ys[h]) for h in sizes)
    var += sum(w[h] * (theta[h] - est) ** 2 for h in sizes) / 12
    half = stats.norm.ppf(0.975) * math.sqrt(var)
    assert e.estimate == pytest.approx(est) == pytest.approx(0.25)  # 3/12 * 1/2 + 3/12 * 1/2 + 6/12 * 0
    assert e.se == pytest.approx(math.sqrt(var))
    assert (e.ci_low, e.ci_high) == pytest.approx((est - half, est + half))
    assert (e.n_labelled, e.n_total) == (7, 12)
    assert c.raw["hallucination_rate"] == pytest.approx(3 / 12) and not c.notes
    # the same labels read as one stratum would be weighted by the sample, not the population: the strata matter
    flat = corrected_estimates(pop, read_labels(_labels_file(tmp_path / "flat.jsonl", [
        (by_id[q], bool(y)) for q, y in labelled.items()], strata_by="none", stratum="all")), "v")
    assert flat.estimates["hallucination_rate"].estimate != pytest.approx(e.estimate)


def test_a_stratum_that_changed_since_the_draw_is_said_and_mixed_rules_are_not_combined(tmp_path: Path):
    pop = population(3, 3, 6)
    by_id = {r.query_id: r for r in pop}
    items = [(by_id[q], y) for q, y in (("u000", True), ("u001", False), ("v000", True), ("v001", False),
                                         ("s000", False), ("s001", False))]
    path = _labels_file(tmp_path / "l.jsonl", items)
    text = path.read_text(encoding="utf-8").replace('"stratum": "supported"', '"stratum": "unverified"', 1)
    path.write_text(text, encoding="utf-8")  # as if the judge called s000 unverified when the sample was drawn
    c = corrected_estimates(pop, read_labels(path), "v")
    assert any(n.startswith("1 labelled answer(s) now fall in another stratum") for n in c.notes)
    other = _labels_file(tmp_path / "t.jsonl", [(by_id["s002"], False)], strata_by="type", stratum="single")
    mixed = corrected_estimates(pop, read_labels(path) + read_labels(other), "v")
    assert not mixed.estimates and any("different --strata (type, verdict)" in n for n in mixed.notes)


def test_an_unknown_rule_in_a_label_file_names_the_file_line_and_field(tmp_path: Path):
    r = answer("u000", 1, 0)
    path = _labels_file(tmp_path / "l.jsonl", [(r, True)], strata_by="verdcit")
    with pytest.raises(LabelError, match=r"l.jsonl:1: sample.strata_by: unknown rule \"verdcit\": one of verdict"):
        read_labels(path)


# --- the coverage benchmark (a smoke test: few trials) ------------------------------------------
def test_the_coverage_benchmark_compares_neyman_with_uniform():
    spec = importlib.util.spec_from_file_location("ppi_coverage", ROOT / "benchmarks" / "ppi_coverage.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    truth, res = bench.allocation_study(40, 400, 60, 0.6, 0.05, 0.25, 0.10, seed=5)
    assert truth == pytest.approx(0.5 * 0.1 + 0.3 * 0.3 + 0.2 * 0.5)
    assert set(res) == {"uniform", "type, proportional", "verdict, proportional", "verdict, Neyman"}
    for r in res.values():
        assert 0.0 < r["width"] < 0.5 and abs(r["estimate"] - truth) < 0.05 and r["coverage"] >= 0.75
    assert res["verdict, Neyman"]["width"] < res["uniform"]["width"]


def test_label_cli_refuses_prior_labels_without_verdict_strata(tmp_path: Path):
    from evalkit.cli import cli

    prior = tmp_path / "p.jsonl"
    prior.write_text("", encoding="utf-8")
    res = CliRunner().invoke(cli, ["label", str(tmp_path / "missing.json"), "--variant", "v", "--out",
                                   str(tmp_path / "o.jsonl"), "--strata", "type", "--prior-labels", str(prior)])
    assert res.exit_code == 2 and "--strata verdict only" in res.output
