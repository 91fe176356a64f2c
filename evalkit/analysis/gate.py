"""The deploy gate: is a candidate run non-inferior to a baseline on every named metric?

For each ``(metric, max_drop)`` the per-query values of the two runs are paired on their
shared queries (retrieval metrics: answerable queries only) and the improvement
``sign * (candidate - baseline)`` is bootstrapped (paired, seeded); ``sign`` is -1 for
lower-is-better metrics (:mod:`evalkit.analysis.direction`), which mirrors the test.
The candidate passes a metric when the lower confidence bound of the improvement is
above ``-max_drop``: with the chosen confidence, it is at most ``max_drop`` worse.

Before testing, the gate refuses (each refusal is an error class with its own
``exit_code``; the table is in ``evalkit gate --help``): runs of different eval sets,
corpora or versions (3, ``DifferentEvalSetsError``; two versions of one append-only set only
with ``shared_queries``); a variant that did not finish, or whose per-query records do not
cover its eval set (7, :class:`evalkit.analysis.runs.IncompleteRunError`); an eval set that no longer matches what a run
recorded, re-verified with :func:`evalkit.evalsets.load_eval_set` when the set file is
available, or runs that disagree on a shared query (4, ``TamperedEvalSetError``); a
candidate with more failed queries than allowed (5, :class:`TooManyFailuresError`); a candidate
degraded on a larger share of queries than the baseline's plus ``max_degraded_share`` (6,
:class:`DegradedCandidateError`; a degraded query is one whose LLM call failed after retries,
whatever the graph did next, or whose generator answered nothing usable, :mod:`evalkit.run.health`), or
that generates but answered none of the shared queries the baseline answered some of (6), or whose
index was built while its LLM failed on a larger share of passages (6: an entity graph extracted by
an LLM is then partial for every query, which no query's trace shows); a
candidate whose answers cite passages they were not shown (ids the retriever never returned: an
LLM inventing sources) on a larger share of queries than the baseline's plus
``max_invalid_citation_share`` (8, :class:`InventedCitationsError`): its claims can read as
faithful to the evidence it was given while the sources it names do not exist.
Answer metrics are paired on the
queries healthy in both runs (the others' answers are fallbacks), and the result says how many
were left out. When answer metrics are gated, the gate adds checks of its own: the share of
answerable questions declined must not grow by more than ``max_declined_increase``
(:func:`declined_check`), since answer metrics computed on answered questions improve when a
candidate declines the hard ones; and when ``hallucinated`` is gated, ``hallucinated`` per
answerable question (:func:`wrong_check`, a declined one counting 0) is tested with its margin,
since a candidate's wrong answers to questions the baseline declined are not paired by
``hallucinated``. Runs of two versions of the same append-only set are compared on their
shared queries, and the result says how many.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evalkit.analysis import stats
from evalkit.analysis.compare import CORRECTED
from evalkit.analysis.direction import per_query_hint, sign
from evalkit.analysis.gate_checks import (
    DegradedCandidateError,
    TooManyFailuresError,
    check_answered,
    check_citations,
    check_indexes,
)
from evalkit.analysis.pairing import (
    DifferentEvalSetsError,
    TamperedEvalSetError,
    check_eval_sets,
    check_scoring,
    check_shared_queries,
    is_retrieval_metric,
    metric_names,
    pair,
    per_query_values,
)
from evalkit.analysis.ppi import difference, z_value
from evalkit.analysis.runs import LoadedRun, check_finished, check_records
from evalkit.analysis.tables import Column, Layout, TableData, render, wrap
from evalkit.errors import EvalkitError, EvalSetError, did_you_mean
from evalkit.evalsets import load_eval_set
from evalkit.machine import environment_notes
from evalkit.run.health import is_degraded, query_degradations
from evalkit.scoring.answers import content_sha256

DECLINED = "declined (answerable)"
DECLINED_MARGIN = 0.05  # the default --max-declined-increase
WRONG = "hallucinated (per answerable)"
AUTOMATIC = "paired bootstrap, automatic"


@dataclass
class GateCheck:
    """One metric's non-inferiority test."""

    metric: str
    max_drop: float
    n: int
    baseline: float
    candidate: float
    diff: float
    ci_low: float
    ci_high: float
    bound: float
    passed: bool
    higher_is_better: bool
    method: str = "paired bootstrap"  # or "PPI++ (labels)": judge-corrected estimates of both runs


