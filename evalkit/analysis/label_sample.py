r"""Which answers to label: the strata of ``evalkit label`` and how many labels each one gets.

What it is for: a person's labels are few and slow, so they go where they shrink the
judge-corrected interval (:mod:`evalkit.analysis.ppi`) most. ``draw_sample`` splits a
variant's population (:func:`evalkit.analysis.labels.population`) into strata, gives each
stratum a number of labels, and draws them at random with a seed.

**Strata** (``--strata``, one rule each in :data:`STRATA`):

- ``verdict`` (the default): the answer's verdict class, from the judge's claim verdicts
  (:mod:`evalkit.judges.base`): ``unsupported`` (at least one unsupported claim),
  ``unverified`` (an unverified claim, none unsupported), ``supported`` (the rest of the
  population: every judged claim supported).
- ``type``: the question type (``single``, ``multi_hop``...); ``none``: one stratum.

**Allocation.** ``type`` and ``none`` share the labels in proportion to the strata's
sizes :math:`N_h`. ``verdict`` uses Neyman allocation, the one that minimises the
variance of the stratified estimate for a fixed number of labels:

.. math::

    n_h \propto N_h S_h,\qquad S_h = \sqrt{p_h (1 - p_h)},

where :math:`p_h` is the share of the stratum's answers on which the judge's class is
wrong (a hallucination the judge called ``supported`` or ``unverified``, a correct answer
it called ``unsupported``). Before any label, :math:`p_h` is the prior
:data:`PRIOR_ERROR` (``unsupported`` 0.5, ``unverified`` 0.5: the judge is as likely wrong
as right there; ``supported`` 0.1: it misses few). Given earlier labels of the same
variant (``evalkit label --prior-labels FILE``), :math:`p_h = (e_h + A p^0_h) / (m_h + A)`
with :math:`e_h` errors among the :math:`m_h` earlier labels still valid in the stratum
and :data:`PSEUDO_LABELS` :math:`A = 2` pseudo-labels at the prior, so no :math:`p_h` is
0 or 1 and no stratum is left out. Since :math:`S_h` is largest where the judge is
unsure, ``unverified`` and ``unsupported`` answers are labelled at a higher rate than
``supported`` ones.

Either way the ideal shares :math:`n\,N_h S_h / \sum_j N_j S_j` are clipped to
``[min(N_h, MIN_PER_STRATUM), N_h]`` (a stratum at a bound is fixed there and the rest
of the labels shared again among the others), then rounded down, the labels left over
going to the largest remainders (ties: the larger :math:`N_h S_h`, then the name).
Every stratum with answers gets at least ``MIN_PER_STRATUM`` labels (all its answers
when it has fewer), so the sample can exceed ``n`` when there are many small strata.

**A sample record** (the ``sample`` field of a label line) holds the stratum, its size
``stratum_size``, its labels ``stratum_labelled``, the population size, ``strata_by``,
the seed and, for ``verdict``, the ``error_share`` :math:`p_h` the allocation used. The
corrected estimate weighs each stratum by :math:`N_h / N`, with the strata recomputed by
the same rule on the population it corrects (:func:`evalkit.analysis.labels.corrected_estimates`).
"""
from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.errors import EvalkitError
from evalkit.records import QueryResult

__all__ = ["MIN_PER_STRATUM", "PRIOR_ERROR", "PSEUDO_LABELS", "STRATA", "Strata", "draw_sample", "error_shares",
           "neyman_allocation", "proportional_allocation", "verdict_class"]

MIN_PER_STRATUM = 2
PRIOR_ERROR: dict[str, float] = {"unsupported": 0.5, "unverified": 0.5, "supported": 0.1}
"""Verdict class -> the share of its answers the judge is assumed to get wrong, before any label."""
PSEUDO_LABELS = 2.0
"""Weight of the prior in :func:`error_shares`, in labels."""


def verdict_class(r: QueryResult) -> str:
    """``unsupported`` / ``unverified`` / ``supported``: the answer's class from its claim counts.

    Runs from before the claim counts fall back on the per-query ``hallucinated`` and
    ``unverified`` values (:mod:`evalkit.metrics.answer`).
    """
    m = r.metrics
    unsup = m.get("claims_unsupported", m.get("hallucinated"))
    unver = m.get("claims_unverified", m.get("unverified"))
    return "unsupported" if unsup else "unverified" if unver else "supported"


def _by_type(r: QueryResult) -> str:
    return r.type or "unknown"


def _one(r: QueryResult) -> str:
    return "all"


def proportional_allocation(sizes: Mapping[str, int], n: int, *, minimum: int = MIN_PER_STRATUM) -> dict[str, int]:
    """Labels per stratum in proportion to its size, at least ``minimum`` (all of a smaller stratum);
    over ``n``, the largest allocations give one back in turn, down to the minimum."""
    total = sum(sizes.values())
    n = min(n, total)
    alloc = {k: min(s, max(minimum, round(n * s / total))) for k, s in sorted(sizes.items())}
    while sum(alloc.values()) > n:
        k = max((k for k in alloc if alloc[k] > minimum), key=lambda k: (alloc[k], k), default=None)
        if k is None:
            break
        alloc[k] -= 1
    return alloc


