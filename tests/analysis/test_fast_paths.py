"""The analysis commands' faster paths give every number the earlier code gave.

Each test keeps the earlier implementation as the reference (``_old_*``, as they were before
the change) and compares it with today's on randomised inputs: metric names read once per
name instead of once per query, fusion diagnostics read from the trace's lists without
building ``Hit`` objects, and resampling calls run on a thread pool.
"""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from evalkit.analysis import fusion_diag, stats
from evalkit.analysis.compare import compare_variants, resolve_variants
from evalkit.analysis.direction import is_descriptive
from evalkit.analysis.fusion_diag import channel_diagnostics, top_docs
from evalkit.analysis.pairing import ABSTAIN_RATES, has_guard, metric_names
from evalkit.analysis.report_data import variant_report
from evalkit.analysis.runs import load_run
from evalkit.records import Hit

from .conftest import qr, write_run


def _old_metric_names(results, descriptive=False):
    """``pairing.metric_names`` before: a registry look-up per metric per query."""
    names: list[str] = []
    for r in results:
        names += [m for m in r.metrics if m not in names and (descriptive or not is_descriptive(m))
                  and r.metrics[m] is not None]
    if has_guard(results):
        names += [m for m, answerable in ABSTAIN_RATES.items() if any(bool(r.gold_doc_ids) == answerable
                                                                        for r in results)]
    return names


METRICS = ["hit@5", "answered", "claims", "faithfulness", "n_answered", "ndcg@10", "hallucinated", "my_plugin_metric"]


@pytest.mark.parametrize("seed", range(20))
def test_metric_names_are_the_old_ones(seed):
    rng = random.Random(seed)
    results = []
    for i in range(rng.randint(0, 12)):
        names = rng.sample(METRICS, rng.randint(0, len(METRICS)))
        results.append(qr(f"q{i}", ["d"] if rng.random() < 0.7 else [],
                          {m: (None if rng.random() < 0.3 else rng.random()) for m in names}))
    for descriptive in (False, True):
        assert metric_names(results, descriptive) == _old_metric_names(results, descriptive)


def _old_channel_diagnostics(results, top_n, monkeypatch):
    """``fusion_diag.channel_diagnostics`` before: every channel hit built as a ``Hit`` (each item checked),
    then cut to the first ``top_n`` documents by ``top_docs``; the aggregation after that did not change."""
    with monkeypatch.context() as m:
        m.setattr(fusion_diag, "top_listed_docs",
                  lambda items, n: top_docs([Hit(str(p), str(d), float(s)) for p, d, s in items], n))
        return fusion_diag.channel_diagnostics(results, top_n)


def _random_trace(rng: random.Random) -> list[dict]:
    channels = {}
    for c in rng.sample(["dense", "bm25", "title"], rng.randint(0, 3)):
        # passages of few documents, so a channel repeats documents; ids sometimes numbers (read with str())
        items = [[f"p{j}", rng.choice([f"d{rng.randint(0, 40)}", rng.randint(0, 40)]), rng.random() * 10]
                 for j in range(rng.randint(0, 60))]
        channels[c] = {"n": len(items) + rng.randint(0, 2), "first": items} if rng.random() < 0.2 else items
    pre = [{"step": 0, "node": "rewrite", "type": "rewrite", "wrote": {}}] if rng.random() < 0.2 else []
    return [*pre, {"step": len(pre), "node": "retrieve", "type": "retrieve", "wrote": {"channel_hits": channels}}]


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("top_n", [1, 5, 20])
def test_channel_diagnostics_are_the_old_ones(seed, top_n, monkeypatch):
    rng = random.Random(seed)
    results = [qr(f"q{i}", rng.sample([f"d{k}" for k in range(40)] + ["7", "12"], rng.randint(0, 3)),
                  trace=_random_trace(rng)) for i in range(rng.randint(1, 30))]
    assert channel_diagnostics(results, top_n) == _old_channel_diagnostics(results, top_n, monkeypatch)


def test_run_all_gives_each_calls_own_numbers_in_order():
    rng = np.random.default_rng(1)
    samples = [rng.normal(size=n) for n in (1, 7, 300, 5000, 12_000)] + [np.zeros(50), rng.integers(0, 2, 400) * 1.0]
    seeds = [stats.derive_seed(0, "m", str(i)) for i in range(len(samples))]
    calls = [lambda x=x, s=s: stats.bootstrap_ci(x, 2000, 0.95, s) for x, s in zip(samples, seeds)]
    calls += [lambda x=x, s=s: stats.sign_flip_pvalue(x, 2000, s) for x, s in zip(samples, seeds)]
    alone = [call() for call in calls]
    for threads in (1, 2, 4):
        assert stats.run_all(calls, threads) == alone  # exact equality: the same generator stream per call


def test_run_all_raises_a_calls_error():
    def bad() -> float:
        raise ValueError("no sample")

    with pytest.raises(ValueError, match="no sample"):
        stats.run_all([lambda: 1.0, bad, lambda: 2.0], 2)


