"""The metric registry: printed metric names -> what to compute, at which cutoff, on which ranking.

A metric name is ``[stage:]family@k``:

* ``family`` is a key of :data:`REGISTRY` (``recall``, ``hit``, ``mrr``, ``ndcg``,
  ``precision``), the one table of metric families; nothing else lists them.
* ``k`` is the cutoff, a positive integer written without leading zeros.
* ``stage`` (optional) says which ranking the metric reads: ``retrieval`` (the
  retrieval-stage ranking, before rerank) or ``final`` (after rerank; the same as the
  retrieval ranking when a variant has no reranker). Without a prefix the family's
  default applies: ``recall`` reads the retrieval ranking (a reranker only reorders the
  candidates, so recall measures what retrieval found), every other family reads the
  final ranking. A prefix is kept in the printed name: ``retrieval:hit@5`` and
  ``hit@5`` are two different metrics.

The printed name is the key everywhere (``score_query`` results, summaries, reports).
"""
from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from evalkit.errors import EvalkitError, did_you_mean
from evalkit.metrics import retrieval
from evalkit.metrics.retrieval import Relevance

__all__ = [
    "DEFAULT_METRICS",
    "GRAMMAR",
    "REGISTRY",
    "STAGES",
    "Scoring",
    "MetricFamily",
    "MetricFn",
    "MetricNameError",
    "MetricSpec",
    "Stage",
    "aggregate",
    "parse_metric",
    "score_query",
]

Stage = Literal["retrieval", "final"]
STAGES: tuple[Stage, ...] = get_args(Stage)

MetricFn = Callable[..., float]
"""A per-query metric: ``fn(ranked, relevant, k, *, level=1) -> float`` (see :mod:`.retrieval`)."""


@dataclass(frozen=True)
class Scoring:
    """How a run turns rankings into numbers, beside the metric names; recorded with every run.

    ``relevance_level``: the grade from which a document counts as relevant for recall,
    hit, precision and MRR (trec_eval's ``relevance_level``, default 1; nDCG uses the
    grades as gains whatever the level). ``ties``: ``pipeline`` scores the order the
    pipeline returned (default), ``trec`` re-sorts by score with equal scores by document
    id, descending, as trec_eval does (:func:`evalkit.metrics.retrieval.order_ranking`).
    Two runs scored differently are not compared (``compare`` and ``gate`` refuse them).
    """

    relevance_level: int = 1
    ties: str = "pipeline"

    def __post_init__(self) -> None:
        if isinstance(self.relevance_level, bool) or not isinstance(self.relevance_level, int) \
                or self.relevance_level < 1:
            raise EvalkitError(f"relevance level must be a positive integer (a grade), got {self.relevance_level!r}")
        if self.ties not in retrieval.TIES:
            raise EvalkitError(f"unknown tie order {self.ties!r}; valid: {', '.join(retrieval.TIES)}")

    def to_dict(self) -> dict[str, Any]:
        return {"relevance_level": self.relevance_level, "ties": self.ties}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> Scoring:
        """From a summary's ``scoring`` (absent in runs made before it existed: the defaults, which they used)."""
        d = d or {}
        return cls(relevance_level=int(d.get("relevance_level", 1)), ties=str(d.get("ties", "pipeline")))

    def describe(self) -> str:
        return f"relevance level {self.relevance_level}, ties {self.ties}"


class MetricNameError(EvalkitError, ValueError):
    """A metric name that does not parse; the message states the grammar and the choices."""


@dataclass(frozen=True)
class MetricFamily:
    """One metric family of the registry: its function and the ranking it reads by default."""

    name: str
    fn: MetricFn
    default_stage: Stage
    description: str


REGISTRY: dict[str, MetricFamily] = {}
"""The one registry of metric families, keyed by the family name as printed before ``@``."""


def _register(family: MetricFamily) -> None:
    if family.name in REGISTRY:
        raise ValueError(f"metric family {family.name!r} is registered twice")
    if family.default_stage not in STAGES:
        raise ValueError(f"metric family {family.name!r}: unknown stage {family.default_stage!r}")
    REGISTRY[family.name] = family


