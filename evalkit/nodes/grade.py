"""The ``grade`` node: which candidates are relevant to the ORIGINAL question, and is that enough?

1. **Prefilter** (cheap, bounds the judging cost): the first ``pool_k`` candidates of
   ``candidates_from`` are embedded (``embedder``, cached) and the ``judge_k`` with the
   highest cosine to the original question are judged; the rest are not.
2. **Judge** each of them:

   - with ``llm``: one call per candidate, JSON ``{"relevant": "yes"|"no", "reason": ...}``;
     a failed call or an unusable reply is judged by the offline rule instead and
     counted in ``llm_fallback`` (after ``max_llm_failures`` failures in one execution the
     remaining candidates skip the LLM);
   - without: the **offline relevance rule**, which is NOT an LLM judgement: relevant
     when the e5 cosine of question and passage is at least ``offline.min_cosine`` AND
     the share of the question's content words found in the passage (stemmed English,
     jieba Chinese, stop words and numbers left out; partial matches count 0.5) is at
     least ``offline.min_coverage``. Measured on the demo set (in-sample, see
     ``reports/agentic.md``) it separates gold from other candidates only weakly: it is a
     coarse filter, not a relevance judge.

3. **Gate**: the relevant candidates (best cosine first, at most ``keep_k``) become
   ``evidence`` for ``generate``. ``relevant_ratio`` = relevant / judged. The gate passes
   when at least ``min_relevant`` are relevant, the ratio is at least ``min_ratio`` and,
   with ``require_atoms``, every code, name and date of the question (``atom_kinds``;
   ``evalkit.text.values`` atoms; a capitalised first word is not a name) is stated in
   the kept evidence. ``gate`` replaces those three with a condition
   (``evalkit.graph.conditions``) over :data:`GATE_VARIABLES`, so "at least 3 relevant OR
   the question's names and codes covered" is
   ``gate: {any: [{field: n_relevant, ge: 3}, {field: atoms_covered, eq: true}]}``. With ``atom_rescue``, a missing atom first pulls in the best-cosine
   candidate of the pool that states it (judged relevant "by atom"; the second item of a
   comparison is often such a candidate). The atom check is what lets an offline gate
   notice unanswerable look-alikes ("E-4099", "LX-200 Max"); it also fails on names the
   corpus writes differently (an English name of a Chinese-only document).
4. **Decision** (``grade_decision``, route on it): ``generate`` when the gate passes;
   ``fallback`` when it fails at ``attempt >= max_attempts`` (``on_exhausted: generate``:
   generate from the kept evidence instead, when there is any); else ``rewrite``.
5. **Reflection** (``reflection``, None when the gate passes): ``missing_terms`` (question
   atoms absent from the evidence), ``add_terms`` (names and codes of the best-matching
   candidates that the question lacks: the bridge entity of a multi-hop question is
   often one of them), ``exclude_terms`` (names frequent in the rejected candidates only:
   the senses to avoid), ``relevant_ratio`` and ``reason``. ``query_rewrite`` reads it.

Writes ``evidence``, ``graded`` (per judged candidate: doc id, cosine, coverage, verdict,
who judged, reason), ``relevant_ratio``, ``grade_decision``, ``grade_reason``,
``reflection``, ``grade_method`` and, when an LLM call failed, ``llm_fallback``.

YAML::

    grade:
      type: grade
      params: {pool_k: 20, judge_k: 8, offline: {min_cosine: 0.84, min_coverage: 0.2},
               min_relevant: 1, require_atoms: true, max_attempts: 3, keep_k: 5}
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from evalkit.graph.conditions import check_types, describe, evaluate, fields, parse
from evalkit.graph.node import Node, NodeParams, register_node
from evalkit.graph.schema import (
    ATTEMPT,
    EVIDENCE,
    GRADE_DECISION,
    GRADE_IF_LAST,
    GRADE_METHOD,
    GRADE_REASON,
    GRADED,
    LLM_FALLBACK,
    QUESTION,
    REFLECTION,
    RELEVANT_RATIO,
    RERANKED,
    RETRIEVED,
    Contract,
    Role,
)
from evalkit.llm.base import LLMError, LLMSpec
from evalkit.models.embedders import ModelSpec
from evalkit.nodes.question_atoms import ATOM_KINDS, AtomKind, question_atoms
from evalkit.nodes.rewrite import fallback_record, fold
from evalkit.records import Hit
from evalkit.text.lexicon import content_terms, term_found
from evalkit.text.values import AtomPool, extract_atoms

GRADE_PROMPT = (
    "You judge whether a passage is relevant to a question: relevant means the passage states the "
    "answer or a fact needed to reach it. Reply with JSON only: "
    '{"relevant": "yes" or "no", "reason": "<one short sentence>"}'
)
_YES, _NO = frozenset({"yes", "y", "true", "relevant", "1"}), frozenset({"no", "n", "false", "irrelevant", "0"})


class OfflineRule(NodeParams):
    """The documented embedding + lexical relevance rule (no LLM): both thresholds must hold."""

    min_cosine: float = Field(default=0.84, ge=-1, le=1, description="e5 cosine of question and passage")
    min_coverage: float = Field(default=0.2, ge=0, le=1, description="share of question content words in the passage")


class GradeParams(NodeParams):
    candidates_from: Literal["retrieved", "reranked"] = Field(
        default="retrieved", description="the ranking whose candidates are graded")
    pool_k: int = Field(default=20, ge=1, description="candidates considered")
    judge_k: int = Field(default=8, ge=1, description="judged after the embedding prefilter")
    embedder: str | ModelSpec = Field(default="e5", description="the prefilter's (and the offline rule's) "
                                      "embedder")
    llm: LLMSpec | None = Field(default=None, description="judges each candidate (omit: the offline rule)")
    system_prompt: str = Field(default=GRADE_PROMPT, description="the llm's instructions")
    max_llm_failures: int = Field(default=2, ge=1, description="after this many failed llm calls in one "
                                  "execution, the remaining candidates are judged by the offline rule")
    offline: OfflineRule = Field(default=OfflineRule(min_cosine=0.84, min_coverage=0.2),
                                 description="the offline relevance rule (both thresholds must hold)")
    min_relevant: int = Field(default=1, ge=0, description="the gate needs at least this many relevant "
                              "candidates")
    min_ratio: float = Field(default=0.0, ge=0, le=1, description="the gate needs relevant / judged at least "
                             "this")
    require_atoms: bool = Field(default=True, description="the gate needs every code, name and date of the "
                                "question stated in the kept evidence")
    atom_rescue: bool = Field(default=True, description="a missing atom pulls in the best candidate stating it")
    atom_kinds: list[AtomKind] = Field(default_factory=lambda: list(ATOM_KINDS),
                                       description="which atoms require_atoms checks")
    max_attempts: int = Field(default=3, ge=1, description="a failed gate at this attempt decides fallback "
                              "(or on_exhausted)")
    on_exhausted: Literal["fallback", "generate"] = Field(
        default="fallback", description="at max_attempts: the fallback, or generate from what was kept (if any)")
    keep_k: int = Field(default=5, ge=1, description="relevant candidates kept as evidence (best cosine first)")
    feedback_terms: int = Field(default=6, ge=0, description="add_terms offered to the next rewrite")
    gate: dict[str, Any] | None = Field(
        default=None, description="a condition over the gate variables; replaces min_relevant, min_ratio, "
                                  "require_atoms")

    @field_validator("gate")
    @classmethod
    def _gate_condition(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            check_types(parse(value), GATE_VARIABLES, what="gate variable")
        return value

    @model_validator(mode="after")
    def _gate_alone(self) -> GradeParams:
        both = sorted({"min_relevant", "min_ratio", "require_atoms"} & self.model_fields_set)
        if self.gate is not None and both:
            raise ValueError(f"'gate' replaces {', '.join(both)}: remove them, or drop 'gate'")
        return self


GATE_VARIABLES: dict[str, str] = {
    "n_relevant": "int",      # candidates judged relevant (before the keep_k cut; atom rescues not counted)
    "n_judged": "int",        # candidates judged (at most judge_k)
    "relevant_ratio": "float",  # n_relevant / n_judged (0 when nothing was judged)
    "n_atoms": "int",         # the question's codes, names and dates (atom_kinds)
    "atoms_missing": "int",   # of those, how many the kept evidence does not state (after atom_rescue)
    "atoms_covered": "bool",  # atoms_missing == 0
    "n_kept": "int",          # passages kept as evidence
    "attempt": "int",         # the reflection-loop attempt (1 for the first)
}
"""What a ``gate`` condition may test (name -> type), computed by the grade node for each attempt."""


def coverage(question_terms: Sequence[str], text: str) -> float:
    """Share of ``question_terms`` found in ``text`` (``evalkit.text.lexicon.term_found``: 1 or 0.5)."""
    if not question_terms:
        return 1.0
    terms = frozenset(content_terms(text))
    return sum(term_found(t, terms, text) for t in question_terms) / len(question_terms)


def states(atom: Any, text: str) -> bool:
    """Whether ``text`` states ``atom`` as a value (``evalkit.text.values.AtomPool``)."""
    return AtomPool(list(extract_atoms(text, entities=False)), text).supports(atom)


def missing_atoms(question: str, texts: Sequence[str], kinds: Sequence[str] = ATOM_KINDS) -> list[str]:
    """The question's atoms (``question_atoms``) that none of ``texts`` states."""
    text = "\n".join(texts)
    return list(dict.fromkeys(a.text.strip() for a in question_atoms(question, kinds) if not states(a, text)))


