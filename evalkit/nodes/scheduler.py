"""The ``agent_scheduler`` node: classify the query, call the matching retrievers, fuse.

1. **Classify** the question with the configured ``rules``, in order; the first rule
   with a matching keyword (case-insensitive substring) or regex pattern wins. The
   shipped defaults (used when ``rules`` is not given):

   - ``entity_relation``: relation words (供应商, 供应, 竞品, 负责, 哪家, which company,
     supplier, competes, ...);
   - ``exact_term``: codes, config fields, defaults, error codes (regexes such as
     ``[A-Z]{1,4}-\\d{2,5}`` or ``[a-z_]+\\.[a-z_]+``, with look-arounds rather than
     ``\\b``, which does not separate a code from the Chinese text around it).

   No rule matched: with ``llm``, the model picks one of the classes of ``weights``
   from their descriptions (``classes``) and a few routing ``examples`` in the prompt
   (``evalkit.nodes.llm_classify``); without it, or when the call fails or names a class
   that does not exist, ``default_class``, and the failure is appended to
   ``llm_fallback`` (the query is degraded, never stopped).
2. **Call the tools** the class weighs above 0 in ``weights``: ``dense`` and ``bm25``
   (the ``retrieve`` node's channels, same parameters), ``graph`` (the ``graph_local``
   search, same parameters; ``evalkit.index.graph_search``) and ``graph_global`` (the
   ``graph_global`` community search, same parameters; off unless configured, since it
   detects communities over the whole graph).
3. **Fuse** several tools with weighted RRF (``k``), weights per class, then keep one
   passage per document (``dedupe``, default ``{by: document, keep: best_rank}``;
   ``evalkit.nodes.dedupe``; the older ``dedupe_documents: true/false`` still works).

Writes ``retrieved``; ``scheduler_class``, ``scheduler_reason`` (the rule and the
keyword or pattern that matched, or the llm's reason) and ``scheduler_source`` (``rule``,
``llm`` or ``default``); ``tool_hits`` (each tool's own ranking); ``tool_stats`` (per
tool: ``latency_ms`` of its search, ``hits``, and how many documents of the fused top
``stats_k`` it ``supplied`` in its own top ``stats_k``, ``unique`` ones no other tool
had: ``evalkit compare`` aggregates them, ``evalkit.analysis.tool_diag``) and, on an llm
failure, ``llm_fallback``. With a ``graph`` tool in ``weights`` it also writes what that
tool found, as ``graph_local`` does: ``graph_evidence`` (at most ``max_evidence``
``A [relation] B (doc-id)`` lines, which a ``generate`` node with ``graph_evidence: true``
shows as graph facts) and ``graph_entities``; with a ``graph_global`` tool,
``graph_communities``. A query whose class did not call the tool gets them empty, so a
second attempt never sees the first one's facts. (Before, the graph tool's ranking was
fused and its triples dropped: ``graph_evidence`` was written for 0 of the demo's 120
queries.)

The dense and BM25 tools are ``retrieve`` node instances used as library objects: they
are not part of the graph and write nothing to the state themselves. A tool's latency is
the time its search took when it was computed: a search shared with another variant
reports the time it took there, so the figure does not depend on which variant ran first.
``filters:`` (as on ``retrieve``, ``evalkit.index.filters``) applies to every tool: the
dense and BM25 searches see only the allowed documents, the graph tool ranks only theirs.
"""
from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Mapping
from typing import Any

from pydantic import Field, field_validator, model_validator

