"""Records that cross module lines: the shapes the runner writes and every tool reads.

Each record is a small dataclass with ``to_dict`` / ``from_dict`` so that the JSON on
disk (``per_query.jsonl``, the summary file) is exactly these records.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


def _fields(obj: Any) -> dict[str, Any]:
    """A dataclass's fields as a dict, without copying the values (unlike ``dataclasses.asdict``)."""
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


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


@dataclass(frozen=True)
class Hit:
    """A scored passage in a ranking: passage id, the document it belongs to, a score."""

    id: str
    doc_id: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "doc_id": self.doc_id, "score": round(float(self.score), 6)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Hit:
        return cls(id=d["id"], doc_id=d["doc_id"], score=float(d["score"]))


@dataclass(frozen=True)
class EvalRecord:
    """One question of an eval set, with its gold documents.

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
    history: tuple[dict[str, str], ...] = ()
    tenant: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    gold_route: str | None = None

    @property
    def answerable(self) -> bool:
        return bool(self.relevant_doc_ids)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["relevant_doc_ids"] = list(self.relevant_doc_ids)
        d["tags"] = list(self.tags)
        d["history"] = [dict(t) for t in self.history]
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
    metrics: dict[str, float]
    trace: list[dict[str, Any]]
    error: dict[str, Any] | None = None
    outcome: str | None = None
    type: str | None = None
    lang: str | None = None
    rerank_top1: float | None = None
    generation: dict[str, Any] | None = None  # answer, citations, evidence ids, judge verdicts
    usage: dict[str, dict[str, float]] = field(default_factory=dict)  # LLM usage by purpose
    tenant: str | None = None  # the eval record's tenant (tenant_leak_rate)
    tenant_leaks: list[str] = field(default_factory=list)  # other tenants' documents it returned (metrics.tenancy)
    gold_route: str | None = None  # the eval record's gold route (route_accuracy)

    def to_dict(self) -> dict[str, Any]:
        # shallow (shares the lists and dicts, which are plain JSON values): it is only serialised,
        # for per_query.jsonl and Ray; asdict deep-copied every hit of every ranking and trace event
        # twice per query, which was most of a warm variant's wall time (reports/scale.md)
        return _fields(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> QueryResult:
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        return cls(**known)


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class EvalSetRef:
    """Which eval set a run used, pinned by version and content hash."""

    name: str
    version: int
    sha256: str
    n_queries: int
    path: str = ""
    corpus: str = ""
    corpus_sha256: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RunSummary:
    """The file ``--output`` writes: eval set identity plus one summary per variant."""

    eval_set: EvalSetRef
    variants: dict[str, VariantSummary]
    mlflow: dict[str, Any] = field(default_factory=dict)
    git_commit: str | None = None
    sharing: dict[str, int] = field(default_factory=dict)  # work memo counters (evalkit.graph.memo), {} when off

    def to_dict(self) -> dict[str, Any]:
        return {
            "eval_set": self.eval_set.to_dict(),
            "variants": {k: v.to_dict() for k, v in self.variants.items()},
            "mlflow": self.mlflow,
            "git_commit": self.git_commit,
            "sharing": self.sharing,
        }
