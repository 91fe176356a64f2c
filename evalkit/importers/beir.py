"""Import BEIR-style retrieval data as an evalkit corpus plus a frozen eval set.

Two input layouts, formats detected from the files' contents (not their names):

* a BEIR folder: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``
  (``.gz`` versions of each are found too);
* explicit files, as Anserini and pyserini ship them:

  - corpus: JSONL, one ``{"_id", "title", "text", ...}`` per line (``id`` accepted
    for ``_id``; every other field goes to the document's ``metadata``);
  - queries: JSONL ``{"_id", "text"}`` or TSV ``id<TAB>text``;
  - qrels: BEIR TSV ``query-id<TAB>corpus-id<TAB>score`` (header optional) or TREC
    ``qid iter docid rel`` (whitespace separated).

Any file may be gzip-compressed (detected by its magic bytes). Output, for ``NAME``::

    OUT/corpora/NAME.jsonl   {"id", "title", "text", "metadata"} per document
    OUT/NAME.jsonl           {"id", "question", "relevant_doc_ids", "type": "single",
                              "lang", "tags": ["beir", NAME]} per query
    OUT/NAME.manifest.json   version 1, frozen with :func:`evalkit.evalsets.freeze`

``relevant_doc_ids`` are the documents judged ``rel > 0``, in qrels order; when a query has a
grade other than 1 (graded qrels: 1/2/3), its grades are kept as ``relevance: {doc id: grade}``
(nDCG uses them as gains; recall, hit and MRR count grades >= the run's
``--relevance-level``). Judgements of 0 or below mean "not relevant" and are not kept. Queries the
qrels never mention (other splits) are not imported; queries judged but with no
positive judgement are skipped unless ``keep_unanswerable`` (then they are written as
``type: unanswerable``, empty gold list). Records follow the queries file's order.

Every malformed input raises :class:`ImportFormatError` naming the file and the line;
nothing is written until every input has been read and checked. With ``skip_invalid``,
judgements of queries the queries file lacks and queries whose relevant documents the
corpus lacks are dropped instead, and listed in ``OUT/NAME.skipped.tsv``
(:mod:`evalkit.importers.skipped`).
"""
from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitError
from evalkit.evalsets import freeze
from evalkit.evalsets.evalset import parse_records
from evalkit.evalsets.lang import record_lang, valid_default
from evalkit.fileio import ensure_folder, output_error, write_atomic
from evalkit.importers.formats import (
    ImportFormatError,
    Qrels,
    iter_corpus,
    read_qrels,
    read_queries,
)
from evalkit.importers.registry import register_importer
from evalkit.importers.skipped import Skipped, SkipReport
from evalkit.locking import evalset_lock

EVAL_SETS_DIR = Path("eval_sets")
SPLIT_DEFAULT = "test"
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass
class BeirFiles:
    """The three input files of one import."""

    corpus: Path
    queries: Path
    qrels: Path

    @classmethod
    def from_folder(cls, folder: str | Path, split: str = SPLIT_DEFAULT, corpus: str | Path | None = None,
                    queries: str | Path | None = None, qrels: str | Path | None = None) -> BeirFiles:
        """The files of a BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``).

        An explicit ``corpus``/``queries``/``qrels`` replaces the folder's file of that kind.
        """
        folder = Path(folder)
        if not folder.is_dir():
            raise ImportFormatError(str(folder), "", "no such folder (expected a BEIR folder holding corpus.jsonl, "
                                    "queries.jsonl and qrels/<split>.tsv)")

        def find(given: str | Path | None, *names: str) -> Path:
            if given is not None:
                return Path(given)
            for name in names:
                for candidate in (folder / name, folder / f"{name}.gz"):
                    if candidate.is_file():
                        return candidate
            present = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())[:12]
            raise ImportFormatError(str(folder), "", f"no {names[0]} in this folder (present: "
                                    f"{', '.join(present) or 'nothing'}); pass the file with its option instead")

        qrels_path = qrels
        if qrels_path is None:
            qdir = folder / "qrels"
            splits = sorted(p.name.split(".")[0] for p in qdir.glob("*.tsv*")) if qdir.is_dir() else []
            candidates = [qdir / f"{split}.tsv", qdir / f"{split}.tsv.gz"]
            qrels_path = next((p for p in candidates if p.is_file()), None)
            if qrels_path is None:
                hint = f"splits found: {', '.join(splits)}" if splits else "the folder has no qrels/*.tsv"
                raise ImportFormatError(str(qdir / f"{split}.tsv"), "", f"no qrels for split '{split}' ({hint}); "
                                        "choose one with --split, or pass --qrels FILE")
        return cls(corpus=find(corpus, "corpus.jsonl"), queries=find(queries, "queries.jsonl", "queries.tsv"),
                   qrels=Path(qrels_path))


