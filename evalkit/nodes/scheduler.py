"""The ``agent_scheduler`` node: classify the query, call the matching retrievers, fuse.

1. **Classify** the question with the configured ``rules``, in order; the first rule
   with a matching keyword (case-insensitive substring) or regex pattern wins. No match:
   ``default_class``. The shipped defaults (used when ``rules`` is not given):

   - ``entity_relation``: relation words (供应商, 供应, 竞品, 负责, 哪家, which company,
     supplier, competes, ...);
   - ``exact_term``: codes, config fields, defaults, error codes (regexes such as
     ``[A-Z]{1,4}-\\d{2,5}`` or ``[a-z_]+\\.[a-z_]+``, with look-arounds rather than
     ``\\b``, which does not separate a code from the Chinese text around it);
   - otherwise ``open_semantic``.

2. **Call the tools** the class weighs above 0 in ``weights``: ``dense`` and ``bm25``
   (the ``retrieve`` node's channels, same parameters) and ``graph`` (the
   ``graph_local`` search, same parameters; ``evalkit.index.graph_search``).
3. **Fuse** several tools with weighted RRF (``k``), weights per class, then keep the
   best-ranked passage of each document (deduplicated by document).

Writes ``retrieved``, ``scheduler_class``, ``scheduler_reason`` (the rule and the
keyword or pattern that matched), and ``tool_hits`` (each tool's own ranking, so the
trace shows what every tool contributed).

The dense and BM25 tools are ``retrieve`` node instances used as library objects: they
are not part of the graph and write nothing to the state themselves. An LLM fallback
classifier (``llm``) is planned; for now the parameter is refused at load time.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from pydantic import Field, field_validator, model_validator

from evalkit.graph.node import Node, NodeParams, register_node
from evalkit.graph.schema import QUERIES, QUESTION, RETRIEVED, SCHEDULER_CLASS, SCHEDULER_REASON, TOOL_HITS, Role
from evalkit.nodes.fusion import rrf
from evalkit.nodes.graph_retrieve import GraphSearchParams, local_searcher
from evalkit.nodes.retrieve import BM25Channel, DenseChannel, Retrieve, RetrieveParams
from evalkit.records import Hit

TOOLS = ("dense", "bm25", "graph")


class Rule(NodeParams):
    """Questions matching any keyword or pattern belong to ``label``."""

    label: str
    keywords: list[str] = Field(default_factory=list)
    patterns: list[str] = Field(default_factory=list)

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for p in patterns:
            try:
                re.compile(p)
            except re.error as exc:
                raise ValueError(f"pattern {p!r} is not a valid regular expression ({exc})") from exc
        return patterns


DEFAULT_RULES = (
    Rule(label="entity_relation",
         keywords=["供应商", "供应", "竞品", "竞争", "对标", "负责", "哪家", "which company", "supplier", "supplies",
                   "competes", "competitor", "who leads", "who makes"]),
    Rule(label="exact_term",
         patterns=[r"(?<![A-Za-z0-9])[A-Z]{1,4}-\d{2,5}(?![0-9])", r"(?<![\w.])[a-z_]+\.[a-z_]+", r"/v\d+/",
                   r"默认|错误码|报错|字段", r"(?i)\bdefault\b|\berror code\b"]),
)
DEFAULT_WEIGHTS = {"entity_relation": {"graph": 1.0, "dense": 1.0, "bm25": 0.5},
                   "exact_term": {"bm25": 1.0, "dense": 0.5},
                   "open_semantic": {"dense": 1.0, "bm25": 0.5}}


class SchedulerParams(NodeParams):
    dense: DenseChannel | None = DenseChannel()
    bm25: BM25Channel | None = BM25Channel()
    graph: GraphSearchParams | None = GraphSearchParams()
    rules: list[Rule] = Field(default_factory=lambda: list(DEFAULT_RULES))
    default_class: str = "open_semantic"
    weights: dict[str, dict[str, float]] = Field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    k: int = Field(default=60, ge=0, description="RRF k")
    top_k: int = Field(default=100, ge=1)
    dedupe_documents: bool = True
    llm: dict[str, Any] | None = Field(default=None, description="LLM fallback classifier (not available yet)")

    @field_validator("llm")
    @classmethod
    def _no_llm_yet(cls, value: Any) -> Any:
        if value is not None:
            raise ValueError("the LLM fallback classifier is not available yet (it needs the LLM backends, which "
                             "have not landed); remove 'llm' and classify with rules")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> SchedulerParams:
        classes = [r.label for r in self.rules] + [self.default_class]
        for c in classes:
            if c not in self.weights:
                raise ValueError(f"query class '{c}' has no entry under 'weights'; add weights: {{{c}: {{tool: w}}}}")
        for c, tools in self.weights.items():
            for tool, w in tools.items():
                if tool not in TOOLS:
                    from evalkit.errors import did_you_mean

                    raise ValueError(f"weights.{c}: unknown tool '{tool}'{did_you_mean(tool, TOOLS)}")
                if w > 0 and getattr(self, tool) is None:
                    raise ValueError(f"weights.{c}.{tool} > 0 but the '{tool}' tool is not configured "
                                     f"(set {tool}: {{}})")
                if w < 0:
                    raise ValueError(f"weights.{c}.{tool} must be >= 0, got {w}")
            if not any(w > 0 for w in tools.values()):
                raise ValueError(f"weights.{c}: give at least one tool a weight above 0")
        return self


def classify(question: str, rules: list[Rule], default: str) -> tuple[str, str]:
    """(class, reason): the first rule whose keyword or pattern matches, else ``default``."""
    text = unicodedata.normalize("NFKC", question)
    folded = text.casefold()
    for i, rule in enumerate(rules):
        for kw in rule.keywords:
            if unicodedata.normalize("NFKC", kw).casefold() in folded:
                return rule.label, f"rules[{i}] {rule.label}: keyword '{kw}'"
        for pattern in rule.patterns:
            m = re.search(pattern, text)
            if m:
                return rule.label, f"rules[{i}] {rule.label}: pattern '{pattern}' matched '{m.group(0)}'"
    return default, f"no rule matched: default class {default}"


def dedupe_by_document(hits: list[Hit]) -> list[Hit]:
    """The best-ranked passage of each document, in ranking order."""
    seen: set[str] = set()
    out = []
    for h in hits:
        if h.doc_id not in seen:
            seen.add(h.doc_id)
            out.append(h)
    return out


@register_node
class AgentScheduler(Node[SchedulerParams]):
    type = "agent_scheduler"
    role = Role.RETRIEVER
    reads = (QUESTION, QUERIES)
    writes = (RETRIEVED, SCHEDULER_CLASS, SCHEDULER_REASON, TOOL_HITS)
    Params = SchedulerParams

    def __init__(self, name: str, params: SchedulerParams, resources: Any = None):
        super().__init__(name, params, resources)
        used = {t for tools in params.weights.values() for t, w in tools.items() if w > 0}
        self.tools: dict[str, Any] = {}
        if "dense" in used:
            self.tools["dense"] = Retrieve(f"{name}.dense", RetrieveParams(dense=params.dense, top_k=params.top_k),
                                           resources)
        if "bm25" in used:
            self.tools["bm25"] = Retrieve(f"{name}.bm25", RetrieveParams(bm25=params.bm25, top_k=params.top_k),
                                          resources)
        if "graph" in used and params.graph is not None:
            self.tools["graph"] = local_searcher(params.graph, resources)

    @classmethod
    def shared_parts(cls, params: SchedulerParams) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
        """The dense and BM25 tools' channel searches, shared like a ``retrieve`` node's."""
        parts = []
        for tool in ("dense", "bm25"):
            if any(w.get(tool, 0) > 0 for w in params.weights.values()):
                parts += Retrieve.shared_parts(RetrieveParams(**{tool: getattr(params, tool)}, top_k=params.top_k))
        return parts

    def _call(self, tool: str, queries: list[str], question: str) -> list[Hit]:
        if tool == "graph":
            return [Hit(pid, doc, s) for pid, doc, s in self.tools["graph"].search(queries).passages]
        retriever = self.tools[tool]
        retriever.work, retriever.context = self.work, self.context  # share its searches like a retrieve node
        return list(retriever.run({"queries": queries, "question": question})["retrieved"])

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        p = self.params
        question = state["question"]
        queries = list(state["queries"]) or [question]
        label, reason = classify(question, p.rules, p.default_class)
        weights = {t: w for t, w in sorted(p.weights[label].items()) if w > 0}
        tool_hits = {t: self._call(t, queries, question) for t in weights}
        if len(tool_hits) == 1:
            fused = next(iter(tool_hits.values()))
        else:
            fused = rrf(list(tool_hits.values()), list(weights.values()), p.k)
        if p.dedupe_documents:
            fused = dedupe_by_document(fused)
        return {"retrieved": fused[: p.top_k], "scheduler_class": label, "scheduler_reason": reason,
                "tool_hits": tool_hits}
