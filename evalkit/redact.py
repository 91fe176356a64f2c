"""Secrets never travel: the one function that masks them, wherever text leaves evalkit.

A key can hide in a URL (``http://user:KEY@host/v1``, ``https://host/v1?api_key=KEY``),
in an ``Authorization: Bearer KEY`` header quoted by a server, in an assignment quoted
in an error (``password=KEY``, ``"api_key": "KEY"``), in the value of an environment
variable whose name says it is secret (``OPENAI_API_KEY``), or be pasted where the
*name* of an environment variable belongs (``api_key_env: sk-...``). Everything evalkit
writes (MLflow params, tags and artifacts, ``config.yaml``, ``per_query.jsonl``,
``summary.json``, traces, error messages, HTML and Markdown reports, the console) passes
through :func:`redact` (text), :func:`redact_obj` (nested JSON-like values) or
:func:`dumps` (JSON text) first. Masked parts become ``***``; the rest of the text is
kept so a reader still sees which host or parameter was meant.
"""
from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import orjson
import ormsgpack
import ormsgpack as m

from evalkit.frozen import FrozenList, frozen_all_the_way

MASK = "***"

# query-string / form / header-style parameters whose values are secrets
_SECRET_NAMES = r"(?:api[_-]?key|apikey|access[_-]?token|refresh[_-]?token|auth[_-]?token|token|secret|" \
                r"client[_-]?secret|password|passwd|pwd|sig|signature|key|x-api-key|subscription-key|code|" \
                r"auth|access[_-]?key|private[_-]?key|credentials?)"
# (the value stops before a trailing ':', ',', '.', ';' or ')' of the sentence around the URL)
_QUERY_SECRET = re.compile(rf"(?i)([?&;]{_SECRET_NAMES}=)(?!\*\*\*)(?:[^&#\s'\"<>]*[^&#\s'\"<>:,.;)])?")
# scheme://user:password@host  or  scheme://token@host
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s'\"<>]+@")
_BEARER = re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}")
# an assignment in free text, YAML or JSON: api_key=K, password: K, "client_secret": "K", X-Api-Key: K, hf_token=K
# (the name must END in a secret word: `api_key_env: OPENAI_API_KEY` and `max_tokens: 512` are not secrets)
_ASSIGNED = re.compile(
    r"(?i)\b([\w.-]*(?:api[_-]?key|apikey|token|secret|password|passwd|private[_-]?key|access[_-]?key)"
    r"[\"']?\s*[=:]\s*[\"']?)(?!\*\*\*)[^\s,;&\"'<>{}\[\]]{4,}")
# well-known key shapes (OpenAI/Anthropic/DeepSeek sk-, HF hf_, GitHub ghp_/gho_/github_pat_, AWS AKIA, Google AIza,
# Slack xox?-), matched anywhere
_KEY_SHAPES = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{16,}|hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|"
    r"AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,}|xox[abprs]-[A-Za-z0-9-]{10,})")

