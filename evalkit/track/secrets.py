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

import json
import re
from collections.abc import Sequence
from typing import Any

import yaml

from evalkit.fileio import jsonl_lines
from evalkit.redact import MASK, is_secret_key, redact, redact_obj, secret_env_values

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
    return redact(_TEXT_PAIR.sub(lambda m: m.group(1) + MASK, text), secrets) if text else text


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

    Every distinct string literal of the text is decoded and masked once (a few thousand in
    a ``per_query.jsonl`` of megabytes, mostly repeated document ids); only those that
    change are substituted. If a key names a secret (``api_key``...), the records are masked
    structurally instead.
    """
    changed: dict[str, str] = {}
    env = secret_env_values()
    for body, colon in set(_JSON_STRING.findall(text)):
        value = json.loads(f'"{body}"')
        if colon and is_secret_key(value):
            return mask_records([json.loads(line) for line in jsonl_lines(text) if line.strip()])
        masked = mask_text(value, env)
        if masked != value:
            changed[body] = json.dumps(masked, ensure_ascii=False)[1:-1]
    if not changed:
        return text
    return _JSON_STRING.sub(lambda m: '"' + changed.get(m.group(1), m.group(1)) + '"' + (m.group(2) or ""), text)


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
