"""The ``ragas`` judge: ragas 0.4 ``Faithfulness`` driven by our configured LLM.

What it is for: the ragas faithfulness number users know, computed with the same LLM,
cache and accounting as everything else in evalkit, and turned into claim verdicts so
it fits the judge interface and the answer metrics.

How: ``ragas.metrics.collections.Faithfulness`` (the ragas 0.4 API; ``ragas.evaluate()``
rejects these metric objects, so the metric is called directly) runs two structured
LLM calls per answer: it splits the answer into statements
(``StatementGeneratorOutput``), then gives each statement an NLI verdict 0/1 with a
reason (``NLIStatementOutput``) against the joined contexts; its score is the share of
verdicts that are 1. Its LLM is :class:`ClientRagasLLM`, an ``InstructorBaseRagasLLM``
that sends ragas' prompt through ``LLMClient.chat_json`` (cache, usage under
``purpose="judge"``, HTTP retries, the client's corrective retry for bad JSON) and
validates the reply into ragas' pydantic ``response_model`` (one more corrective retry,
with the validation error, when it does not fit). The adapter keeps every validated
output, so the judge recovers ragas' own statements and verdicts:

- verdict 1 -> ``supported``, 0 -> ``unsupported`` (as ragas counts: any non-zero is
  faithful), with ragas' reason; the supported share equals ragas' score;
- a statement ragas generated but gave no verdict -> ``not_checkable`` (ragas leaves it
  out of its score too);
- no statements at all (ragas' score is NaN) -> the answer's sentences, ``not_checkable``;
- anything that raises (LLM error, reply unusable after the retries) ->
  ``JudgeResult(error=...)``, never a verdict; so is a reply that copies the statements
  of ragas' own few-shot examples (a small model does: ragas would score them).

ragas has no "not checkable" verdict and no passage attribution (it joins the contexts),
so ``evidence_id`` is always ``None``. ragas' prompts are English with English examples;
Chinese answers are judged with them as they are. ``ascore`` is async: each call runs on
a private event loop (``asyncio.run``), or, when the calling thread already runs a loop,
on a helper thread with its own loop; worker threads are fine. ``RAGAS_DO_NOT_TRACK`` is
set to ``true`` before ragas is imported (no telemetry).
"""
from __future__ import annotations

import asyncio
import contextvars
import math
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

os.environ["RAGAS_DO_NOT_TRACK"] = "true"  # before ragas is imported: no telemetry

import ragas
from pydantic import BaseModel, ValidationError
from ragas.llms.base import InstructorBaseRagasLLM
from ragas.metrics.collections import Faithfulness
from ragas.metrics.collections.faithfulness.util import (
    NLIStatementOutput,
    NLIStatementPrompt,
    StatementGeneratorOutput,
    StatementGeneratorPrompt,
)

from evalkit.judges.base import ClaimVerdict, JudgeResult, Verdict
from evalkit.judges.llm import MAX_EVIDENCE_CHARS, SCHEMA_FIX, _norm, _short, _spec
from evalkit.llm.base import LLMError, LLMSpec, Message
from evalkit.llm.client import LLMClient
from evalkit.llm.usage import Usage, record
from evalkit.text.claims import split_claims

__all__ = ["VERSION", "ClientRagasLLM", "RagasJudge", "make_ragas_judge", "run_sync"]

VERSION = 1  # bump when the mapping of ragas' outputs to verdicts changes
M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


