"""Nothing secret reaches MLflow: every param, tag, artifact and span passes through here.

Two kinds of secret are masked, in this order:

1. **By key name** (structure): the value of any key that names a secret
   (:func:`is_secret_key`: ``api_key``, ``password``, ``hf_token``...) becomes ``***``,
   whatever the value looks like, in params, in the YAML config and in span payloads;
   in free text, ``password=hunter2`` style pairs are masked the same way.
2. **By value shape**: everything then goes through :func:`evalkit.redact.redact` /
   :func:`evalkit.redact.redact_obj`, evalkit's one masking function (URL credentials,
   secret query parameters, bearer tokens, key-shaped strings such as ``sk-...``).

Span payloads are also scrubbed of the literal values of secret environment variables
(``OPENAI_API_KEY``...), which have no recognisable shape.

**Cost.** Reading those values (:func:`evalkit.redact.secret_env_values`) walks the whole
environment, ~0.3 ms, more than masking a short string. Functions that mask many strings
take them once (``secrets``: ``None`` reads them) and pass them on to every
:func:`evalkit.redact.redact` call; the result is the same.
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import yaml

from evalkit.fileio import jsonl_lines
from evalkit.redact import (
    _ANY_TRIGGER_BYTES,
    _ASCII_ALIKE,
    MASK,
    _may_hold,
    is_secret_key,
    redact,
    redact_obj,
    secret_env_values,
)

# ``password=hunter2`` / ``api_key: abc`` in free text (error messages, node outputs)
_TEXT_PAIR = re.compile(r"(?i)\b((?:api[_-]?key|[a-z_]*token|secret|password|passwd)\s*[=:]\s*)[^\s,;&\"']{4,}")
_YAML_PAIR = re.compile(
    r"""(?P<key>["']?[\w.\-]+["']?)(?P<sep>[ \t]*:[ \t]+)"""
    r"""(?P<value>"[^"\n]*"|'[^'\n]*'|[^,{}\[\]\n#\s](?:[^,}\]\n#]*[^,}\]\n#\s])?)""")


def mask_secrets(params: dict[str, Any]) -> dict[str, str]:
    """A copy of ``params`` (values as strings): secret keys' values ``***``, the rest redacted."""
    return {redact(str(k)): (MASK if is_secret_key(k) else redact(str(v))) for k, v in params.items()}


def mask_text(text: str, secrets: Sequence[str] | None = None) -> str:
    """Free text with ``secret_key=value`` pairs masked, then :func:`evalkit.redact.redact`.

    ``secrets``: the secret environment variables' values, if the caller read them already
    (``None``: read them here).
    """
    if text and _may_hold(text):        # (no trigger: _TEXT_PAIR cannot match, as none of redact's patterns can)
        text = _TEXT_PAIR.sub(lambda m: m.group(1) + MASK, text)
    return redact(text, secrets) if text else text


def mask_yaml_secrets(text: str) -> str:
    """The config text with the value of every secret key set to ``***``, then redacted.

    The config is logged as an artifact, so a secret the params mask must not leak
    through it. ``key: value`` pairs (block or flow style) are masked in place, keeping
    comments and layout; if a secret is still left (a value nested under a secret key,
    as in ``secrets: {openai: sk-...}``, which the flattened params mask as
    ``secrets.openai``), the masked document is re-dumped without its comments.
    """
    def repl(m: re.Match[str]) -> str:
        if not is_secret_key(m.group("key").strip("\"'")):
            return m.group(0)
        return f"{m.group('key')}{m.group('sep')}'{MASK}'"

    masked = _YAML_PAIR.sub(repl, text)

    try:
        data = yaml.safe_load(masked)
    except yaml.YAMLError:
        return redact(masked)
    clean, changed = _mask_tree(data, "")
    if not changed:
        return redact(masked)
    header = "# secrets masked by evalkit (comments dropped)\n"
    return header + redact(yaml.safe_dump(clean, sort_keys=False, allow_unicode=True))


def _mask_tree(node: Any, path: str) -> tuple[Any, bool]:
    if isinstance(node, dict):
        items = [(k, _mask_tree(v, f"{path}.{k}" if path else str(k))) for k, v in node.items()]
        return {k: v for k, (v, _) in items}, any(c for _, (_, c) in items)
    if isinstance(node, list):
        masked = [_mask_tree(v, path) for v in node]
        return [v for v, _ in masked], any(c for _, c in masked)
    if path and node is not None and node != MASK and is_secret_key(path):
        return MASK, True
    return node, False


def mask_records(records: Sequence[Any]) -> str:
    """JSON lines of ``records`` (JSON-like dicts) with secret keys masked and every string redacted.

    The same result as :func:`scrub` on each record, but each distinct string is masked
    once: a ``per_query.jsonl`` repeats the same document ids thousands of times, and a
    regex pass over its whole text cost ~1 s per 3 MB.
    """
    seen: dict[str, str] = {}
    env = secret_env_values()

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            out = seen.get(value)
            if out is None:
                out = seen[value] = mask_text(value, env)
            return out
        if isinstance(value, dict):
            return {walk(str(k)): (MASK if v is not None and is_secret_key(str(k)) else walk(v))
                    for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [walk(v) for v in value]
        return value

    return "".join(json.dumps(walk(r), ensure_ascii=False) + "\n" for r in records)


_JSON_STRING = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"(\s*:)?')   # a JSON string literal's body; a key's colon


def mask_jsonl(text: str) -> str:
    """JSON-lines ``text`` masked exactly as :func:`mask_records` would mask its records, fast.

    Only the string literals that could change are decoded and masked (:func:`_marked_literals`), each
    distinct one once; the rest of the text is copied as it is. If a key names a secret (``api_key``...),
    the records are masked structurally instead. Text that is not well-formed JSON lines is masked
    literal by literal (:func:`_every_literal`), with the same result.
    """
    env = secret_env_values()
    out = _marked_literals(text, env)
    return _every_literal(text, env) if out is None else out


def mask_jsonl_bytes(raw: bytes) -> bytes:
    """:func:`mask_jsonl` of a file's UTF-8 bytes, as UTF-8 bytes: ``raw`` itself when nothing is masked.

    For the MLflow artifact of a ``per_query.jsonl``: its bytes masked and written without decoding them to
    text and encoding them back (of a 265 MB file's ~6 s of CPU for reading, masking and writing the copy,
    ~3 s). The bytes are the same as
    ``mask_jsonl(raw.decode("utf-8")).encode("utf-8")`` gives (tests/track/test_mask_jsonl.py); what
    differs is what is never read: an invalid UTF-8 byte outside every literal that holds a marker is
    copied as it is (decoding the whole text refused it), and so are CRLF line ends (which reading the
    file as text turned into LF). What it masks is decoded strictly, so a masked text that is
    not valid UTF-8 raises ``UnicodeError``, as writing it as text did.
    """
    env = secret_env_values()
    out = _marked_literal_bytes(raw, env)
    if out is None:                       # not well-formed JSON lines: the reference pass, on text
        text = raw.decode("utf-8")
        masked = _every_literal(text, env)
        return raw if masked is text else masked.encode("utf-8")
    if out is not raw:
        out.decode("utf-8")               # (raises on a lone surrogate the masking wrote, as writing text did)
    return out


def _every_literal(text: str, env: Sequence[str]) -> str:
    """:func:`mask_jsonl` by decoding every distinct string literal of ``text`` (one regex pass): the
    reference :func:`_marked_literals` must equal, and its fallback. 7.8 s on a 227 MB per_query.jsonl
    (14 M literals, 178 k distinct)."""
    changed: dict[str, str] = {}
    for body, colon in set(_JSON_STRING.findall(text)):
        value = json.loads(f'"{body}"')
        if colon and is_secret_key(value):
            return _by_records(text)
        masked = mask_text(value, env)
        if masked != value:
            changed[body] = json.dumps(masked, ensure_ascii=False)[1:-1]
    if not changed:
        return text
    return _JSON_STRING.sub(lambda m: '"' + changed.get(m.group(1), m.group(1)) + '"' + (m.group(2) or ""), text)


def _by_records(text: str) -> str:
    """:func:`mask_jsonl` when a key names a secret: each record parsed and masked (:func:`mask_records`)."""
    return mask_records([json.loads(line) for line in jsonl_lines(text) if line.strip()])


# What a string literal must hold, in its raw bytes lower-cased, for masking to change it: a trigger of
# evalkit.redact (every pattern of redact and mask_text needs one; found by the search that starts at each
# trigger's rarest character, ~0.12 s per 16 MB against ~0.17 s for a plain alternation), an escape that can
# hide one (\u, \/), a character that folds to an ASCII letter, or (added per call, _marker_search) a secret
# environment value as JSON writes it.
_MARKERS = _ANY_TRIGGER_BYTES.pattern + b"|" + b"|".join(
    re.escape(m) for m in (b"\\u", b"\\/", *(c.encode("utf-8") for c in _ASCII_ALIKE)))
_CHUNK = 1 << 24  # bytes scanned at a time (whole lines), which bounds the scan's arrays


def _marked_literals(text: str, env: Sequence[str]) -> str | None:
    """:func:`mask_jsonl` looking only at the literals that hold a marker (``_MARKERS``); None when
    ``text`` is not well-formed enough to find its literals this way (the caller falls back).
    ``text`` itself when nothing changes. The work is :func:`_marked_literal_bytes`'s, on its UTF-8.
    """
    raw = text.encode("utf-8", "surrogatepass")  # (a lone surrogate, which json can read from an escape, kept)
    out = _marked_literal_bytes(raw, env)
    return None if out is None else text if out is raw else out.decode("utf-8", "surrogatepass")


def _marked_literal_bytes(raw: bytes, env: Sequence[str]) -> bytes | None:
    """:func:`_marked_literals` on UTF-8 bytes (``surrogatepass``): ``raw`` itself when nothing changes.

    The text is scanned as UTF-8 bytes, where a quote or backslash byte is always that character.
    A quote is escaped when an odd run of backslashes precedes it; the unescaped quotes pair up into
    literals, which a line of JSON never spans. The scan gives up (None) when a line has an odd number of
    unescaped quotes or a backslash lies outside a literal: then the regex of :func:`_every_literal` might
    pair quotes otherwise. Markers outside literals (a number that equals a secret) are ignored, as there.
    """
    find = _marker_search(tuple(json.dumps(s, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass").lower()
                                for s in env))
    spans: dict[bytes, list[tuple[int, int]]] = {}
    start = 0
    while start < len(raw):
        end = raw.find(b"\n", start + _CHUNK)
        end = len(raw) if end < 0 else end + 1
        if not _literals_in(raw[start:end], start, find, spans):
            return None
        start = end
    changed: dict[bytes, bytes] = {}
    for body, where in spans.items():
        try:
            value = json.loads('"' + body.decode("utf-8", "surrogatepass") + '"')  # (bytes: json guesses UTF-16 at a NUL)
        except ValueError:
            return None
        if is_secret_key(value) and any(_is_key(raw, b) for _, b in where):
            return _by_records(raw.decode("utf-8", "surrogatepass")).encode("utf-8", "surrogatepass")
        masked = mask_text(value, env)
        if masked != value:
            changed[body] = json.dumps(masked, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass")
    if not changed:
        return raw
    parts, at = [], 0
    for a, b in sorted(span for body in changed for span in spans[body]):
        parts += [raw[at:a + 1], changed[raw[a + 1:b]]]
        at = b
    parts.append(raw[at:])
    return b"".join(parts)


@functools.lru_cache(maxsize=8)
def _marker_search(secrets: tuple[bytes, ...]) -> re.Pattern[bytes]:
    """One search for ``_MARKERS`` and the (escaped, lower-cased) secret values, longest first."""
    return re.compile(b"|".join([*(re.escape(s) for s in sorted(secrets, key=len, reverse=True)), _MARKERS]))


def _literals_in(chunk: bytes, offset: int, find: re.Pattern[bytes], spans: dict[bytes, list[tuple[int, int]]]) -> bool:
    """Add to ``spans`` (body -> [(opening quote, closing quote)] in the whole text) each literal of
    ``chunk`` (whole lines starting at ``offset``) that holds a match of ``find``; False if ``chunk`` is not
    well-formed enough (:func:`_marked_literals`)."""
    arr = np.frombuffer(chunk, dtype=np.uint8)
    quotes = np.flatnonzero(arr == 34)
    backslashes = np.flatnonzero(arr == 92)
    if len(backslashes):
        run_starts = backslashes[np.r_[True, np.diff(backslashes) != 1]]
        after = quotes[(quotes > 0) & (arr[quotes - 1] == 92)]
        runs = after - run_starts[np.searchsorted(run_starts, after - 1, side="right") - 1]
        quotes = np.setdiff1d(quotes, after[runs % 2 == 1], assume_unique=True)
        if (np.searchsorted(quotes, backslashes, side="right") % 2 == 0).any():
            return False  # a backslash outside a literal
    if len(quotes) % 2 or (np.searchsorted(quotes, np.flatnonzero(arr == 10)) % 2).any():
        return False  # a line with an odd number of quotes
    # A match marks the literal it starts in. One that runs on past the literal's end (a secret holding a
    # quote, escaped in it, may meet an escaped backslash and a closing quote) ends before the next literal
    # opens, as an opening quote follows no backslash: it hides no other match that starts in a literal.
    starts = [m.start() for m in find.finditer(chunk.lower())]
    if not starts:
        return True
    first = np.searchsorted(quotes, starts, side="right")
    for k in np.unique(first[first % 2 == 1]).tolist():
        a, b = int(quotes[k - 1]), int(quotes[k])
        spans.setdefault(chunk[a + 1:b], []).append((offset + a, offset + b))
    return True


def _is_key(raw: bytes, quote: int) -> bool:
    """Whether the literal closing at ``quote`` is followed by white space (as the regex's ``\\s`` reads
    it, Unicode included) and a colon: a key."""
    i = quote + 1
    while i < len(raw):
        size = 1 if raw[i] < 0xC0 else 2 if raw[i] < 0xE0 else 3 if raw[i] < 0xF0 else 4
        char = raw[i:i + size].decode("utf-8", "replace")
        if not char.isspace():
            return char == ":"
        i += size
    return False


def mask_keys(value: Any) -> Any:
    """A copy of ``value`` (JSON-like) with the value of every secret-named key set to ``***``."""
    if isinstance(value, dict):
        return {k: (MASK if v is not None and is_secret_key(str(k)) else mask_keys(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_keys(v) for v in value]
    return value


def scrub_json(value: Any, secrets: Sequence[str] | None = None) -> str:
    """``value`` as JSON, scrubbed like :func:`scrub` but with one text pass (the fast path for span payloads)."""
    secrets = secret_env_values() if secrets is None else secrets
    text = json.dumps(mask_keys(value), ensure_ascii=False, default=str)
    for s in secrets:
        text = text.replace(json.dumps(s, ensure_ascii=False)[1:-1], MASK)
    return mask_text(text, secrets)


def scrub(value: Any, secrets: Sequence[str] | None = None) -> Any:
    """A copy of ``value`` with secret keys masked, ``secrets`` and secret shapes masked.

    ``secrets``: literal values to mask, normally the secret environment variables' values
    (``None``: read them here, once for the whole value).
    """
    if secrets is None:
        secrets = secret_env_values()
    if isinstance(value, dict):
        return {redact(str(k), secrets): (MASK if is_secret_key(str(k)) and v is not None else scrub(v, secrets))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v, secrets) for v in value]
    if isinstance(value, str):
        for s in secrets:
            value = value.replace(s, MASK)
        return mask_text(value, secrets)
    return redact_obj(value, secrets)