def salient_terms(texts: Sequence[str], question: str, limit: int) -> list[str]:
    """Names and codes of ``texts`` that the question lacks, most frequent first (ties: first seen)."""
    q = fold(question)
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    for text in texts:
        for a in extract_atoms(text):
            term = " ".join(a.text.split())
            if a.kind not in ("code", "entity") or len(term) < 2 or "|" in term or fold(term) in q:
                continue
            counts[term] += 1
            first.setdefault(term, len(first))
    return sorted(counts, key=lambda t: (-counts[t], first[t]))[:limit]


def reflection_text(graded: Sequence[Mapping[str, Any]], max_chars: int = 800) -> str:
    """The free-text reflection: the reasons an LLM gave for its verdicts, one line per judged candidate,
    ``[doc-id] relevant: <reason>`` / ``[doc-id] not relevant: <reason>``, at most ``max_chars``.

    Only verdicts the LLM gave (``by == "llm"``) count: a candidate the offline rule judged (no LLM,
    or the call failed) has a rule's numbers, not a reason in words. Empty when there is none.
    """
    lines = [f"[{g['doc_id']}] {'relevant' if g['relevant'] else 'not relevant'}: {' '.join(str(g['reason']).split())}"
             for g in graded if g.get("by") == "llm" and str(g.get("reason") or "").strip()]
    return "\n".join(lines)[:max_chars]


