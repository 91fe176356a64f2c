"""Eval sets given in memory (a list of dicts, a pandas DataFrame), frozen by content into the cache.

``evalkit.evaluate(rows, configs, corpus=...)`` must stay as reproducible as a run on a
file: the rows and the corpus are written as an ordinary eval set folder under
``<cache root>/evalsets/NAME-<sha12>/`` (``NAME-<sha12>.jsonl``, its manifest and
``corpora/NAME-<sha12>.jsonl``) and frozen as v1, where ``sha12`` is 12 hex digits of the
SHA-256 of the records' JSONL lines and the corpus bytes. The same rows and corpus come
back to the same folder (loaded, not rewritten); any change gives another name, so runs of
different data never pair in ``compare`` or ``gate``.

Rows use the eval set fields (``id``, ``question``, ``relevant_doc_ids``, ``type``,
``lang``, ``reference_answer``, ``tags``) with defaults for the notebook: ``id`` =
``q00001``... by position, ``type`` = ``single`` (``unanswerable`` without gold),
``lang`` = the ``lang`` argument (``auto``: by the question's script, :mod:`evalkit.evalsets.lang`). Each row is then checked by the eval set format, and an
error names the row (1-based) and the field. The corpus is a corpus JSONL path, or rows
with ``id``, ``text`` and optional ``title``, ``metadata``.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitError, EvalSetError
from evalkit.evalsets.evalset import EvalSet, parse_record
from evalkit.evalsets.lang import record_lang
from evalkit.evalsets.versions import freeze, load_eval_set

ROWS_LABEL = "<eval set rows>"
CORPUS_LABEL = "<corpus rows>"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def _records(data: Any) -> list[dict[str, Any]]:
    """A DataFrame or a sequence of mappings -> plain dicts (numpy values and NaN made JSON-ready)."""
    if hasattr(data, "to_dict") and hasattr(data, "columns"):
        data = data.to_dict(orient="records")
    if isinstance(data, (str, bytes)) or not isinstance(data, Sequence):
        raise EvalkitError(f"expected a list of dicts or a pandas DataFrame, got {type(data).__name__}")
    out = []
    for i, row in enumerate(data, start=1):
        if not isinstance(row, dict):
            raise EvalSetError(ROWS_LABEL, "", f"row {i} is a {type(row).__name__}, not a dict", line=i)
        out.append({str(k): _plain(v) for k, v in row.items()})
    return out


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, float) and math.isnan(value):
        return None  # pandas fills a missing cell with NaN
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def eval_set_lines(rows: Any, lang: str = "auto") -> list[str]:
    """The eval set JSONL lines of ``rows`` (defaults filled, every record checked)."""
    lines = []
    for i, row in enumerate(_records(rows), start=1):
        record = {k: v for k, v in row.items() if v is not None}
        gold = record.get("relevant_doc_ids", [])
        record.setdefault("id", f"q{i:05d}")
        record.setdefault("relevant_doc_ids", gold)
        record.setdefault("type", "single" if gold else "unanswerable")
        record.setdefault("lang", record_lang(lang, record.get("question")
                                              if isinstance(record.get("question"), str) else None))
        text = json.dumps(record, ensure_ascii=False, sort_keys=True)
        parse_record(ROWS_LABEL, i, text)  # the format's own checks: names the row and the field
        lines.append(text)
    if not lines:
        raise EvalkitError("the eval set rows are empty")
    return lines


def corpus_lines(corpus: Any) -> list[str]:
    """Corpus JSONL lines from rows (``id``, ``text``, optional ``title``, ``metadata``)."""
    lines = []
    for i, row in enumerate(_records(corpus), start=1):
        doc = {k: row[k] for k in ("id", "title", "text", "metadata") if row.get(k) is not None}
        if not isinstance(doc.get("id"), str) or not isinstance(doc.get("text"), str):
            raise EvalSetError(CORPUS_LABEL, "id" if not isinstance(doc.get("id"), str) else "text",
                               "each document needs a string 'id' and a string 'text'", line=i)
        lines.append(json.dumps(doc, ensure_ascii=False, sort_keys=True))
    return lines


def freeze_inline(rows: Any, corpus: Any, cache_root: Path, name: str = "inline", lang: str = "auto") -> EvalSet:
    """Freeze in-memory rows (and corpus) into the cache, by content; return the loaded v1 (module docstring)."""
    if not _NAME.fullmatch(name):
        raise EvalkitError(f"bad eval set name {name!r}: letters, digits, '_', '-', '.', starting with a letter or digit")
    if corpus is None:
        raise EvalkitError("an eval set given as rows needs its corpus: corpus='corpora/my_docs.jsonl' or a list of "
                           "{id, text} dicts / a DataFrame")
    lines = eval_set_lines(rows, lang)
    if isinstance(corpus, (str, Path)):
        corpus_bytes = Path(corpus).read_bytes()
    else:
        corpus_bytes = "".join(line + "\n" for line in corpus_lines(corpus)).encode("utf-8")
    digest = hashlib.sha256("".join(line + "\n" for line in lines).encode("utf-8") + b"\0" + corpus_bytes).hexdigest()
    full = f"{name}-{digest[:12]}"
    folder = Path(cache_root) / "evalsets" / full
    set_path = folder / f"{full}.jsonl"
    if not (folder / f"{full}.manifest.json").is_file():
        from evalkit.cachestore import discard, publish_folder, staging_for

        if folder.exists():  # an interrupted freeze of an older evalkit
            discard(folder)
        staging = staging_for(folder)  # built privately, renamed into place whole (two processes at once: one wins)
        (staging / "corpora").mkdir()
        corpus_path = staging / "corpora" / f"{full}.jsonl"
        corpus_path.write_bytes(corpus_bytes)
        (staging / set_path.name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        freeze(staging / set_path.name, corpus=str(corpus_path),
               description=f"frozen by evalkit.evaluate from in-memory rows (sha256 {digest})")
        publish_folder(staging, folder)
    return load_eval_set(f"{set_path}@v1")
