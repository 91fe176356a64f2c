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
``lang``, ``reference_answer``, ``tags``, ``relevance`` (graded judgements ``{doc id: grade}``
over the gold documents; grades <= 0 are dropped as "not relevant") and the optional context
``history``, ``tenant``, ``attributes``, ``gold_route`` (docs/eval_sets.md). Corpus fields: ``id``, ``text`` (required),
``title``; other columns go to the document's ``metadata``.

:func:`import_ragas` reads ragas samples (``user_input``, ``reference_contexts``,
``retrieved_contexts``, ``reference``, ``response``): every context becomes a corpus
document whose id is ``ctx-`` + 16 hex digits of the SHA-256 of its text with
whitespace collapsed (so equal passages share one id, and ids are stable across
imports); the gold ids of a question are its reference contexts' ids. ``reference``
becomes ``reference_answer``; ``response`` is a system output, not eval data: it stays
out of the eval set and is written beside it as ``NAME.responses.jsonl``, an ``evalkit
score --answers`` file of the imported records (id, question, answer, the retrieved
contexts, whose ids match the corpus); the summary prints the command. ``synthesizer_name``
containing ``multi_hop`` sets type ``multi_hop``.

Errors are :class:`~evalkit.importers.formats.ImportFormatError` naming the source,
the line of a JSONL file or the 1-based row of a parquet file or dataset, and the
field (with the column it was read from). Nothing is written until every row has
been read and checked; output is written as ``import beir`` writes it and frozen as v1.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitError, EvalSetError
from evalkit.evalsets import freeze
from evalkit.evalsets.evalset import close_ids, parse_record
from evalkit.evalsets.lang import record_lang, valid_default
from evalkit.fileio import ensure_folder, jsonl_lines, write_atomic
from evalkit.importers.beir import NAME_RE, output_paths
from evalkit.importers.formats import ImportFormatError
from evalkit.importers.registry import register_importer
from evalkit.importers.rows import (
    ColumnMap,
    _get,
    _grades,
    _id,
    _id_list,
    _jsonable,
    _tags,
    parse_mapping,
    read_rows,
    resolve_columns,
)
from evalkit.importers.skipped import Skipped, SkipReport
from evalkit.index.corpus import context_id
from evalkit.locking import evalset_lock

__all__ = ["CORPUS_FIELDS", "EVAL_FIELDS", "RAGAS_FIELDS", "ColumnMap", "InteropImportResult", "context_id",
           "import_dataset", "import_ragas", "parse_mapping", "read_rows", "resolve_columns"]

EVAL_FIELDS = ("id", "question", "relevant_doc_ids", "type", "lang", "reference_answer", "tags", "relevance", "history",
               "tenant", "attributes", "gold_route")
CORPUS_FIELDS = ("id", "title", "text")
RAGAS_FIELDS = ("id", "user_input", "reference_contexts", "retrieved_contexts", "reference", "response",
                "synthesizer_name")



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
    n_responses_ignored: int = 0  # responses of rows that are not in the eval set (no gold, invalid), or not text
    n_responses_source: str = ""  # the imported file (named when some responses were left out)
    responses_path: Path | None = None  # NAME.responses.jsonl: the kept responses as an `evalkit score` answers file
    n_responses: int = 0
    columns: dict[str, str] = field(default_factory=dict)
    n_skipped: int = 0  # invalid rows dropped by --skip-invalid
    skipped_report: Path | None = None

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
        if self.responses_path is not None:
            out.append(f"responses {self.n_responses} 'response' values (a system's outputs, not eval data) kept as "
                       f"an answers file {self.responses_path}; score them with `evalkit score --answers "
                       f"{self.responses_path} --eval-set {self.eval_set_path}@v{self.version['version']} --name "
                       "SYSTEM --output OUT.json`")
        if self.n_responses_ignored:
            out.append(f"ignored   {self.n_responses_ignored} 'response' values of {self.n_responses_source or 'rows'} "
                       "whose row is not in the eval set (or is not text)")
        if self.n_skipped:
            out.append(f"skipped   {self.n_skipped} invalid row(s) (--skip-invalid); file, line, field and value of "
                       f"each: {self.skipped_report}")
        return out


