"""Paired, per-query comparison of variants: is a difference real?

Every variant is compared with the first one named (the reference) on the queries both
answered, metric by metric (see :mod:`evalkit.analysis.pairing` for which queries count):

* the mean difference (variant - reference) with a paired percentile-bootstrap interval;
* a two-sided paired sign-flip randomisation test p-value;
* p-values adjusted for the whole table (every metric of every pair is one test of the
  family): Holm by default, Benjamini-Hochberg with ``correction="bh"``;
* win / tie / loss counts (a win is a query where the variant is better, in the
  metric's own direction; see :mod:`evalkit.analysis.direction`).

Variants may come from several runs of the same eval set version; other sets, corpora
or versions are refused (``DifferentEvalSetsError``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from evalkit.analysis import stats
from evalkit.analysis.direction import higher_is_better, per_query_hint, sign
from evalkit.analysis.pairing import check_eval_sets, check_shared_queries, metric_names, pair, per_query_values
from evalkit.analysis.runs import LoadedRun
from evalkit.analysis.tables import is_nan, text_table
from evalkit.errors import EvalkitError, did_you_mean


@dataclass(frozen=True)
class VariantRef:
    """One variant of one loaded run, with the label tables print."""

    label: str
    run: LoadedRun
    variant: str


@dataclass
class MetricTest:
    """One metric, one variant against the reference."""

    metric: str
    reference: str
    variant: str
    n: int
    mean_reference: float
    mean_variant: float
    diff: float
    ci_low: float
    ci_high: float
    p: float
    p_adjusted: float = float("nan")
    wins: int = 0
    ties: int = 0
    losses: int = 0
    higher_is_better: bool = True

    def verdict(self, alpha: float) -> str:
        """``better`` / ``worse`` (adjusted p < alpha, in the metric's direction) or ``n.s.``."""
        if not self.p_adjusted < alpha:
            return "n.s."
        return "better" if sign(self.metric) * self.diff > 0 else "worse"


@dataclass
class Comparison:
    """The whole comparison table plus how it was computed."""

    eval_set: str
    labels: list[str]
    tests: list[MetricTest]
    correction: str
    n_resamples: int
    confidence: float
    seed: int
    alpha: float
    notes: list[str] = field(default_factory=list)
    fusion: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)  # per-tool diagnostics (evalkit.analysis.tool_diag)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for t, test in zip(d["tests"], self.tests):
            t["verdict"] = test.verdict(self.alpha)
        return d


def resolve_variants(runs: Sequence[LoadedRun], spec: str | None) -> list[VariantRef]:
    """Parse ``--variants``: ``a,b`` (names in the only run, or unique across runs) or ``RUN:NAME``.

    ``RUN`` is the run's position among the arguments (1-based) or its label (summary
    file stem). Without a spec: every variant of a single run.
    """
    if not spec:
        if len(runs) != 1:
            raise EvalkitError("several runs given: name the variants with --variants RUN:NAME,RUN:NAME "
                               "(RUN = position or file stem)")
        return [VariantRef(n, runs[0], n) for n in runs[0].variant_names]
    refs: list[VariantRef] = []
    for item in [s.strip() for s in spec.split(",") if s.strip()]:
        run_key, _, name = item.rpartition(":")
        if run_key:
            run = _run_by_key(runs, run_key)
        else:
            holders = [r for r in runs if name in r.summary.variants]
            if len(holders) != 1:
                known = sorted({v for r in runs for v in r.variant_names})
                why = "in no run" + did_you_mean(name, known) if not holders else \
                    f"in {len(holders)} runs; write RUN:{name} (RUN = position or file stem)"
                raise EvalkitError(f"variant '{name}' is {why}")
            run = holders[0]
        run.variant(name)
        label = name if len(runs) == 1 else f"{run.label}:{name}"
        refs.append(VariantRef(label, run, name))
    labels = [r.label for r in refs]
    if len(set(labels)) != len(labels):
        raise EvalkitError(f"--variants names the same variant twice: {', '.join(labels)}")
    if len(refs) < 2:
        raise EvalkitError("compare needs at least two variants, e.g. --variants hybrid_rrf,hybrid_weighted")
    return refs


def _run_by_key(runs: Sequence[LoadedRun], key: str) -> LoadedRun:
    if key.isdigit() and 1 <= int(key) <= len(runs):
        return runs[int(key) - 1]
    for r in runs:
        if key in (r.label, r.source):
            return r
    raise EvalkitError(f"no run '{key}' among the arguments{did_you_mean(key, [r.label for r in runs])} "
                       f"(or a position 1..{len(runs)})")