@dataclass
class GateResult:
    """Every check plus how the runs were matched."""

    baseline: str
    candidate: str
    eval_set: str
    shared_queries: int
    baseline_queries: int
    candidate_queries: int
    checks: list[GateCheck]
    confidence: float
    n_resamples: int
    seed: int
    failed_share: float
    verified: list[str] = field(default_factory=list)
    degraded_share: dict[str, float] = field(default_factory=dict)  # baseline / candidate, on the shared queries
    degraded_dropped: int = 0  # shared queries left out of the answer metrics (degraded in either run)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "passed": self.passed}


def verify_eval_set(run: LoadedRun, variant: str, loaded: dict[tuple[str, int], Any] | None = None) -> str:
    """Re-verify a run's eval set file against the hash it recorded; a note, or ``TamperedEvalSetError``.

    ``loaded``: eval sets already read by this gate, by (path, version): a baseline and a candidate
    of the same set read and hash its file once (0.6 s of a 10,000-query gate).
    """
    ref = run.summary.eval_set
    if ref.kind == "answers_file":  # outputs scored without an eval set: the file is the identity
        return _verify_answers_file(run, ref)
    if not ref.path or not Path(ref.path).is_file():
        return f"{run.label}: eval set file not available ({ref.path or 'path not recorded'}); not re-verified"
    cache = {} if loaded is None else loaded
    key = (ref.path, ref.version)
    try:
        if key not in cache:
            cache[key] = load_eval_set(f"{ref.path}@v{ref.version}", check_corpus=False)
    except EvalSetError as exc:
        raise TamperedEvalSetError(f"{run.label}: eval set {ref.name} v{ref.version} fails verification: {exc}") \
            from exc
    es = cache[key]
    if es.sha256 != ref.sha256:
        raise TamperedEvalSetError(f"{run.label}: the run recorded {ref.name} v{ref.version} with sha256 "
                                   f"{ref.sha256[:12]}, but {ref.path} v{ref.version} now hashes to {es.sha256[:12]}")
    ids = [r.id for r in es.records]
    got = sorted(r["query_id"] for r in run.rows(variant))
    if got != sorted(ids):
        raise TamperedEvalSetError(f"{run.label}:{variant}: its per-query records hold {len(got)} queries, but "
                                   f"{ref.name} v{ref.version} has {len(ids)} (ids differ): the results were edited")
    return f"{run.label}: {ref.path} v{ref.version} re-verified (sha256 {es.sha256[:12]})"


def _verify_answers_file(run: LoadedRun, ref: Any) -> str:
    path = Path(ref.path)
    if not ref.path or not path.exists():
        return f"{run.label}: answers file not available ({ref.path or 'path not recorded'}); not re-verified"
    digest = content_sha256(path)
    if digest != ref.sha256:
        raise TamperedEvalSetError(f"{run.label}: the run recorded answers file {ref.path} with sha256 "
                                   f"{ref.sha256[:12]}, but it now hashes to {digest[:12]}: it changed since scoring")
    return f"{run.label}: answers file {ref.path} re-verified (sha256 {digest[:12]})"


