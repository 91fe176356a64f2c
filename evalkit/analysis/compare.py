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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from functools import partial
from typing import Any

from evalkit.analysis import stats
from evalkit.analysis.direction import higher_is_better, per_query_hint, sign
from evalkit.analysis.pairing import (
    Paired,
    check_eval_sets,
    check_scoring,
    check_shared_queries,
    metric_names,
    pair,
    per_query_values,
)
from evalkit.analysis.ppi import difference
from evalkit.analysis.runs import LoadedRun
from evalkit.analysis.tables import Column, Layout, TableData, is_nan, render, wrap
from evalkit.errors import EvalkitError, did_you_mean
from evalkit.machine import environment_notes


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
    win_ids: list[str] = field(default_factory=list)  # queries where the variant is better (sorted ids)
    tie_ids: list[str] = field(default_factory=list)
    loss_ids: list[str] = field(default_factory=list)
    method: str = "paired bootstrap"  # or "PPI++ (labels)": judge-corrected estimates of each variant

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
    reference_note: str = ""  # how the reference was chosen, when the user did not name it

    def __str__(self) -> str:
        return format_comparison(self)  # the table `evalkit compare` prints
    tools: list[dict[str, Any]] = field(default_factory=list)  # per-tool diagnostics (evalkit.analysis.tool_diag)

    def to_dict(self) -> dict[str, Any]:
        d = plain(self)
        for t, test in zip(d["tests"], self.tests):
            t["verdict"] = test.verdict(self.alpha)
        return d


_ATOMS = (str, int, float, bool, type(None))


@dataclass
class _Box:
    value: Any


def plain(x: Any) -> Any:
    """``dataclasses.asdict(x)`` (``x`` a dataclass) or what it makes of a field's value, faster on long lists.

    ``asdict`` deep-copies every string of the tests' query-id lists one call at a time (350k of them,
    2.5 s of compare at 8 x 10,000 queries); strings and numbers are returned as they are, as
    ``copy.deepcopy`` returns them. Dataclasses, exact lists and dicts are walked here; anything else
    goes through ``asdict`` itself, so the result is ``asdict``'s (tests/analysis/test_fast_paths.py).
    """
    kind = type(x)
    if kind in _ATOMS:
        return x
    if kind is list:
        return [v if type(v) in _ATOMS else plain(v) for v in x]
    if kind is dict:
        return {plain(k): plain(v) for k, v in x.items()}
    if is_dataclass(x) and not isinstance(x, type):
        return {f.name: plain(getattr(x, f.name)) for f in fields(x)}
    return asdict(_Box(x))["value"]


class TooFewVariantsError(EvalkitError):
    """Fewer than two variants to compare (a usage error: the command exits 2)."""


def resolve_variants(runs: Sequence[LoadedRun], spec: str | None, reference: str | None = None) -> list[VariantRef]:
    """Parse ``--variants`` and ``--reference`` into the compared variants, the reference first.

    Items are ``NAME`` (in the only run, or unique across runs) or ``RUN:NAME`` (``RUN``:
    the run's position among the arguments, 1-based, or its label, the summary file
    stem). ``--variants``: its first item is the reference unless ``reference`` names
    another one. Without ``--variants``: every variant of a single run, the reference
    being ``reference`` or else the run's first variant (:func:`reference_note` says so).
    """
    if not spec:
        if len(runs) != 1:
            raise EvalkitError("several runs given: name the variants with --variants RUN:NAME,RUN:NAME "
                               "(RUN = position or file stem)")
        refs = [VariantRef(n, runs[0], n) for n in runs[0].variant_names]
    else:
        refs = [_ref(runs, item) for item in [s.strip() for s in spec.split(",") if s.strip()]]
    if reference:
        ref = _ref(runs, reference)
        refs = [ref, *[r for r in refs if (r.run, r.variant) != (ref.run, ref.variant)]]
    labels = [r.label for r in refs]
    if len(set(labels)) != len(labels):
        raise EvalkitError(f"--variants names the same variant twice: {', '.join(labels)}")
    if len(refs) < 2:
        have = f"only '{refs[0].label}'" if refs else "none"
        raise TooFewVariantsError(f"compare needs at least two variants ({have} given), e.g. --variants "
                                  "hybrid_rrf,hybrid_weighted (the first is the reference)")
    return refs


