"""Conversations: when a question is a follow-up, and the offline rule that makes it standalone.

Used by ``query_rewrite`` (``history:`` parameters; the module docstring of
``evalkit.nodes.rewrite`` describes the behaviour). Kept apart so that the rule is one
small, testable piece.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from evalkit.graph.node import NodeParams


def fold(text: str) -> str:
    """Case-folded NFKC text with collapsed white space (how queries, terms and markers are compared)."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


STANDALONE_PROMPT = (
    "Rewrite the user's last question into one standalone question that can be understood without the "
    "conversation: resolve pronouns and ellipsis from the earlier turns, keep every name, code, number and date. "
    'Reply with JSON only: {"query": "<standalone question>", "sub_queries": []}'
)
FOLLOW_UP_MARKERS = ("那", "呢", "它", "这个", "那个", "这些", "那些", "还有", "同样", "what about", "how about",
                     "and for", "it", "its", "they", "them", "those", "that one", "same")


class HistoryRule(NodeParams):
    """How earlier turns of a conversation make a follow-up question standalone (module docstring)."""

    mode: Literal["follow_up", "always", "off"] = Field(
        default="follow_up", description="follow_up: rewrite questions with a follow-up marker; always: every "
        "question with history; off: ignore history")
    turns: int = Field(default=1, ge=1, description="earlier user turns put before the question (offline rule)")
    markers: list[str] = Field(default_factory=lambda: list(FOLLOW_UP_MARKERS),
                               description="a question containing one of these is a follow-up")


def is_follow_up(question: str, markers: Sequence[str]) -> bool:
    """Whether ``question`` contains a follow-up marker (Latin-script markers as whole words)."""
    q = fold(question)
    for marker in markers:
        m = fold(marker)
        if not m:
            continue
        if re.fullmatch(r"[a-z0-9' ]+", m):
            if re.search(rf"(?<![a-z0-9]){re.escape(m)}(?![a-z0-9])", q):
                return True
        elif m in q:
            return True
    return False


def standalone_offline(question: str, history: Sequence[Mapping[str, Any]], turns: int) -> str:
    """The offline standalone question: the last ``turns`` user turns, then ``question``, joined by spaces."""
    earlier = [str(t.get("content", "")).strip() for t in history if t.get("role") == "user"][-turns:]
    return " ".join([*(e for e in earlier if e), question.strip()])