def _variants(n: int = 300) -> dict[str, list]:
    rng = random.Random(3)
    out: dict[str, list] = {}
    for v in "ABC":
        out[v] = [qr(f"q{i:03d}", [f"d{i}"] if i % 7 else [],
                     {"hit@5": float(rng.random() < 0.6), "ndcg@10": rng.random(), "answered": 1.0,
                      "faithfulness": rng.random()}) for i in range(n)]
    return out


def test_compare_and_report_numbers_do_not_depend_on_the_pool(tmp_path: Path, monkeypatch):
    summary = write_run(tmp_path, "pool", _variants())
    got = {}
    for threads in (1, 2):
        monkeypatch.setattr(stats, "POOL_THREADS", threads)
        run = load_run(summary)
        c = compare_variants(resolve_variants([run], None), n_resamples=3000, seed=5)
        got[threads] = (c.to_dict(), [variant_report(run, v, n_resamples=1000).metrics for v in "ABC"])
    assert got[1] == got[2]
    assert len(got[1][0]["tests"]) == 2 * 3  # hit@5, ndcg@10, faithfulness for B and C against A


def _old_tests(refs, n_resamples: int, seed: int) -> list[tuple]:
    """The tests ``compare_variants`` made before, one call after another: (metric, variant, n, lo, hi, p)."""
    from evalkit.analysis.pairing import pair, per_query_values

    results = {r.label: r.run.results(r.variant) for r in refs}
    per_variant = [metric_names(results[r.label]) for r in refs]
    names = [m for m in per_variant[0] if all(m in n for n in per_variant[1:])]
    out = []
    for r in refs[1:]:
        for m in names:
            p = pair(per_query_values(results[refs[0].label], m), per_query_values(results[r.label], m))
            if len(p):
                s = stats.derive_seed(seed, m, refs[0].label, r.label)
                out.append((m, r.label, len(p), *stats.bootstrap_ci(p.diffs, n_resamples, 0.95, s),
                            stats.sign_flip_pvalue(p.diffs, n_resamples, s)))
    return out


def _uneven_variants(n: int = 200) -> dict[str, list]:
    """B shares 'extra' with the reference A, C has none: 'extra' is started for B, never asked for; it is NaN
    on one query of B, so asking for it would raise (the old loop never computed it)."""
    rng = random.Random(8)
    out: dict[str, list] = {}
    for v in "ABC":
        rows = []
        for i in range(n):
            m = {"hit@5": float(rng.random() < 0.5), "ndcg@10": rng.random()}
            if v != "C":
                m["extra"] = float("nan") if (v, i) == ("B", 1) else rng.random()
            rows.append(qr(f"q{i:03d}", [f"d{i}"] if i % 5 else [], m))
        out[v] = rows
    return out


@pytest.mark.parametrize("threads", [1, 2])
def test_compare_started_per_pair_makes_the_old_tests(tmp_path: Path, monkeypatch, threads):
    monkeypatch.setattr(stats, "POOL_THREADS", threads)
    summary = write_run(tmp_path, "uneven", _uneven_variants())
    refs = resolve_variants([load_run(summary)], None)
    c = compare_variants(refs, n_resamples=2000, seed=3)
    got = [(t.metric, t.variant, t.n, t.ci_low, t.ci_high, t.p) for t in c.tests]
    assert got == _old_tests(refs, 2000, 3)
    assert {t.metric for t in c.tests} == {"hit@5", "ndcg@10"}  # 'extra' is not in C: computed for B, not shown


def test_report_intervals_are_the_old_ones(tmp_path: Path):
    from evalkit.analysis.pairing import per_query_values
    from evalkit.analysis.report_data import variant_reports

    run = load_run(write_run(tmp_path, "rep", _variants(150)))
    reports = variant_reports(run, ["A", "B", "C"], n_resamples=1500, seed=2)
    for v in reports:
        results = run.results(v.name)
        for m in metric_names(results):
            values = per_query_values(results, m)
            x = np.array([values[q] for q in sorted(values)])
            lo, hi = stats.bootstrap_ci(x, 1500, 0.95, stats.derive_seed(2, "report", v.name, m))
            assert v.metrics[m] == {"mean": float(x.mean()), "low": lo, "high": hi, "n": len(x)}


def test_plain_is_asdict(tmp_path: Path):
    from dataclasses import asdict

    from evalkit.analysis.compare import plain

    run = load_run(write_run(tmp_path, "plain", _variants(60)))
    c = compare_variants(resolve_variants([run], None), n_resamples=500)
    c.fusion.append({"variant": "B", "channels": {"gold_found": {"dense": 3}, "jaccard_mean": {"a/b": 0.25}},
                     "sweep": {"grid": [0.0, 0.5], "ci": (1.0, np.float64(2.5)), "chosen": [np.int64(3)], "x": None}})
    c.notes.append("note")
    assert plain(c) == asdict(c)
    assert repr(plain(c)) == repr(asdict(c))  # the same types too (tuples stay tuples, numpy scalars stay numpy)
