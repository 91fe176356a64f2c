"""Per-query metric values and how two variants' queries are paired.

A metric's per-query values come from ``QueryResult.metrics`` (retrieval metrics now;
judged metrics later, under their own names). Retrieval metrics (names the metric
registry parses, e.g. ``hit@5``) count answerable queries only; any other metric counts
every query that carries it. The guard's two rates are per-query indicators too:
``abstain_rate_answerable`` (1 when the guard stopped an answerable query) and
``abstain_rate_unanswerable`` (1 when it stopped an unanswerable one), for variants with a guard.

Two variants are compared on the queries both have a value for, matched by query id and
sorted by id, so results never depend on file or dict order.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalkit.analysis.direction import is_descriptive
from evalkit.errors import EvalkitError
from evalkit.graph.events import guard_ran, guard_tripped
from evalkit.metrics import MetricNameError, Scoring, parse_metric
from evalkit.records import EvalSetRef, QueryResult

ABSTAIN_RATES = {"abstain_rate_answerable": True, "abstain_rate_unanswerable": False}
"""Abstention rate name -> whether it is computed over answerable (True) or unanswerable queries."""


class DifferentEvalSetsError(EvalkitError):
    """Two runs asked different questions (another set, another corpus, or another version)."""

    exit_code = 3


class TamperedEvalSetError(EvalkitError):
    """An eval set no longer matches what a run recorded, or two runs disagree on shared queries."""

    exit_code = 4


def is_retrieval_metric(name: str) -> bool:
    """Whether ``name`` is a retrieval metric of the registry (``hit@5``, ``retrieval:ndcg@10``)."""
    try:
        parse_metric(name)
    except MetricNameError:
        return False
    return True


def has_guard(results: Sequence[QueryResult]) -> bool:
    """Whether a guard node ran on these queries."""
    return any(guard_ran(r) for r in results)


def per_query_values(results: Sequence[QueryResult], metric: str) -> dict[str, float]:
    """``{query_id: value}`` of ``metric`` over the queries it is defined on (see the module docstring)."""
    if metric in ABSTAIN_RATES:
        if not has_guard(results):
            return {}
        answerable = ABSTAIN_RATES[metric]
        return {r.query_id: float(guard_tripped(r)) for r in results if bool(r.gold_doc_ids) == answerable}
    retrieval = is_retrieval_metric(metric)
    return {r.query_id: float(v) for r in results
            if (v := r.metrics.get(metric)) is not None and (r.gold_doc_ids or not retrieval)}


def metric_names(results: Sequence[QueryResult], descriptive: bool = False) -> list[str]:
    """Every metric with per-query values, in order of first appearance, then the abstention rates.

    Counts and flags that describe an answer (:func:`evalkit.analysis.direction.is_descriptive`)
    are left out unless ``descriptive``.
    """
    names: list[str] = []
    shown: dict[str, bool] = {}  # name -> listed when valued: one registry look-up per name, not one per query
    for r in results:
        for m, v in r.metrics.items():
            if v is None:
                continue
            show = shown.get(m)
            if show is None:
                show = shown[m] = descriptive or not is_descriptive(m)
                if show:
                    names.append(m)
    if has_guard(results):
        names += [m for m, answerable in ABSTAIN_RATES.items() if any(bool(r.gold_doc_ids) == answerable
                                                                        for r in results)]
    return names


@dataclass
class Paired:
    """Values of one metric for two variants on the same queries (sorted by query id)."""

    query_ids: list[str]
    a: np.ndarray
    b: np.ndarray

    @property
    def diffs(self) -> np.ndarray:
        return self.b - self.a

    def __len__(self) -> int:
        return len(self.query_ids)


def pair(values_a: dict[str, float], values_b: dict[str, float], only: set[str] | None = None) -> Paired:
    """Match two ``{query_id: value}`` maps on their shared ids (optionally within ``only``)."""
    ids = sorted(set(values_a) & set(values_b) & (only if only is not None else set(values_a)))
    return Paired(ids, np.array([values_a[q] for q in ids], dtype=np.float64),
                  np.array([values_b[q] for q in ids], dtype=np.float64))


def check_eval_sets(a: EvalSetRef, b: EvalSetRef, *, allow_versions: bool, what: str = "runs") -> str:
    """Refuse two eval sets that cannot be paired; return a note on how they relate.

    Raises:
        DifferentEvalSetsError: other set name or corpus; or other versions when not ``allow_versions``.
        TamperedEvalSetError: the same name and version recorded with different hashes.
    """
    if a.name != b.name:
        raise DifferentEvalSetsError(f"the {what} used different eval sets: '{a.name}' v{a.version} and "
                                     f"'{b.name}' v{b.version}; per-query comparison needs the same questions")
    if a.corpus_sha256 and b.corpus_sha256 and a.corpus_sha256 != b.corpus_sha256:
        raise DifferentEvalSetsError(f"the {what} used eval set '{a.name}' over different corpora (sha256 "
                                     f"{a.corpus_sha256[:12]} vs {b.corpus_sha256[:12]}); their scores do not pair")
    if a.version == b.version:
        if a.sha256 and b.sha256 and a.sha256 != b.sha256:
            raise TamperedEvalSetError(f"both {what} claim eval set '{a.name}' v{a.version} but record different "
                                       f"hashes ({a.sha256[:12]} vs {b.sha256[:12]}): one of them ran on an edited "
                                       "file; re-run it on the frozen version")
        return f"eval set {a.name} v{a.version} (sha256 {a.sha256[:12]})"
    if not allow_versions:
        raise DifferentEvalSetsError(f"the {what} used different versions of '{a.name}' (v{a.version} and "
                                     f"v{b.version}); compare needs one version (re-run one of them, or use "
                                     "`evalkit gate`, which compares the shared queries of two versions)")
    return f"eval set {a.name} v{a.version} vs v{b.version} (append-only: shared queries only)"


def check_scoring(a: dict | None, b: dict | None, labels: tuple[str, str]) -> None:
    """Refuse two runs whose retrieval metrics were scored differently (relevance level or tie order).

    ``a`` and ``b`` are the ``scoring`` of two run summaries (absent: the defaults, which
    runs made before it was recorded used).

    Raises:
        DifferentEvalSetsError: the same metric names would mean different numbers.
    """
    sa, sb = Scoring.from_dict(a), Scoring.from_dict(b)
    if sa != sb:
        raise DifferentEvalSetsError(f"{labels[0]} was scored with {sa.describe()} and {labels[1]} with "
                                     f"{sb.describe()}: their retrieval metrics do not pair; re-run one of them with "
                                     f"the other's --relevance-level and --ties")


def check_shared_queries(a: Sequence[QueryResult], b: Sequence[QueryResult], labels: tuple[str, str]) -> list[str]:
    """Ids present in both; a shared id whose question or gold documents differ raises ``TamperedEvalSetError``."""
    by_id = {r.query_id: r for r in a}
    shared = []
    for r in b:
        other = by_id.get(r.query_id)
        if other is None:
            continue
        if other.question != r.question or other.gold_grades != r.gold_grades:
            field = ("question" if other.question != r.question else
                     "gold documents" if sorted(other.gold_doc_ids) != sorted(r.gold_doc_ids) else "relevance grades")
            raise TamperedEvalSetError(f"query '{r.query_id}' has a different {field} in {labels[0]} and "
                                       f"{labels[1]}: the eval set was edited between the runs")
        shared.append(r.query_id)
    return sorted(shared)
