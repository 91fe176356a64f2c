"""Records that cross module lines: the shapes the runner writes and every tool reads.

Each record is a small dataclass with ``to_dict`` / ``from_dict`` so that the JSON on
disk (``per_query.jsonl``, the summary file) is exactly these records.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from itertools import repeat
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import numpy as np


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}  # a dataclass's field names, read once per class


def _fields(obj: Any) -> dict[str, Any]:
    """A dataclass's fields as a dict, without copying the values (unlike ``dataclasses.asdict``); the names are
    read once per class (``fields()`` walks the class's fields at every call: twice a query of a scored run)."""
    names = _FIELD_NAMES.get(type(obj))
    if names is None:
        names = _FIELD_NAMES[type(obj)] = tuple(f.name for f in fields(obj))
    return {name: getattr(obj, name) for name in names}


@dataclass(frozen=True)
class Document:
    """One corpus document, as read from the corpus JSONL (``id``, ``title``, ``text``)."""

    id: str
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Chunk:
    """A retrievable passage cut from a document.

    ``parent_id`` is set for parent-child chunking: retrieval scores the child, and the
    node hands back the parent passage (``parent_id``) instead.
    """

    id: str
    doc_id: str
    text: str
    start: int
    end: int
    parent_id: str | None = None


@dataclass(frozen=True, init=False)
class Hit:
    """A scored passage in a ranking: passage id, the document it belongs to, a score.

    Rankings hold millions of hits over a run (every channel search, every fused list), so a hit
    is a slotted object (64 bytes, against 330 for a dataclass with a ``__dict__``) whose fields are
    written straight into their slots (the generated frozen ``__init__`` calls ``object.__setattr__``
    per field), and :attr:`rounded` is computed once per hit, when it is made (a float score) or on
    first use (any other number). Equality, hashing, ``repr``, ``dataclasses.replace`` and
    ``fields`` are the dataclass's own, over the three fields; pickling and copies rebuild the hit
    from them (:meth:`__reduce__`), as a frozen object's slots cannot be set one by one.
    """

    __slots__ = ("id", "doc_id", "score", "_rounded")
    id: str
    doc_id: str
    score: float
    if TYPE_CHECKING:  # a slot, not a field: declared for mypy only, so the dataclass does not see it
        _rounded: float | None

    def __init__(self, id: str, doc_id: str, score: float) -> None:  # noqa: A002 - the field's name
        _set_id(self, id)
        _set_doc(self, doc_id)
        _set_score(self, score)
        # anything but a float (numpy, int) is rounded by the property, on first use
        _set_rounded(self, round(score, 6) if type(score) is float else None)

    @property
    def rounded(self) -> float:
        """The score as records and traces write it (6 decimals). A channel's hits are shared by
        every variant of a sweep (the work memo): each is rounded once, not once per variant."""
        value = self._rounded
        if value is None:
            value = round(float(self.score), 6)
            _set_rounded(self, value)
        return value

    def __reduce__(self) -> tuple[Any, tuple[str, str, float]]:
        return Hit, (self.id, self.doc_id, self.score)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "doc_id": self.doc_id, "score": self.rounded}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Hit:
        return cls(id=d["id"], doc_id=d["doc_id"], score=float(d["score"]))

    @classmethod
    def many(cls, ids: Sequence[str], doc_ids: Sequence[str], scores: np.ndarray) -> list[Hit]:
        """``[Hit(i, d, s) ...]`` for float64 ``scores``, every :attr:`rounded` computed in one pass
        (:func:`round6`): a fused ranking's 100 hits spent a third of their making in ``round``."""
        if not len(ids) == len(doc_ids) == len(scores):
            raise ValueError(f"Hit.many: {len(ids)} ids, {len(doc_ids)} document ids, {len(scores)} scores")
        out = list(map(object.__new__, repeat(cls, len(ids))))
        # each slot filled by a C-level map over the hits (a Python loop calling four setters per hit
        # cost a third more: 40 against 30 us for 100 hits)
        for setter, values in ((_set_id, ids), (_set_doc, doc_ids), (_set_score, scores.tolist()),
                               (_set_rounded, round6(scores))):
            deque(map(setter, out, values), maxlen=0)
        return out

    @staticmethod
    def triples(hits: Iterable[Hit]) -> list[list[Any]]:
        """``[[h.id, h.doc_id, h.rounded] ...]``: a ranking as traces write it, reading the rounded score
        straight from its slot when it is there (the property's call per hit was half the cost)."""
        return [[h.id, h.doc_id, r if (r := h._rounded) is not None else h.rounded] for h in hits]

    @staticmethod
    def by_document(hits: Iterable[Hit]) -> list[dict[str, Any]]:
        """``[{"doc_id", "score"} ...]`` for the first hit of each document, in ranking order: a passage
        ranking read as the document ranking records keep (scores rounded, as :meth:`triples`)."""
        seen: set[str] = set()
        out = []
        for h in hits:
            d = h.doc_id
            if d not in seen:
                seen.add(d)
                out.append({"doc_id": d, "score": r if (r := h._rounded) is not None else h.rounded})
        return out


