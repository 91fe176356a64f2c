"""Structured replies that state no value: a refusal in the shape of an answer.

What it is for: a system asked for JSON, a table or a form sometimes refuses by filling the shape
with nothing: ``{"answer": null, "reason": "..."}``, a fenced ````json```` object whose answer field
is ``""``, a markdown table whose every value cell is a dash or 待补充, ``【答案】——``. No refusal
wording is there to match; the structure says it. :func:`no_value` finds such a reply for
:func:`evalkit.text.abstention.detect_abstention`:

* a reply that is itself a slot with no value: punctuation only ("—", "……", "?": a system wrote it,
  and it states nothing) or a placeholder ("TBD", 待补充);
* a JSON object (bare or in a code fence) whose answer field (``answer``, ``result``, 答案 ...)
  holds no value;
* a reply that is only a markdown table (and blank lines) whose value cells, every cell outside
  the header row and the first column, all hold no value;
* a ``key: value`` or ``【key】value`` line whose key is an answer key and whose value holds none.

A slot holds no value when it is empty, null, an empty list or object, punctuation only ("—",
"/", "……"), or a placeholder of ``data/no_value_placeholders.txt`` ("N/A", "unknown", 待补充, 暂无).
A table with one filled value cell, or a form whose answer line says anything, is an answer.
"""
from __future__ import annotations

import json
import re
from typing import Any

from evalkit.text.wordlists import phrases

__all__ = ["ANSWER_KEYS", "no_value", "states_no_value"]

ANSWER_KEYS = ("answer", "final_answer", "response", "result", "答案", "回答", "结论", "答复")
_WORD = re.compile(r"[^\W_]")  # a letter, digit or CJK character
_FENCE = re.compile(r"^```[A-Za-z]*\s*\n(?P<body>.*?)\n?```\s*$", re.S)
_EDGES = " \t*_`'\"“”‘’.,;:!?。，；：！？"
_KEY_LINE = re.compile(r"^\s*(?:[-*]\s*)?(?:\*\*)?(?:【(?P<k1>[^】]{1,12})】|(?P<k2>[^:：\n]{1,24}?)(?:\*\*)?\s*[:：])"
                       r"\s*(?P<value>.*?)\s*$")


def states_no_value(value: Any) -> bool:
    """Whether one slot (a JSON value, a table cell, a form value) holds no value."""
    if value is None:
        return True
    if isinstance(value, (list, dict)):
        return not value
    if not isinstance(value, str):
        return False
    text = value.strip().strip(_EDGES).strip()
    return not _WORD.search(text) or text.lower() in _placeholders()


def _placeholders() -> frozenset[str]:
    return frozenset(p.lower() for p in phrases("no_value_placeholders"))


def _is_answer_key(key: str) -> bool:
    return key.strip().strip("*_ ").lower().replace(" ", "_") in ANSWER_KEYS


def _json_field(body: str) -> str | None:
    if not body.startswith("{"):
        return None
    try:
        reply = json.loads(body)
    except ValueError:
        return None
    if not isinstance(reply, dict):
        return None
    for key, value in reply.items():
        if _is_answer_key(str(key)) and states_no_value(value):
            return f'"{key}": {json.dumps(value, ensure_ascii=False)}'
    return None


def _empty_table(body: str) -> str | None:
    lines = [x.strip() for x in body.splitlines() if x.strip()]
    if len(lines) < 3 or not all(x.startswith("|") for x in lines):
        return None
    rows = [[c.strip() for c in x.strip("|").split("|")] for x in lines]
    if not all(set(c) <= set("-: ") for c in rows[1]):  # the separator row of a markdown table
        return None
    values = [c for row in rows[2:] for c in row[1:]]
    if values and all(states_no_value(c) for c in values):
        return lines[2]
    return None


def _empty_form_line(body: str) -> str | None:
    for line in body.splitlines():
        m = _KEY_LINE.match(line)
        if m and _is_answer_key(m.group("k1") or m.group("k2") or "") and states_no_value(m.group("value")):
            return line.strip()
    return None


def no_value(text: str) -> str | None:
    """The part of a structured reply that shows it states no value (see the module docstring), else None."""
    body = text.strip()
    if states_no_value(body):
        return body
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group("body").strip()
    return _json_field(body) or _empty_table(body) or _empty_form_line(body)