from evalkit.graph.node import Node, NodeParams, register_node
from evalkit.graph.schema import (
    ATTEMPT,
    GRAPH_COMMUNITIES,
    GRAPH_ENTITIES,
    GRAPH_EVIDENCE,
    LLM_FALLBACK,
    QUERIES,
    QUESTION,
    RETRIEVED,
    SCHEDULER_CLASS,
    SCHEDULER_REASON,
    SCHEDULER_SOURCE,
    TOOL_HITS,
    TOOL_STATS,
    Contract,
    Role,
)
from evalkit.index.filters import (
    DocumentFilter,
    parse_filters,
    record_values,
    state_fields,
)
from evalkit.llm.base import LLMSpec
from evalkit.nodes.dedupe import Dedupe, dedupe, dedupe_by_document  # noqa: F401  (dedupe_by_document: older import path)
from evalkit.nodes.filtering import Filtered
from evalkit.nodes.fusion import rrf
from evalkit.nodes.graph_retrieve import (
    GlobalSearchParams,
    GraphGlobal,
    GraphGlobalParams,
    GraphSearchParams,
    local_searcher,
    node_filter,
)
from evalkit.nodes.llm_classify import LabelExample, llm_label
from evalkit.nodes.retrieve import BM25Channel, DenseChannel, Retrieve, RetrieveParams
from evalkit.records import Hit

NO_RULE = "\x00no-rule"  # never a class label: classify's answer when no rule matched

TOOLS = ("dense", "bm25", "graph", "graph_global")
GRAPH_WRITES = {"graph": (GRAPH_EVIDENCE, GRAPH_ENTITIES), "graph_global": (GRAPH_COMMUNITIES,)}
"""What each graph tool writes besides its ranking (empty lists on a query whose class did not call it)."""


def valid_patterns(patterns: list[str]) -> list[str]:
    """``patterns`` unchanged when each compiles as a Python regular expression; else a ValueError naming it
    (a params validator: pydantic reports it with the field's path)."""
    for p in patterns:
        try:
            re.compile(p)
        except re.error as exc:
            raise ValueError(f"pattern {p!r} is not a valid regular expression ({exc})") from exc
    return patterns


class Rule(NodeParams):
    """Questions matching any keyword or pattern belong to ``label``."""

    label: str = Field(description="the class (or route) a match gives")
    keywords: list[str] = Field(default_factory=list, description="case- and width-insensitive substrings "
                                "(NFKC)")
    patterns: list[str] = Field(default_factory=list, description="regular expressions (Python re), searched "
                                "in the NFKC question")

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        return valid_patterns(patterns)


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


DEFAULT_CLASSES = {
    "entity_relation": "relations between named things: who supplies, makes, competes with or is responsible for what",
    "exact_term": "exact codes, error codes, model numbers, config field names, default values, API paths",
    "open_semantic": "everything else: how-to and descriptive questions in everyday words",
}
DEFAULT_EXAMPLES = (
    LabelExample(question="Which vendor provides the battery cells for the K3 scooter?", label="entity_relation"),
    LabelExample(question="谁负责华西区的渠道销售？", label="entity_relation"),
    LabelExample(question="What does status code W-311 on the printer mean?", label="exact_term"),
    LabelExample(question="cache.ttl_seconds 默认是多少？", label="exact_term"),
    LabelExample(question="My monitor flickers after lunch, what can I try?", label="open_semantic"),
    LabelExample(question="新员工第一周要做哪些事情？", label="open_semantic"),
)
SCHEDULER_PROMPT = (
    "You decide how a question should be searched in a company knowledge base. Choose exactly one label "
    'from the list. Reply with JSON only: {"class": "<label>", "reason": "<one short sentence>"}'
)