# ---------------------------------------------------------------------------------------- importing


@register_importer("dataset", summary="Hugging Face datasets saved to disk, parquet or JSONL, with a column mapping",
                   command="evalkit.commands.importers:dataset")
def import_dataset(source: str | Path, name: str, out_dir: str | Path, *, corpus: str | Path,
                   mapping: ColumnMap | None = None, corpus_mapping: ColumnMap | None = None,
                   split: str | None = None, corpus_split: str | None = None, lang: str = "auto",
                   keep_unanswerable: bool = False, force: bool = False,
                   description: str | None = None, skip_invalid: bool = False) -> InteropImportResult:
    """Questions from ``source``, documents from ``corpus`` -> ``OUT/corpora/NAME.jsonl``, frozen ``OUT/NAME.jsonl``.

    ``skip_invalid``: drop rows that fail a check (a gold id the corpus lacks, a malformed
    field) and list them in ``OUT/NAME.skipped.tsv`` (:mod:`evalkit.importers.skipped`)
    instead of stopping at the first. The corpus itself is always checked strictly.
    """
    _check_name_lang(name, lang)
    label, rows, columns = read_rows(source, split)
    cols = resolve_columns(label, columns, mapping or {}, EVAL_FIELDS, ("question", "relevant_doc_ids"))
    c_label, c_rows, c_columns = read_rows(corpus, corpus_split)
    c_cols = resolve_columns(c_label, c_columns, corpus_mapping or {}, CORPUS_FIELDS, ("id", "text"), "--corpus-map")
    docs: list[dict[str, Any]] = []
    doc_rows: dict[str, int] = {}
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
    skips = SkipReport(skip_invalid)
    for n, row in rows:
        gold = _id_list(_get(row, cols, "relevant_doc_ids"))
        if gold is None:
            _skip_or_raise(skips, _err(label, n, "relevant_doc_ids", cols, "expected a list of document ids (strings "
                           f"or integers), got {_show(_get(row, cols, 'relevant_doc_ids'))}"),
                           _get(row, cols, "relevant_doc_ids"))
            continue
        missing = [d for d in gold if d not in doc_rows]
        if missing:
            if not skips.enabled:
                raise _err(label, n, "relevant_doc_ids", cols, f"{len(missing)} gold id(s) not in the corpus "
                           f"{c_label}, first '{missing[0]}'{close_ids(missing[0], doc_rows)} (--skip-invalid drops "
                           "such rows and lists them)")
            for d in missing:
                skips.add(Skipped.from_error(_err(label, n, "relevant_doc_ids", cols, f"gold id not in the corpus "
                                                  f"{c_label}{close_ids(d, doc_rows)}"), d))
            continue
        if not gold:
            if not keep_unanswerable:
                no_gold += 1
                continue
            kept += 1
        rid = _id(_get(row, cols, "id")) if "id" in cols else f"{name}-q{n:05d}"
        record = {"id": rid, "question": _get(row, cols, "question"), "relevant_doc_ids": gold,
                  "type": _get(row, cols, "type") or ("single" if gold else "unanswerable"),
                  "lang": _get(row, cols, "lang") or record_lang(lang, _str(_get(row, cols, "question"))),
                  "tags": ["dataset", name, *_tags(_get(row, cols, "tags"))]}
        if _get(row, cols, "reference_answer") is not None:
            record["reference_answer"] = _get(row, cols, "reference_answer")
        grades = _grades(_get(row, cols, "relevance"))
        if grades is not None:
            record["relevance"] = grades
        for f in ("history", "tenant", "attributes", "gold_route"):  # optional context, checked by the format
            if _get(row, cols, f) is not None:
                record[f] = _jsonable(_get(row, cols, f))
        records.append(record)
        numbered.append(n)
    written = _write(name, out_dir, label, cols, docs, records, numbered, force,
                     description or f"import of {label}: {len(records)} questions over {len(docs)} documents", skips)
    return InteropImportResult(name=name, **written, n_documents=len(docs), n_rows=len(rows),
                               n_no_gold=no_gold, n_unanswerable_kept=kept, columns=cols)