def reference_note(spec: str | None, reference: str | None, refs: Sequence[VariantRef]) -> str:
    """A sentence announcing the reference when the user named none ("" when they did)."""
    if spec or reference:
        return ""
    return (f"reference: {refs[0].label}, the run's first variant (not chosen by you: pick one with "
            "--reference NAME, or --variants REF,OTHER,...)")


def _ref(runs: Sequence[LoadedRun], item: str) -> VariantRef:
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
    return VariantRef(name if len(runs) == 1 else f"{run.label}:{name}", run, name)


def _run_by_key(runs: Sequence[LoadedRun], key: str) -> LoadedRun:
    if key.isdigit() and 1 <= int(key) <= len(runs):
        return runs[int(key) - 1]
    for r in runs:
        if key in (r.label, r.source):
            return r
    raise EvalkitError(f"no run '{key}' among the arguments{did_you_mean(key, [r.label for r in runs])} "
                       f"(or a position 1..{len(runs)})")


CORRECTED = {"hallucinated": "hallucination_rate", "faithfulness": "faithfulness"}
"""Per-query metric -> the variant estimate that human labels correct (evalkit.analysis.labels)."""


def compare_variants(refs: Sequence[VariantRef], metrics: Sequence[str] | None = None, *, n_resamples: int = 10_000,
                     confidence: float = 0.95, seed: int = 0, correction: str = "holm",
                     alpha: float = 0.05, corrected: Mapping[str, Any] | None = None) -> Comparison:
    """Compare each of ``refs[1:]`` with ``refs[0]`` on every metric (see the module docstring).

    ``corrected`` (``{label: Corrected}`` from :func:`evalkit.analysis.labels.corrected_for_runs`):
    when both variants of a pair have a judge-corrected estimate of ``hallucination_rate``
    or ``faithfulness``, the ``hallucinated`` / ``faithfulness`` row compares those
    estimates (difference, normal interval from the summed variances, two-sided z test)
    instead of the raw judge values; win/tie/loss stay the raw per-query counts.
    """
    if correction not in stats.CORRECTIONS:
        raise EvalkitError(f"unknown correction '{correction}'{did_you_mean(correction, stats.CORRECTIONS)}")
    base = refs[0]
    note = ""
    for r in refs[1:]:
        note = check_eval_sets(base.run.summary.eval_set, r.run.summary.eval_set, allow_versions=False)
        check_scoring(base.run.summary.scoring, r.run.summary.scoring, (base.label, r.label))
    results: dict[str, list] = {}
    started: dict[str, _PairTests] = {}
    base_values: dict[str, dict[str, float]] = {}
    names_of: dict[str, list[str]] = {}
    try:  # each pair's resampling starts as soon as its variant is read, and runs while the next one is read
        for r in refs:
            results[r.label] = r.run.results(r.variant)
            names_of[r.label] = metric_names(results[r.label])  # once per variant: it walks every record
            if r is not base:
                started[r.label] = _PairTests(results, names_of, base, r, metrics, seed, n_resamples, confidence,
                                              base_values)
        for r in refs[1:]:
            check_shared_queries(results[base.label], results[r.label], (base.label, r.label))
        names = _metrics(refs, names_of, metrics)
    except BaseException:
        for pending in started.values():
            pending.calls.cancel()
        raise
    tests: list[MetricTest] = []
    notes: list[str] = [n for r in refs[1:] for n in environment_notes(
        base.run.summary.environment, r.run.summary.environment, (base.label, r.label))]
    for r in refs[1:]:
        pending = started[r.label]
        index = {key: i for i, key in enumerate(pending.tested)}  # only the shared metrics' results are asked for
        for m in names:  # the tests in the order of before: variant by variant, metric by metric
            p = pending.pairs[m]
            if len(p) == 0:
                notes.append(f"{m}: no query has a value in both {base.label} and {r.label}; not tested")
                continue
            (lo, hi), p_value = pending.calls.result(index["ci", m]), pending.calls.result(index["p", m])
            wins, ties, losses = stats.win_tie_loss(p.diffs, sign(m))
            won, tied, lost = stats.win_tie_loss_ids(p.query_ids, p.diffs, sign(m))
            tests.append(MetricTest(
                metric=m, reference=base.label, variant=r.label, n=len(p), mean_reference=float(p.a.mean()),
                mean_variant=float(p.b.mean()), diff=float(p.diffs.mean()), ci_low=lo, ci_high=hi,
                p=p_value, wins=wins, ties=ties, losses=losses,
                higher_is_better=higher_is_better(m), win_ids=won, tie_ids=tied, loss_ids=lost))
    if corrected:
        tests = [_corrected_test(t, corrected) for t in tests]
    for test, adj in zip(tests, stats.adjust([t.p for t in tests], correction)):
        test.p_adjusted = adj
    return Comparison(eval_set=note, labels=[r.label for r in refs], tests=tests, correction=correction,
                      n_resamples=n_resamples, confidence=confidence, seed=seed, alpha=alpha, notes=notes)


