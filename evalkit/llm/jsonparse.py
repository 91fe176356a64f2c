"""Getting JSON out of what a language model wrote.

Models asked for JSON answer with plain JSON, with a ```json fenced block, with JSON
inside chatty text ("Sure! Here it is: {...} Hope this helps"), with trailing commas,
with Python-style single quotes and ``True``/``None``. ``parse_json`` accepts all of
these, in this order:

1. the whole text is JSON (any JSON value);
2. each fenced block (```json or plain ```), whole or repaired;
3. the first balanced object or array in the text that parses after repair.

Repair is conservative: trailing commas before ``}``/``]`` are dropped; a single-quoted
string is read only where a JSON string may start (after ``{ [ , :``) and ends at the
quote followed by ``: , } ]``, so apostrophes inside it (``'it's'``) survive; bare
``True``/``False``/``None`` become ``true``/``false``/``null``. Anything else fails with
``LLMError(kind="bad_json")`` saying what was wrong (nothing found, or truncated).
"""
from __future__ import annotations

import json
import re
from typing import Any

from evalkit.llm.base import LLMError

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5|javascript|js)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}
_CLOSE = {"}": "{", "]": "["}
MAX_STARTS = 64  # opening brackets tried per text: bounds the work on long chatty outputs


def _double_quoted_end(text: str, i: int) -> int:
    """Index just past the double-quoted string starting at ``text[i]``; -1 if it never ends."""
    j = i + 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == '"':
            return j + 1
        j += 1
    return -1


def _single_quoted(text: str, i: int) -> tuple[int, str] | None:
    """Read the single-quoted string at ``text[i]``; return (end index, JSON double-quoted form)."""
    out: list[str] = []
    j = i + 1
    while j < len(text):
        ch = text[j]
        if ch == "\\" and j + 1 < len(text):
            out.append("'" if text[j + 1] == "'" else ch + text[j + 1])
            j += 2
            continue
        if ch == "'":
            k = j + 1
            while k < len(text) and text[k] in " \t\r\n":
                k += 1
            if k >= len(text) or text[k] in ":,}]":
                return j + 1, '"' + "".join(out) + '"'
            out.append("'")  # an apostrophe inside the string
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        else:
            out.append(ch)
        j += 1
    return None


def _scan(text: str, start: int) -> tuple[int, str] | None:
    """The balanced object/array starting at ``text[start]``, repaired.

    Returns (end index, repaired text); end is -1 when the text ends before the value
    closes (a truncated answer). Mismatched brackets give ``None``.
    """
    out: list[str] = []
    stack: list[str] = []
    prev = ""  # last significant character emitted outside strings
    comma_at = -1  # position in ``out`` of the last comma, while it is the last significant char
    i = start
    while i < len(text):
        c = text[i]
        if c == '"':
            end = _double_quoted_end(text, i)
            if end < 0:
                return -1, ""
            out.append(text[i:end])
            prev, i = '"', end
            continue
        if c == "'" and prev in ("{", "[", ",", ":"):
            got = _single_quoted(text, i)
            if got is None:
                return -1, ""
            i, quoted = got
            out.append(quoted)
            prev = '"'
            continue
        if c in "{[":
            stack.append(c)
        elif c in "}]":
            if not stack or stack[-1] != _CLOSE[c]:
                return None
            stack.pop()
            if prev == ",":
                out[comma_at] = ""  # trailing comma
        elif c.isalpha() or c == "_":
            word = _WORD.match(text, i)
            if word:
                out.append(_PY_LITERALS.get(word.group(0), word.group(0)))
                prev, i = "w", word.end()
                continue
        if c == ",":
            comma_at = len(out)
        out.append(c)
        if not c.isspace():
            prev = c
        if not stack:
            return i + 1, "".join(out)
        i += 1
    return -1, ""


def _loads(candidate: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(candidate)
    except (ValueError, RecursionError):
        return False, None


def _embedded(text: str, expect: type | None) -> tuple[bool, Any, bool]:
    """First balanced object/array in ``text`` that parses: (found, value, saw an unclosed one)."""
    truncated = False
    starts = [m.start() for m in re.finditer(r"[{\[]", text)][:MAX_STARTS]
    for s in starts:
        if expect is dict and text[s] != "{" or expect is list and text[s] != "[":
            continue
        got = _scan(text, s)
        if got is None:
            continue
        if got[0] < 0:
            truncated = True
            continue
        ok, value = _loads(got[1])
        if ok and (expect is None or isinstance(value, expect)):
            return True, value, truncated
    return False, None, truncated


def parse_json(text: str, *, expect: type | None = None) -> Any:
    """The JSON value in a model's output; ``LLMError(kind="bad_json")`` when there is none.

    Args:
        text: the model's answer.
        expect: ``dict`` or ``list`` to accept only an object or only an array (skips,
            e.g., a ``[1]`` citation before the object you asked for); ``None`` for any.
    Returns:
        The parsed value (dict, list, or for a whole-text answer any JSON value).
    """
    if expect not in (None, dict, list):
        raise ValueError("expect must be None, dict or list")
    stripped = text.strip().lstrip("\ufeff")
    ok, value = _loads(stripped)
    if ok and (expect is None or isinstance(value, expect)):
        return value
    truncated = False
    for block in _FENCE.findall(stripped):
        ok, value = _loads(block.strip())
        if ok and (expect is None or isinstance(value, expect)):
            return value
        found, value, cut = _embedded(block, expect)
        if found:
            return value
        truncated = truncated or cut
    found, value, cut = _embedded(stripped, expect)
    if found:
        return value
    truncated = truncated or stripped.count("```") % 2 == 1  # a fence opened and never closed
    snippet = stripped if len(stripped) <= 200 else stripped[:200] + "..."
    want = {None: "JSON object or array", dict: "JSON object", list: "JSON array"}[expect]
    if truncated or cut:
        raise LLMError(f"model output looks truncated: its {want} never closes (raise max_tokens?): {snippet!r}",
                       kind="bad_json")
    raise LLMError(f"no {want} found in model output: {snippet!r}", kind="bad_json")
