"""The ``llm`` judge: claim extraction and support verdicts by any configured LLM.

What it is for: relation-level checking the offline judge cannot do (a wrong name or
number that *is* in the evidence, an antonym instead of a negation), with whatever
model the user has: an OpenAI-compatible endpoint, or the local GGUF backend. Two
calls per answer, both through ``LLMClient(spec, cache_root, purpose="judge")``, so
the content-addressed cache makes re-judging free and the usage is accounted under
``judge``:

1. **Claims**: the LLM splits the answer into atomic, self-contained claims, in the
   answer's language (``{"claims": [...]}``). A reply that is unusable (no JSON after
   the client's corrective retry, no ``claims`` list, claims that are not in the
   answer -- a small model copying the few-shot example or the question --, claims
   that leave out half of the answer's words or any of its numbers) falls back to the answer's
   sentences (:func:`evalkit.text.claims.split_claims`); every verdict's reason then
   says so.
2. **Verdicts**: all claims of the answer in one prompt against the numbered evidence
   passages: ``{"verdicts": [{"claim", "verdict", "reason", "evidence_id"}]}`` with
   ``verdict`` in ``supported | unsupported | not_checkable``. A reply that does not
   give one valid verdict per claim (wrong count, unknown verdict word, or a ``claim``
   field about something else: the few-shot example copied) is asked again once with the problem spelled out
   (counted as a retry); still unusable -> ``JudgeResult(error=...)``: a failure is
   counted, never turned into a verdict.

``correctness`` (a third call, made by the runner for answered questions that have a
``reference_answer``) asks whether the answer states the reference's key facts; it feeds
the ``answer_correctness`` metric (``evalkit.metrics.answer``).

Prompts: instructions in English, answers in any language, two few-shot examples
(English and Chinese) per step. Deterministic: temperature 0 and the spec's seed on
every call. ``identity`` names the judge version, ``PROMPT_VERSION``, the LLM backend
identity and the sampling settings (the cache key and the tag on a run's results).
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalkit.judges.base import ClaimVerdict, JudgeResult, JudgeSetupError, Verdict
from evalkit.llm.base import LLMError, LLMSpec, Message
from evalkit.llm.client import LLMClient
from evalkit.llm.registry import require_model
from evalkit.llm.usage import Usage, record
from evalkit.text.claims import split_claims, strip_citations

__all__ = ["PROMPT_VERSION", "VERSION", "LLMJudge", "answer_coverage", "claims_grounded", "evidence_block",
           "make_llm_judge", "missing_numbers"]

VERSION = 1         # bump when the parsing / mapping of replies changes verdicts
PROMPT_VERSION = 1  # bump when a prompt's wording or examples change
MAX_EVIDENCE_CHARS = 6000  # all passages together, as shown to the judge
MIN_ANSWER_COVERAGE = 0.5  # LLM claims must restate at least this share of the answer's tokens
SCHEMA_FIX = ("Your previous reply could not be used: {problem}. Reply again with only the JSON object "
              "described above, nothing else.")

CLAIMS_SYSTEM = """You split an answer into atomic factual claims so each can be checked against evidence.
Rules:
- One claim = one checkable fact (a number, date, name, relation, negation). Split sentences that state several facts.
- Make every claim self-contained: replace pronouns with what they refer to (use the question for context).
- Keep the answer's language and wording: do NOT translate, do not add facts, do not correct the answer.
- Leave out greetings, courtesy and citation markers like [doc-1].
Reply with only a JSON object: {"claims": ["...", "..."]}

Example 1
Question: When was the Lisbon office opened and how many people work there?
Answer: It opened in March 2019 [hr-3]. About 120 people work there. Hope this helps!
{"claims": ["The Lisbon office opened in March 2019.", "About 120 people work in the Lisbon office."]}