def run_gate(baseline: LoadedRun, candidate: LoadedRun, baseline_variant: str, candidate_variant: str,
             margins: Sequence[tuple[str, float]], *, confidence: float = 0.95, n_resamples: int = 10_000,
             seed: int = 0, max_failed_share: float = 0.0, max_degraded_share: float = 0.0,
             corrected: Any = None, shared_queries: bool = False,
             max_invalid_citation_share: float = 0.0,
             max_declined_increase: float = DECLINED_MARGIN) -> GateResult:
    """Check the eval sets, the candidate's failures and degraded share, then every metric (module docstring).

    ``corrected`` (``{"baseline": Corrected, "candidate": Corrected}``): for ``hallucinated``
    and ``faithfulness``, when both runs have judge-corrected estimates, the check tests
    the difference of those estimates (lower bound of the normal interval of the
    improvement, from the summed variances) instead of the raw judge values.
    ``shared_queries``: gate runs of two versions of one append-only set on the queries they
    share (refused otherwise: the queries only one version has would go ungated).
    ``max_declined_increase``: the margin of the answer-coverage check :func:`declined_check` adds
    when answer metrics are gated.
    """
    for run, name in ((baseline, baseline_variant), (candidate, candidate_variant)):
        check_finished(run, name)
        check_records(run, name)
    a_ref, b_ref = baseline.summary.eval_set, candidate.summary.eval_set
    note = check_eval_sets(a_ref, b_ref, allow_versions=True)
    if a_ref.version != b_ref.version and not shared_queries:
        raise DifferentEvalSetsError(
            f"the baseline ran eval set '{a_ref.name}' v{a_ref.version} ({a_ref.n_queries} queries) and the candidate "
            f"v{b_ref.version} ({b_ref.n_queries} queries): the queries only one version has would go ungated. "
            f"Re-run one of them on the other's version, or pass --shared-queries to gate on the queries both share")
    check_scoring(baseline.summary.scoring, candidate.summary.scoring, (baseline.label, candidate.label))
    sets: dict[tuple[str, int], Any] = {}
    verified = [verify_eval_set(baseline, baseline_variant, sets), verify_eval_set(candidate, candidate_variant, sets),
                *environment_notes(baseline.summary.environment, candidate.summary.environment,
                                   (baseline.label, candidate.label))]
    base = baseline.results(baseline_variant)
    cand = candidate.results(candidate_variant)
    labels = (f"{baseline.label}:{baseline_variant}", f"{candidate.label}:{candidate_variant}")
    shared = check_shared_queries(base, cand, labels)
    if not shared:
        raise EvalkitError(f"{labels[0]} and {labels[1]} share no query")
    only = set(shared)
    failed = sum(r.error is not None for r in cand if r.query_id in only)
    share = failed / len(shared)
    if share > max_failed_share + 1e-12:
        raise TooManyFailuresError(f"the candidate {labels[1]} failed on {failed} of {len(shared)} queries "
                                   f"({share:.1%}); --max-failed-share allows {max_failed_share:.1%}. See 'error' "
                                   "in its per_query.jsonl")
    sick = {label: {r.query_id for r in rs if r.query_id in only and is_degraded(r)}
            for label, rs in (("baseline", base), ("candidate", cand))}
    degraded = {label: len(ids) / len(shared) for label, ids in sick.items()}
    if degraded["candidate"] > degraded["baseline"] + max_degraded_share + 1e-12:
        causes = sorted({d["cause"] for r in cand if r.query_id in sick["candidate"]
                         for d in query_degradations(r)})
        raise DegradedCandidateError(
            f"the candidate {labels[1]} is degraded on {len(sick['candidate'])} of {len(shared)} queries "
            f"({degraded['candidate']:.1%}; causes: {', '.join(causes)}), the baseline on {len(sick['baseline'])} "
            f"({degraded['baseline']:.1%}); --max-degraded-share allows {max_degraded_share:.1%} more. A degraded "
            "query is one whose LLM call failed after retries or whose generator (an LLM, or your own system) answered "
            "nothing usable (empty, content filter, an error message); see 'degraded' in its per_query.jsonl")
    check_indexes((baseline, candidate), (baseline_variant, candidate_variant), labels, max_degraded_share)
    check_answered(base, cand, only, labels)
    healthy = only - sick["baseline"] - sick["candidate"]
    check_citations(base, cand, healthy, labels, max_invalid_citation_share)
    available = [m for m in metric_names(base) if m in metric_names(cand)]
    checks = []
    for metric, max_drop in margins:
        if metric not in available:
            missing = [label for label, rs in zip(labels, (base, cand)) if metric not in metric_names(rs)]
            if metric in metric_names(base) or metric in metric_names(cand):
                raise EvalkitError(f"metric '{metric}' has no per-query value in {' or '.join(missing)}: "
                                   f"{_why_absent(cand if labels[1] in missing else base, metric)}")
            raise EvalkitError(f"metric '{metric}' is not in both runs"
                               f"{per_query_hint(metric) or did_you_mean(metric, available)}")
        keep = only if is_retrieval_metric(metric) or metric == "degraded" else healthy
        p = pair(per_query_values(base, metric), per_query_values(cand, metric), keep)
        if len(p) == 0:
            raise EvalkitError(f"metric '{metric}': no shared query has a value in both runs")
        s = sign(metric)
        ppi = _corrected_check(metric, max_drop, corrected, s, len(p))
        if ppi is not None:
            checks.append(ppi)
            continue
        checks.append(_bootstrap_check(metric, p, s, max_drop, confidence, n_resamples, seed))
    if any(not is_retrieval_metric(m) for m, _ in margins):
        coverage = declined_check(base, cand, healthy, max_declined_increase, confidence, n_resamples, seed)
        if coverage is not None:
            checks.append(coverage)
    if "hallucinated" in dict(margins):
        wrong = wrong_check(base, cand, healthy, dict(margins)["hallucinated"], confidence, n_resamples, seed)
        if wrong is not None:
            checks.append(wrong)
    return GateResult(baseline=labels[0], candidate=labels[1], eval_set=note, shared_queries=len(shared),
                      baseline_queries=len(base), candidate_queries=len(cand), checks=checks, confidence=confidence,
                      n_resamples=n_resamples, seed=seed, failed_share=share, verified=verified,
                      degraded_share=degraded, degraded_dropped=len(only - healthy))