_register(MetricFamily("recall", retrieval.recall, "retrieval",
                       "share of the relevant documents in the top k (trec_eval recall_k)"))
_register(MetricFamily("hit", retrieval.hit, "final",
                       "1 if any relevant document is in the top k (trec_eval success_k)"))
_register(MetricFamily("mrr", retrieval.mrr, "final",
                       "1 / rank of the first relevant document in the top k (ranx mrr@k)"))
_register(MetricFamily("ndcg", retrieval.ndcg, "final",
                       "nDCG of the top k, the relevance grades as gains (trec_eval ndcg_cut_k)"))
_register(MetricFamily("precision", retrieval.precision, "final",
                       "share of the top k positions holding a relevant document (trec_eval P_k)"))

DEFAULT_METRICS: tuple[str, ...] = ("recall@20", "hit@5", "mrr@10", "ndcg@10")

GRAMMAR = (
    "A metric name must be '[stage:]family@k', where family is one of "
    f"{', '.join(sorted(REGISTRY))}; k is a positive integer (the cutoff); and the "
    f"optional stage is one of {', '.join(STAGES)} (default: retrieval for recall, final "
    "for the others), e.g. 'recall@20', 'ndcg@10', 'retrieval:hit@5'"
)


@dataclass(frozen=True)
class MetricSpec:
    """A parsed metric name: the printed ``name``, its ``family``, cutoff ``k``, function, stage."""

    name: str
    family: str
    k: int
    fn: MetricFn
    stage: Stage

    def score(
        self,
        retrieval_ranking: Sequence[str],
        final_ranking: Sequence[str],
        relevant: Relevance,
        relevance_level: int = 1,
    ) -> float:
        """Score one query on the ranking this metric's stage reads (``relevance_level``: see :mod:`.retrieval`)."""
        ranked = retrieval_ranking if self.stage == "retrieval" else final_ranking
        return self.fn(ranked, relevant, self.k, level=relevance_level)


_NAME_RE = re.compile(r"(?:(?P<stage>[^:@]*):)?(?P<family>[^:@]*)@(?P<k>[^:@]*)")


def _bad(name: str, problem: str) -> MetricNameError:
    end = "" if problem.endswith(("?", ".")) else "."
    return MetricNameError(f"bad metric name {name!r}: {problem}{end} {GRAMMAR}.")


@functools.lru_cache(maxsize=256)
def _parse(name: str) -> MetricSpec:
    m = _NAME_RE.fullmatch(name)
    if m is None:
        if name in REGISTRY:
            raise _bad(name, f"the cutoff is missing, e.g. '{name}@10'")
        raise _bad(name, "it does not have the form '[stage:]family@k'")
    stage, family, k_text = m.group("stage"), m.group("family"), m.group("k")
    if stage is not None and stage not in STAGES:
        raise _bad(name, f"unknown stage {stage!r}{did_you_mean(stage, STAGES)}")
    if family not in REGISTRY:
        raise _bad(name, f"unknown metric family {family!r}{did_you_mean(family, REGISTRY)}")
    if not re.fullmatch(r"[0-9]+", k_text):
        raise _bad(name, f"the cutoff {k_text!r} is not a positive integer")
    if int(k_text) == 0:
        raise _bad(name, "the cutoff must be at least 1 (k=0, 'no cutoff', is not supported)")
    if k_text != str(int(k_text)):
        raise _bad(name, f"write the cutoff without leading zeros: '{name[: m.start('k')]}{int(k_text)}'")
    fam = REGISTRY[family]
    return MetricSpec(name=name, family=family, k=int(k_text), fn=fam.fn,
                      stage=stage if stage is not None else fam.default_stage)