def compare_variants(refs: Sequence[VariantRef], metrics: Sequence[str] | None = None, *, n_resamples: int = 10_000,
                     confidence: float = 0.95, seed: int = 0, correction: str = "holm",
                     alpha: float = 0.05) -> Comparison:
    """Compare each of ``refs[1:]`` with ``refs[0]`` on every metric (see the module docstring)."""
    if correction not in stats.CORRECTIONS:
        raise EvalkitError(f"unknown correction '{correction}'{did_you_mean(correction, stats.CORRECTIONS)}")
    base = refs[0]
    note = ""
    for r in refs[1:]:
        note = check_eval_sets(base.run.summary.eval_set, r.run.summary.eval_set, allow_versions=False)
    results = {r.label: r.run.results(r.variant) for r in refs}
    for r in refs[1:]:
        check_shared_queries(results[base.label], results[r.label], (base.label, r.label))
    names = _metrics(refs, results, metrics)
    tests: list[MetricTest] = []
    notes: list[str] = []
    for r in refs[1:]:
        for m in names:
            p = pair(per_query_values(results[base.label], m), per_query_values(results[r.label], m))
            if len(p) == 0:
                notes.append(f"{m}: no query has a value in both {base.label} and {r.label}; not tested")
                continue
            s = stats.derive_seed(seed, m, base.label, r.label)
            lo, hi = stats.bootstrap_ci(p.diffs, n_resamples, confidence, s)
            wins, ties, losses = stats.win_tie_loss(p.diffs, sign(m))
            tests.append(MetricTest(
                metric=m, reference=base.label, variant=r.label, n=len(p), mean_reference=float(p.a.mean()),
                mean_variant=float(p.b.mean()), diff=float(p.diffs.mean()), ci_low=lo, ci_high=hi,
                p=stats.sign_flip_pvalue(p.diffs, n_resamples, s), wins=wins, ties=ties, losses=losses,
                higher_is_better=higher_is_better(m)))
    for test, adj in zip(tests, stats.adjust([t.p for t in tests], correction)):
        test.p_adjusted = adj
    return Comparison(eval_set=note, labels=[r.label for r in refs], tests=tests, correction=correction,
                      n_resamples=n_resamples, confidence=confidence, seed=seed, alpha=alpha, notes=notes)


def _metrics(refs: Sequence[VariantRef], results: dict[str, list], wanted: Sequence[str] | None) -> list[str]:
    per_variant = [metric_names(results[r.label]) for r in refs]
    common = [m for m in per_variant[0] if all(m in names for names in per_variant[1:])]
    if not wanted:
        if not common:
            raise EvalkitError(f"the variants share no metric ({', '.join(r.label for r in refs)})")
        return common
    for m in wanted:
        if m not in common:
            raise EvalkitError(f"metric '{m}' is not in every compared variant"
                               f"{per_query_hint(m) or did_you_mean(m, common)}")
    return list(dict.fromkeys(wanted))


def format_comparison(c: Comparison) -> str:
    """The comparison as a plain-text table, one block per variant against the reference."""
    level = f"{c.confidence:.0%}"
    corr = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no"}[c.correction]
    out = [f"{c.eval_set}; reference: {c.labels[0]}",
           (f"paired bootstrap ({c.n_resamples} resamples, seed {c.seed}) {level} CI of the mean difference; "
            f"two-sided sign-flip permutation p; {corr} correction over {len(c.tests)} tests; alpha {c.alpha}"),
           ("retrieval metrics: answerable queries only; W/T/L: queries where the variant wins/ties/loses "
            "(in each metric's direction)")]
    for label in c.labels[1:]:
        tests = [t for t in c.tests if t.variant == label]
        if not tests:
            continue
        header = ["metric", "n", c.labels[0], label, "diff", f"{level} CI", "p", f"p_{c.correction}", "W/T/L",
                  "verdict"]
        rows = [[t.metric + ("" if t.higher_is_better else " (lower=better)"), str(t.n), f"{t.mean_reference:.4f}",
                 f"{t.mean_variant:.4f}", f"{t.diff:+.4f}", f"[{t.ci_low:+.4f}, {t.ci_high:+.4f}]", _p(t.p),
                 _p(t.p_adjusted), f"{t.wins}/{t.ties}/{t.losses}", t.verdict(c.alpha)] for t in tests]
        out += ["", f"{label} vs {c.labels[0]}", *text_table(header, rows)]
        real = [t for t in tests if t.verdict(c.alpha) != "n.s."]
        if real:
            out.append("real differences: " + "; ".join(f"{t.metric} {t.verdict(c.alpha)} ({t.diff:+.4f}, "
                                                         f"p_{c.correction} {_p(t.p_adjusted)})" for t in real))
        else:
            out.append(f"no difference is significant at alpha {c.alpha} after correction: the data cannot tell "
                       f"{label} from {c.labels[0]}")
    out += [f"note: {n}" for n in c.notes]
    return "\n".join(out)


def _p(p: float) -> str:
    if is_nan(p):
        return "-"
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"