def run_sync(factory: Callable[[], Awaitable[T]]) -> T:
    """Run the coroutine ``factory()`` makes to completion from synchronous code.

    No loop running in this thread (the usual case, also in worker threads): a private
    loop via ``asyncio.run``. A loop already running here (called from async code): the
    coroutine runs on a helper thread with its own loop, in a copy of this context (so
    LLM usage still lands in the caller's ``usage_scope``), and this thread waits.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())  # type: ignore[arg-type]
    ctx = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalkit-ragas") as pool:
        return pool.submit(ctx.run, lambda: asyncio.run(factory())).result()  # type: ignore[arg-type]


def _validate(model: type[M], value: Any) -> M:
    """``value`` as ``model``; a one-field model also accepts a one-key object under another key."""
    try:
        return model.model_validate(value)
    except ValidationError:
        fields = list(model.model_fields)
        if len(fields) == 1 and isinstance(value, Mapping) and len(value) == 1:
            return model.model_validate({fields[0]: next(iter(value.values()))})
        raise


class ClientRagasLLM(InstructorBaseRagasLLM):
    """ragas' structured LLM calls through an evalkit ``LLMClient`` (cache, accounting, retries).

    ``outputs`` keeps every validated reply, in call order: how the judge reads ragas'
    intermediate statements and verdicts. Use one instance per judged answer.
    """

    def __init__(self, client: LLMClient):
        self.client = client
        self.outputs: list[BaseModel] = []

    def generate(self, prompt: str, response_model: type[M]) -> M:
        """Send ``prompt``; return the reply validated into ``response_model`` (``LLMError`` if it never fits)."""
        messages = [Message("user", prompt)]
        value, reply = self.client.chat_json(messages, temperature=0.0, expect=dict)
        try:
            out = _validate(response_model, value)
        except ValidationError as e:
            problem = f"it does not match the schema ({_errors(e)})"
            messages += [Message("assistant", reply.text), Message("user", SCHEMA_FIX.format(problem=problem))]
            record(self.client.purpose, Usage(retries=1))
            value, _ = self.client.chat_json(messages, temperature=0.0, expect=dict)
            try:
                out = _validate(response_model, value)
            except ValidationError as again:
                record(self.client.purpose, Usage(failures=1))
                raise LLMError(f"reply does not fit ragas' {response_model.__name__} after 1 corrective retry: "
                               f"{_errors(again)}", kind="bad_schema") from None
        self.outputs.append(out)
        return out

    async def agenerate(self, prompt: str, response_model: type[M]) -> M:
        """``generate`` on a worker thread (the client is synchronous); contextvars are carried over."""
        return await asyncio.to_thread(self.generate, prompt, response_model)


def _example_statements() -> frozenset[str]:
    """The statements of ragas' own few-shot examples (normalised): a model that copies them
    back has not judged the answer."""
    out: set[str] = set()
    for _, generated in StatementGeneratorPrompt.examples:
        out.update(_norm(x) for x in generated.statements)
    for given, judged in NLIStatementPrompt.examples:
        out.update(_norm(x) for x in given.statements)
        out.update(_norm(x.statement) for x in judged.statements)
    return frozenset(out)


EXAMPLE_STATEMENTS = _example_statements()


def _errors(e: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, err['loc'])) or 'value'}: {err['msg']}" for err in e.errors()[:3])


class RagasJudge:
    """ragas ``Faithfulness`` as a claim judge (see the module docstring)."""

    def __init__(self, llm: LLMSpec | Mapping[str, Any] | None = None, cache_root: str | Path | None = None, *,
                 max_evidence_chars: int = MAX_EVIDENCE_CHARS, client: LLMClient | None = None):
        spec = _spec(llm, "ragas")
        self.client = client or LLMClient(spec, Path(cache_root) if cache_root else None, purpose="judge")
        self.spec, self.max_evidence_chars = spec, max_evidence_chars
        self.identity = (f"ragas/v{VERSION}:ragas=={ragas.__version__}:Faithfulness:[{self.client.identity}]"
                         f":max_tokens={spec.max_tokens}:seed={spec.seed}:t=0:evidence_chars={max_evidence_chars}")

    def contexts(self, evidence: Sequence[tuple[str, str]]) -> list[str]:
        """The passages as ragas contexts, together at most ``max_evidence_chars``."""
        per = max(100, self.max_evidence_chars // max(1, len(evidence)))
        out = []
        for _, text in evidence:
            body = " ".join(str(text).split())
            out.append(body if len(body) <= per else body[:per] + "...")
        return out

    def judge(self, question: str, answer: str, evidence: Sequence[tuple[str, str]]) -> JudgeResult:
        """ragas' statements and verdicts for ``answer``; failures -> ``JudgeResult(error=...)``."""
        if not answer.strip():
            return JudgeResult([])
        if not evidence:
            return JudgeResult([ClaimVerdict(c, "unsupported", "no evidence passages were given")
                                for c in split_claims(answer)])
        llm = ClientRagasLLM(self.client)
        metric = Faithfulness(llm=llm)
        contexts = self.contexts(evidence)
        try:
            result = run_sync(lambda: metric.ascore(user_input=question.strip() or answer, response=answer,
                                                    retrieved_contexts=contexts))
        except LLMError as e:
            return JudgeResult(error=f"ragas judge: {e.kind}: {_short(str(e), 300)}")
        except Exception as e:  # noqa: BLE001 - ragas' own checks (ValueError...) must not crash a query
            return JudgeResult(error=f"ragas judge: {type(e).__name__}: {_short(str(e), 300)}")
        return self.to_result(llm.outputs, float(result.value), answer)

    @staticmethod
    def to_result(outputs: Sequence[BaseModel], score: float, answer: str) -> JudgeResult:
        """ragas' captured statements and verdicts -> claim verdicts (module docstring)."""
        gen = next((o for o in outputs if isinstance(o, StatementGeneratorOutput)), None)
        nli = next((o for o in outputs if isinstance(o, NLIStatementOutput)), None)
        statements = list(gen.statements) if gen else []
        copied = [x for x in statements + [v.statement for v in (nli.statements if nli else [])]
                  if _norm(x) in EXAMPLE_STATEMENTS and _norm(x) not in _norm(answer)]
        if copied:  # ragas would score these; they say nothing about this answer
            return JudgeResult(error=f"ragas judge: bad_output: the LLM copied ragas' prompt example "
                                     f"({_short(copied[0], 80)!r}) instead of judging the answer")
        if not statements or nli is None:
            return JudgeResult([ClaimVerdict(c, "not_checkable", "ragas extracted no statements from the answer "
                                             "(its faithfulness is undefined)") for c in split_claims(answer)])
        tag = "ragas faithfulness " + ("NaN" if math.isnan(score) else f"{score:.2f}")
        same_order = len(nli.statements) == len(statements)
        out = []
        for i, v in enumerate(nli.statements):
            claim = statements[i] if same_order else v.statement
            verdict: Verdict = "supported" if v.verdict else "unsupported"
            reason = " ".join(str(v.reason).split()) or "no reason given"
            out.append(ClaimVerdict(claim, verdict, f"{reason} ({tag})"))
        if len(nli.statements) < len(statements):
            judged = {" ".join(v.statement.split()) for v in nli.statements}
            out += [ClaimVerdict(s, "not_checkable", f"ragas gave no verdict for this statement ({tag}; "
                                 "not counted in its score)")
                    for s in statements if " ".join(s.split()) not in judged]
        return JudgeResult(out)


def make_ragas_judge(cache_root: str | Path | None = None, llm: LLMSpec | Mapping[str, Any] | None = None,
                     **options: Any) -> RagasJudge:
    """Factory registered as ``ragas`` in :data:`evalkit.judges.JUDGES`."""
    return RagasJudge(llm, cache_root, **options)