Example 2
Question: 2022年冬奥会在哪里举办？
Answer: 2022年冬奥会在北京举办，共有91个代表团参加。
{"claims": ["2022年冬奥会在北京举办。", "2022年冬奥会共有91个代表团参加。"]}"""

VERDICTS_SYSTEM = """You check claims against numbered evidence passages. For each claim decide:
- "supported": the passages state it (same numbers, dates, names, polarity; paraphrase and unit formatting are fine).
- "unsupported": the passages contradict it, or it adds a fact (number, date, name, event) the passages do not state,
  or it swaps two things the passages keep apart (e.g. the right number for the wrong item).
- "not_checkable": the claim states nothing factual that could be checked (an opinion, courtesy, "yes").
Judge only from the passages, never from your own knowledge. Claims and passages may be in any language.
Reply with only a JSON object, one verdict per claim, in the order given:
{"verdicts": [{"claim": "...", "verdict": "supported|unsupported|not_checkable", "reason": "short reason", "evidence_id": "passage number or null"}]}

Example 1
Evidence:
[1] The Lisbon office opened in March 2019. It employs about 120 people.
Claims:
1. The Lisbon office opened in March 2019.
2. About 200 people work in the Lisbon office.
{"verdicts": [{"claim": "The Lisbon office opened in March 2019.", "verdict": "supported", "reason": "passage 1 gives March 2019", "evidence_id": "1"}, {"claim": "About 200 people work in the Lisbon office.", "verdict": "unsupported", "reason": "passage 1 says about 120 people, not 200", "evidence_id": "1"}]}

Example 2
Evidence:
[1] 2022年冬奥会于2月4日在北京开幕。
[2] 共有91个代表团参加了本届冬奥会。
Claims:
1. 2022年冬奥会在上海举办。
2. 2022年冬奥会共有91个代表团参加。
{"verdicts": [{"claim": "2022年冬奥会在上海举办。", "verdict": "unsupported", "reason": "passage 1 says Beijing (北京), not Shanghai", "evidence_id": "1"}, {"claim": "2022年冬奥会共有91个代表团参加。", "verdict": "supported", "reason": "passage 2 states 91 delegations", "evidence_id": "2"}]}"""

CORRECTNESS_SYSTEM = """You compare an answer with the reference answer to the same question.
Decide whether the answer is "correct": it states the reference's key facts (same numbers, dates, names,
polarity; other wording, units, formats, languages and extra detail are fine) and contradicts nothing in it.
Otherwise it is "incorrect" (a wrong or missing key fact, or a refusal when the reference has an answer).
Reply with only a JSON object: {"verdict": "correct|incorrect", "reason": "short reason"}

Example 1
Question: How many days of parental leave do employees get?
Reference: 10 days.
Answer: Employees can take ten days of parental leave [hr-1].
{"verdict": "correct", "reason": "ten days = 10 days"}