# The slots' own setters: they write a frozen hit's fields without its __setattr__ (which refuses).
_set_id, _set_doc, _set_score, _set_rounded = (Hit.__dict__[name].__set__ for name in Hit.__slots__)


def round6(values: np.ndarray) -> list[float]:
    """``[round(float(v), 6) for v in values]`` (float64), bit for bit, mostly in numpy.

    ``round(x, 6)`` is the double nearest to k / 10^6, k the integer nearest to the exact x * 10^6
    (ties to even); ``rint(x * 1e6) / 1e6`` divides the same way (one correctly rounded division).
    The product is rounded once, and rounding to nearest cannot cross k + 1/2 (a double while
    |x * 1e6| < 2^52), so numpy picks the same k unless the product lands exactly on k + 1/2.
    Those values, and huge or non-finite ones, are rounded by ``round``.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        y = values * 1e6
        exact = (np.abs(y) < 2.0**52) & (y - np.floor(y) != 0.5)  # False for NaN and infinities
    out = (np.rint(y) / 1e6).tolist()
    for i in np.flatnonzero(~exact).tolist():
        out[i] = round(float(values[i]), 6)
    return out


@dataclass(frozen=True)
class EvalRecord:
    """One question of an eval set, with its gold documents.

    ``relevance`` holds graded judgements ``{doc id: grade >= 1}`` over exactly the
    ``relevant_doc_ids`` (TREC/BEIR qrels with grades 1/2/3); ``None`` means binary
    relevance, every gold document of grade 1. :attr:`grades` is the one view metrics read.

    Optional context (``docs/eval_sets.md``): ``history``, the earlier turns of a conversation
    (``{role: user|assistant, content}``, oldest first); ``tenant``, whom the question is asked
    for (documents of other tenants must not reach it); ``attributes``, facts about the asker
    that metadata filters read (``{"dept": "finance"}``); ``gold_route``, the route a router
    should choose (``route_accuracy``).
    """

    id: str
    question: str
    relevant_doc_ids: tuple[str, ...]
    type: str
    lang: str
    reference_answer: str | None = None
    tags: tuple[str, ...] = ()
    relevance: dict[str, int] | None = None
    history: tuple[dict[str, str], ...] = ()
    tenant: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    gold_route: str | None = None
    generated: dict[str, Any] | None = None  # provenance of a generated line (evalkit.evalsets.provenance)

    @property
    def answerable(self) -> bool:
        return bool(self.relevant_doc_ids)

    @property
    def grades(self) -> dict[str, int]:
        """``{gold doc id: grade}``: the graded judgements, or grade 1 for every gold document."""
        return dict(self.relevance) if self.relevance is not None else {d: 1 for d in self.relevant_doc_ids}

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["relevant_doc_ids"] = list(self.relevant_doc_ids)
        d["tags"] = list(self.tags)
        d["history"] = [dict(t) for t in self.history]
        if self.relevance is None:
            d.pop("relevance")
        if self.generated is None:
            d.pop("generated")
        return d


@dataclass
class TraceEvent:
    """One node execution: what ran, when, for how long, what it wrote, where it went next."""

    step: int
    node: str
    type: str
    started_at: float
    duration_ms: float
    wrote: dict[str, Any]
    edge: str | None
    edge_reason: str
    error: dict[str, str] | None = None
    attempt: int | None = None  # the reflection-loop attempt the state was at after this node
    llm: dict[str, float] | None = None  # LLM calls/tokens/latency spent inside this node
    reused: bool = False  # the result was computed by another variant (shared work, see graph.memo)
    role: str | None = None  # the node's role (evalkit.graph.schema.Role): what metrics and analysis ask for
    elapsed_ms: float | None = None  # wall time this step really took here (~0 when reused; duration_ms is
    # the pipeline's latency: for a reused result, that of the execution it came from)

    def to_dict(self) -> dict[str, Any]:
        # shallow on purpose: the fields are already JSON-ready values (``wrote`` is built by
        # graph.state.compact for this event); asdict's recursive deep copy cost milliseconds a query
        d = _fields(self)
        d["duration_ms"] = round(self.duration_ms, 3)
        if self.elapsed_ms is not None:
            d["elapsed_ms"] = round(self.elapsed_ms, 3)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TraceEvent:
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


@dataclass
class QueryResult:
    """Everything one query produced in one variant: rankings, metrics, trace, error.

    ``retrieved`` and ``reranked`` are document-level rankings (deduplicated, first
    occurrence keeps its rank), the lists the metrics are computed on.
    """

    query_id: str
    question: str
    gold_doc_ids: list[str]
    retrieved: list[dict[str, Any]]
    reranked: list[dict[str, Any]]
    metrics: dict[str, float | None]  # None: not defined for this query (null in per_query.jsonl)
    trace: list[dict[str, Any]]
    error: dict[str, Any] | None = None
    outcome: str | None = None
    type: str | None = None
    lang: str | None = None
    rerank_top1: float | None = None
    generation: dict[str, Any] | None = None  # answer, citations, evidence ids, judge verdicts
    usage: dict[str, dict[str, float]] = field(default_factory=dict)  # LLM usage by purpose
    # calls that failed for good (evalkit.run.health); None: a record written before this field (its trace says)
    degraded: list[dict[str, Any]] | None = field(default_factory=list)
    gold_relevance: dict[str, int] | None = None  # graded judgements of gold_doc_ids (None: all grade 1)
    gold_known: bool = True  # False: answers scored without gold labels (evalkit score on a self-contained file)
    tenant: str | None = None  # the eval record's tenant (tenant_leak_rate)
    tenant_leaks: list[str] = field(default_factory=list)  # other tenants' documents it returned (metrics.tenancy)
    gold_route: str | None = None  # the eval record's gold route (route_accuracy)

    @property
    def gold_grades(self) -> dict[str, int]:
        """``{gold doc id: grade}`` the metrics were computed with."""
        return dict(self.gold_relevance) if self.gold_relevance else {d: 1 for d in self.gold_doc_ids}

    @property
    def answerable(self) -> bool:
        """Gold documents; or, when no gold labels are known (``gold_known`` False), any type but unanswerable."""
        return bool(self.gold_doc_ids) or (not self.gold_known and self.type != "unanswerable")

    def to_dict(self) -> dict[str, Any]:
        # shallow (shares the lists and dicts, which are plain JSON values): it is only serialised,
        # for per_query.jsonl and Ray; asdict deep-copied every hit of every ranking and trace event
        # twice per query, which was most of a warm variant's wall time (reports/scale.md)
        return _fields(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> QueryResult:
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        return cls(**{"degraded": None, **known})  # not written: an older record, judged by its trace


@dataclass
class VariantSummary:
    """Aggregate numbers of one variant over the whole eval set."""

    metrics: dict[str, float]
    n_failed: int
    n_queries: int
    n_excluded: int
    mlflow_run_id: str | None = None
    config_path: str | None = None
    config_sha256: str | None = None
    index: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    timing: dict[str, float] = field(default_factory=dict)
    by_type: dict[str, dict[str, float]] = field(default_factory=dict)
    usage: dict[str, dict[str, float]] = field(default_factory=dict)  # LLM usage totals by purpose
    judge: str | None = None
    corrected: dict[str, Any] = field(default_factory=dict)  # judge-corrected estimates (--labels; analysis.labels)
    source: dict[str, Any] | None = None  # outputs scored from a file (evalkit score): kind, file, sha256...

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class EvalSetRef:
    """Which eval set a run used, pinned by version and content hash.

    ``kind`` is ``eval_set`` (a frozen version of an eval set file) or ``answers_file``:
    outputs scored by ``evalkit score --answers`` without an eval set, where the file holds
    the questions itself; then ``name`` is ``answers-`` + 12 hex of its SHA-256, ``sha256``
    that hash, ``path`` the file and ``version`` 0, so runs of different files never pair.
    """

    name: str
    version: int
    sha256: str
    n_queries: int
    path: str = ""
    corpus: str = ""
    corpus_sha256: str = ""
    kind: str = "eval_set"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RunSummary:
    """The file ``--output`` writes: eval set identity plus one summary per variant.

    ``status`` is ``complete`` once every variant ran; ``running`` in the file written after
    each variant (a process killed outright leaves it so); ``interrupted`` after Ctrl-C, a
    signal or an error (``interrupted`` says which). Until complete, the file says
    ``"partial": true`` and ``pending`` lists the variants that did not finish.
    """

    eval_set: EvalSetRef
    variants: dict[str, VariantSummary]
    mlflow: dict[str, Any] = field(default_factory=dict)
    git_commit: str | None = None
    sharing: dict[str, int] = field(default_factory=dict)  # work memo counters (evalkit.graph.memo), {} when off
    scoring: dict[str, Any] = field(default_factory=lambda: {"relevance_level": 1, "ties": "pipeline"})
    # how rankings were scored (evalkit.metrics.Scoring); runs made before it existed used these defaults
    status: str = "complete"
    pending: list[str] = field(default_factory=list)
    interrupted: str | None = None
    environment: dict[str, Any] = field(default_factory=dict)  # CPU and numeric stack (evalkit.machine)

    @property
    def partial(self) -> bool:
        return self.status != "complete"

    def to_dict(self) -> dict[str, Any]:
        """The file's content. The variants' entries share their values with the :class:`VariantSummary`
        objects (plain JSON data; asdict's deep copy of every variant, each time the file is rewritten
        after a variant, grew with the square of the variants): write it, don't change it."""
        d: dict[str, Any] = {
            "eval_set": self.eval_set.to_dict(),
            "scoring": dict(self.scoring),
            "variants": {k: _fields(v) for k, v in self.variants.items()},
            "mlflow": self.mlflow,
            "git_commit": self.git_commit,
            "sharing": self.sharing,
            "environment": self.environment,
            "status": self.status,
            "partial": self.partial,
        }
        if self.partial:
            d.update(pending=list(self.pending), interrupted=self.interrupted)
        return d
