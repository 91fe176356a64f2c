"""What the reflection loop's retries read besides terms: an LLM grade's free text, the self-check's
conservative strategy.

``grade`` with an ``llm`` adds ``text`` to its ``reflection`` (the LLM's reasons, one line per candidate it
judged); ``query_rewrite`` shows that text to its own LLM and, offline, searches the names and codes it
gives for the candidates it found relevant (:func:`text_terms`). ``self_check`` with ``retry_rewrite:
conservative`` marks its reflection ``strategy: conservative``; ``query_rewrite`` then retries with only the
question's most certain terms (:func:`conservative_query`).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from evalkit.nodes.conversation import fold
from evalkit.nodes.question_atoms import question_atoms
from evalkit.text.lexicon import content_terms
from evalkit.text.values import extract_atoms


def feedback_query(question: str, feedback: Mapping[str, Any], used: str, n_terms: int) -> tuple[str, list[str]]:
    """The offline retry query: question + missing terms + up to ``n_terms`` feedback terms not used before.

    ``used`` is the folded text of every earlier query: a term found in it is not new.
    Missing terms already in the question are repeated (BM25 counts a query term twice).
    Returns the query and the new feedback terms it added.
    """
    q = fold(question)
    terms: list[str] = []
    for t in feedback.get("missing_terms") or []:
        if isinstance(t, str) and t.strip() and t not in terms:
            terms.append(t)
    fresh = [t for t in feedback.get("add_terms") or []
             if isinstance(t, str) and t.strip() and fold(t) not in q and fold(t) not in used and t not in terms]
    terms += fresh[:n_terms]
    extra = [t for t in terms if fold(t) not in q] + [t for t in terms if fold(t) in q]
    return (f"{question} {' '.join(extra)}".strip() if extra else question), fresh[:n_terms]


def text_terms(text: str, used: str, limit: int) -> list[str]:
    """Names and codes an LLM grade's free-text reflection gives for the candidates it found relevant
    (its ``[doc-id] relevant: ...`` lines), that ``used`` (the folded text of the queries so far) lacks,
    in order of appearance, at most ``limit``. Reasons for rejected candidates name the wrong sense and
    are not searched (BM25 and a bi-encoder cannot exclude a term)."""
    seen = fold(used)
    out: list[str] = []
    for line in text.splitlines():
        _, sep, reason = line.partition("] relevant:")
        if not sep:
            continue
        for a in extract_atoms(reason):
            term = " ".join(a.text.split())
            if a.kind in ("code", "entity") and len(term) > 1 and fold(term) not in seen and term not in out:
                out.append(term)
    return out[:limit]


CONSERVATIVE = "conservative"
"""The ``strategy`` value of a reflection that asks for a conservative retry (``self_check``'s
``retry_rewrite: conservative``)."""


def conservative_query(question: str) -> tuple[str, list[str]]:
    """The conservative retry query and its terms: only what the user wrote that carries meaning.

    The question's codes, names, dates and numbers (``evalkit.nodes.question_atoms.question_atoms``), then its
    content words as written (stop words dropped; an English word whose stem is a content term), in
    the question's order, each once. Nothing is added: no dictionary expansion, no LLM wording, no
    feedback term, no sub-query; an earlier attempt's additions may be what led the answer astray.
    A question with no such term gives the question itself.
    """
    terms = [" ".join(a.text.split()) for a in question_atoms(question, ("code", "entity", "date", "number"))]
    folded = question.casefold()
    for t in content_terms(question):
        m = re.search(rf"\b{re.escape(t)}\w*", question, re.IGNORECASE) if t.isascii() else None
        if m is not None:  # an English term or stem ("make"): the question's whole word ("makes")
            word = m.group(0)
        elif t in folded:  # a Chinese word as jieba cut it
            word = t
        else:
            continue
        if not any(fold(word) in fold(k) for k in terms):
            terms.append(word)
    terms = list(dict.fromkeys(terms))
    return (" ".join(terms) if terms else question), terms
