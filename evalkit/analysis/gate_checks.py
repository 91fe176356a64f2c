"""The refusals ``evalkit gate`` makes before it tests any metric: each says why the numbers of a
candidate cannot be compared as they stand, with its own error class and exit code.

- **5** :class:`TooManyFailuresError`: more failed queries than ``--max-failed-share`` allows
  (raised in :func:`evalkit.analysis.gate.run_gate`);
- **6** :class:`DegradedCandidateError`: its LLM failed (or answered nothing usable) on a larger
  share of queries than the baseline's (also raised there); it answered none of the shared
  queries (:func:`check_answered`); its index was built while its LLM failed on a larger share of
  passages (:func:`check_indexes`);
- **8** :class:`InventedCitationsError`: its answers cite passages they were never shown on more
  queries than the baseline's (:func:`check_citations`).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from evalkit.analysis.runs import LoadedRun
from evalkit.errors import EvalkitError
from evalkit.run.health import index_degradations


class TooManyFailuresError(EvalkitError):
    """The candidate failed on more queries than ``max_failed_share`` allows."""

    exit_code = 5


class DegradedCandidateError(EvalkitError):
    """The candidate's LLM (or other service) failed on a larger share of queries than the baseline's."""

    exit_code = 6


class InventedCitationsError(EvalkitError):
    """The candidate cited passages it was never shown on a larger share of queries than the baseline."""

    exit_code = 8


def _answered(results: Sequence[Any], only: set[str]) -> tuple[int, int]:
    """(queries answered, queries a generator ran on) among ``only``; (0, 0) for a variant that does not generate."""
    ran = [r for r in results if r.query_id in only and r.generation]
    return sum(bool(r.metrics.get("answered")) for r in ran), len(ran)


def check_answered(base: Sequence[Any], cand: Sequence[Any], only: set[str], labels: tuple[str, str]) -> None:
    """Refuse a candidate that generates but answered none of the shared queries while the baseline answered some.

    Empty answers, provider refusals, a model that declines everything and fallbacks all end as
    "not answered": such a candidate's retrieval metrics may be perfect, its answers are absent.

    Raises:
        DegradedCandidateError: with the counts and the most frequent reasons.
    """
    (b_ok, _), (c_ok, c_ran) = _answered(base, only), _answered(cand, only)
    if c_ran and not c_ok and b_ok:
        reasons = Counter(str(((r.generation or {}).get("abstention") or {}).get("reason") or r.outcome or "?")
                          for r in cand if r.query_id in only and r.generation)
        top = ", ".join(f"{why} {n}" for why, n in reasons.most_common(3))
        raise DegradedCandidateError(f"the candidate {labels[1]} answered none of the {c_ran} shared queries it "
                                     f"generated for (reasons: {top}); the baseline answered {b_ok}. Its LLM is down "
                                     "or refuses everything: see 'generation' in its per_query.jsonl")


def _failed_share(run: LoadedRun, variant: str) -> tuple[float, dict[str, Any] | None]:
    """The largest share of passages an LLM failed on while one of the variant's indexes was built, and that index."""
    v = run.summary.variants.get(variant)
    worst: tuple[float, dict[str, Any] | None] = (0.0, None)
    for d in index_degradations(v.index if v is not None else {}):
        share = d["failed"] / d["of"] if d["of"] else 1.0
        if share > worst[0]:
            worst = (share, d)
    return worst


def check_indexes(runs: tuple[LoadedRun, LoadedRun], variants: tuple[str, str], labels: tuple[str, str],
                   max_share: float) -> None:
    """Refuse a candidate whose index was built while its LLM failed on more passages than the baseline's.

    An entity graph extracted by an LLM (``graph.mode: llm``) that failed on some passages is
    partial: those passages add no entity or relation, every query searches what is left, and no
    query is degraded, so the per-query check above cannot see it.

    Raises:
        DegradedCandidateError: naming the index and both shares.
    """
    (b_share, _), (c_share, found) = (_failed_share(r, v) for r, v in zip(runs, variants))
    if found is None or c_share <= b_share + max_share + 1e-12:
        return
    retried = (f"; {found['transient']} of them failed transiently (timeouts, 5xx) and are asked again on the next "
               "run" if found["transient"] else "")
    raise DegradedCandidateError(
        f"the candidate {labels[1]} built its {found['index']} index while its LLM failed on {found['failed']} of "
        f"{found['of']} passages ({c_share:.1%}){retried}, the baseline's on {b_share:.1%}; "
        f"--max-degraded-share allows {max_share:.1%} more. Those passages add nothing to the index, so every query "
        "searched a partial one: see 'stats' under 'index' in the candidate's summary")


def _invented(results: Sequence[Any], only: set[str]) -> list[str]:
    """The queries among ``only`` whose answer cited an id that was not among the passages it was shown."""
    return [r.query_id for r in results if r.query_id in only and r.generation
            and r.generation.get("invalid_citations")]


def check_citations(base: Sequence[Any], cand: Sequence[Any], only: set[str], labels: tuple[str, str],
                     max_share: float) -> None:
    """Refuse a candidate whose answers cite passages they were not shown on more queries than the baseline's.

    A judge reads an answer's claims against the evidence it was given, so an LLM that invents its
    sources ("[doc-77]" where doc-77 was never retrieved) can score as faithful; hit@5 does not see
    it either. The share is taken on the queries healthy in both runs, like the answer metrics.

    Raises:
        InventedCitationsError: with both shares and a few of the candidate's invented ids.
    """
    if not only:
        return
    b_ids, c_ids = _invented(base, only), _invented(cand, only)
    b_share, c_share = len(b_ids) / len(only), len(c_ids) / len(only)
    if c_share <= b_share + max_share + 1e-12:
        return
    first = set(c_ids[:5])
    shown = sorted({str(c) for r in cand if r.query_id in first
                    for c in (r.generation or {}).get("invalid_citations", [])})[:5]
    raise InventedCitationsError(
        f"the candidate {labels[1]} cited passages it was not shown on {len(c_ids)} of {len(only)} queries "
        f"({c_share:.1%}; e.g. {', '.join(shown)} in {', '.join(c_ids[:3])}), the baseline on {len(b_ids)} "
        f"({b_share:.1%}); --max-invalid-citation-share allows {max_share:.1%} more. Its LLM names sources that "
        "were never retrieved: see 'invalid_citations' under 'generation' in its per_query.jsonl")