def _declined(results: Sequence[Any], only: set[str]) -> dict[str, float]:
    """``{query_id: 1.0 if declined else 0.0}`` over the answerable queries among ``only`` that generated."""
    return {r.query_id: float(bool(r.metrics.get("abstained"))) for r in results
            if r.query_id in only and r.answerable and r.generation and "abstained" in r.metrics}


def declined_check(base: Sequence[Any], cand: Sequence[Any], healthy: set[str], max_increase: float,
                   confidence: float, n_resamples: int, seed: int) -> GateCheck | None:
    """The share of answerable questions the candidate declined (abstained on), tested against the baseline's.

    Answer metrics are computed on answered questions (``hallucinated`` is undefined for a declined
    answerable question, ``faithfulness`` for any unanswered one), so a candidate that declines its
    hard questions scores better on them while answering less. When answer metrics are gated this
    check is added: FAIL when the candidate may decline more than ``max_increase`` (a share of the
    answerable healthy queries) above the baseline. None when a run generated no answers there.
    """
    return _automatic(DECLINED, _declined(base, healthy), _declined(cand, healthy), max_increase, confidence,
                      n_resamples, seed)


def _wrong(results: Sequence[Any], only: set[str]) -> dict[str, float]:
    """``{query_id: 1.0 hallucinated, 0.0 not or declined}`` over the answerable queries among ``only`` that
    generated; an answer the judge could not decide is left out."""
    out: dict[str, float] = {}
    for r in results:
        if r.query_id in only and r.answerable and r.generation:
            value = 0.0 if r.metrics.get("abstained") else r.metrics.get("hallucinated")
            if value is not None:
                out[r.query_id] = float(value)
    return out


def wrong_check(base: Sequence[Any], cand: Sequence[Any], healthy: set[str], max_drop: float, confidence: float,
                n_resamples: int, seed: int) -> GateCheck | None:
    """``hallucinated`` per answerable question, a declined one counting as not hallucinated.

    The ``hallucinated`` row pairs the questions both runs answered, so a candidate that answers
    questions the baseline declined, and gets them wrong, is not seen there; this row pairs every
    answerable question either run answered or declined (with :func:`declined_check`, which sees the
    other way round). Added when ``hallucinated`` is gated, with its margin.
    """
    return _automatic(WRONG, _wrong(base, healthy), _wrong(cand, healthy), max_drop, confidence, n_resamples, seed)


def _automatic(name: str, base: dict[str, float], cand: dict[str, float], max_drop: float, confidence: float,
               n_resamples: int, seed: int) -> GateCheck | None:
    """A lower-is-better row the gate adds itself: FAIL when the candidate may be worse by more than ``max_drop``."""
    p = pair(base, cand)
    return _bootstrap_check(name, p, -1, max_drop, confidence, n_resamples, seed, AUTOMATIC) if len(p) else None


def _bootstrap_check(name: str, p: Any, s: int, max_drop: float, confidence: float, n_resamples: int, seed: int,
                     method: str = "paired bootstrap") -> GateCheck:
    """The non-inferiority test of paired values ``p``: the bootstrapped improvement ``s * (candidate -
    baseline)`` (``s`` -1 when lower is better) passes when its lower bound is above ``-max_drop``."""
    lo, hi = stats.bootstrap_ci(s * p.diffs, n_resamples, confidence, stats.derive_seed(seed, "gate", name))
    return GateCheck(metric=name, max_drop=max_drop, n=len(p), baseline=float(p.a.mean()),
                     candidate=float(p.b.mean()), diff=float(p.diffs.mean()), ci_low=lo if s > 0 else -hi,
                     ci_high=hi if s > 0 else -lo, bound=lo, passed=lo > -max_drop, higher_is_better=s > 0,
                     method=method)


def _why_absent(results: Sequence[Any], metric: str) -> str:
    """Why a run has no value of ``metric``: how many of its queries were answered, judged or degraded."""
    n = len(results)
    answered = sum(bool(r.metrics.get("answered")) for r in results)
    degraded = sum(is_degraded(r) for r in results)
    return (f"{answered} of its {n} queries were answered and {degraded} degraded, so no answer was judged for "
            f"'{metric}'" if any(r.generation for r in results) else f"none of its {n} queries carries '{metric}'")