@register_importer("ragas", summary="ragas samples: the contexts become the corpus, reference contexts the gold",
                   command="evalkit.commands.importers:ragas")
def import_ragas(source: str | Path, name: str, out_dir: str | Path, *, mapping: ColumnMap | None = None,
                 split: str | None = None, lang: str = "auto", keep_unanswerable: bool = False,
                 include_retrieved: bool = True, force: bool = False,
                 description: str | None = None, skip_invalid: bool = False) -> InteropImportResult:
    """ragas samples -> a corpus of their contexts (deduplicated by content) + an eval set frozen as v1.

    ``skip_invalid`` drops malformed rows and lists them, as in :func:`import_dataset`.
    """
    _check_name_lang(name, lang)
    label, rows, columns = read_rows(source, split)
    cols = resolve_columns(label, columns, mapping or {}, RAGAS_FIELDS, ("user_input", "reference_contexts"))
    docs: dict[str, dict[str, Any]] = {}
    records, numbered, no_gold, kept, dupes, responses = [], [], 0, 0, 0, 0
    answers: dict[str, dict[str, Any]] = {}  # record id -> the row's response as an answers-file row
    skips = SkipReport(skip_invalid)
    for n, row in rows:
        ids: dict[str, list[str]] = {}
        bad = [f for f in ("reference_contexts", "retrieved_contexts") if not _context_list(_get(row, cols, f))]
        if bad:
            value = _get(row, cols, bad[0])
            _skip_or_raise(skips, _err(label, n, bad[0], cols, f"expected a list of context strings, got "
                                       f"{_show(value)}"), value)
            continue
        for f in ("reference_contexts", "retrieved_contexts"):
            if f == "retrieved_contexts" and not include_retrieved:
                continue
            value = _get(row, cols, f)
            value = value.tolist() if hasattr(value, "tolist") else value
            if value is None:
                value = []
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
                  "lang": record_lang(lang, _str(_get(row, cols, "user_input"))), "tags": ["ragas", name]}
        if _get(row, cols, "reference") is not None:
            record["reference_answer"] = _get(row, cols, "reference")
        records.append(record)
        numbered.append(n)
        response = _get(row, cols, "response")
        if isinstance(response, str) and rid is not None:  # a record without an id is refused by _write
            contexts = _get(row, cols, "retrieved_contexts")
            contexts = contexts.tolist() if hasattr(contexts, "tolist") else contexts
            answers.setdefault(rid, {"id": rid, "question": record["question"], "answer": response,
                                     "contexts": [t for t in contexts or [] if t.strip()]})
    field_names = {"question": "user_input", "reference_answer": "reference", "id": "id"}
    written = _write(name, out_dir, label, {k: cols[v] for k, v in field_names.items() if v in cols},
                     list(docs.values()), records, numbered, force,
                     description or f"ragas import of {label}: {len(records)} questions over {len(docs)} contexts",
                     skips)
    kept_answers, responses_path = _write_responses(written["eval_set_path"], answers)
    return InteropImportResult(name=name, **written, n_documents=len(docs), n_rows=len(rows),
                               n_no_gold=no_gold, n_unanswerable_kept=kept, n_duplicate_contexts=dupes,
                               n_responses_ignored=responses - kept_answers,
                               n_responses_source=str(source) if responses > kept_answers else "",
                               responses_path=responses_path, n_responses=kept_answers, columns=cols)


def _write_responses(set_path: Path, answers: dict[str, dict[str, Any]]) -> tuple[int, Path | None]:
    """Write the responses of the records the eval set kept as ``NAME.responses.jsonl`` beside it.

    One ``evalkit score --answers`` row per record (id, question, answer, contexts: the
    retrieved contexts the response was written from); the reference answer stays in the
    eval set. Returns (rows written, path or None when there are none).
    """
    path = set_path.with_name(set_path.name.removesuffix(".jsonl") + ".responses.jsonl")
    ids = [json.loads(line)["id"] for line in jsonl_lines(set_path.read_text(encoding="utf-8")) if line.strip()]
    rows = [answers[i] for i in ids if i in answers]
    if not rows:
        path.unlink(missing_ok=True)  # a re-import (--force) without responses leaves none from before
        return 0, None
    write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), hint="choose another --out-dir")
    return len(rows), path


