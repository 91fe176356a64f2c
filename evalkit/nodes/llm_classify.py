"""Classifying a question into one of a fixed set of labels with an LLM, few-shot, as JSON.

Used by the ``agent_scheduler`` for the questions its rules do not match. The prompt lists
each label with what it is for, then the configured routing examples (question and the
label it should get), then the question; the model replies ``{"<key>": "<label>",
"reason": "..."}``. A reply whose label is not one of the labels (compared after
stripping and case-folding) raises :class:`evalkit.llm.base.LLMError` with kind
``unknown_label``; a reply without a label string raises it with kind ``bad_json``. The
caller degrades the query to its default and records the failure in ``llm_fallback``.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from evalkit.graph.node import NodeParams
from evalkit.llm.base import LLMError


class LabelExample(NodeParams):
    """A question and the label it should get: a few-shot example in the classification prompt."""

    question: str = Field(min_length=1, description="an example question, in the users' own words")
    label: str = Field(min_length=1, description="the label this question should get")


def classification_prompt(question: str, labels: Mapping[str, str], examples: Sequence[LabelExample],
                          key: str) -> str:
    """The user message: labels with descriptions, examples as question -> JSON reply, the question."""
    listing = "\n".join(f"- {label}: {what}" if what else f"- {label}" for label, what in labels.items())
    shots = "".join(f"Question: {ex.question}\nReply: {json.dumps({key: ex.label}, ensure_ascii=False)}\n\n"
                    for ex in examples)
    intro = "Examples:\n" + shots if shots else ""
    return f"Labels:\n{listing}\n\n{intro}Question: {question}\nReply:"


def llm_label(client: Any, question: str, labels: Mapping[str, str], examples: Sequence[LabelExample],
              system: str, key: str = "class", max_tokens: int = 80) -> tuple[str, str]:
    """(label, reason) from the LLM; ``LLMError`` when it fails, gives no label, or an unknown one.

    The reply is capped at ``max_tokens`` or the spec's ``max_tokens``, whichever is smaller (a label and a
    short reason need few tokens; a model that rambles is cut and its truncated JSON is a ``bad_json``)."""
    cap = min(max_tokens, int(getattr(getattr(client, "spec", None), "max_tokens", max_tokens)))
    value, _ = client.chat_json(classification_prompt(question, labels, examples, key), system=system,
                                expect=dict, max_tokens=cap)
    raw = value.get(key)
    if not isinstance(raw, str) or not raw.strip():
        raise LLMError(f"classifier reply has no '{key}' string: {str(value)[:120]}", kind="bad_json")
    folded = {label.casefold(): label for label in labels}
    label = folded.get(raw.strip().casefold())
    if label is None:
        raise LLMError(f"llm chose '{raw.strip()[:60]}', not one of {sorted(labels)}", kind="unknown_label")
    return label, str(value.get("reason", ""))[:200]