@dataclass
class ImportResult:
    """What an import wrote and what it left out."""

    name: str
    corpus_path: Path
    eval_set_path: Path
    manifest_path: Path
    version: dict[str, Any]
    n_documents: int
    n_queries_read: int
    n_records: int
    n_qrels: int
    n_positive_qrels: int
    n_unjudged: int = 0
    n_no_positive: int = 0
    n_unanswerable_kept: int = 0
    n_graded: int = 0
    formats: dict[str, str] = field(default_factory=dict)
    n_skipped: int = 0  # invalid judgements dropped by --skip-invalid, listed in skipped_report
    skipped_report: Path | None = None

    def lines(self) -> list[str]:
        """A human summary, one fact per line."""
        out = [
            f"corpus    {self.corpus_path}: {self.n_documents} documents ({self.formats.get('corpus', '?')})",
            f"queries   read {self.n_queries_read} ({self.formats.get('queries', '?')}); "
            f"qrels {self.n_qrels} judgements, {self.n_positive_qrels} with rel > 0 "
            f"({self.formats.get('qrels', '?')})",
            f"eval set  {self.eval_set_path}: {self.n_records} records, frozen as v{self.version['version']} "
            f"(sha256 {self.version['sha256']})",
        ]
        if self.n_graded:
            out.append(f"graded    {self.n_graded} queries have relevance grades other than 1: kept as 'relevance' "
                       "(gains of nDCG; see --relevance-level of evalkit run)")
        if self.n_unjudged:
            out.append(f"skipped   {self.n_unjudged} queries the qrels do not mention (other splits)")
        if self.n_no_positive:
            out.append(f"skipped   {self.n_no_positive} judged queries without a relevant document "
                       "(--keep-unanswerable keeps them as type 'unanswerable')")
        if self.n_unanswerable_kept:
            out.append(f"kept      {self.n_unanswerable_kept} judged queries without a relevant document, "
                       "as type 'unanswerable'")
        if self.n_skipped:
            out.append(f"skipped   {self.n_skipped} invalid judgement(s) (--skip-invalid); file, line, field and "
                       f"value of each: {self.skipped_report}")
        return out


# ---------------------------------------------------------------------------------------- reading


def output_paths(out_dir: str | Path, name: str) -> tuple[Path, Path, Path]:
    """``(corpus, eval set, manifest)`` paths of eval set ``name`` under ``out_dir``."""
    out = Path(out_dir)
    return out / "corpora" / f"{name}.jsonl", out / f"{name}.jsonl", out / f"{name}.manifest.json"


@register_importer("beir", summary="BEIR folders and Anserini/pyserini files (corpus, queries, qrels)",
                   command="evalkit.commands.importers:beir")