class _PairTests:
    """The resampling of one variant against the reference, started on the pool (:func:`stats.start`) once both
    are read: a bootstrap interval and a sign-flip p per metric both have (among ``wanted``, when given), each
    with the seed it always had. Metrics that turn out not to be shared by every variant are never collected."""

    def __init__(self, results: dict[str, list], names_of: dict[str, list[str]], base: VariantRef, r: VariantRef,
                 wanted: Sequence[str] | None, seed: int, n_resamples: int, confidence: float,
                 base_values: dict[str, dict[str, float]]) -> None:
        mine = set(names_of[r.label])
        candidates = [m for m in (dict.fromkeys(wanted) if wanted else names_of[base.label]) if m in mine]
        for m in candidates:  # the reference's values, shared by every pair
            if m not in base_values:
                base_values[m] = per_query_values(results[base.label], m)
        self.pairs: dict[str, Paired] = {m: pair(base_values[m], per_query_values(results[r.label], m))
                                         for m in candidates}
        tested = [(m, p, stats.derive_seed(seed, m, base.label, r.label)) for m, p in self.pairs.items() if len(p)]
        self.tested = [("ci", m) for m, _, _ in tested] + [("p", m) for m, _, _ in tested]
        calls: list[Callable[[], Any]] = [partial(stats.bootstrap_ci, p.diffs, n_resamples, confidence, s)
                                          for _, p, s in tested]
        calls += [partial(stats.sign_flip_pvalue, p.diffs, n_resamples, s) for _, p, s in tested]
        self.calls = stats.start(calls)


def _corrected_test(t: MetricTest, corrected: Mapping[str, Any]) -> MetricTest:
    """``t`` with the judge-corrected estimates of both variants, when there are some."""
    name = CORRECTED.get(t.metric)
    a, b = corrected.get(t.reference), corrected.get(t.variant)
    if name is None or a is None or b is None or name not in a.estimates or name not in b.estimates:
        return t
    ea, eb = a.estimates[name], b.estimates[name]
    d, _se, lo, hi, p = difference(ea, eb)
    return MetricTest(metric=t.metric, reference=t.reference, variant=t.variant, n=min(ea.n_total, eb.n_total),
                      mean_reference=ea.estimate, mean_variant=eb.estimate, diff=d, ci_low=lo, ci_high=hi, p=p,
                      wins=t.wins, ties=t.ties, losses=t.losses, higher_is_better=t.higher_is_better,
                      win_ids=t.win_ids, tie_ids=t.tie_ids, loss_ids=t.loss_ids,
                      method=f"PPI++ (labels: {ea.n_labelled} + {eb.n_labelled})")


def _metrics(refs: Sequence[VariantRef], names_of: dict[str, list[str]], wanted: Sequence[str] | None) -> list[str]:
    per_variant = [names_of[r.label] for r in refs]
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