def neyman_allocation(sizes: Mapping[str, int], sd: Mapping[str, float], n: int, *,
                      minimum: int = MIN_PER_STRATUM) -> dict[str, int]:
    """Labels per stratum, ``n_h`` proportional to ``N_h * S_h`` within ``[min(N_h, minimum), N_h]``
    (see the module docstring for the clipping and rounding); ``sd`` must be positive."""
    strata = sorted(k for k, s in sizes.items() if s > 0)
    if any(not sd[k] > 0 for k in strata):
        raise ValueError("every stratum needs a positive spread S_h (use a prior: see PRIOR_ERROR)")
    lo = {k: min(sizes[k], minimum) for k in strata}
    n = max(min(n, sum(sizes[k] for k in strata)), sum(lo.values()))
    weight = {k: sizes[k] * sd[k] for k in strata}
    fixed: dict[str, int] = {}
    free = set(strata)
    ideal: dict[str, float] = {}
    while free:
        rest = n - sum(fixed.values())
        total = sum(weight[k] for k in free)
        ideal = {k: rest * weight[k] / total for k in free}
        over = {k for k in free if ideal[k] > sizes[k]}
        under = {k for k in free if ideal[k] < lo[k]}
        if not over and not under:
            break
        for k in over or under:  # fix the capped strata first: that frees labels for the others
            fixed[k] = sizes[k] if over else lo[k]
            free.discard(k)
    alloc = {**fixed, **{k: math.floor(ideal[k] + 1e-9) for k in free}}
    left = n - sum(alloc.values())
    order = sorted(free, key=lambda k: (-(ideal[k] - math.floor(ideal[k] + 1e-9)), -weight[k], k))
    for k in order[:max(0, left)]:
        alloc[k] += 1
    return dict(sorted(alloc.items()))


def error_shares(labelled: Sequence[tuple[str, bool]], *, prior: Mapping[str, float] = PRIOR_ERROR,
                 pseudo: float = PSEUDO_LABELS) -> dict[str, float]:
    """``p_h`` per verdict class from earlier labels: (verdict class, labelled hallucinated) pairs.

    ``(errors + pseudo * prior) / (labels + pseudo)``, the judge being wrong when it called a
    hallucination ``supported``/``unverified`` or a correct answer ``unsupported``.
    """
    out = {}
    for k, p0 in prior.items():
        mine = [hall for cls, hall in labelled if cls == k]
        errors = sum(hall != (k == "unsupported") for hall in mine)
        out[k] = (errors + pseudo * p0) / (len(mine) + pseudo)
    return out


@dataclass(frozen=True)
class Strata:
    """One way to stratify a sample: the stratum of an answer, and whether labels go by Neyman allocation."""

    name: str
    stratum: Callable[[QueryResult], str]
    neyman: bool
    help: str


STRATA: dict[str, Strata] = {s.name: s for s in (
    Strata("verdict", verdict_class, True, "the judge's verdict class (unsupported / unverified / supported), "
           "Neyman allocation"),
    Strata("type", _by_type, False, "question type, proportional allocation"),
    Strata("none", _one, False, "one stratum: a simple random sample"),
)}
"""Every ``--strata`` value, keyed by its name."""


def strata_rule(name: str) -> Strata:
    """The rule called ``name``; an unknown name raises with the choices."""
    try:
        return STRATA[name]
    except KeyError:
        raise EvalkitError(f"unknown strata '{name}': use {', '.join(STRATA)}") from None


def draw_sample(pop: Sequence[QueryResult], n: int, *, seed: int = 0, strata: str = "verdict",
                error_share: Mapping[str, float] | None = None) -> list[tuple[QueryResult, dict[str, Any]]]:
    """A stratified random sample of about ``n`` answers of the population ``pop``, each with its sample record.

    ``error_share`` (``verdict`` only) overrides :data:`PRIOR_ERROR` (see :func:`error_shares`).
    """
    rule = strata_rule(strata)
    pop = sorted(pop, key=lambda r: r.query_id)
    if not pop:
        raise EvalkitError("no answered query with a judge verdict: nothing to label")
    groups: dict[str, list[QueryResult]] = {}
    for r in pop:
        groups.setdefault(rule.stratum(r), []).append(r)
    sizes = {k: len(g) for k, g in groups.items()}
    p = {**PRIOR_ERROR, **(error_share or {})}
    if rule.neyman:
        alloc = neyman_allocation(sizes, {k: math.sqrt(p[k] * (1 - p[k])) for k in sizes}, n)
    else:
        alloc = proportional_allocation(sizes, n)
    rng = random.Random(seed)
    out = []
    for k in sorted(groups):
        extra = {"error_share": round(p[k], 6)} if rule.neyman else {}
        for r in rng.sample(groups[k], alloc[k]):
            out.append((r, {"stratum": k, "stratum_size": sizes[k], "stratum_labelled": alloc[k],
                            "population": len(pop), "strata_by": strata, "seed": seed, **extra}))
    return sorted(out, key=lambda x: x[0].query_id)