def parse_metric(name: str) -> MetricSpec:
    """Parse a printed metric name (``recall@20``, ``retrieval:hit@5``) into a :class:`MetricSpec`.

    The spec's ``name`` is the name as given, stage prefix included. The grammar is
    strict (lower case, no spaces, no leading zeros in ``k``) so that names cannot
    differ by spelling alone. A prefix equal to the default (``retrieval:recall@20``)
    is accepted and kept: it computes the same number as ``recall@20`` under another key.

    Raises:
        MetricNameError: (a ``ValueError``) the name does not parse; the message states
            the grammar, the valid families and stages, and a did-you-mean when one is close.
    """
    if not isinstance(name, str):
        raise MetricNameError(f"a metric name must be a str, got {type(name).__name__} {name!r}. {GRAMMAR}.")
    return _parse(name)


def _parse_all(metrics: Sequence[str]) -> list[MetricSpec]:
    if isinstance(metrics, str):
        raise MetricNameError(
            f"metrics must be a sequence of metric names, got the single string {metrics!r}; "
            f"wrap it in a tuple: ({metrics!r},)"
        )
    return [parse_metric(m) for m in metrics]


def score_query(
    retrieval_ranking: Sequence[str],
    final_ranking: Sequence[str],
    relevant: Relevance,
    metrics: Sequence[str] = DEFAULT_METRICS,
    relevance_level: int = 1,
) -> dict[str, float]:
    """Score one query: ``{printed metric name: value}`` for each name in ``metrics``.

    Args:
        retrieval_ranking: document ids from the retrieval stage, best first (before rerank),
            in the order to score (see :func:`evalkit.metrics.retrieval.order_ranking` for ties).
        final_ranking: document ids after rerank; pass the retrieval ranking again when
            the variant has no reranker.
        relevant: the gold documents of the query, ``{doc id: grade}`` or a collection of
            ids (grade 1 each); must not be empty.
        metrics: printed metric names (see :data:`GRAMMAR`); each reads the ranking of
            its stage. Both rankings are deduplicated at the document level.
        relevance_level: the grade from which a document counts as relevant for recall,
            hit, precision and MRR (trec_eval ``relevance_level``); nDCG uses the grades.

    Raises:
        ValueError: ``relevant`` is empty (such queries are excluded, never scored 0).
        MetricNameError: a name in ``metrics`` does not parse.
    """
    specs = _parse_all(metrics)
    if isinstance(relevant, (str, bytes)):
        raise TypeError(f"relevant must be a collection of document ids, got the single string {relevant!r}")
    if not relevant:
        raise ValueError(
            "relevant is empty: a query without gold documents cannot be scored; "
            "exclude it before scoring (it is not a 0)"
        )
    return {s.name: s.score(retrieval_ranking, final_ranking, relevant, relevance_level) for s in specs}


def aggregate(per_query: Sequence[Mapping[str, float | None]]) -> dict[str, float]:
    r"""The arithmetic mean of each metric over the queries given: ``{name: mean}``.

    .. math:: \bar{m} = \frac{1}{|Q|} \sum_{q \in Q} m(q)

    The caller passes the answerable, scored queries only (excluded and failed queries
    are counted elsewhere). Every query must carry the same metric names: a mean over a
    different subset of queries per metric would not be comparable, so a mismatch raises
    ``ValueError``. An empty input gives ``{}``.
    """
    if not per_query:
        return {}
    names = list(per_query[0])
    expected = set(names)
    for i, row in enumerate(per_query):
        if set(row) != expected:
            missing, extra = sorted(expected - set(row)), sorted(set(row) - expected)
            raise ValueError(
                f"per_query[{i}] has different metric names than per_query[0]: "
                f"missing {missing}, extra {extra}; score every query with the same metrics"
            )
    n = len(per_query)
    return {name: math.fsum(_defined(row, name, i) for i, row in enumerate(per_query)) / n for name in names}


def _defined(row: Mapping[str, float | None], name: str, i: int) -> float:
    """``row[name]`` as a float; ``ValueError`` when it is None (a mean over fewer queries would not compare)."""
    value = row[name]
    if value is None:
        raise ValueError(f"per_query[{i}]['{name}'] is None; aggregate only queries on which every metric is defined")
    return float(value)