def _corrected_check(metric: str, max_drop: float, corrected: Any, s: int, n: int) -> GateCheck | None:
    name = CORRECTED.get(metric)
    if not corrected or name is None:
        return None
    a, b = corrected.get("baseline"), corrected.get("candidate")
    if a is None or b is None or name not in a.estimates or name not in b.estimates:
        return None
    ea, eb = a.estimates[name], b.estimates[name]
    d, se, lo, hi, _p = difference(ea, eb)
    bound = s * d - z_value(ea.confidence) * se  # the improvement's lower bound
    return GateCheck(metric=metric, max_drop=max_drop, n=n, baseline=ea.estimate, candidate=eb.estimate, diff=d,
                     ci_low=lo, ci_high=hi, bound=bound, passed=bound > -max_drop, higher_is_better=s > 0,
                     method=f"PPI++ (labels: {ea.n_labelled} + {eb.n_labelled})")


def gate_table(g: GateResult) -> TableData:
    """One row per metric with its margin, interval and PASS/FAIL."""
    cols = [Column("metric", numeric=False), Column("n"), Column("baseline"), Column("candidate"), Column("diff"),
            Column("CI", f"{g.confidence:.0%} CI"), Column("max_drop"), Column("worst case"),
            Column("result", numeric=False)]
    rows = [[c.metric + ("" if c.higher_is_better else " (lower=better)")
             + {"paired bootstrap": "", AUTOMATIC: " [auto]"}.get(c.method, " [PPI]"), str(c.n), f"{c.baseline:.4f}",
             f"{c.candidate:.4f}", f"{c.diff:+.4f}", f"[{c.ci_low:+.4f}, {c.ci_high:+.4f}]", f"{c.max_drop:.4f}",
             f"{-c.bound:.4f} worse" if c.bound < 0 else "no drop", "PASS" if c.passed else "FAIL"]
            for c in g.checks]
    return TableData("", cols, rows, pinned=("result",))  # the verdict is never dropped to fit the width


def _named(role: str, label: str) -> str:
    """``"candidate run2:bm25"``, or the label alone when it already says its role (``candidate:bm25``)."""
    return label if label.lower().startswith(role) else f"{role} {label}"


def format_gate(g: GateResult, layout: Layout | None = None) -> str:
    """The gate's method, its table and the verdict."""
    layout = layout or Layout()
    width = 100_000 if layout.wide else layout.width
    level = f"{g.confidence:.0%}"
    head = [f"gate: {_named('candidate', g.candidate)} vs {_named('baseline', g.baseline)}; {g.eval_set}"]
    if g.shared_queries != max(g.baseline_queries, g.candidate_queries):
        head.append(f"comparing the {g.shared_queries} shared queries only (baseline {g.baseline_queries}, "
                    f"candidate {g.candidate_queries})")
    if g.degraded_dropped:
        head.append(f"answer metrics paired on the queries healthy in both runs: {g.degraded_dropped} degraded "
                    f"quer{'y' if g.degraded_dropped == 1 else 'ies'} left out (degraded share: baseline "
                    f"{g.degraded_share.get('baseline', 0):.1%}, candidate {g.degraded_share.get('candidate', 0):.1%})")
    head.append(f"non-inferior when the lower {level} bound of the paired-bootstrap improvement > -max_drop "
                f"({g.n_resamples} resamples, seed {g.seed}); candidate failed share {g.failed_share:.1%}")
    failed = [c.metric for c in g.checks if not c.passed]
    verdict = ("PASS: the candidate is non-inferior on every metric" if not failed else
               f"FAIL: the candidate may be worse by more than the margin on {', '.join(failed)}")
    ppi = (["[PPI]: judge-corrected estimates from human labels (PPI++), normal interval of the difference"]
           if any(c.method not in ("paired bootstrap", AUTOMATIC) for c in g.checks) else [])
    if any(c.method == AUTOMATIC for c in g.checks):
        ppi.append("[auto]: added because answer metrics are gated: they are computed on answered questions, so "
                   "declining hard ones would improve them (--max-declined-increase), and answering questions "
                   "the baseline declined would go unpaired (hallucinated per answerable question)")
    lines = [*head, render([gate_table(g)], layout), *ppi, *[f"note: {v}" for v in g.verified], verdict]
    return "\n".join(wrap(line, width) if "\n" not in line else line for line in lines)