@register_node
class Grade(Node[GradeParams]):
    type = "grade"
    role = Role.GRADER
    reads = (QUESTION, RETRIEVED, ATTEMPT)
    writes = (EVIDENCE, GRADED, RELEVANT_RATIO, GRADE_DECISION, GRADE_REASON, REFLECTION, GRADE_METHOD, GRADE_IF_LAST)
    optional_writes = (LLM_FALLBACK,)
    Params = GradeParams

    @classmethod
    def contract(cls, params: GradeParams) -> Contract:
        base = super().contract(params)
        candidates = {"retrieved": RETRIEVED, "reranked": RERANKED}[params.candidates_from]
        return Contract(frozenset({QUESTION, candidates, ATTEMPT}), base.optional_reads, base.writes,
                        base.optional_writes)

    def __init__(self, name: str, params: GradeParams, resources: Any = None):
        super().__init__(name, params, resources)
        self.passages = resources.passages()
        self.embedder = resources.embedder(ModelSpec.of(params.embedder))
        self.client = self.llm_client(params.llm, "grade") if params.llm is not None else None
        self._gate = parse(params.gate) if params.gate is not None else None
        self._gate_atoms = self._gate is not None and bool(
            {"n_atoms", "atoms_missing", "atoms_covered"} & set(fields(self._gate)))

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        p = self.params
        question = state["question"]
        attempt = int(state.get("attempt") or 0) or 1
        candidates = list(state[p.candidates_from])[: p.pool_k]
        texts = [self.passages.text(h.id) for h in candidates]
        cosines = self._cosines(question, texts)
        order = sorted(range(len(candidates)), key=lambda i: (-cosines[i], candidates[i].id))[: p.judge_k]
        q_terms = content_terms(question)
        graded, failures, error = [], 0, None
        for i in order:
            cov = coverage(q_terms, texts[i])
            rule = cosines[i] >= p.offline.min_cosine and cov >= p.offline.min_coverage
            verdict, by = rule, "rule"
            reason = f"cosine {cosines[i]:.3f}, coverage {cov:.2f}"
            if self.client is not None and failures < p.max_llm_failures:
                try:
                    verdict, reason, by = *self._ask(question, candidates[i].doc_id, texts[i]), "llm"
                except Exception as exc:  # noqa: BLE001 - degrade to the rule, never crash
                    failures += 1
                    error = exc
                    by = "rule (llm failed)"
            elif self.client is not None:
                by = "rule (llm skipped)"
            graded.append({"doc_id": candidates[i].doc_id, "id": candidates[i].id, "cosine": round(cosines[i], 4),
                           "coverage": round(cov, 3), "relevant": bool(verdict), "by": by, "reason": reason})
        relevant = [i for i, g in zip(order, graded) if g["relevant"]]
        ratio = len(relevant) / len(order) if order else 0.0
        chosen = relevant[: p.keep_k]
        check_atoms = self._gate_atoms if self._gate is not None else p.require_atoms
        missing = missing_atoms(question, [texts[i] for i in chosen], p.atom_kinds) if check_atoms else []
        if missing and p.atom_rescue:
            chosen, missing = self._rescue_atoms(question, chosen, texts, cosines, candidates, graded)
        kept = [Hit(candidates[i].id, candidates[i].doc_id, cosines[i]) for i in chosen]
        problems = []
        if self._gate is not None:
            atoms = question_atoms(question, p.atom_kinds) if self._gate_atoms else []
            variables = {"n_relevant": len(relevant), "n_judged": len(order), "relevant_ratio": ratio,
                         "n_atoms": len(atoms), "atoms_missing": len(missing), "atoms_covered": not missing,
                         "n_kept": len(kept), "attempt": attempt}
            if not evaluate(self._gate, variables.get):
                problems.append(f"gate failed: {describe(self._gate, variables.get)}")
        else:
            if len(relevant) < p.min_relevant:
                problems.append(f"{len(relevant)} of {len(order)} judged relevant (need {p.min_relevant})")
            if ratio < p.min_ratio:
                problems.append(f"relevant ratio {ratio:.2f} < {p.min_ratio}")
            if missing:
                problems.append(f"not in the evidence: {', '.join(missing)}")
        if not problems:
            decision, reason = "generate", f"{len(relevant)} of {len(order)} judged relevant"
        elif attempt >= p.max_attempts:
            decision = "generate" if p.on_exhausted == "generate" and kept else "fallback"
            reason = f"{'; '.join(problems)}; attempts exhausted ({attempt}/{p.max_attempts}): {decision}"
        else:
            decision, reason = "rewrite", f"{'; '.join(problems)}; attempt {attempt}/{p.max_attempts}"
        if_last = "generate" if not problems or (p.on_exhausted == "generate" and kept) else "fallback"
        out: dict[str, Any] = {
            GRADE_IF_LAST: if_last,
            "evidence": kept, "graded": graded, "relevant_ratio": round(ratio, 4), "grade_decision": decision,
            "grade_reason": reason, "grade_method": self._method(failures),
            "reflection": None if not problems else self._reflection(question, attempt, reason, ratio, missing,
                                                                     order, relevant, texts, graded)}
        if error is not None:
            by_rule = sum(1 for g in graded if g["by"].startswith("rule (llm"))
            out["llm_fallback"] = {**fallback_record(self.name, attempt, error), "failed_calls": failures,
                                   "judged_by_rule": by_rule}
        return out

    def _rescue_atoms(self, question: str, chosen: list[int], texts: list[str], cosines: list[float],
                      candidates: list[Hit], graded: list[dict[str, Any]]) -> tuple[list[int], list[str]]:
        """For each atom the evidence lacks, add the best-cosine candidate of the pool that states it."""
        chosen = list(chosen)
        by_cosine = sorted(range(len(texts)), key=lambda i: (-cosines[i], candidates[i].id))
        still = []
        for atom in question_atoms(question, self.params.atom_kinds):
            if any(states(atom, texts[i]) for i in chosen):
                continue
            found = next((i for i in by_cosine if states(atom, texts[i])), None)
            if found is None:
                still.append(atom.text.strip())
                continue
            chosen.append(found)
            graded.append({"doc_id": candidates[found].doc_id, "id": candidates[found].id,
                           "cosine": round(cosines[found], 4), "coverage": None, "relevant": True, "by": "atom",
                           "reason": f"states '{atom.text.strip()}', which the question names"})
        return chosen, list(dict.fromkeys(still))

    def _cosines(self, question: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        q = self.embedder.encode_queries([question])[0]
        return [float(x) for x in self.embedder.encode_passages(texts) @ q]

    def _method(self, failures: int) -> str:
        if self.client is None:
            return "offline-rule"
        return "llm" if failures == 0 else "llm+offline-rule"

    def _reflection(self, question: str, attempt: int, reason: str, ratio: float, missing: list[str],
                    order: list[int], relevant: list[int], texts: list[str],
                    graded: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
        """Structured feedback for the next rewrite (see the module docstring); with verdicts an LLM gave,
        also ``text``: the LLM's own reasons (:func:`reflection_text`)."""
        n = self.params.feedback_terms
        best = (relevant or order)[:2]
        add = salient_terms([texts[i] for i in best], question, n + len(missing))
        add = [t for t in add if t not in missing][:n]
        rejected = [texts[i] for i in order if i not in relevant]
        kept_folded = fold(" ".join(texts[i] for i in best))
        exclude = [t for t in salient_terms(rejected, question, 3 * n) if fold(t) not in kept_folded][:n]
        out = {"source": self.name, "attempt": attempt, "reason": reason, "relevant_ratio": round(ratio, 4),
               "missing_terms": missing, "add_terms": add, "exclude_terms": exclude}
        text = reflection_text(graded)
        if text:  # only an LLM writes reasons in words: an offline grade's reflection is unchanged
            out["text"] = text
        return out

    def _ask(self, question: str, doc_id: str, text: str) -> tuple[bool, str]:
        """The LLM's verdict on one candidate; ``LLMError`` for a reply without a yes/no."""
        user = f"Question: {question}\n\nPassage [{doc_id}]:\n{text[:1500]}\n\nIs the passage relevant?"
        if self.client is None:
            raise LLMError("grade has no llm configured", kind="config")
        value, _ = self.client.chat_json(user, system=self.params.system_prompt, expect=dict, max_tokens=80)
        label = str(value.get("relevant", "")).strip().lower()
        if label not in _YES | _NO:
            raise LLMError(f"grade reply has no yes/no 'relevant': {str(value)[:120]}", kind="bad_label")
        return label in _YES, str(value.get("reason", ""))[:200]
