"""Backend ``extractive``: no language model; the evidence sentences that best answer the question.

The baseline every generator must beat, and an offline generator that cannot
hallucinate. From ``request.question`` (else the last user message) and
``request.evidence`` ((doc id, text) pairs) it:

1. splits each passage into sentences (``evalkit.text.sentences``: Chinese ``。！？；`` and
   English ``. ! ?`` boundaries; ``3.5``, ``v1.2``, ``e.g.`` and list numbers like ``1.`` stay
   intact);
2. scores each sentence: cosine of multilingual e5 embeddings (question as query,
   sentence as passage; vectors cached in ``<cache root>/embeddings.sqlite``) plus
   ``LEXICAL_WEIGHT`` x the share of the question's terms (``Tokenizer("auto")``: jieba
   for Chinese, stemmed words and codes for English) found in the sentence;
3. answers with the ``top_n`` best (threshold-free; ties keep evidence order; a
   sentence repeated in two passages counts once), best first, each followed by its
   citation ``[doc-id]``.

No evidence gives exactly ``INSUFFICIENT_EVIDENCE``. JSON mode is refused: this
backend only quotes evidence.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from evalkit.cachestore import default_cache_root
from evalkit.llm.base import ChatRequest, ChatResponse, LLMError, LLMSpec
from evalkit.models.embedders import ModelSpec, embedder_identity
from evalkit.text.sentences import split_sentences
from evalkit.text.tokenize import Tokenizer

INSUFFICIENT_EVIDENCE = "根据现有资料无法回答。The knowledge base has no reliable evidence for this question."
LEXICAL_WEIGHT = 0.1
TOP_N = 2
VERSION = 2  # bump when splitting or scoring changes (part of the identity, so of the cache key)

def _embedder(cache_root: Path) -> Any:
    """The e5 embedder (weights loaded once per process) behind the embedding cache of ``cache_root``."""
    from evalkit.models.embedders import cached_embedder

    return cached_embedder(ModelSpec(name="e5"), cache_root)


class ExtractiveBackend:
    """Answers with the evidence sentences most similar to the question, each with its citation."""

    def __init__(self, spec: LLMSpec, cache_root: Path | None = None, top_n: int = TOP_N,
                 lexical_weight: float = LEXICAL_WEIGHT):
        self.spec, self.top_n, self.lexical_weight = spec, top_n, lexical_weight
        self.cache_root = Path(cache_root) if cache_root is not None else default_cache_root()
        self.tokenizer = Tokenizer("auto")
        self.identity = (f"{spec.identity()}|extractive/v{VERSION}|top_n={top_n}|lexical={lexical_weight}"
                         f"|e5={self._e5_identity()}|{self.tokenizer.identity}")

    @staticmethod
    def _e5_identity() -> str:
        return str(embedder_identity(ModelSpec(name="e5")))

    def _question(self, request: ChatRequest) -> str:
        if request.question.strip():
            return request.question.strip()
        users = [m.content for m in request.messages if m.role == "user"]
        return users[-1].strip() if users else ""

    def answer(self, question: str, evidence: tuple[tuple[str, str], ...]) -> str:
        """The extractive answer to ``question`` from ``evidence`` ((doc id, text) pairs)."""
        seen: set[str] = set()
        units: list[tuple[str, str]] = []  # (doc id, sentence) in evidence order
        for doc_id, text in evidence:
            for sentence in split_sentences(text):
                if sentence not in seen:
                    seen.add(sentence)
                    units.append((doc_id, sentence))
        if not units:
            return INSUFFICIENT_EVIDENCE
        emb = _embedder(self.cache_root)
        q = emb.encode_queries([question])[0]
        cosines = emb.encode_passages([s for _, s in units]) @ q
        q_terms = set(self.tokenizer(question))
        scores = []
        for (_, sentence), cos in zip(units, cosines):
            overlap = len(q_terms & set(self.tokenizer(sentence))) / len(q_terms) if q_terms else 0.0
            scores.append(float(cos) + self.lexical_weight * overlap)
        order = sorted(range(len(units)), key=lambda i: (-round(scores[i], 6), i))[: self.top_n]
        return "\n".join(f"{units[i][1]} [{units[i][0]}]" for i in order)

    def chat(self, request: ChatRequest) -> ChatResponse:
        """Answer from the request's structured question and evidence (the messages are not read)."""
        if request.json_mode:
            raise LLMError("the extractive backend answers in plain text (quoted evidence); JSON mode needs "
                           "a model backend: 'local' or 'openai'", kind="client_error")
        t0 = time.perf_counter()
        text = self.answer(self._question(request), request.evidence)
        return ChatResponse(text=text, latency_ms=(time.perf_counter() - t0) * 1000, finish_reason="stop")
