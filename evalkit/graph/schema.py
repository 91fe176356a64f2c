"""The state schema: every field a graph's state can hold, what it means, and who produces it.

One module declares the whole vocabulary of the shared state (as LangGraph's state
schema does). Each :class:`StateField` is a ``str`` (its name, so it is used directly as
a dict key: ``state[RETRIEVED]``) that also carries its Python type (``list[Hit]``,
``str | None``: checked on every write with ``EVALKIT_CHECK_STATE=1``, see
:mod:`evalkit.graph.typecheck`), its meaning and its **reducer**: how a write combines with
the value already there.

- ``replace``: the write replaces the earlier value. Fields with several writers on one
  path are *stages* by design: a later ``retrieve`` (attempt 2 of a loop) replaces the
  ranking of attempt 1, the ``fallback``'s answer replaces the ``generate`` answer that
  failed its self-check. The trace keeps every write, so nothing is lost.
- ``append``: each write is one item appended to a list (``llm_fallback``: every LLM
  failure of the query, in order).
- ``initial``: set when the query starts; no node may write it (``question``, ``query_id``).

Nodes declare what they read and write against this schema (``Node.reads`` /
``optional_reads`` / ``writes`` / ``optional_writes``); registering a node type that names
an unknown field is an error, config loading checks that every required read is written
upstream on every path, and the engine enforces both at run time.

**Roles.** A node class declares its :class:`Role`; :data:`ROLE_FIELDS` names the fields a
role produces. The runner, metrics and analysis ask for roles and fields (a variant
generates answers when it has a ``generator`` node; a trace event of a ``grader`` carries
``grade_decision``), never for ``node.type == "..."``. A new node type with an existing
role is judged, scored and reported without editing anything outside its own module.

Plugin nodes may declare extra fields with :func:`declare_field` (at import time, before
their node class is registered).
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

from evalkit.graph.typecheck import is_type, type_text
from evalkit.records import Hit

Reducer = Literal["replace", "append", "initial"]
REDUCERS: tuple[str, ...] = ("replace", "append", "initial")


class StateField(str):
    """A state field: its name (the ``str`` value) plus type, meaning, reducer and gate semantics.

    ``type_`` is a real Python type (``str``, ``list[Hit]``, ``float | None``), ``type_name`` its text.
    ``passes`` is set for gate decisions (``grade_decision``, ``self_check_decision``):
    the values that let the query through on this attempt.
    """

    type_: Any
    meaning: str
    reducer: Reducer
    passes: frozenset[str] | None

    def __new__(cls, name: str, type_: Any, meaning: str, reducer: Reducer = "replace",
                passes: Iterable[str] | None = None) -> StateField:
        if reducer not in REDUCERS:
            raise ValueError(f"state field {name!r}: unknown reducer {reducer!r}; valid: {', '.join(REDUCERS)}")
        if not is_type(type_):
            raise TypeError(f"state field {name!r}: type {type_!r} is not a Python type; declare it as one "
                            "(str, int, list[Hit], dict[str, Any], str | None), not as a string")
        obj = super().__new__(cls, name)
        obj.type_, obj.meaning, obj.reducer = type_, meaning, reducer
        obj.passes = frozenset(passes) if passes is not None else None
        return obj

    @property
    def type_name(self) -> str:
        """The declared type as docs and errors show it (``list[Hit]``, ``str | None``)."""
        return type_text(self.type_)

    def __reduce__(self) -> tuple[type[str], tuple[str]]:
        # copies and pickles are plain strings: a state keyed by fields deep-copies, pickles and hashes
        # exactly like one keyed by their names
        return (str, (str(self),))


FIELDS: dict[str, StateField] = {}
"""Every declared state field by name."""


def declare_field(name: str, type_: Any, meaning: str, reducer: Reducer = "replace",
                  passes: Iterable[str] | None = None) -> StateField:
    """Declare a state field (built-ins below; plugins call this for their own fields).

    ``type_`` is a Python type: ``declare_field("score", float, "...")``, ``list[Hit]``, ``str | None``.
    """
    f = StateField(name, type_, meaning, reducer, passes)
    old = FIELDS.get(name)
    if old is not None and (old.type_, old.reducer, old.passes) != (f.type_, f.reducer, f.passes):
        raise ValueError(f"state field {name!r} is declared twice with different types or reducers")
    FIELDS[name] = old or f
    return FIELDS[name]


_ = declare_field
# --- what every query starts with (evalkit.graph.state.initial_state) -------------------------
QUERY_ID = _("query_id", str, "id of the eval-set record", "initial")
QUESTION = _("question", str, "the user's original question; no node may overwrite it", "initial")
LANG = _("lang", str, "language of the question (zh, en, ...)", "initial")
HISTORY = _("history", list[dict], "earlier turns of the conversation ({role, content}), oldest first; "
            "[] for a single-turn question", "initial")
TENANT = _("tenant", str | None, "the tenant the question is asked for (None: no tenancy)", "initial")
ATTRIBUTES = _("attributes", dict[str, Any], "facts about who asks and when (dept, as_of, version...), from the "
               "eval record's attributes; metadata filters read them ({from_record: dept})", "initial")
QUERIES = _("queries", list[str], "the queries retrieval runs: [question] at the start, replaced by rewrites")
ATTEMPT = _("attempt", int, "reflection-loop attempt: 0 until a rewriter runs, which sets previous + 1")
# --- retrieval ---------------------------------------------------------------------------------
RETRIEVED = _("retrieved", list[Hit], "the retrieval stage's passage ranking, best first (recall@k reads it)")
CHANNEL_HITS = _("channel_hits", dict[str, list[Hit]], "each retrieval channel's own ranking (dense, bm25, "
                 "graph...), for the trace and fusion analysis")
RETRIEVAL_RELAXED = _("retrieval_relaxed", dict, "retrieve's relax rule for this query: fired, min_hits, "
                      "hits_before, hits_after and what the looser search changed (top_k, filters "
                      "from/to); evalkit.nodes.relax")
TOOL_HITS = _("tool_hits", dict[str, list[Hit]], "each tool's ranking of an agent scheduler")
SCHEDULER_CLASS = _("scheduler_class", str, "the query class an agent scheduler chose")
SCHEDULER_REASON = _("scheduler_reason", str, "why the scheduler chose that class (rule, keyword or pattern)")
SCHEDULER_SOURCE = _("scheduler_source", str, "what decided the scheduler's class: rule, llm or default")
TOOL_STATS = _("tool_stats", dict[str, dict], "per tool an agent scheduler called: latency_ms (its search, "
               "as computed), hits, supplied (documents of the fused top stats_k in the tool's own top stats_k) "
               "and unique (supplied by no other tool)")
GRAPH_ENTITIES = _("graph_entities", list[dict], "entities of the query linked to the entity graph, and how")
GRAPH_EVIDENCE = _("graph_evidence", list[str], "graph triples as 'A [relation] B (doc-id)' lines")
GRAPH_COMMUNITIES = _("graph_communities", list[dict], "entity-graph communities matched to the query")
RERANKED = _("reranked", list[Hit], "the final ranking after a second-stage model, best first (hit@k reads it)")
RERANK_SCORES = _("rerank_scores", list[float], "the reranker's scores of ``reranked``, in order")
RERANK_MODEL = _("rerank_model", str, "identity of the model that produced ``rerank_scores``")
RERANK_TOP1 = _("rerank_top1", float | None, "the best reranked passage's score, None when nothing was reranked "
                "(routes compare it: {field: rerank_top1, lt: 0.7})")
# --- guard and evidence ------------------------------------------------------------------------
GUARD_TRIGGERED = _("guard_triggered", bool, "the guard found no reliable evidence and stopped the query")
GUARD_REASON = _("guard_reason", str, "why the guard tripped ('' when it did not)")
GUARD_THRESHOLD = _("guard_threshold", float, "the top-score threshold the guard applied")
EVIDENCE = _("evidence", list[Hit], "the passages kept as evidence for generation (guard or grade)")
EVIDENCE_TEXT = _("evidence_text", dict[str, str], "passage id -> the (compressed) text a generator shows "
                  "instead of the whole passage; passages not in it are shown whole")
COMPRESSION = _("compression", dict, "what a compress node kept and cut: budget, unit, size before and after, "
                "and per passage the sentences kept and cut")
OUTCOME = _("outcome", str, "how the query ended so far: one of OUTCOMES")
# --- generation --------------------------------------------------------------------------------
ANSWER = _("answer", str, "the answer given to the user")
CITATIONS = _("citations", list[str], "every citation in the answer, in order (valid document ids, then invalid)")
USED_DOCUMENTS = _("used_documents", list[str], "cited document ids that were in the evidence shown")
INVALID_CITATIONS = _("invalid_citations", list[str], "cited ids that were not in the evidence shown")
ABSTAINED = _("abstained", bool, "the answer declines for lack of evidence")
ABSTENTION = _("abstention", dict, "the abstention finding (evalkit.text.abstention): abstained, reason, "
               "matched, finish_reason")
EVIDENCE_TIERS = _("evidence_tiers", list[dict], "generate's reference_only rule: per shown passage id, doc_id, "
                   "score, reference_only (shown as background, never quoted) and the threshold applied")
ANSWER_EVIDENCE = _("answer_evidence", list[Hit], "the passages the answer was written from (judges check it "
                    "against these)")
GENERATOR = _("generator", str, "identity of the model that wrote the answer")
# --- safety (evalkit/nodes/safety.py) ----------------------------------------------------------
SAFETY_BLOCKED = _("safety_blocked", bool, "a safety node (input_filter, moderate) blocked the question or the "
                   "answer; route on it to a refusal")
SAFETY_FINDING = _("safety", dict, "the safety node's finding: stage (input/output), blocked, category, source "
                   "(rule, llm, allow, none, llm_error) and reason")
# --- agentic -----------------------------------------------------------------------------------
ROUTE = _("route", str, "the route an intent router chose")
ROUTE_REASON = _("route_reason", str, "why the router chose it")
ROUTE_SOURCE = _("route_source", str, "what decided the route: rule, llm or default")
REWRITE = _("rewrite", str | None, "the rewritten query (None: the question was kept)")
SUB_QUERIES = _("sub_queries", list[str], "sub-queries of a comparison or multi-hop question")
REWRITE_SOURCE = _("rewrite_source", str, "what made the rewrite: dictionary, split, llm, feedback, guard, none")
REWRITE_REASON = _("rewrite_reason", str, "why the rewriter did what it did")
REWRITE_HISTORY = _("rewrite_history", list[list[str]], "the queries of every attempt so far")
REWRITE_FUTILE = _("rewrite_futile", bool, "the rewrite repeats an earlier attempt's queries")
GRADED = _("graded", list[dict], "per judged candidate: doc id, cosine, coverage, verdict, who judged, why")
RELEVANT_RATIO = _("relevant_ratio", float, "share of the judged candidates found relevant")
GRADE_DECISION = _("grade_decision", str, "the grade gate's decision: generate, rewrite or fallback",
                   passes=("generate",))
GRADE_REASON = _("grade_reason", str, "why the grade gate decided so")
GRADE_IF_LAST = _("grade_if_last", str, "what the grade gate would decide were this the last attempt (generate or "
                  "fallback): the counterfactual rescue accounting reads it")
GRADE_METHOD = _("grade_method", str, "how candidates were judged: offline-rule, llm, llm+offline-rule")
REFLECTION = _("reflection", dict | None, "feedback for the next rewrite (missing_terms, add_terms, "
               "exclude_terms, reason); None when the gate passed")
SELF_CHECK_PASSED = _("self_check_passed", bool | None, "the answer passed the self-check (None: skipped)")
SELF_CHECK_DECISION = _("self_check_decision", str, "pass, skipped, retry or exhausted",
                        passes=("pass", "skipped"))
SELF_CHECK_REASON = _("self_check_reason", str, "why the self-check decided so")
SELF_CHECK_CLAIMS = _("self_check_claims", list[dict], "the claim verdicts the self-check judged")
LLM_FALLBACK = _("llm_fallback", list[dict], "every LLM call that failed and the offline path taken instead "
                 "(node, attempt, kind, message); each write appends one", "append")
NODE_ERRORS = _("node_errors", list[dict], "errors of nodes whose on_error edge was taken (written by the "
                "engine)", "append")
del _

INITIAL_FIELDS: tuple[StateField, ...] = (QUERY_ID, QUESTION, LANG, HISTORY, TENANT, ATTRIBUTES, QUERIES,
                                           ATTEMPT)
"""Fields every query starts with (a node may read them without an upstream writer)."""
ENGINE_FIELDS: tuple[StateField, ...] = (NODE_ERRORS,)
"""Fields only the engine writes."""

# --- outcomes ----------------------------------------------------------------------------------
OUTCOME_EVIDENCE_FOUND = "evidence_found"
OUTCOME_NO_EVIDENCE = "no_reliable_evidence"
OUTCOME_ANSWERED = "answered"
OUTCOME_ABSTAINED = "abstained"
OUTCOME_FALLBACK = "fallback"
OUTCOMES: dict[str, str] = {
    OUTCOME_EVIDENCE_FOUND: "a guard found reliable evidence (nothing generated yet)",
    OUTCOME_NO_EVIDENCE: "a guard found no reliable evidence and stopped the query",
    OUTCOME_ANSWERED: "a generator answered",
    OUTCOME_ABSTAINED: "a generator declined for lack of evidence",
    OUTCOME_FALLBACK: "the fallback node gave the fixed refusal",
}
ABSTAINING_OUTCOMES: frozenset[str] = frozenset({OUTCOME_NO_EVIDENCE, OUTCOME_FALLBACK})
"""Outcomes that mean the pipeline declined to answer (a guard tripped, the fallback answered)."""


class Role(str, Enum):
    """What a node does in a pipeline; the runner, metrics and analysis ask for roles, not types."""

    RETRIEVER = "retriever"
    RERANKER = "reranker"
    GUARD = "guard"
    GENERATOR = "generator"
    GRADER = "grader"
    CHECKER = "checker"
    ROUTER = "router"
    REWRITER = "rewriter"
    TRANSFORM = "transform"  # reshapes evidence or rankings (mmr, compress, reorder...)
    SAFETY = "safety"  # screens the question or the answer (input_filter, moderate)
    OTHER = "other"


ROLE_FIELDS: dict[Role, tuple[StateField, ...]] = {
    Role.RETRIEVER: (RETRIEVED,),
    Role.RERANKER: (RERANKED, RERANK_SCORES, RERANK_MODEL),
    Role.GUARD: (GUARD_TRIGGERED, GUARD_THRESHOLD, EVIDENCE, OUTCOME),
    Role.GENERATOR: (ANSWER, ABSTAINED, ANSWER_EVIDENCE, USED_DOCUMENTS, INVALID_CITATIONS, OUTCOME),
    Role.GRADER: (GRADE_DECISION, EVIDENCE, REFLECTION),
    Role.CHECKER: (SELF_CHECK_DECISION, REFLECTION),
    Role.ROUTER: (ROUTE,),
    Role.REWRITER: (QUERIES, ATTEMPT),
    Role.TRANSFORM: (),
    Role.SAFETY: (SAFETY_BLOCKED, SAFETY_FINDING),
    Role.OTHER: (),
}
"""The fields a node of each role must write (checked when the node type is registered)."""

LOOP_ROLES: frozenset[Role] = frozenset({Role.REWRITER, Role.GRADER, Role.CHECKER})
"""Roles whose presence in a trace makes it a reflection loop (evalkit.metrics.agentic)."""
AGENTIC_ROLES: frozenset[Role] = LOOP_ROLES | {Role.ROUTER}


def gate_fields() -> dict[str, frozenset[str]]:
    """Gate decision fields and the values that pass (``grade_decision`` -> {generate}, ...)."""
    return {name: f.passes for name, f in FIELDS.items() if f.passes is not None}


@dataclass(frozen=True)
class Contract:
    """What a node reads and writes with its params: required and optional, checked by the engine."""

    reads: frozenset[str]
    optional_reads: frozenset[str]
    writes: frozenset[str]
    optional_writes: frozenset[str]

    @property
    def all_reads(self) -> frozenset[str]:
        return self.reads | self.optional_reads

    @property
    def all_writes(self) -> frozenset[str]:
        return self.writes | self.optional_writes


def check_fields(owner: str, fields: Iterable[str], what: str) -> None:
    """Raise ``ValueError`` naming ``owner`` when a field is not declared in the schema."""
    for f in fields:
        if f not in FIELDS:
            close = difflib.get_close_matches(str(f), FIELDS, n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise ValueError(f"{owner} {what} '{f}', which the state schema does not declare{hint} "
                             "(a new field is declared with evalkit.graph.schema.declare_field)")


def describe(field: Any) -> str:
    """One line for docs and errors: ``name (type, reducer): meaning``."""
    f = FIELDS[str(field)]
    return f"{f} ({f.type_name}, {f.reducer}): {f.meaning}"


def fields_markdown() -> str:
    """The schema as a Markdown table (docs/graph.md embeds it; a test keeps the page current)."""
    rows = ["| field | type | combines | meaning |", "|---|---|---|---|"]
    for f in FIELDS.values():
        if f in _BUILTIN:
            gate = f" Gate: passes on {', '.join(sorted(f.passes))}." if f.passes else ""
            rows.append(f"| `{f}` | `{f.type_name.replace('|', 'or')}` | {f.reducer} | {f.meaning}.{gate} |")
    roles = ["| role | must write |", "|---|---|"]
    roles += [f"| `{r.value}` | {', '.join(f'`{f}`' for f in fields) or '-'} |" for r, fields in ROLE_FIELDS.items()]
    return "\n".join(rows) + "\n\n" + "\n".join(roles) + "\n"


_BUILTIN = frozenset(FIELDS)  # the fields above; plugins' fields are theirs to document
