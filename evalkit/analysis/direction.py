"""Which way is better, per metric name: read from the metric registries, never guessed from the name.

* A ranking metric (``recall@20``, ``final:hit@5``: :mod:`evalkit.metrics.registry`) is
  higher-is-better.
* Every other metric evalkit computes is registered once in :mod:`evalkit.metrics.catalog`
  with its direction: ``higher``, ``lower``, or ``none`` for counts and shares that describe
  an answer rather than grade it (``answered``, ``claims``, ``n_*``, the safety block rates:
  good on attacks, bad on ordinary questions). Analysis commands leave the descriptive ones
  (:func:`is_descriptive`) out unless asked for by name, and treat a ``none`` metric asked for
  by name as higher-is-better.
* A name in neither registry (a plugin's metric that did not register, an old run's) is
  higher-is-better and not descriptive.

``compare``, ``gate``, ``report`` and the console tables ask this module; nothing else
decides a direction.
"""
from __future__ import annotations

from evalkit.metrics.catalog import NamedMetric, all_metrics, named_metric


def direction(metric: str) -> str:
    """``higher``, ``lower`` or ``none`` (see the module docstring)."""
    m = named_metric(metric)
    return "higher" if m is None else m.direction


def higher_is_better(metric: str) -> bool:
    """False for a metric registered as lower-is-better, True for everything else."""
    return direction(metric) != "lower"


def sign(metric: str) -> int:
    """+1 when higher is better, -1 when lower is better: ``sign * (b - a) > 0`` means b is better."""
    return 1 if higher_is_better(metric) else -1


def is_descriptive(metric: str) -> bool:
    """A count or flag that describes an answer (``answered``, ``claims``, ``n_answered``), not a grade."""
    m = named_metric(metric)
    return m is not None and m.is_descriptive


class LowerIsBetter:
    """A container view of the rule: ``name in LowerIsBetter()`` (for code that expects a set)."""

    def __contains__(self, metric: object) -> bool:
        return isinstance(metric, str) and not higher_is_better(metric)


def per_query_name(metric: str) -> str | None:
    """The per-query metric a registered variant-level rate aggregates (``hallucination_rate`` -> ``hallucinated``)."""
    m: NamedMetric | None = named_metric(metric)
    return None if m is None else m.per_query


def per_query_hint(metric: str) -> str:
    """Why ``metric`` cannot be paired query by query, and what to name instead ("" if no hint).

    ``compare`` and ``gate`` pair per-query values; a variant-level rate such as
    ``hallucination_rate`` exists only in the summary.
    """
    name = per_query_name(metric)
    if name is None:
        return ""
    source = named_metric(metric)
    where = source.source.replace(".", "/") + ".py" if source is not None and source.source else "the metric's module"
    return (f"; '{metric}' is a variant-level rate, and paired tests need a per-query metric: use "
            f"'{name}' (see {where} for how the rate aggregates it)")


def lower_is_better_names() -> list[str]:
    """Every registered lower-is-better metric (for help texts and docs)."""
    return [m.name for m in all_metrics() if m.direction == "lower"]
