"""Import question/passage data from other tools as an evalkit corpus plus a frozen eval set.

Sources (the format is chosen from the path):

* a Hugging Face ``datasets`` folder written by ``save_to_disk`` (a ``Dataset``, or a
  ``DatasetDict`` with ``split`` naming the split; a single split is taken as is);
* a ``.parquet`` file;
* a JSONL file (``.jsonl``, ``.json``, optionally ``.gz``), or a ``.json`` array.

:func:`import_dataset` reads questions from one source and documents from another
(``corpus``), renaming columns with a mapping ``{evalkit field: source column}``
(``--map question=query --map relevant_doc_ids=positive_ids``); a field without a
mapping is read from the column of the same name. Eval set fields: ``question`` and
``relevant_doc_ids`` (required), ``id`` (default ``NAME-q00001``...), ``type``,
``lang``, ``reference_answer``, ``tags`` and the optional context ``history``, ``tenant``,
``attributes``, ``gold_route`` (docs/eval_sets.md). Corpus fields: ``id``, ``text`` (required),
``title``; other columns go to the document's ``metadata``.

:func:`import_ragas` reads ragas samples (``user_input``, ``reference_contexts``,
``retrieved_contexts``, ``reference``, ``response``): every context becomes a corpus
document whose id is ``ctx-`` + 16 hex digits of the SHA-256 of its text with
whitespace collapsed (so equal passages share one id, and ids are stable across
imports); the gold ids of a question are its reference contexts' ids. ``reference``
becomes ``reference_answer``; ``response`` is a system output, not eval data, and is
not imported (counted). ``synthesizer_name`` containing ``multi_hop`` sets type
``multi_hop``.

Errors are :class:`~evalkit.importers.formats.ImportFormatError` naming the source,
the line of a JSONL file or the 1-based row of a parquet file or dataset, and the
field (with the column it was read from). Nothing is written until every row has
been read and checked; output is written as ``import beir`` writes it and frozen as v1.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitError, EvalSetError, did_you_mean
from evalkit.importers.beir import NAME_RE, output_paths
from evalkit.importers.formats import ImportFormatError

EVAL_FIELDS = ("id", "question", "relevant_doc_ids", "type", "lang", "reference_answer", "tags", "history", "tenant",
               "attributes", "gold_route")
CORPUS_FIELDS = ("id", "title", "text")
RAGAS_FIELDS = ("id", "user_input", "reference_contexts", "retrieved_contexts", "reference", "response",
                "synthesizer_name")

ColumnMap = dict[str, str]
Row = tuple[int, dict[str, Any]]


@dataclass
class InteropImportResult:
    """What an import wrote and what it left out."""

    name: str
    corpus_path: Path
    eval_set_path: Path
    manifest_path: Path
    version: dict[str, Any]
    n_documents: int
    n_rows: int
    n_records: int
    n_no_gold: int = 0
    n_unanswerable_kept: int = 0
    n_duplicate_contexts: int = 0
    n_responses_ignored: int = 0
    columns: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """A human summary, one fact per line."""
        frozen = f"v{self.version['version']} (sha256 {self.version['sha256']})"
        out = [f"corpus    {self.corpus_path}: {self.n_documents} documents",
               f"eval set  {self.eval_set_path}: {self.n_records} records from {self.n_rows} rows, frozen as {frozen}",
               "columns   " + ", ".join(f"{k}<-{v}" for k, v in self.columns.items())]
        if self.n_duplicate_contexts:
            out.append(f"deduped   {self.n_duplicate_contexts} repeated contexts (same text -> same document id)")
        if self.n_no_gold:
            out.append(f"skipped   {self.n_no_gold} rows without a gold document (--keep-unanswerable keeps them "
                       "as type 'unanswerable')")
        if self.n_unanswerable_kept:
            out.append(f"kept      {self.n_unanswerable_kept} rows without a gold document, as type 'unanswerable'")
        if self.n_responses_ignored:
            out.append(f"ignored   {self.n_responses_ignored} 'response' values (system outputs are not eval data)")
        return out


# ---------------------------------------------------------------------------------------- reading


def read_rows(source: str | Path, split: str | None = None) -> tuple[str, list[Row], list[str]]:
    """Read a dataset folder, parquet or JSONL file: ``(label for errors, [(line or row, row)], columns)``."""
    path = Path(source)
    if path.is_dir():
        return _read_hf(path, split)
    if not path.is_file():
        raise ImportFormatError(str(path), "", "no such file or folder (expected a datasets folder written by "
                                "save_to_disk, a .parquet file or a JSONL file)")
    if split is not None:
        raise ImportFormatError(str(path), "", f"--split '{split}' applies to a datasets folder only")
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes[-1:] == [".parquet"]:
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types for a bad file
            raise ImportFormatError(str(path), "", f"cannot read parquet ({exc})") from exc
        return str(path), list(enumerate(table.to_pylist(), start=1)), list(table.column_names)
    if not {".jsonl", ".json", ".ndjson"} & set(suffixes):
        raise ImportFormatError(str(path), "", "unknown file type: use .parquet, .jsonl (optionally .gz) or a "
                                "datasets folder (save_to_disk)")
    return _read_json(path)


def _read_hf(path: Path, split: str | None) -> tuple[str, list[Row], list[str]]:
    import datasets

    try:
        ds = datasets.load_from_disk(str(path))
    except Exception as exc:  # datasets raises FileNotFoundError or its own errors
        raise ImportFormatError(str(path), "", f"not a datasets folder written by save_to_disk ({exc})") from exc
    label = str(path)
    if isinstance(ds, datasets.DatasetDict):
        splits = list(ds)
        if split is None and len(splits) == 1:
            split = splits[0]
        if split not in ds:
            msg = (f"no split '{split}'{did_you_mean(split, splits)}" if split is not None else
                   f"the dataset has splits {', '.join(splits)}; choose one with --split")
            raise ImportFormatError(label, "", msg)
        ds, label = ds[split], f"{path}[{split}]"
    elif split is not None:
        raise ImportFormatError(label, "", f"--split '{split}' given but the folder holds one Dataset, not splits")
    return label, list(enumerate(ds.to_list(), start=1)), list(ds.column_names)


def _read_json(path: Path) -> tuple[str, list[Row], list[str]]:
    from evalkit.importers.formats import _json_object, _lines

    lines = list(_lines(path))
    if lines and lines[0][1].lstrip().startswith("["):
        try:
            data = json.loads("\n".join(text for _, text in lines))
        except json.JSONDecodeError as exc:
            raise ImportFormatError(str(path), "", f"not valid JSON ({exc.msg} at line {exc.lineno})") from exc
        if not all(isinstance(x, dict) for x in data):
            raise ImportFormatError(str(path), "", "a JSON array must hold one object per record")
        rows = list(enumerate(data, start=1))
    else:
        rows = [(n, _json_object(path, n, text)) for n, text in lines]
    if not rows:
        raise ImportFormatError(str(path), "", "the file holds no records")
    columns: dict[str, None] = {}
    for _, r in rows:
        columns.update(dict.fromkeys(r))
    return str(path), rows, list(columns)


# ---------------------------------------------------------------------------------------- mapping


def parse_mapping(items: Sequence[str], fields: Sequence[str], option: str = "--map") -> ColumnMap:
    """``["question=query", ...]`` -> ``{"question": "query"}``; unknown fields and repeats are errors."""
    out: ColumnMap = {}
    for item in items:
        target, sep, column = item.partition("=")
        target, column = target.strip(), column.strip()
        if not sep or not target or not column:
            raise EvalkitError(f"{option} {item!r}: write FIELD=COLUMN, e.g. {option} {fields[1]}=my_column")
        if target not in fields:
            raise EvalkitError(f"{option} {item!r}: unknown field '{target}'{did_you_mean(target, fields)}")
        if target in out:
            raise EvalkitError(f"{option}: field '{target}' mapped twice ('{out[target]}' and '{column}')")
        out[target] = column
    return out


def resolve_columns(label: str, columns: Sequence[str], mapping: ColumnMap, fields: Sequence[str],
                    required: Sequence[str], option: str = "--map") -> ColumnMap:
    """``{field: column}`` for every field found (mapped, or same-named); missing required fields raise."""
    out: ColumnMap = {}
    for f in fields:
        col = mapping.get(f, f)
        if col in columns:
            out[f] = col
        elif f in mapping:
            raise ImportFormatError(label, f, f"{option} {f}={col}: no column '{col}'{did_you_mean(col, columns)}")
        elif f in required:
            raise ImportFormatError(label, f, f"no column '{f}' (columns: {', '.join(columns) or 'none'}); map one "
                                    f"with {option} {f}=COLUMN")
    return out


def _get(row: dict[str, Any], cols: ColumnMap, f: str) -> Any:
    return row.get(cols[f]) if f in cols else None


def _id(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _id_list(value: Any) -> list[str] | None:
    """A list of ids from a list, a tuple, a numpy array, a single id, or None (empty); else None."""
    if value is None:
        return []
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    items = value if isinstance(value, (list, tuple)) else [value]
    ids = [_id(v) for v in items]
    return None if any(i is None for i in ids) else list(dict.fromkeys(ids))


def _tags(value: Any) -> list[Any]:
    """Row tags as a list (a single tag, a list or an array); values are checked by the eval set format."""
    value = _jsonable(value)
    return [] if value is None else list(value) if isinstance(value, list) else [value]


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


# ---------------------------------------------------------------------------------------- importing


def import_dataset(source: str | Path, name: str, out_dir: str | Path, *, corpus: str | Path,
                   mapping: ColumnMap | None = None, corpus_mapping: ColumnMap | None = None,
                   split: str | None = None, corpus_split: str | None = None, lang: str = "en",
                   keep_unanswerable: bool = False, force: bool = False,
                   description: str | None = None) -> InteropImportResult:
    """Questions from ``source``, documents from ``corpus`` -> ``OUT/corpora/NAME.jsonl``, frozen ``OUT/NAME.jsonl``."""
    _check_name_lang(name, lang)
    label, rows, columns = read_rows(source, split)
    cols = resolve_columns(label, columns, mapping or {}, EVAL_FIELDS, ("question", "relevant_doc_ids"))
    c_label, c_rows, c_columns = read_rows(corpus, corpus_split)
    c_cols = resolve_columns(c_label, c_columns, corpus_mapping or {}, CORPUS_FIELDS, ("id", "text"), "--corpus-map")
    docs, doc_rows = [], {}
    for n, row in c_rows:
        doc_id, text, title = _id(_get(row, c_cols, "id")), _get(row, c_cols, "text"), _get(row, c_cols, "title")
        if doc_id is None:
            raise _err(c_label, n, "id", c_cols, f"missing or empty document id, got {_show(_get(row, c_cols, 'id'))}")
        if doc_id in doc_rows:
            raise _err(c_label, n, "id", c_cols, f"duplicate document id '{doc_id}' (first in row {doc_rows[doc_id]})")
        if not isinstance(text, str):
            raise _err(c_label, n, "text", c_cols, f"document '{doc_id}': expected a string, got {_show(text)}")
        if title is not None and not isinstance(title, str):
            raise _err(c_label, n, "title", c_cols, f"document '{doc_id}': expected a string, got {_show(title)}")
        doc_rows[doc_id] = n
        meta = {k: _jsonable(v) for k, v in row.items() if k not in c_cols.values()}
        docs.append({"id": doc_id, "title": title or "", "text": text, "metadata": meta})
    records, numbered, no_gold, kept = [], [], 0, 0
    for n, row in rows:
        gold = _id_list(_get(row, cols, "relevant_doc_ids"))
        if gold is None:
            raise _err(label, n, "relevant_doc_ids", cols, "expected a list of document ids (strings or integers), "
                       f"got {_show(_get(row, cols, 'relevant_doc_ids'))}")
        missing = [d for d in gold if d not in doc_rows]
        if missing:
            raise _err(label, n, "relevant_doc_ids", cols, f"{len(missing)} gold id(s) not in the corpus {c_label}, "
                       f"first '{missing[0]}'{did_you_mean(missing[0], doc_rows) if len(doc_rows) <= 20000 else ''}")
        if not gold:
            if not keep_unanswerable:
                no_gold += 1
                continue
            kept += 1
        rid = _id(_get(row, cols, "id")) if "id" in cols else f"{name}-q{n:05d}"
        record = {"id": rid, "question": _get(row, cols, "question"), "relevant_doc_ids": gold,
                  "type": _get(row, cols, "type") or ("single" if gold else "unanswerable"),
                  "lang": _get(row, cols, "lang") or lang, "tags": ["dataset", name, *_tags(_get(row, cols, "tags"))]}
        if _get(row, cols, "reference_answer") is not None:
            record["reference_answer"] = _get(row, cols, "reference_answer")
        for f in ("history", "tenant", "attributes", "gold_route"):  # optional context, checked by the format
            if _get(row, cols, f) is not None:
                record[f] = _jsonable(_get(row, cols, f))
        records.append(record)
        numbered.append(n)
    written = _write(name, out_dir, label, cols, docs, records, numbered, force,
                     description or f"import of {label}: {len(records)} questions over {len(docs)} documents")
    return InteropImportResult(name=name, **written, n_documents=len(docs), n_rows=len(rows),
                               n_records=len(records), n_no_gold=no_gold, n_unanswerable_kept=kept, columns=cols)


def context_id(text: str) -> str:
    """The corpus id of a ragas context: ``ctx-`` + 16 hex of SHA-256 of the whitespace-collapsed text."""
    return "ctx-" + hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:16]


def import_ragas(source: str | Path, name: str, out_dir: str | Path, *, mapping: ColumnMap | None = None,
                 split: str | None = None, lang: str = "en", keep_unanswerable: bool = False,
                 include_retrieved: bool = True, force: bool = False,
                 description: str | None = None) -> InteropImportResult:
    """ragas samples -> a corpus of their contexts (deduplicated by content) + an eval set frozen as v1."""
    _check_name_lang(name, lang)
    label, rows, columns = read_rows(source, split)
    cols = resolve_columns(label, columns, mapping or {}, RAGAS_FIELDS, ("user_input", "reference_contexts"))
    docs: dict[str, dict[str, Any]] = {}
    records, numbered, no_gold, kept, dupes, responses = [], [], 0, 0, 0, 0
    for n, row in rows:
        ids: dict[str, list[str]] = {}
        for f in ("reference_contexts", "retrieved_contexts"):
            if f == "retrieved_contexts" and not include_retrieved:
                continue
            value = _get(row, cols, f)
            value = value.tolist() if hasattr(value, "tolist") else value
            if value is None:
                value = []
            if not isinstance(value, (list, tuple)) or not all(isinstance(t, str) for t in value):
                raise _err(label, n, f, cols, f"expected a list of context strings, got {_show(value)}")
            ids[f] = []
            for text in value:
                if not text.strip():
                    continue
                cid = context_id(text)
                if cid in docs:
                    dupes += 1
                else:
                    docs[cid] = {"id": cid, "title": "", "text": text.strip(),
                                 "metadata": {"ragas_field": f, "first_row": n}}
                ids[f].append(cid)
        gold = list(dict.fromkeys(ids["reference_contexts"]))
        responses += _get(row, cols, "response") is not None
        if not gold:
            if not keep_unanswerable:
                no_gold += 1
                continue
            kept += 1
        synth = str(_get(row, cols, "synthesizer_name") or "").lower().replace("-", "_")
        qtype = "unanswerable" if not gold else "multi_hop" if "multi_hop" in synth else "single"
        rid = _id(_get(row, cols, "id")) if "id" in cols else f"{name}-q{n:05d}"
        record = {"id": rid, "question": _get(row, cols, "user_input"), "relevant_doc_ids": gold, "type": qtype,
                  "lang": lang, "tags": ["ragas", name]}
        if _get(row, cols, "reference") is not None:
            record["reference_answer"] = _get(row, cols, "reference")
        records.append(record)
        numbered.append(n)
    field_names = {"question": "user_input", "reference_answer": "reference", "id": "id"}
    written = _write(name, out_dir, label, {k: cols[v] for k, v in field_names.items() if v in cols},
                     list(docs.values()), records, numbered, force,
                     description or f"ragas import of {label}: {len(records)} questions over {len(docs)} contexts")
    return InteropImportResult(name=name, **written, n_documents=len(docs), n_rows=len(rows), n_records=len(records),
                               n_no_gold=no_gold, n_unanswerable_kept=kept, n_duplicate_contexts=dupes,
                               n_responses_ignored=responses, columns=cols)


# ---------------------------------------------------------------------------------------- writing


def _check_name_lang(name: str, lang: str) -> None:
    from evalkit.evalsets.evalset import _LANG  # the eval set format's own language rule

    if not NAME_RE.fullmatch(name) or name.endswith(".jsonl"):
        raise EvalkitError(f"bad eval set name {name!r}: use letters, digits, '_', '-' and '.', starting with a "
                           "letter or digit, without '.jsonl'")
    if not isinstance(lang, str) or not _LANG.fullmatch(lang):
        raise EvalkitError(f"bad language code {lang!r}: use a code such as 'en' or 'zh'")


def _write(name: str, out_dir: str | Path, label: str, cols: ColumnMap, docs: list[dict[str, Any]],
           records: list[dict[str, Any]], numbered: list[int], force: bool, description: str) -> dict[str, Any]:
    """Check every record with the eval set format (errors name the source row), write, freeze v1."""
    from evalkit.evalsets import freeze
    from evalkit.evalsets.evalset import parse_record

    if not docs:
        raise ImportFormatError(label, "", "no documents to import: the corpus is empty")
    if not records:
        raise ImportFormatError(label, "", "no row has a gold document; nothing to import (--keep-unanswerable "
                                "imports them as unanswerable questions)")
    seen: dict[str, int] = {}
    lines = []
    for n, record in zip(numbered, records, strict=True):
        text = json.dumps(record, ensure_ascii=False)
        try:
            parse_record(label, n, text)
        except EvalSetError as exc:
            raise _err(label, n, exc.where, cols, exc.message) from exc
        if record["id"] in seen:
            raise _err(label, n, "id", cols, f"duplicate id '{record['id']}' (first in row {seen[record['id']]})")
        seen[record["id"]] = n
        lines.append(text + "\n")
    corpus_path, set_path, manifest_path = output_paths(out_dir, name)
    existing = [p for p in (set_path, manifest_path, corpus_path) if p.exists()]
    if existing and not force:
        raise EvalkitError(f"eval set '{name}' already exists ({', '.join(str(p) for p in existing)}); frozen "
                           "versions are never overwritten: choose another --name, or pass --force to replace it")
    for p in existing:
        p.unlink()
    corpus_path.parent.mkdir(parents=True, exist_ok=True)
    for path, text in ((corpus_path, "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs)),
                       (set_path, "".join(lines))):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8", newline="\n")
        os.replace(tmp, path)
    version = freeze(set_path, corpus=str(corpus_path), description=description)
    return {"corpus_path": corpus_path, "eval_set_path": set_path, "manifest_path": manifest_path, "version": version}


def _err(label: str, n: int, f: str, cols: ColumnMap, message: str) -> ImportFormatError:
    where = f"{f} (column '{cols[f]}')" if f in cols and cols[f] != f else f
    return ImportFormatError(label, where, message, line=n)


def _show(value: Any) -> str:
    text = json.dumps(_jsonable(value), ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."