def import_beir(files: BeirFiles, name: str, out_dir: str | Path = EVAL_SETS_DIR, *, lang: str = "auto",
                force: bool = False, keep_unanswerable: bool = False,
                description: str | None = None, skip_invalid: bool = False) -> ImportResult:
    """Read ``files``, write the corpus and the eval set under ``out_dir``, and freeze v1.

    Raises :class:`ImportFormatError` for malformed input (file and line named) and
    :class:`EvalkitError` when the output exists (unless ``force``). All inputs are read
    and checked before anything is written.
    """
    if not NAME_RE.fullmatch(name) or name.endswith(".jsonl"):
        raise EvalkitError(f"bad eval set name {name!r}: use letters, digits, '_', '-' and '.', starting with a "
                           "letter or digit, without '.jsonl' (e.g. scifact)")
    if not valid_default(lang):
        raise EvalkitError(f"bad language code {lang!r}: use a code such as 'en' or 'zh' (every record gets it), "
                           "or auto (by the question's script)")
    corpus_path, set_path, manifest_path = output_paths(out_dir, name)
    existing = [p for p in (set_path, manifest_path, corpus_path) if p.exists()]
    if existing and not force:
        raise EvalkitError(f"eval set '{name}' already exists ({', '.join(str(p) for p in existing)}); frozen "
                           "versions are never overwritten: choose another --name, or pass --force to replace it")

    queries, q_format = read_queries(files.queries)
    qrels = read_qrels(files.qrels)
    skips = SkipReport(skip_invalid)
    unknown_q = [q for q in qrels.judgements if q not in queries]
    if unknown_q and not skip_invalid:
        first = unknown_q[0]
        line = qrels.lines[(first, next(iter(qrels.judgements[first])))]
        raise ImportFormatError(str(files.qrels), "", f"{len(unknown_q)} judged query id(s) not in "
                                f"{files.queries}, first '{first}'; are the qrels and queries from the same "
                                "dataset? (--skip-invalid drops such judgements and lists them)", line=line)
    for qid in unknown_q:  # --skip-invalid: judgements of queries the queries file lacks
        for doc in qrels.judgements[qid]:
            skips.add(Skipped(str(files.qrels), qrels.lines[(qid, doc)], "query-id", qid,
                              f"judged query not in {files.queries}"))

    # records: queries-file order; gold = docs with rel > 0 in qrels order
    records: list[dict[str, Any]] = []
    n_unjudged = n_no_positive = n_unanswerable = n_graded = 0
    for qid, text in queries.items():
        if qid not in qrels.judgements:
            n_unjudged += 1
            continue
        gold = qrels.positive(qid)
        if not gold:
            if not keep_unanswerable:
                n_no_positive += 1
                continue
            n_unanswerable += 1
        record: dict[str, Any] = {"id": qid, "question": text, "relevant_doc_ids": gold,
                  "type": "single" if gold else "unanswerable", "lang": record_lang(lang, text),
                  "tags": ["beir", name]}
        grades = {d: qrels.judgements[qid][d] for d in gold}
        if any(g != 1 for g in grades.values()):  # graded qrels keep their grades (binary ones stay as they were)
            record["relevance"] = grades
            n_graded += 1
        records.append(record)
    if not records:
        raise ImportFormatError(str(files.qrels), "", f"no query has a relevant document (rel > 0) among the "
                                f"{len(queries)} queries of {files.queries}; nothing to import")
    gold_ids: dict[str, list[str]] = {}  # gold doc -> the queries naming it, until the corpus shows it
    for r in records:
        for d in r["relevant_doc_ids"]:
            gold_ids.setdefault(d, []).append(r["id"])
    ensure_folder(corpus_path.parent, "choose another --out-dir")
    tmp_corpus = corpus_path.with_name(corpus_path.name + ".tmp")
    n_docs = 0
    try:
        with open(tmp_corpus, "w", encoding="utf-8", newline="\n") as out:
            for _, passage in iter_corpus(files.corpus):
                gold_ids.pop(passage["id"], None)
                out.write(json.dumps(passage, ensure_ascii=False) + "\n")
                n_docs += 1
        if n_docs == 0:
            raise ImportFormatError(str(files.corpus), "", "the corpus holds no documents")
        if gold_ids and not skip_invalid:
            doc_id, qids = next(iter(gold_ids.items()))
            raise ImportFormatError(str(files.qrels), "", f"{len(gold_ids)} relevant document id(s) not in the "
                                    f"corpus {files.corpus}, first '{doc_id}' (query '{qids[0]}'); is the corpus "
                                    "complete? (--skip-invalid drops such queries and lists them)",
                                    line=qrels.lines[(qids[0], doc_id)])
        dropped = {q for qids in gold_ids.values() for q in qids}
        for doc_id, qids in gold_ids.items():
            for qid in qids:
                skips.add(Skipped(str(files.qrels), qrels.lines[(qid, doc_id)], "corpus-id", doc_id,
                                  f"relevant document of query '{qid}' not in the corpus {files.corpus}"))
        records = [r for r in records if r["id"] not in dropped]
        if not records:
            raise ImportFormatError(str(files.qrels), "", f"every query names a relevant document the corpus "
                                    f"{files.corpus} lacks ({len(skips)} skipped); nothing to import")
        lines = [(json.dumps(r, ensure_ascii=False) + "\n").encode("utf-8") for r in records]
        parse_records(str(set_path), lines)  # the eval set format's own checks (lang, ids...) before writing
    except OSError as exc:  # writing the corpus copy (reading errors are ImportFormatError)
        tmp_corpus.unlink(missing_ok=True)
        raise output_error(corpus_path, exc, "choose another --out-dir") from None
    except BaseException:
        tmp_corpus.unlink(missing_ok=True)
        raise

    text = description if description is not None else (
        f"BEIR import of {files.qrels.name}: {len(records)} queries over {n_docs} documents")
    with evalset_lock(set_path, note=lambda m: print(m, file=sys.stderr, flush=True)):  # no append/freeze meanwhile
        existing = [p for p in (set_path, manifest_path, corpus_path) if p.exists()]
        if existing and not force:  # written by another process while this one read its input
            tmp_corpus.unlink(missing_ok=True)
            raise EvalkitError(f"eval set '{name}' already exists ({', '.join(str(p) for p in existing)}); frozen "
                               "versions are never overwritten: choose another --name, or pass --force to replace it")
        for p in existing:
            p.unlink()
        os.replace(tmp_corpus, corpus_path)
        write_atomic(set_path, b"".join(lines), hint="choose another --out-dir")
        version = freeze(set_path, corpus=str(corpus_path), description=text)
    report = skips.write(set_path)
    return ImportResult(
        name=name, corpus_path=corpus_path, eval_set_path=set_path, manifest_path=manifest_path, version=version,
        n_documents=n_docs, n_queries_read=len(queries), n_records=len(records), n_qrels=len(qrels),
        n_positive_qrels=sum(len(qrels.positive(q)) for q in qrels.judgements), n_unjudged=n_unjudged,
        n_no_positive=n_no_positive, n_unanswerable_kept=n_unanswerable, n_graded=n_graded,
        n_skipped=len(skips), skipped_report=report,
        formats={"corpus": "jsonl", "queries": q_format, "qrels": qrels.format})


__all__ = ["BeirFiles", "ImportFormatError", "ImportResult", "Qrels", "import_beir", "iter_corpus", "output_paths",
           "read_qrels", "read_queries"]