SHOW_TIES = 10
"""Tie ids are printed only when there are at most this many (every id is in ``--json``)."""


def comparison_table(c: Comparison, label: str) -> TableData | None:
    """The table of ``label`` against the reference, metrics as rows (None when nothing was tested)."""
    tests = [t for t in c.tests if t.variant == label]
    if not tests:
        return None
    cols = [Column("metric", numeric=False), Column("n"), Column("reference"), Column("variant"), Column("diff"),
            Column("CI", f"{c.confidence:.0%} CI"), Column("verdict", numeric=False), Column(f"p_{c.correction}"),
            Column("W/T/L"), Column("p")]
    rows = [[t.metric + ("" if t.higher_is_better else " (lower=better)")
             + (" [PPI]" if t.method != "paired bootstrap" else ""), str(t.n), f"{t.mean_reference:.4f}",
             f"{t.mean_variant:.4f}", f"{t.diff:+.4f}", f"[{t.ci_low:+.4f}, {t.ci_high:+.4f}]",
             t.verdict(c.alpha), _p(t.p_adjusted), f"{t.wins}/{t.ties}/{t.losses}", _p(t.p)] for t in tests]
    real = [t for t in tests if t.verdict(c.alpha) != "n.s."]
    if real:
        notes = ["real differences: " + "; ".join(f"{t.metric} {t.verdict(c.alpha)} ({t.diff:+.4f}, "
                                                  f"p_{c.correction} {_p(t.p_adjusted)})" for t in real)]
    else:
        notes = [(f"no difference is significant at alpha {c.alpha} after correction: the data cannot tell "
                 f"{label} from {c.labels[0]}")]
    return TableData(f"{label} vs {c.labels[0]} (reference)", cols, rows, notes=notes)


def query_id_lines(c: Comparison, label: str, width: int) -> list[str]:
    """The queries behind each W/T/L count of ``label``'s tests (ties listed when few)."""
    lines = []
    for t in (t for t in c.tests if t.variant == label):
        if not (t.win_ids or t.loss_ids):
            lines.append(f"  {t.metric}: no query differs ({t.ties} ties)")
            continue
        ties = " ".join(t.tie_ids) if len(t.tie_ids) <= SHOW_TIES else f"{t.ties} queries (ids in --json)"
        text = (f"  {t.metric}: wins ({t.wins}) {' '.join(t.win_ids) or '-'}; losses ({t.losses}) "
                f"{' '.join(t.loss_ids) or '-'}; ties {ties or '-'}")
        lines.append(wrap(text, width, indent="      "))
    return lines


def format_comparison(c: Comparison, layout: Layout | None = None) -> str:
    """The comparison as text: the method, one table per variant against the reference, the query ids."""
    layout = layout or Layout()
    width = 100_000 if layout.wide else layout.width
    corr = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no"}[c.correction]
    head = [f"{c.eval_set}; reference: {c.labels[0]}"]
    if c.reference_note:
        head.append(c.reference_note)
    head += [(f"paired bootstrap ({c.n_resamples} resamples, seed {c.seed}) {c.confidence:.0%} CI of the mean "
              f"difference; two-sided sign-flip permutation p; {corr} correction over {len(c.tests)} tests; "
              f"alpha {c.alpha}"),
             ("retrieval metrics: answerable queries only; reference / variant: the two means; W/T/L: queries "
              "where the variant wins/ties/loses (in each metric's direction)")]
    out = [wrap(h, width) for h in head]
    for label in c.labels[1:]:
        table = comparison_table(c, label)
        if table is not None:
            out += ["", render([table], layout), f"query ids ({label} vs {c.labels[0]}):",
                    *query_id_lines(c, label, width)]
    if any(t.method != "paired bootstrap" for t in c.tests):
        out.append(wrap("[PPI]: judge-corrected estimates from human labels (prediction-powered inference, PPI++), "
                        "normal interval of the difference; see evalkit/analysis/ppi.py", width))
    out += [wrap(f"note: {n}", width) for n in c.notes]
    return "\n".join(out)


def _p(p: float) -> str:
    if is_nan(p):
        return "-"
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"