# ---------------------------------------------------------------------------------------- writing


def _str(value: Any) -> str | None:
    """``value`` when it is text (what a language guess may read), else None."""
    return value if isinstance(value, str) else None


def _check_name_lang(name: str, lang: str) -> None:
    if not NAME_RE.fullmatch(name) or name.endswith(".jsonl"):
        raise EvalkitError(f"bad eval set name {name!r}: use letters, digits, '_', '-' and '.', starting with a "
                           "letter or digit, without '.jsonl'")
    if not valid_default(lang):
        raise EvalkitError(f"bad language code {lang!r}: use a code such as 'en' or 'zh', or auto")


def _write(name: str, out_dir: str | Path, label: str, cols: ColumnMap, docs: list[dict[str, Any]],
           records: list[dict[str, Any]], numbered: list[int], force: bool, description: str,
           skips: SkipReport) -> dict[str, Any]:
    """Check every record with the eval set format (errors name the source row), write, freeze v1.

    With ``skips.enabled`` a record that fails is dropped and listed instead; the report
    is written beside the eval set.
    """
    if not docs:
        raise ImportFormatError(label, "", "no documents to import: the corpus is empty")
    seen: dict[str, int] = {}
    lines = []
    for n, record in zip(numbered, records, strict=True):
        text = json.dumps(record, ensure_ascii=False)
        try:
            parse_record(label, n, text)
        except EvalSetError as exc:
            _skip_or_raise(skips, _err(label, n, exc.where, cols, exc.message), record.get(exc.where), exc)
            continue
        if record["id"] in seen:
            _skip_or_raise(skips, _err(label, n, "id", cols, f"duplicate id '{record['id']}' (first in row "
                                       f"{seen[record['id']]})"), record["id"])
            continue
        seen[record["id"]] = n
        lines.append(text + "\n")
    if not lines:
        more = f"; {len(skips)} invalid row(s) were skipped" if len(skips) else ""
        raise ImportFormatError(label, "", f"no row has a gold document; nothing to import (--keep-unanswerable "
                                f"imports them as unanswerable questions){more}")
    corpus_path, set_path, manifest_path = output_paths(out_dir, name)
    ensure_folder(set_path.parent, "choose another --out-dir")
    with evalset_lock(set_path, note=lambda m: print(m, file=sys.stderr, flush=True)):  # no append/freeze meanwhile
        existing = [p for p in (set_path, manifest_path, corpus_path) if p.exists()]
        if existing and not force:
            raise EvalkitError(f"eval set '{name}' already exists ({', '.join(str(p) for p in existing)}); frozen "
                               "versions are never overwritten: choose another --name, or pass --force to replace it")
        for p in existing:
            p.unlink()
        for path, text in ((corpus_path, "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs)),
                           (set_path, "".join(lines))):
            write_atomic(path, text, hint="choose another --out-dir")
        version = freeze(set_path, corpus=str(corpus_path), description=description)
    report = skips.write(set_path)
    return {"corpus_path": corpus_path, "eval_set_path": set_path, "manifest_path": manifest_path, "version": version,
            "n_records": len(lines), "n_skipped": len(skips), "skipped_report": report}


def _skip_or_raise(skips: SkipReport, error: ImportFormatError, value: Any, cause: Exception | None = None) -> None:
    """Drop the row and list it (``--skip-invalid``), or raise ``error``."""
    if not skips.enabled:
        raise error from cause
    skips.add(Skipped.from_error(error, value))


def _context_list(value: Any) -> bool:
    """Whether a ragas contexts cell is a list of strings (or empty)."""
    value = value.tolist() if hasattr(value, "tolist") else value
    return value is None or (isinstance(value, (list, tuple)) and all(isinstance(t, str) for t in value))


def _err(label: str, n: int, f: str, cols: ColumnMap, message: str) -> ImportFormatError:
    where = f"{f} (column '{cols[f]}')" if f in cols and cols[f] != f else f
    return ImportFormatError(label, where, message, line=n)


def _show(value: Any) -> str:
    text = json.dumps(_jsonable(value), ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."