class SchedulerParams(Filtered):
    dense: DenseChannel | None = Field(default=DenseChannel(), description="the dense tool (a retrieve node's "
                                       "dense channel); null: not available")
    bm25: BM25Channel | None = Field(default=BM25Channel(), description="the BM25 tool; null: not available")
    graph: GraphSearchParams | None = Field(default=GraphSearchParams(), description="the local graph-search "
                                            "tool (graph_local's search); null: not available")
    graph_global: GlobalSearchParams | None = Field(default=None, description="the global (community) search "
                                                    "tool (graph_global's search); null (default): not available")
    max_evidence: int = Field(default=20, ge=0, description="graph_evidence lines the graph tool writes (0: none)")
    rules: list[Rule] = Field(default_factory=lambda: list(DEFAULT_RULES),
                              description="tried in order; the first rule with a matching keyword or pattern "
                                          "names the class")
    default_class: str = Field(default="open_semantic", description="the class when no rule matches (and no "
                               "llm is configured, or the llm failed)")
    weights: dict[str, dict[str, float]] = Field(
        default_factory=lambda: dict(DEFAULT_WEIGHTS),
        description="per class, the RRF weight of each tool (dense, bm25, graph, graph_global); tools weighted 0 are "
                    "not called")
    k: int = Field(default=60, ge=0, description="RRF k")
    top_k: int = Field(default=100, ge=1, description="length of the fused ranking written to retrieved")
    dedupe: Dedupe | None = Field(default=Dedupe(), description="keep one passage per document of the fused "
                                  "ranking before the top_k cut; null: keep every passage")
    dedupe_documents: bool | None = Field(
        default=None, description="deprecated: true is dedupe {by: document, keep: best_rank}, false is "
                                  "dedupe null; give dedupe instead")
    llm: LLMSpec | None = Field(default=None, description="classifies the questions no rule matches "
                                "(omit: they get default_class)")
    classes: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_CLASSES),
                                    description="class -> what it is for, shown to the llm (a class of weights "
                                                "without an entry is shown by its name)")
    examples: list[LabelExample] = Field(default_factory=lambda: list(DEFAULT_EXAMPLES),
                                         description="routing examples (question, label) in the llm's prompt")
    system_prompt: str = Field(default=SCHEDULER_PROMPT, description="the llm's system prompt")
    stats_k: int = Field(default=20, ge=1, description="tool_stats count documents of the fused top stats_k "
                         "found in each tool's own top stats_k")

    @model_validator(mode="before")
    @classmethod
    def _dedupe_documents(cls, data: Any) -> Any:
        """The older ``dedupe_documents: bool`` becomes ``dedupe`` (giving both is refused)."""
        if isinstance(data, Mapping) and data.get("dedupe_documents") is not None:
            data = dict(data)
            legacy = data.pop("dedupe_documents")
            if "dedupe" in data:
                raise ValueError("give either 'dedupe' or the deprecated 'dedupe_documents', not both")
            data["dedupe"] = {"by": "document", "keep": "best_rank"} if legacy else None
        return data

    @model_validator(mode="after")
    def _consistent(self) -> SchedulerParams:
        from evalkit.errors import did_you_mean

        classes = [r.label for r in self.rules] + [self.default_class]
        for c in classes:
            if c not in self.weights:
                raise ValueError(f"query class '{c}' has no entry under 'weights'; add weights: {{{c}: {{tool: w}}}}")
        for c, tools in self.weights.items():
            for tool, w in tools.items():
                if tool not in TOOLS:
                    raise ValueError(f"weights.{c}: unknown tool '{tool}'{did_you_mean(tool, TOOLS)}")
                if w > 0 and getattr(self, tool) is None:
                    raise ValueError(f"weights.{c}.{tool} > 0 but the '{tool}' tool is not configured "
                                     f"(set {tool}: {{}})")
                if w < 0:
                    raise ValueError(f"weights.{c}.{tool} must be >= 0, got {w}")
            if not any(w > 0 for w in tools.values()):
                raise ValueError(f"weights.{c}: give at least one tool a weight above 0")
        if self.llm is not None:
            for i, ex in enumerate(self.examples):
                if ex.label not in self.weights:
                    raise ValueError(f"examples[{i}].label: '{ex.label}' is not a class of 'weights'"
                                     f"{did_you_mean(ex.label, self.weights)}")
        return self

    def labels(self) -> dict[str, str]:
        """The classes the llm chooses from (every class of ``weights``) with their descriptions."""
        return {c: self.classes.get(c, "") for c in self.weights}


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