Example 2
Question: 单张电子发票报销上限是多少？
Reference: 5000元
Answer: 上限为3000元。
{"verdict": "incorrect", "reason": "the answer says 3000元, the reference 5000元"}"""

_CORRECTNESS_WORDS = {"correct": "correct", "true": "correct", "yes": "correct", "1": "correct",
                      "incorrect": "incorrect", "wrong": "incorrect", "false": "incorrect", "no": "incorrect",
                      "0": "incorrect"}

_VERDICT_WORDS: dict[str, Verdict] = {
    "supported": "supported", "support": "supported", "entailed": "supported", "true": "supported",
    "yes": "supported", "1": "supported",
    "unsupported": "unsupported", "not supported": "unsupported", "notsupported": "unsupported",
    "contradicted": "unsupported", "false": "unsupported", "no": "unsupported", "0": "unsupported",
    "not_checkable": "not_checkable", "not checkable": "not_checkable", "uncheckable": "not_checkable",
    "unverifiable": "not_checkable", "n/a": "not_checkable",
}
_TOKEN = re.compile(r"[\u3400-\u9fff]|[a-z0-9]+")


def _tokens(text: str) -> list[str]:
    """CJK characters and lower-cased words/numbers (for the claims-grounding check)."""
    return _TOKEN.findall(text.casefold().replace(",", ""))


def claims_grounded(claims: Sequence[str], answer: str, question: str, min_share: float = 0.6) -> list[str]:
    """The claims whose tokens come mostly (``min_share``) from the answer and question.

    Claims are rephrasings, so this is loose; it catches a model that returns the few-shot
    example's claims or invents facts while "extracting".
    """
    pool = set(_tokens(answer)) | set(_tokens(question))
    q_norm = "".join(_tokens(question))
    out = []
    for c in claims:
        toks = _tokens(c)
        if not toks or c.rstrip().endswith(("?", "？")) or "".join(toks) == q_norm:
            continue  # the question repeated is not a claim of the answer
        if sum(t in pool for t in toks) / len(toks) >= min_share:
            out.append(c)
    return out


def answer_coverage(claims: Sequence[str], answer: str) -> float:
    """Share of the answer's tokens (citation markers removed) that appear in the claims: a model
    that silently drops a sentence (often the unsupported one) shows up here."""
    toks = _tokens(strip_citations(answer))
    pool = set(_tokens(" ".join(claims)))
    return sum(t in pool for t in toks) / len(toks) if toks else 1.0


def missing_numbers(claims: Sequence[str], answer: str) -> list[str]:
    """Numbers of the answer (citation markers removed) that no claim repeats."""
    pool = set(_tokens(" ".join(claims)))
    nums = [t for t in _tokens(strip_citations(answer)) if t.isdigit()]
    return sorted({n for n in nums if n not in pool}, key=nums.index)


def evidence_block(evidence: Sequence[tuple[str, str]], max_chars: int = MAX_EVIDENCE_CHARS) -> tuple[str, bool]:
    """Numbered passages ``[1] text``, all together at most ``max_chars`` (shared evenly); and
    whether anything was cut."""
    if not evidence:
        return "", False
    per = max(100, max_chars // len(evidence))
    cut = False
    lines = []
    for i, (_, text) in enumerate(evidence, 1):
        body = " ".join(str(text).split())
        if len(body) > per:
            body, cut = body[:per] + "...", True
        lines.append(f"[{i}] {body}")
    return "\n".join(lines), cut


class LLMJudge:
    """Claims + verdicts from a configured LLM (see the module docstring)."""

    def __init__(self, llm: LLMSpec | Mapping[str, Any] | None = None, cache_root: str | Path | None = None, *,
                 max_evidence_chars: int = MAX_EVIDENCE_CHARS, client: LLMClient | None = None):
        spec = _spec(llm, "llm")
        self.client = client or LLMClient(spec, Path(cache_root) if cache_root else None, purpose="judge")
        self.spec, self.max_evidence_chars = spec, max_evidence_chars
        self.identity = (f"llm/v{VERSION}:prompt=v{PROMPT_VERSION}:[{self.client.identity}]"
                         f":max_tokens={spec.max_tokens}:seed={spec.seed}:t=0:evidence_chars={max_evidence_chars}")

    # -- the two steps ------------------------------------------------------------------------
    def extract_claims(self, question: str, answer: str) -> tuple[list[str], str | None]:
        """The answer's claims and, when they came from the sentence-splitter fallback, why.

        Raises ``LLMError`` for failures that are not about the reply's content (HTTP,
        timeouts, a cache miss in replay-only mode).
        """
        user = f"Question: {question}\nAnswer: {answer}"
        try:
            value, _ = self.client.chat_json(user, system=CLAIMS_SYSTEM, temperature=0.0, expect=dict)
        except LLMError as e:
            if e.kind != "bad_json":
                raise
            return split_claims(answer), f"LLM claim list unusable ({_short(str(e))})"
        raw = value.get("claims")
        if not isinstance(raw, list):
            return split_claims(answer), "LLM reply has no 'claims' list"
        claims = [_claim_text(c) for c in raw]
        claims = [c for c in claims if c]
        if not claims:
            return split_claims(answer), "LLM returned no claims"
        kept = claims_grounded(claims, answer, question)
        if len(kept) < len(claims):
            return split_claims(answer), f"{len(claims) - len(kept)} of {len(claims)} LLM claims are not in the answer"
        covered = answer_coverage(kept, answer)
        if covered < MIN_ANSWER_COVERAGE:
            return split_claims(answer), f"LLM claims cover only {covered:.0%} of the answer's words"
        lost = missing_numbers(kept, answer)
        if lost:
            return split_claims(answer), f"LLM claims leave out the answer's number(s) {', '.join(lost[:3])}"
        return kept, None

    def verdicts(self, question: str, claims: Sequence[str],
                 evidence: Sequence[tuple[str, str]]) -> tuple[list[ClaimVerdict], bool]:
        """One verdict per claim (and whether the evidence was cut to fit); ``LLMError`` when the
        LLM fails or its reply stays unusable after one corrective retry."""
        block, cut = evidence_block(evidence, self.max_evidence_chars)
        numbered = "\n".join(f"{i}. {c}" for i, c in enumerate(claims, 1))
        user = f"Question: {question}\nEvidence:\n{block}\nClaims:\n{numbered}"
        messages: list[Message] = [Message("user", user)]
        value, reply = self.client.chat_json(messages, system=VERDICTS_SYSTEM, temperature=0.0, expect=dict)
        try:
            return self._map(value, claims, evidence), cut
        except ValueError as problem:
            messages += [Message("assistant", reply.text), Message("user", SCHEMA_FIX.format(problem=problem))]
            record(self.client.purpose, Usage(retries=1))
            value, _ = self.client.chat_json(messages, system=VERDICTS_SYSTEM, temperature=0.0, expect=dict)
            try:
                return self._map(value, claims, evidence), cut
            except ValueError as again:
                record(self.client.purpose, Usage(failures=1))
                raise LLMError(f"unusable verdicts after 1 corrective retry: {again}", kind="bad_schema") from None

    @staticmethod
    def _map(value: dict[str, Any], claims: Sequence[str], evidence: Sequence[tuple[str, str]]) -> list[ClaimVerdict]:
        """Verdict objects -> ``ClaimVerdict`` per claim, in claim order; ``ValueError`` says what is wrong."""
        raw = value.get("verdicts")
        if not isinstance(raw, list) or not all(isinstance(v, Mapping) for v in raw):
            raise ValueError("it has no 'verdicts' list of objects")
        if len(raw) != len(claims):
            by_text = {_norm(str(v.get("claim", ""))): v for v in raw}
            if not all(_norm(c) in by_text for c in claims):
                raise ValueError(f"it gives {len(raw)} verdicts for {len(claims)} claims")
            raw = [by_text[_norm(c)] for c in claims]
        ids = [str(pid) for pid, _ in evidence]
        out = []
        for i, (claim, v) in enumerate(zip(claims, raw), 1):
            echoed = str(v.get("claim") or "")
            if echoed.strip() and not _same_claim(echoed, claim):
                raise ValueError(f"verdict {i} is about {_short(echoed, 60)!r}, not claim {i} {_short(claim, 60)!r}")
            word = _VERDICT_WORDS.get(str(v.get("verdict", "")).strip().lower().replace("-", "_"))
            word = word or _VERDICT_WORDS.get(str(v.get("verdict", "")).strip().lower().replace("_", " "))
            if word is None:
                raise ValueError(f"verdict {i} is {v.get('verdict')!r}, not one of supported, unsupported, "
                                 "not_checkable")
            reason = " ".join(str(v.get("reason") or "").split()) or "no reason given"
            eid = _evidence_id(v.get("evidence_id"), ids) if word == "supported" else None
            out.append(ClaimVerdict(claim, word, reason, eid))
        return out

    def correctness(self, question: str, answer: str, reference: str) -> dict[str, Any]:
        """Whether ``answer`` states the key facts of ``reference``: ``{"verdict": "correct" |
        "incorrect" | None, "reason": ...}``; None (with the reason) when the LLM failed or its
        reply stayed unusable: a failure is never read as a verdict."""
        user = f"Question: {question}\nReference: {reference}\nAnswer: {answer}"
        try:
            value, _ = self.client.chat_json(user, system=CORRECTNESS_SYSTEM, temperature=0.0, expect=dict)
        except LLMError as e:
            return {"verdict": None, "reason": f"llm judge: {e.kind}: {_short(str(e), 300)}"}
        word = _CORRECTNESS_WORDS.get(str(value.get("verdict", "")).strip().lower())
        if word is None:
            record(self.client.purpose, Usage(failures=1))
            return {"verdict": None, "reason": f"llm judge: bad_schema: verdict {value.get('verdict')!r} is not "
                                               "correct or incorrect"}
        return {"verdict": word, "reason": " ".join(str(value.get("reason") or "").split()) or "no reason given"}

    # -- the Judge interface -----------------------------------------------------------------
    def judge(self, question: str, answer: str, evidence: Sequence[tuple[str, str]]) -> JudgeResult:
        """Judge ``answer`` against ``evidence`` = [(passage id, text), ...]; failures -> ``error``."""
        if not answer.strip():
            return JudgeResult([])
        try:
            claims, fallback = self.extract_claims(question, answer)
            if not claims:
                return JudgeResult([])
            if not evidence:
                out = [ClaimVerdict(c, "unsupported", "no evidence passages were given") for c in claims]
                cut = False
            else:
                out, cut = self.verdicts(question, claims, evidence)
        except LLMError as e:
            return JudgeResult(error=f"llm judge: {e.kind}: {_short(str(e), 300)}")
        notes = ([f"claims split by sentence: {fallback}"] if fallback else []) + (
            [f"evidence cut to {self.max_evidence_chars} characters"] if cut else [])
        if notes:
            out = [ClaimVerdict(c.claim, c.verdict, f"{c.reason} ({'; '.join(notes)})", c.evidence_id) for c in out]
        return JudgeResult(out)


def _spec(llm: LLMSpec | Mapping[str, Any] | None, judge: str) -> LLMSpec:
    """The LLMSpec a judge was configured with; a clear error when there is none or it cannot judge."""
    if llm is None:
        raise JudgeSetupError(f"judge '{judge}' needs an LLM: pass --judge-llm FILE.yaml (an LLM spec such as "
                         "{backend: openai, base_url: ..., model: ...} or {backend: local}), or "
                         f"judge_options: {{llm: {{...}}}} in a self_check node")
    spec = llm if isinstance(llm, LLMSpec) else LLMSpec(**dict(llm))

    if problem := require_model(spec.backend, f"judge '{judge}'"):
        raise JudgeSetupError(problem)
    return spec


def _claim_text(item: Any) -> str:
    if isinstance(item, Mapping):
        item = item.get("claim") or item.get("text") or item.get("statement") or ""
    return " ".join(str(item).split()) if isinstance(item, (str, int, float)) else ""


def _norm(text: str) -> str:
    return "".join(_tokens(text))


def _same_claim(echoed: str, claim: str, min_share: float = 0.5) -> bool:
    """Whether a verdict's ``claim`` field restates ``claim`` (a model may trim or re-punctuate
    it; one that copies the prompt's example claims does not pass)."""
    a, b = _tokens(echoed), set(_tokens(claim))
    return bool(a) and sum(t in b for t in a) / len(a) >= min_share


def _evidence_id(raw: Any, ids: list[str]) -> str | None:
    """A passage number (``1``, ``"[2]"``) or id from the reply -> the passage id; None otherwise."""
    if raw is None:
        return None
    text = str(raw).strip().strip("[]【】").strip()
    if text in ids:
        return text
    m = re.fullmatch(r"(?:passage\s*)?(\d{1,3})", text, re.IGNORECASE)
    if m and 1 <= int(m.group(1)) <= len(ids):
        return ids[int(m.group(1)) - 1]
    return None


def _short(text: str, n: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n] + "..."


def make_llm_judge(cache_root: str | Path | None = None, llm: LLMSpec | Mapping[str, Any] | None = None,
                   **options: Any) -> LLMJudge:
    """Factory registered as ``llm`` in :data:`evalkit.judges.JUDGES`."""
    return LLMJudge(llm, cache_root, **options)