# Substrings (of the folded text, _fold) without which a pattern cannot match: each pattern
# runs only when one is present (see redact).
_BEARER_TRIGGERS = ("bearer", "basic", "token")
_ASSIGNED_TRIGGERS = ("key", "token", "secret", "passw")
_SHAPE_TRIGGERS = ("sk-", "hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "akia", "aiza", "xox")
# one scan for all of them first: a per-query record (~20 KB) holds none of them as a rule (a short text
# is searched with one regex; a long one is squeezed first and searched with _ANY_TRIGGER_BYTES, _may_hold)
_TRIGGERS = ("://", "=", *_BEARER_TRIGGERS, *_ASSIGNED_TRIGGERS, *_SHAPE_TRIGGERS)
_ANY_TRIGGER = re.compile("|".join(re.escape(t) for t in _TRIGGERS))
# The bytes kept by the squeeze before that scan of a long text (_may_hold): the ASCII characters whose
# lower case is in a trigger. Every other byte (the rest of ASCII, and every byte of a non-ASCII character)
# is deleted, and the triggers are looked for as bytes.
_TRIGGER_BYTES = tuple(t.encode("ascii") for t in dict.fromkeys(_TRIGGERS))  # "token" is in two lists
_NOT_IN_A_TRIGGER = bytes(i for i in range(256) if i >= 128 or chr(i).lower() not in "".join(_TRIGGERS))
_SQUEEZE_FROM = 512  # characters; shorter texts are scanned as they are
# The characters of the triggers, rarest first in the squeezed text of a per-query record (counted on
# SciFact runs: "=" almost never, "c" and "o" hundreds of times, from every "score" and "doc_id").
_RARITY = b"=z/x-bwfykhpguant_isreco:"


def _anchored(trigger: bytes) -> bytes:
    """A regex matching exactly where ``trigger`` occurs, written to start at its rarest character: ``t(?<=secret)``."""
    i = min(range(len(trigger)), key=lambda j: _RARITY.index(trigger[j:j + 1]))
    at, before, after = trigger[i:i + 1], trigger[:i + 1], trigger[i + 1:]
    return (re.escape(at) + (b"(?<=" + re.escape(before) + b")" if i else b"")
            + (b"(?=" + re.escape(after) + b")" if after else b""))


# Every trigger in one search that only stops at rare characters (~7 against ~32 us for 19 substring tests
# of a SciFact record's squeezed text): the same answer as any(t in squeezed for t in _TRIGGER_BYTES).
_ANY_TRIGGER_BYTES = re.compile(b"|".join(_anchored(t) for t in _TRIGGER_BYTES))

# What every match of _BEARER / _ASSIGNED contains, as it reads in the folded text: the secret word
# (for _ASSIGNED its ending) and what must follow it. A search for it is ~10x cheaper than the full
# case-insensitive pattern, which a 20 KB record saying "tokens" (LLM usage) or "tokenizer" used to pay.
_BEARER_NEAR = re.compile(r"(?:bearer|basic|token)\s+\S{8}")
_ASSIGNED_NEAR = re.compile(r"(?:key|token|secret|passwd|password)[\"']?\s*[=:]")
# the non-ASCII letters Python's re.IGNORECASE equates with ASCII ones that str.lower() does not map
# to them (KELVIN SIGN lower-cases to k); found by testing every code point
_IGNORECASE_ALIKE = {0x130: "i", 0x131: "i", 0x17F: "s"}
# The non-ASCII characters that can stand for ASCII ones in _fold(text): those (above) and KELVIN SIGN,
# whose lower case is "k"; the squeeze of _may_hold deletes non-ASCII bytes, so a text holding one is
# scanned the slow way (tests/test_redact.py checks every code point against this list).
_ASCII_ALIKE = tuple(chr(c) for c in (*_IGNORECASE_ALIKE, 0x212A))

_WORD_SPLIT = re.compile(r"[^a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
MIN_ENV_SECRET = 6  # shorter values of secret variables are not masked (they would mask ordinary words)


@functools.lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """Whether a key (a param, a dict key, an environment variable) names a secret.

    Matched case-insensitively (camelCase is split first): any key containing
    ``api_key``/``apikey``, ``secret``, ``password``/``passwd``, or a word that is or ends
    in ``token`` (``token``, ``hf_token``, ``accessToken``). ``max_tokens`` and
    ``tokenizer`` are *not* secrets: a plain substring match on ``token`` would hide the
    generation budget of every LLM node.
    """
    low = _CAMEL.sub("_", str(key)).lower()
    if any(s in low for s in ("api_key", "apikey", "api-key", "secret", "password", "passwd")):
        return True
    return any(w.endswith("token") for w in _WORD_SPLIT.split(low) if w)


def secret_env_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names are secrets (``OPENAI_API_KEY``...), longest first."""
    env = os.environ if environ is None else environ
    return sorted({v for k, v in env.items() if len(v) >= MIN_ENV_SECRET and is_secret_key(k)},
                  key=len, reverse=True)


def looks_like_key(value: str) -> bool:
    """True when ``value`` looks like a secret rather than the NAME of an environment variable.

    Environment variable names are letters, digits and underscores (``OPENAI_API_KEY``);
    anything of a known key shape, or a long run with dashes, dots, mixed case and digits,
    is taken for a pasted key.
    """
    v = value.strip()
    if _KEY_SHAPES.search(v):
        return True
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
        # a plausible variable name, unless it is a long random-looking token (mixed case + digits)
        return len(v) >= 32 and bool(re.search(r"[a-z]", v)) and bool(re.search(r"[A-Z]", v)) \
            and bool(re.search(r"\d", v))
    return len(v) >= 16


def redact(text: str, secrets: Sequence[str] | None = None) -> str:
    """``text`` with URL credentials, secret parameters and assignments, bearer tokens, key-shaped
    strings and the values of secret environment variables masked.

    ``secrets`` are extra literal values to mask; ``None`` means the values of the
    current process's secret environment variables (:func:`secret_env_values`).
    """
    if not text or not isinstance(text, str):
        return text
    for s in secret_env_values() if secrets is None else secrets:
        if s in text:
            text = text.replace(s, MASK)
    # Each pattern runs only when a cheap substring test says it could match: a per-query
    # record is ~10 KB, and scanning it with five case-insensitive regexes cost ~15 ms.
    if not _may_hold(text):
        return text
    low = _fold(text)
    if "://" in text and "@" in text:
        text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    if "=" in text:
        text = _QUERY_SECRET.sub(lambda m: f"{m.group(1)}{MASK}", text)
    if any(w in low for w in _BEARER_TRIGGERS) and _BEARER_NEAR.search(low):
        text = _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", text)
    if any(w in low for w in _ASSIGNED_TRIGGERS) and _ASSIGNED_NEAR.search(low):
        text = _ASSIGNED.sub(lambda m: f"{m.group(1)}{MASK}", text)
    if any(p in low for p in _SHAPE_TRIGGERS):
        text = _KEY_SHAPES.sub(MASK, text)
    return text


def _fold(text: str) -> str:
    """``text.lower()`` with the letters ``re.IGNORECASE`` takes for ASCII ones made ASCII: in it, a
    pattern's trigger and its ``_NEAR`` stand-in occur wherever the case-insensitive pattern can match."""
    if "\u0130" in text or "\u0131" in text or "\u017f" in text:
        text = text.translate(_IGNORECASE_ALIKE)
    return text.lower()


def _may_hold(text: str) -> bool:
    """Whether a trigger occurs in ``_fold(text)``: without one, no pattern of :func:`redact` can match.

    A per-query record is ~20 KB, mostly digits, quotes, commas and (in Chinese corpora) non-ASCII
    text, and one regex scan of it cost ~0.15-0.25 ms, the largest part of writing its line. A long
    text is first squeezed as UTF-8 bytes: every byte that is in no trigger's characters is deleted
    (one ``bytes.translate``), ASCII is lower-cased and the triggers are looked for in one search
    (``_ANY_TRIGGER_BYTES``). That cannot hide a trigger: every trigger is ASCII, and without the few
    non-ASCII characters that fold to ASCII (``_ASCII_ALIKE``; a text holding one takes the plain
    scan) an occurrence in the folded text is a run of ASCII characters of the text that are all
    kept, so it survives in one piece.
    Joining what was apart can only add occurrences, which costs the full scan in :func:`redact` and
    changes nothing else.
    """
    if len(text) < _SQUEEZE_FROM:
        return _ANY_TRIGGER.search(_fold(text)) is not None
    # looked for in the str, not its bytes: an all-ASCII str answers at once, and a one-character search of
    # another is fast where the 2-3 byte searches of its UTF-8 took ~55 us of a 20 KB record's ~95
    if any(c in text for c in _ASCII_ALIKE):
        return _ANY_TRIGGER.search(_fold(text)) is not None
    squeezed = text.encode("utf-8", "surrogatepass").translate(None, _NOT_IN_A_TRIGGER).lower()
    return _ANY_TRIGGER_BYTES.search(squeezed) is not None


def redact_obj(value: Any, secrets: Sequence[str] | None = None) -> Any:
    """:func:`redact` applied to every string inside dicts, lists and tuples (keys included).

    The value of a dict key that names a secret (:func:`is_secret_key`) is masked whole.
    """
    if secrets is None:
        secrets = secret_env_values()
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, Mapping):
        return {redact_obj(k, secrets): (MASK if isinstance(k, str) and is_secret_key(k) and v not in (None, "")
                                         and not isinstance(v, (dict, list, bool, int, float))
                                         else redact_obj(v, secrets))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_obj(v, secrets) for v in value)
    return value


def dumps(obj: Any, **kwargs: Any) -> str:
    """``json.dumps(obj, **kwargs)`` with every secret masked (the way files are written).

    Fast path: the JSON text is redacted as a whole; only when that changed something is
    the object itself redacted (:func:`redact_obj`) and dumped again, so masking can
    never break the JSON (a value cut inside an escape sequence).
    """
    text = None
    if kwargs == _PRETTY:
        text = _orjson_text(obj, orjson.OPT_INDENT_2)
    if text is None:
        text = json.dumps(obj, **kwargs)
    secrets = secret_env_values()
    if redact(text, secrets) == text:
        return text
    return json.dumps(redact_obj(obj, secrets), **kwargs)


# How files such as a run's summary are written, by orjson where it can (_orjson_text): a summary is rewritten
# after every variant and holds every variant so far, and json's pretty printer is pure Python (~20 of the
# ~30 ms of a write at 100 variants: benchmarks/summary_writes.py).
_PRETTY = {"indent": 2, "ensure_ascii": False}


def _orjson_text(obj: Any, option: int, default: Any = None) -> str | None:
    """``obj`` written by orjson where that text reads back as exactly ``obj``, else None (``json`` must write it).

    Known without reading it back for plain, finite data (:func:`_plain_and_finite`); anything orjson
    would write differently from ``json`` (NaN or infinity, which it writes as ``null``; non-string keys;
    integers beyond 64 bits; lone surrogates; float subclasses such as numpy's; dataclasses, enums,
    dates) is refused or fails the read-back, so what a reader parses never depends on which wrote it.
    With ``indent=2`` (:func:`dumps`) the layout, characters and escapes are ``json``'s; a small float
    may read ``1e-7`` or ``0.00001`` instead of ``1e-07`` or ``1e-05``, the same number.
    """
    try:
        text = orjson.dumps(obj, default=default, option=option).decode("utf-8")
        return text if _plain_and_finite(obj) or orjson.loads(text) == obj else None
    except (TypeError, ValueError):  # orjson.JSONEncodeError / JSONDecodeError derive from these
        return None


def _plain_and_finite(obj: Any) -> bool:
    """True when ``obj`` is built of plain JSON types and holds no NaN or infinity.

    Then the text orjson wrote (it had not refused ``obj``) reads back as ``obj`` (tuples as lists, as
    ``json.dumps`` writes them too), and :func:`dumps_line` skips reading it back, which cost ~0.25 ms
    of a sweep variant's ~1 ms per query. ``ormsgpack`` (one compiled pass) with every passthrough
    option refuses whatever orjson or json would write their own way: dataclasses, enums, UUIDs, dates,
    subclasses of str / int / dict / list, numpy values, integers beyond 64 bits (and, like orjson,
    non-string keys and lone surrogates); what it takes and orjson also takes is plain JSON data. In
    its output every float is the byte 0xCB and 8 big-endian bytes, non-finite exactly when the
    exponent bits (the first byte's low 7 and the next byte's high 4) are all ones: without the pair
    ``CB 7F`` or ``CB FF`` anywhere (almost every record) no float is; a record holding one gets the
    exact scan of every 0xCB, where a byte that only looks like a float (in an integer or a
    mantissa) just sends the line to the full check, and a real one cannot be missed. It replaced
    ``marshal`` plus that scan: ~100 against ~45 us a SciFact record inside a sweep.
    """
    try:
        packed = ormsgpack.packb(obj, option=_plain_only(), default=_frozen_list)
    except TypeError:  # ormsgpack.MsgpackEncodeError: a type orjson or json might write their own way
        return False
    if _FLOAT_MAX_EXPONENT.search(packed) is None:
        return True
    p = np.frombuffer(packed, dtype=np.uint8)
    at = np.flatnonzero(p[:-2] == 0xCB)  # float starts, and bytes that only look like one
    return not (((p[at + 1] & 0x7F) == 0x7F) & ((p[at + 2] & 0xF0) == 0xF0)).any()


def _frozen_list(value: Any) -> Any:
    """ormsgpack's ``default`` in :func:`_plain_and_finite`: a frozen list (``evalkit.frozen.FrozenList``,
    a shared ranking's trace form, which orjson and json write as any list) read as the list it is,
    or, when its verdict was kept (:func:`_written`), None for plain and finite data (nothing to look
    at again) and a refusal for the rest; every other type ormsgpack passes here is refused, so its
    record takes the full check."""
    if isinstance(value, FrozenList):
        kept = getattr(value, "_json", None)
        if kept is None:
            return list(value)
        if kept[1]:
            return None
    raise TypeError(type(value).__name__)


def _written(value: Any) -> Any:
    """orjson's ``default`` in :func:`dumps_line` (which passes it subclasses of str, int, dict and list).

    A list frozen all the way down (a ranking every variant of a sweep shares, in each of their
    traces) is written once: its JSON and whether it is plain and finite are kept on it, and every
    later record splices that text in (``orjson.Fragment``). Any other subclass is given as the
    plain value orjson wrote before this hook existed; :func:`_plain_and_finite` refuses those, so
    their record is read back and compared, as before.
    """
    if isinstance(value, FrozenList):
        kept = getattr(value, "_json", None)
        if kept is None:
            if not frozen_all_the_way(value):
                return list(value)
            kept = value._json = (orjson.Fragment(orjson.dumps(value)), _plain_and_finite(list(value)))
        return kept[0]
    kind: type[Any]
    for kind in (str, int, dict, list):
        if isinstance(value, kind):
            return kind(value) if kind is not str else str.__str__(value)
    raise TypeError(type(value).__name__)


# 0xCB and a first exponent byte of all ones: the start of every NaN or infinity in msgpack (one search,
# ~9 us a record, against ~23 for two substring tests)
_FLOAT_MAX_EXPONENT = re.compile(b"\xcb[\x7f\xff]")


@functools.cache
def _plain_only() -> int:
    """ormsgpack's options that pass each type it would write its own way to ``default`` (:func:`_frozen_list`,
    which refuses every one but a frozen list)."""
    return (m.OPT_PASSTHROUGH_BIG_INT | m.OPT_PASSTHROUGH_DATACLASS | m.OPT_PASSTHROUGH_DATETIME
            | m.OPT_PASSTHROUGH_ENUM | m.OPT_PASSTHROUGH_SUBCLASS | m.OPT_PASSTHROUGH_UUID)


def dumps_line(obj: Any, secrets: Sequence[str] | None = None) -> str:
    """One compact JSON line for ``obj`` (a per-query record) with every secret masked.

    A per-query record is ~20 KB of nested lists (rankings, the trace) that ``json.dumps``
    takes ~1 ms to write, the largest cost a variant of a sweep adds per query; ``orjson``
    takes ~0.05 ms. Its text is used only when it reads back as exactly ``obj``
    (:func:`_orjson_text`); anything else is written by ``json.dumps``, so what a reader parses
    back never depends on which path wrote it (tuples read back as lists from either).
    ``secrets``: the values to mask (:func:`secret_env_values`, read once by a caller
    writing many lines; None reads them now).
    """
    if secrets is None:
        secrets = secret_env_values()
    text = _orjson_text(obj, orjson.OPT_PASSTHROUGH_SUBCLASS, _written)
    if text is None:
        text = json.dumps(obj, ensure_ascii=False)
    if redact(text, secrets) == text:  # as dumps: the object itself is masked only when the text had a secret
        return text
    return json.dumps(redact_obj(obj, secrets), ensure_ascii=False)
