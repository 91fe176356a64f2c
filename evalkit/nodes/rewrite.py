"""The ``query_rewrite`` node: better queries for retrieval, never a changed question.

``question`` is never overwritten. The node writes the queries retrieval runs
(``queries``: the original question first, when ``include_original``, then the rewrite
and the sub-queries; the ``retrieve`` node retrieves each and fuses them) and, in their
own fields, what it did: ``rewrite`` (the rewritten query, or None), ``sub_queries``,
``rewrite_source`` (``dictionary``, ``split``, ``llm``, ``feedback``, ``guard``, ``none``,
joined by ``+``) and ``rewrite_reason``.

It owns the loop counter: every execution sets ``attempt`` = previous + 1 (first = 1),
so each trace event carries the attempt it belongs to.

**Conversations** (``history``: the eval record's earlier turns, oldest first). A
follow-up such as "那二线城市呢？" or "What about tier-2 cities?" cannot be searched alone.
With ``history.mode: follow_up`` (the default) a question is a follow-up when the record
has earlier user turns and the question contains one of ``history.markers`` (那, 呢, 它,
这个, what about, how about, it, they, ...; whole words for Latin script); ``always``
treats every question with history as one, ``off`` ignores history. A follow-up is made
standalone, and that standalone question is what every later step (dictionary, split,
LLM rewrite, retries) works on and what is searched in place of the bare follow-up:

- offline (documented rule, TREC CAsT's "concatenate earlier turns" baseline): the last
  ``history.turns`` user turns, then the question, joined by spaces;
- with ``llm``: the model rewrites the conversation's last question into a standalone
  question (JSON ``{"query": ...}``); a failure takes the offline rule and is counted in
  ``llm_fallback``.

``rewrite_source`` then starts with ``history`` or ``history-llm``. ``question`` itself is
never changed (rerank, grade and generate still see the user's words).

**First attempt**, in this order:

1. ``dictionary`` (from config): every entry whose key occurs in the question
   (case-insensitive, NFKC) appends its expansions: ``{"kid is born": ["paternity
   leave"]}``. A dictionary knows only what its author wrote into it.
2. ``split``: names, codes or dates joined by ``and``/``or``/``vs``/``和``/``与``/``还是``...
   (a comparison) give one sub-query per member (the question with the others removed),
   at most ``max_subqueries`` (``split: false`` turns it off). Multi-hop questions cannot
   be split without knowing the bridge entity: offline, the grade node's feedback finds
   it (see below); an LLM can. Measured (``reports/agentic.md``): with the retrieve node's
   RRF fusion, splitting raised recall@20 of the demo's comparisons and cost recall@5 on
   HotpotQA's (the shared words of the sub-queries pull generic documents up).
3. ``llm`` (optional), only when the dictionary matched nothing: JSON
   ``{"query": ..., "sub_queries": [...]}``.

**Retries** (attempt > 1) read ``reflection`` (the feedback the ``grade`` or
``self_check`` node wrote: ``missing_terms``, ``add_terms``, ``exclude_terms``, ``reason``).
With ``llm``, the model rewrites from the feedback and the earlier queries; offline (or
when the LLM fails), the rewrite is the question plus the missing terms plus feedback
terms not used before, plus the dictionary's expansions (pseudo-relevance feedback:
``exclude_terms`` cannot be expressed to BM25 or a bi-encoder and are only passed to an LLM). A retry must differ from every
earlier attempt: when no new query can be made, ``rewrite_futile`` is true (route it to
the fallback: retrieval would return the same documents again).

An LLM ``grade``'s reflection also carries ``text`` (the LLM's reasons in words): the LLM rewrite is
shown it, and offline the names and codes it gives for relevant candidates join the retry query
(``evalkit.nodes.reflection.text_terms``; ``rewrite_reason`` lists them). A ``self_check`` reflection
with ``strategy: conservative`` makes the retry conservative instead: the question and a query of only
its codes, names, dates and content words, no expansion, no sub-query, no LLM (``rewrite_source:
conservative``; ``evalkit.nodes.reflection.conservative_query``).

``similarity_guard`` (optional): a rewrite whose e5 cosine with the question is above
``max_cosine`` is too similar to help and is dropped (the original is kept).

An LLM that fails or answers garbage never stops the query: the offline path is used and
``llm_fallback`` records what failed (counted by ``evalkit.metrics.agentic``).

YAML::

    rewrite:
      type: query_rewrite
      params:
        dictionary: {"kid is born": [paternity leave], 电脑坏了: [IT 报修]}
        split: true
        max_subqueries: 3
        feedback_terms: 4
        llm: {backend: openai, base_url: ..., model: ...}      # optional
        similarity_guard: {embedder: e5, max_cosine: 0.97}      # optional
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from evalkit.graph.node import Node, NodeParams, register_node
from evalkit.graph.schema import (
    ATTEMPT,
    HISTORY,
    LLM_FALLBACK,
    QUERIES,
    QUESTION,
    REFLECTION,
    REWRITE,
    REWRITE_FUTILE,
    REWRITE_HISTORY,
    REWRITE_REASON,
    REWRITE_SOURCE,
    SUB_QUERIES,
    Contract,
    Role,
)
from evalkit.llm.base import LLMError, LLMSpec
from evalkit.models.embedders import ModelSpec
from evalkit.nodes.conversation import (
    STANDALONE_PROMPT,
    HistoryRule,
    fold,
    is_follow_up,
    standalone_offline,
)
from evalkit.nodes.reflection import (
    CONSERVATIVE,
    conservative_query,
    feedback_query,
    text_terms,
)
from evalkit.text.values import extract_atoms

REWRITE_PROMPT = (
    "You rewrite questions into search queries for a document retrieval system. "
    "Keep every name, code, number and date exactly as written. "
    'Reply with JSON only: {"query": "<one search query>", "sub_queries": ["<query>", ...]}. '
    "Use sub_queries only for comparisons (one per compared item) and multi-hop questions "
    "(one per hop); otherwise an empty list."
)
# a gap between two names that makes them a comparison group ("A or B", "A 和 B", "A, B or C")
_WORDS = r"(?:and|or|vs\.?|versus|to|和|与|跟|及|以及|还是|或|或者)"
_CONNECTOR = re.compile(rf"^\s*(?:[,，、]\s*{_WORDS}?|{_WORDS})\s*(?:the\s+)?$", re.IGNORECASE)
_ZH_CONNECTOR_PREFIX = re.compile(r"^(?:和|与|跟|及|还是)(?=[\u3400-\u9fff])")
_JOINABLE = re.compile(r"^[ \-]+$")  # "Tessary T300", "NP-Gate": one name in two atoms


class SimilarityGuard(NodeParams):
    """Drop a rewrite whose cosine with the question is above ``max_cosine`` (too similar to help)."""

    embedder: str | ModelSpec = Field(default="e5", description="the model measuring the cosine")
    max_cosine: float = Field(default=0.97, gt=0, le=1, description="a rewrite above this cosine with the "
                              "question is dropped")


class RewriteParams(NodeParams):
    dictionary: dict[str, list[str]] = Field(default_factory=dict,
                                             description="term found in the question -> expansions appended")
    history: HistoryRule = Field(default=HistoryRule(), description="how conversation history makes a "
                                 "follow-up standalone (docs/nodes.md, Conversations)")
    split: bool = Field(default=True, description="split a comparison (A and B, A 还是 B...) into one "
                        "sub-query per member")
    max_subqueries: int = Field(default=3, ge=0, description="at most this many sub-queries")
    include_original: bool = Field(default=True, description="the original question stays the first query")
    feedback_terms: int = Field(default=4, ge=0, description="new feedback terms added per retry")
    llm: LLMSpec | None = Field(default=None, description="rewrites when the dictionary matched nothing, and "
                                "on retries (omit: offline rewrites only)")
    system_prompt: str = Field(default=REWRITE_PROMPT, description="the llm's instructions")
    similarity_guard: SimilarityGuard | None = Field(default=None, description="drop rewrites too similar to "
                                                     "the question to help")


def dictionary_expansions(question: str, dictionary: Mapping[str, Sequence[str]]) -> tuple[list[str], list[str]]:
    """(matched keys, expansions not already in the question), in dictionary order."""
    q = fold(question)
    keys, out = [], []
    for key, expansions in dictionary.items():
        if fold(key) and fold(key) in q:
            keys.append(key)
            out += [e for e in expansions if fold(e) not in q and e not in out]
    return keys, out


def _spans(question: str) -> list[tuple[int, int]]:
    """Name-like spans (codes, dates, names) of the question; adjacent atoms merged ("Tessary T300")."""
    spans: list[tuple[int, int]] = []
    for a in extract_atoms(question):
        joinable = bool(spans) and _JOINABLE.match(question[spans[-1][1]:a.start]) is not None
        if a.kind not in ("code", "entity", "date") and not (a.kind == "number" and joinable):
            continue  # a number only extends a name: "NP-Gate 5"
        start = a.start
        m = _ZH_CONNECTOR_PREFIX.match(question[a.start:a.end])
        if m:  # jieba glued the connector to the name: "和朔峰"
            start += m.end()
        if spans and _JOINABLE.match(question[spans[-1][1]:start]):
            spans[-1] = (spans[-1][0], a.end)
        else:
            spans.append((start, a.end))
    return spans


def split_comparison(question: str, max_subqueries: int) -> list[str]:
    """One sub-query per member of the first group of names joined by connectors ("A or B").

    Each sub-query is the question with the group replaced by one member:
    ``"Which is older, A or B?"`` -> ``["Which is older, A?", "Which is older, B?"]``.
    No group (or ``max_subqueries`` < 2): ``[]``.
    """
    if max_subqueries < 2:
        return []
    spans = _spans(question)
    group: list[tuple[int, int]] = []
    for span in spans:
        if group and _CONNECTOR.match(question[group[-1][1]:span[0]]):
            group.append(span)
            continue
        if len(group) >= 2:
            break
        group = [span]
    if len(group) < 2:
        return []
    head, tail = question[:group[0][0]], question[group[-1][1]:]
    subs = [f"{head}{question[s:e]}{tail}".strip() for s, e in group[:max_subqueries]]
    return list(dict.fromkeys(subs))


def fallback_record(node: str, attempt: int, exc: Exception) -> dict[str, Any]:
    """What ``llm_fallback`` records when an LLM call failed and a node took its offline path."""
    kind = exc.kind if isinstance(exc, LLMError) else type(exc).__name__
    return {"node": node, "attempt": attempt, "kind": kind, "message": str(exc)[:200]}


@register_node
class QueryRewrite(Node[RewriteParams]):
    type = "query_rewrite"
    role = Role.REWRITER
    reads = (QUESTION, ATTEMPT)
    optional_reads = (REWRITE_HISTORY, REFLECTION)  # absent before the first rewrite / without a grader

    @classmethod
    def contract(cls, params: RewriteParams) -> Contract:
        base = super().contract(params)
        extra = frozenset({HISTORY}) if params.history.mode != "off" else frozenset()
        return Contract(base.reads | extra, base.optional_reads, base.writes, base.optional_writes)
    writes = (ATTEMPT, QUERIES, REWRITE, SUB_QUERIES, REWRITE_SOURCE, REWRITE_REASON, REWRITE_HISTORY, REWRITE_FUTILE)
    optional_writes = (LLM_FALLBACK,)
    Params = RewriteParams

    def __init__(self, name: str, params: RewriteParams, resources: Any = None):
        super().__init__(name, params, resources)
        self.client = self.llm_client(params.llm, "rewrite") if params.llm is not None else None
        self._embedder = None
        if params.similarity_guard is not None:
            self._embedder = resources.embedder(ModelSpec.of(params.similarity_guard.embedder))

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        p = self.params
        attempt = int(state.get("attempt") or 0) + 1
        asked = state["question"]
        history = [list(h) for h in state.get("rewrite_history") or []]
        feedback = state.get("reflection") if attempt > 1 else None
        out: dict[str, Any] = {}
        sources: list[str] = []
        question, context = asked, ""  # the standalone question every step below works on
        if p.history.mode != "off":
            question, source, context = self._standalone(asked, state.get(HISTORY) or [], attempt, out)
            sources += [source] if source else []
        conservative = isinstance(feedback, Mapping) and feedback.get("strategy") == CONSERVATIVE
        subs = split_comparison(question, p.max_subqueries) if p.split and not conservative else []
        rewrite: str | None
        llm_subs: list[str]
        if conservative:  # a failed self-check asked for only the question's most certain terms
            rewrite, terms = conservative_query(question)
            llm_subs, source, reason = [], CONSERVATIVE, f"conservative retry: only the question's terms {terms}"
        elif attempt == 1 or not isinstance(feedback, Mapping):  # an llm-made standalone question is not rewritten again
            rewrite, llm_subs, source, reason = self._first(question, attempt, out, "history-llm" not in sources)
        else:
            rewrite, llm_subs, source, reason = self._retry(question, feedback, history, attempt, out)
        reason = "; ".join(r for r in (context, reason) if r)
        sources += [source] if source else []
        if subs:
            sources.append("split")
            reason = f"{reason}; split into {len(subs)} sub-queries"
        subs = list(dict.fromkeys(subs + llm_subs))[: p.max_subqueries]
        if rewrite is not None and fold(rewrite) == fold(question):
            rewrite = None
        if rewrite is not None and self._embedder is not None and p.similarity_guard is not None:
            cos = self._cosine(question, rewrite)
            if cos > p.similarity_guard.max_cosine:
                reason += f"; guard: cosine {cos:.3f} > {p.similarity_guard.max_cosine}, original kept"
                sources.append("guard")
                rewrite = None
        queries = [question] if p.include_original or (rewrite is None and not subs) else []
        queries = list(dict.fromkeys(queries + ([rewrite] if rewrite is not None else []) + subs))
        if rewrite is None and fold(question) != fold(asked):
            rewrite = question  # the standalone form of a follow-up is the rewrite
        key = sorted(fold(q) for q in queries)
        futile = attempt > 1 and any(sorted(fold(q) for q in h) == key for h in history)
        if futile:
            reason += "; futile: the same queries as an earlier attempt"
        out.update({"attempt": attempt, "queries": queries, "rewrite": rewrite, "sub_queries": subs,
                    "rewrite_source": "+".join(sources) or "none", "rewrite_reason": reason.strip("; "),
                    "rewrite_history": [*history, queries], "rewrite_futile": futile})
        return out

    def _standalone(self, question: str, turns: Sequence[Mapping[str, Any]], attempt: int,
                    out: dict[str, Any]) -> tuple[str, str, str]:
        """(standalone question, source, reason): a follow-up made standalone with the earlier turns."""
        rule = self.params.history
        if not any(t.get("role") == "user" for t in turns):
            return question, "", ""
        if rule.mode == "follow_up" and not is_follow_up(question, rule.markers):
            return question, "", ""
        if self.client is not None:
            try:
                return self._ask_standalone(question, turns), "history-llm", "follow-up made standalone by the llm"
            except Exception as exc:  # noqa: BLE001 - degrade to the offline rule, never crash
                out["llm_fallback"] = fallback_record(self.name, attempt, exc)
                note = f"llm failed ({out['llm_fallback']['kind']}); "
        else:
            note = ""
        n = min(rule.turns, sum(1 for t in turns if t.get("role") == "user"))
        return (standalone_offline(question, turns, rule.turns), "history",
                f"{note}follow-up: the last {n} user turn(s) put before it")

    def _ask_standalone(self, question: str, turns: Sequence[Mapping[str, Any]]) -> str:
        """The LLM's standalone form of the conversation's last question; ``LLMError`` when unusable."""
        if self.client is None:
            raise LLMError("query_rewrite has no llm configured", kind="config")
        lines = [f"{t.get('role')}: {t.get('content')}" for t in turns[-6:]]
        user = "Conversation:\n" + "\n".join(lines) + f"\nuser: {question}\n\n" + STANDALONE_PROMPT
        value, _ = self.client.chat_json(user, system=self.params.system_prompt, expect=dict, max_tokens=200)
        query = value.get("query")
        if not isinstance(query, str) or not query.strip():
            raise LLMError(f"standalone reply has no 'query' string: {str(value)[:120]}", kind="bad_json")
        return " ".join(query.split())

    # --- attempts ---------------------------------------------------------------------------
    def _first(self, question: str, attempt: int, out: dict[str, Any],
               use_llm: bool = True) -> tuple[str | None, list[str], str, str]:
        keys, expansions = dictionary_expansions(question, self.params.dictionary)
        if expansions:
            return f"{question} {' '.join(expansions)}", [], "dictionary", f"dictionary: {', '.join(keys)}"
        if self.client is not None and use_llm:
            try:
                rewrite, subs = self._ask(question, None, [])
                return rewrite, subs, "llm", "llm rewrite"
            except Exception as exc:  # noqa: BLE001 - degrade, never crash: the original question is used
                out["llm_fallback"] = fallback_record(self.name, attempt, exc)
                return None, [], "", f"llm failed ({out['llm_fallback']['kind']}): original kept"
        return None, [], "", "no dictionary entry matched" if self.params.dictionary else ""

    def _retry(self, question: str, feedback: Mapping[str, Any], history: list[list[str]], attempt: int,
               out: dict[str, Any]) -> tuple[str | None, list[str], str, str]:
        earlier = sorted({fold(q) for h in history for q in h})
        why = str(feedback.get("reason") or "")[:120]
        note = ""
        if self.client is not None:
            try:
                rewrite, subs = self._ask(question, feedback, earlier)
                if fold(rewrite) not in earlier:
                    told = " and the judge's notes" if isinstance(feedback.get("text"), str) and feedback["text"] else ""
                    return rewrite, subs, "llm+feedback", f"llm rewrite from feedback{told} ({why})"
                note = "llm repeated an earlier query; "
            except Exception as exc:  # noqa: BLE001 - any LLM failure takes the offline path
                out["llm_fallback"] = fallback_record(self.name, attempt, exc)
                note = f"llm failed ({out['llm_fallback']['kind']}); "
        rewrite, fresh = feedback_query(question, feedback, " ".join(earlier), self.params.feedback_terms)
        _, expansions = dictionary_expansions(rewrite, self.params.dictionary)  # keep the first attempt's terms
        rewrite = f"{rewrite} {' '.join(expansions)}" if expansions else rewrite
        reason = f"feedback terms {fresh}" if fresh else "no new feedback terms"
        text = feedback.get("text")
        if isinstance(text, str) and text.strip():  # an LLM grade's reasons in words
            named = text_terms(text, " ".join([rewrite, *earlier]), self.params.feedback_terms)
            rewrite = f"{rewrite} {' '.join(named)}" if named else rewrite
            reason += f"; reflection text: terms {named}" if named else "; reflection text: no new names"
        return rewrite, [], "feedback", f"{note}{reason} ({why})"

    def _ask(self, question: str, feedback: Mapping[str, Any] | None, earlier: list[str]) -> tuple[str, list[str]]:
        """One LLM rewrite (query, sub-queries); ``LLMError`` when the reply is unusable."""
        lines = [f"Question: {question}"]
        if feedback:
            lines += ["The previous attempt did not find good evidence.",
                      f"Why: {feedback.get('reason', '')}",
                      f"Terms to add: {', '.join(map(str, feedback.get('add_terms') or [])) or '-'}",
                      f"Missing from the evidence: {', '.join(map(str, feedback.get('missing_terms') or [])) or '-'}",
                      f"Senses to avoid: {', '.join(map(str, feedback.get('exclude_terms') or [])) or '-'}",
                      *([f"The relevance judge's notes:\n{feedback['text']}"]
                        if isinstance(feedback.get("text"), str) and feedback["text"].strip() else []),
                      "Queries already tried (write a DIFFERENT one): " + " | ".join(earlier)]
        lines.append(f"At most {self.params.max_subqueries} sub_queries.")
        if self.client is None:
            raise LLMError("query_rewrite has no llm configured", kind="config")
        value, _ = self.client.chat_json("\n".join(lines), system=self.params.system_prompt, expect=dict,
                                         max_tokens=200)
        query, subs = value.get("query"), value.get("sub_queries") or []
        if not isinstance(query, str) or not query.strip():
            raise LLMError(f"rewrite reply has no 'query' string: {str(value)[:120]}", kind="bad_json")
        if not isinstance(subs, list):
            raise LLMError(f"rewrite reply: 'sub_queries' is not a list: {str(subs)[:120]}", kind="bad_json")
        clean = [" ".join(s.split()) for s in subs if isinstance(s, str) and s.strip()]
        return " ".join(query.split()), clean[: self.params.max_subqueries]

    def _cosine(self, a: str, b: str) -> float:
        if self._embedder is None:
            raise ValueError("query_rewrite: the similarity guard has no embedder")
        vecs = self._embedder.encode_queries([a, b])
        return float(vecs[0] @ vecs[1])