@register_node
class AgentScheduler(Node[SchedulerParams]):
    type = "agent_scheduler"
    role = Role.RETRIEVER
    reads = (QUESTION, QUERIES)
    optional_reads = (ATTEMPT,)
    writes = (RETRIEVED, SCHEDULER_CLASS, SCHEDULER_REASON, SCHEDULER_SOURCE, TOOL_HITS, TOOL_STATS)
    optional_writes = (LLM_FALLBACK,)
    Params = SchedulerParams
    _filter: DocumentFilter | None = None  # the bound filters (set when params give some)

    @classmethod
    def contract(cls, params: SchedulerParams) -> Contract:
        base = super().contract(params)
        extra = state_fields(parse_filters(params.filters)) if params.filters is not None else []
        writes = base.writes | {f for tool in used_tools(params) for f in GRAPH_WRITES.get(tool, ())}
        return Contract(base.reads | frozenset(extra), base.optional_reads, writes, base.optional_writes)

    def __init__(self, name: str, params: SchedulerParams, resources: Any = None):
        super().__init__(name, params, resources)
        used = used_tools(params)
        self.tools: dict[str, Any] = {}
        if "dense" in used:
            self.tools["dense"] = Retrieve(f"{name}.dense", RetrieveParams(
                dense=params.dense, top_k=params.top_k, filters=params.filters), resources)
        if "bm25" in used:
            self.tools["bm25"] = Retrieve(f"{name}.bm25", RetrieveParams(
                bm25=params.bm25, top_k=params.top_k, filters=params.filters), resources)
        self._filter = node_filter(name, params, resources)
        if "graph" in used and params.graph is not None:
            self.tools["graph"] = local_searcher(params.graph, resources)
        if "graph_global" in used and params.graph_global is not None:
            self.tools["graph_global"] = GraphGlobal(f"{name}.graph_global", GraphGlobalParams(
                **dict(params.graph_global)), resources)
        self.client = self.llm_client(params.llm, "schedule") if params.llm is not None else None

    @classmethod
    def shared_parts(cls, params: SchedulerParams) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
        """The dense and BM25 tools' channel searches, shared like a ``retrieve`` node's."""
        parts = []
        for tool in ("dense", "bm25"):
            if any(w.get(tool, 0) > 0 for w in params.weights.values()):
                parts += Retrieve.shared_parts(RetrieveParams(**{tool: getattr(params, tool)}, top_k=params.top_k,
                                                              filters=params.filters))
        return parts

    def _call(self, tool: str, queries: list[str], state: Mapping[str, Any]
              ) -> tuple[list[Hit], float, dict[str, Any]]:
        """A tool's ranking, the milliseconds its search took (when it was computed, for shared searches) and
        what a graph tool found besides (``GRAPH_WRITES``: triples and entities, or communities)."""
        flt = self._filter
        values = record_values(flt.cond, state) if flt is not None else {}
        allowed = None if flt is None else flt.allowed(values)
        t0 = time.perf_counter()
        if tool == "graph":
            found = self.tools["graph"].search(queries, self.params.max_evidence, allowed)
            hits = [Hit(pid, doc, s) for pid, doc, s in found.passages]
            return hits, (time.perf_counter() - t0) * 1000.0, {GRAPH_EVIDENCE: list(found.evidence),
                                                               GRAPH_ENTITIES: list(found.entities)}
        if tool == "graph_global":
            hits, communities = self.tools["graph_global"].search(queries, allowed)
            return hits, (time.perf_counter() - t0) * 1000.0, {GRAPH_COMMUNITIES: communities}
        retriever = self.tools[tool]
        retriever.work, retriever.context = self.work, self.context  # share its searches like a retrieve node
        hits, _, ms = (retriever.search(queries) if flt is None
                       else retriever.search(queries, (flt.key(values), flt.allowed(values))))
        return hits, ms, {}

    def classify(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """The class of the question: rules first, then the llm (if any), else ``default_class``.

        Returns the ``scheduler_class``, ``scheduler_reason``, ``scheduler_source`` writes and,
        when the llm failed or chose an unknown class, ``llm_fallback``."""
        p = self.params
        question = state[QUESTION]
        label, reason = classify(question, p.rules, NO_RULE)
        if label != NO_RULE:
            return {SCHEDULER_CLASS: label, SCHEDULER_REASON: reason, SCHEDULER_SOURCE: "rule"}
        if self.client is None:
            return {SCHEDULER_CLASS: p.default_class, SCHEDULER_SOURCE: "default",
                    SCHEDULER_REASON: f"no rule matched: default class {p.default_class}"}
        try:
            label, why = llm_label(self.client, question, p.labels(), p.examples, p.system_prompt)
        except Exception as exc:  # noqa: BLE001 - a failed or lying llm degrades the query, never stops it
            from evalkit.nodes.rewrite import fallback_record

            record = fallback_record(self.name, int(state.get(ATTEMPT) or 0) or 1, exc)
            return {SCHEDULER_CLASS: p.default_class, SCHEDULER_SOURCE: "default", LLM_FALLBACK: record,
                    SCHEDULER_REASON: f"no rule matched; llm failed ({record['kind']}): default class "
                                      f"{p.default_class}"}
        return {SCHEDULER_CLASS: label, SCHEDULER_SOURCE: "llm", SCHEDULER_REASON: f"no rule matched; llm: {why}"}

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        p = self.params
        queries = list(state[QUERIES]) or [state[QUESTION]]
        decided = self.classify(state)
        weights = {t: w for t, w in sorted(p.weights[decided[SCHEDULER_CLASS]].items()) if w > 0}
        called = {t: self._call(t, queries, state) for t in weights}
        tool_hits = {t: hits for t, (hits, _, _) in called.items()}
        found: dict[str, Any] = {f: [] for t in used_tools(p) for f in GRAPH_WRITES.get(t, ())}
        for _, _, extra in called.values():
            found.update(extra)
        if len(tool_hits) == 1:
            fused = next(iter(tool_hits.values()))
        else:
            fused = rrf(list(tool_hits.values()), list(weights.values()), p.k)
        fused = dedupe(fused, p.dedupe)[: p.top_k]
        stats = tool_stats(fused, tool_hits, p.stats_k)
        for t, (_, ms, _) in called.items():
            stats[t]["latency_ms"] = round(ms, 3)
        return {RETRIEVED: fused, TOOL_HITS: tool_hits, TOOL_STATS: stats, **found, **decided}


def used_tools(params: SchedulerParams) -> set[str]:
    """The tools some class weighs above 0 (the only ones built, and whose extra fields are declared)."""
    return {t for tools in params.weights.values() for t, w in tools.items() if w > 0}


def tool_stats(fused: list[Hit], tool_hits: Mapping[str, list[Hit]], k: int) -> dict[str, dict[str, Any]]:
    """Per tool: ``hits`` (its ranking's length), ``supplied`` (documents of the fused top ``k`` that are in
    the tool's own top ``k`` documents) and ``unique`` (of those, documents in no other tool's top ``k``)."""
    top = list(dict.fromkeys(h.doc_id for h in fused))[:k]
    own = {t: set(list(dict.fromkeys(h.doc_id for h in hits))[:k]) for t, hits in tool_hits.items()}
    out: dict[str, dict[str, Any]] = {}
    for t, docs in own.items():
        others = set().union(*(d for o, d in own.items() if o != t))
        supplied = [d for d in top if d in docs]
        out[t] = {"hits": len(tool_hits[t]), "supplied": len(supplied),
                  "unique": sum(d not in others for d in supplied)}
    return out
