"""The checks an LLM-generated question passes before it is kept (``evalkit evalset generate --llm``).

What they are for: a generator that is wrong half the time makes an eval set that
measures the generator. Each check is a small pure function (or a small class holding
what it compares against) that returns why an item fails, or ``None``:

| check | fails when | drop reason |
|---|---|---|
| :func:`support` | the offline judge finds a claim of the reference answer ``unsupported`` by the gold passages, or no claim ``supported`` (only ``supported`` counts as support) | ``unsupported``, ``not_supported``, ``judge_error`` |
| :func:`copies` | the question repeats a long run of a passage: the longest common substring is at least ``COPY_SHARE`` of the question (and ``COPY_MIN_CHARS`` characters) | ``copies_passage`` |
| :class:`Dedup` | the question is a near-duplicate of one kept before (or already in the set): embedding cosine >= ``EMBED_SIM`` with the configured embedder, else character 3-gram Jaccard >= ``LEXICAL_SIM`` | ``near_duplicate`` |
| :func:`answerable_somewhere` | a question meant to be unanswerable has a supporting passage: one of the BM25 top ``UNANSWERABLE_TOP_K`` passages makes the offline judge call a claim of its reference answer (the expected refusal) ``supported`` with none ``unsupported`` | ``answerable_in_corpus`` |
"""
from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

COPY_SHARE = 0.75
COPY_MIN_CHARS = 12
EMBED_SIM = 0.95
LEXICAL_SIM = 0.8
UNANSWERABLE_TOP_K = 5

Evidence = Sequence[tuple[str, str]]


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def support(judge: Any, question: str, answer: str, evidence: Evidence) -> tuple[str | None, str]:
    """(drop reason or None, a note) for a reference answer judged against its gold passages.

    Only the verdict ``supported`` counts as support; any ``unsupported`` claim fails; other
    verdicts (``not_checkable``, and any the judge adds later) neither support nor fail.
    """
    result = judge.judge(question, answer, list(evidence))
    if result.error is not None:
        return "judge_error", str(result.error)[:200]
    verdicts = [c.verdict for c in result.claims]
    note = f"{verdicts.count('supported')} supported, {verdicts.count('unsupported')} unsupported, " \
           f"{len(verdicts) - verdicts.count('supported') - verdicts.count('unsupported')} other"
    if "unsupported" in verdicts:
        return "unsupported", note
    if "supported" not in verdicts:
        return "not_supported", note
    return None, note


def longest_common_run(question: str, passage: str) -> int:
    """Characters of the longest run the question shares with the passage (after case and space folding)."""
    q, p = _norm(question), _norm(passage)
    m = difflib.SequenceMatcher(None, q, p, autojunk=False).find_longest_match(0, len(q), 0, len(p))
    return m.size


def copies(question: str, evidence: Evidence) -> tuple[str | None, float]:
    """(``copies_passage`` or None, the largest share of the question found as one run in a passage)."""
    length = max(1, len(_norm(question)))
    runs = [longest_common_run(question, text) for _, text in evidence]
    best = max(runs, default=0)
    share = round(best / length, 3)
    return ("copies_passage" if best >= COPY_MIN_CHARS and share >= COPY_SHARE else None), share


def trigrams(text: str) -> set[str]:
    """Character 3-grams of the folded text without spaces (works for Chinese and English alike)."""
    t = re.sub(r"\s+", "", _norm(text))
    return {t[i:i + 3] for i in range(max(1, len(t) - 2))}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


class Dedup:
    """Remembers kept questions and says whether a new one is a near-duplicate of one of them.

    ``embed`` (texts -> L2-normalised vectors, e.g. a ``CachedEmbedder.encode_queries``)
    makes it compare by cosine; without one it compares character 3-grams. ``method``
    says which, for the printed summary.
    """

    def __init__(self, embed: Callable[[list[str]], np.ndarray] | None = None, name: str = ""):
        self.embed = embed
        self.method = f"embedding {name} cosine >= {EMBED_SIM}" if embed else f"lexical 3-gram Jaccard >= {LEXICAL_SIM}"
        self._grams: list[set[str]] = []
        self._vecs: list[np.ndarray] = []

    def _vec(self, text: str) -> np.ndarray:
        return np.asarray(self.embed([text])[0], dtype=np.float32)  # type: ignore[misc]

    def similarity(self, question: str) -> float:
        """The highest similarity of ``question`` to a remembered one (0 when none)."""
        if self.embed is not None:
            if not self._vecs:
                return 0.0
            return float(np.max(np.vstack(self._vecs) @ self._vec(question)))
        grams = trigrams(question)
        return max((jaccard(grams, g) for g in self._grams), default=0.0)

    def is_duplicate(self, question: str) -> bool:
        limit = EMBED_SIM if self.embed is not None else LEXICAL_SIM
        return self.similarity(question) >= limit

    def add(self, question: str) -> None:
        if self.embed is not None:
            self._vecs.append(self._vec(question))
        else:
            self._grams.append(trigrams(question))


def answerable_somewhere(judge: Any, search: Callable[[str, int], list[tuple[str, str]]], question: str,
                         answers: Sequence[str]) -> str | None:
    """The id of a BM25 top passage that supports one of ``answers`` (no claim unsupported), or None."""
    for pid, text in search(question, UNANSWERABLE_TOP_K):
        for answer in answers:
            if not answer.strip():
                continue
            reason, _ = support(judge, question, answer, [(pid, text)])
            if reason is None:
                return pid
    return None
