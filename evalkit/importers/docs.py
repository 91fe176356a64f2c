"""``evalkit import docs``: a folder of PDF, Word, HTML, Markdown and text files to a corpus.

    from evalkit.importers.docs import import_docs
    result = import_docs("handbook/", "handbook", "eval_sets")
    result.corpus_path, result.n_documents, result.skipped

Every file whose suffix has a reader (:data:`evalkit.importers.doc_readers.READERS`) becomes
one document, in the order of the files' relative paths::

    {"id": "policies/travel.pdf", "title": "差旅费报销制度", "text": "...",
     "metadata": {"source": "policies/travel.pdf", "format": "pdf", "sha256": "<16 hex of the file>",
                  "tables": 1, "pages": 3, "page_starts": [0, 812, 1630]}}

- **id**: the path relative to the folder, ``/``-separated, with whitespace and ``#`` (which
  passage ids use: ``DOC#3``) replaced by ``_``; when two paths give one id, each gets ``~``
  and 8 hex digits of its path's SHA-256. Ids and the output depend only on the files'
  paths and bytes, so importing an unchanged folder again writes the same corpus, byte for byte.
- **text**: Markdown-like (headings ``#``, tables as ``| a | b |`` rows that
  ``chunking: {table: true}`` keeps whole); **pages** and **page_starts** (the character
  offset where each page starts; ``Passages.pages`` maps a chunk to its pages) for PDFs.

A file that cannot be read (damaged, encrypted, no text layer, not UTF-8, no permission, a
name that is not UTF-8) is
skipped with a message naming it and saying what to do, and listed in
``OUT/corpora/NAME.skipped.tsv`` (:mod:`evalkit.importers.skipped`); the others are imported.
Files of other kinds, hidden files and Office lock files (``~$x.docx``) are left out and
counted by suffix. The import fails, writing nothing, when no document is left.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitError
from evalkit.extras import check
from evalkit.fileio import ensure_folder, write_atomic
from evalkit.importers.beir import NAME_RE, output_paths
from evalkit.importers.doc_readers import FEATURE, READERS, DocReadError, ParsedDoc
from evalkit.importers.registry import register_importer
from evalkit.importers.skipped import Skipped, SkipReport
from evalkit.index.tables import table_spans

_UNSAFE_ID = re.compile(r"[\s#]+")


@dataclass
class DocsImportResult:
    """What ``import docs`` wrote, what it skipped and what it left out."""

    name: str
    corpus_path: Path
    n_documents: int
    by_format: dict[str, int]
    n_pages: int
    n_tables: int
    skipped: list[Skipped] = field(default_factory=list)
    skipped_report: Path | None = None
    ignored: dict[str, int] = field(default_factory=dict)  # suffix -> files of kinds no reader takes

    def lines(self) -> list[str]:
        """A human summary, one fact per line; every skipped file with its reason."""
        kinds = ", ".join(f"{n} {fmt}" for fmt, n in sorted(self.by_format.items()))
        out = [f"corpus    {self.corpus_path}: {self.n_documents} documents ({kinds}); {self.n_pages} PDF pages, "
               f"{self.n_tables} tables (as Markdown rows)"]
        for s in self.skipped:
            out.append(f"skipped   {s.file}: {s.problem}")
        if self.skipped:
            out.append(f"skipped   {len(self.skipped)} file(s), listed in {self.skipped_report}")
        if self.ignored:
            kinds = ", ".join(f"{suffix or '(no suffix)'}: {n}" for suffix, n in sorted(self.ignored.items()))
            out.append(f"ignored   {sum(self.ignored.values())} file(s) of other kinds ({kinds}); "
                       f"read: {', '.join(sorted(READERS))}")
        return out


def shown(name: str) -> str:
    """A file name as it can be printed and written: bytes that are not UTF-8 become \ufffd."""
    return os.fsencode(name).decode("utf-8", "replace")


def doc_id(relative: str) -> str:
    """The document id of a file at ``relative`` (a ``/``-separated path inside the imported folder)."""
    return _UNSAFE_ID.sub("_", relative.strip())


def _ids(paths: list[str]) -> dict[str, str]:
    """``{relative path: id}``; paths whose ids collide each get ``~`` + 8 hex digits of their path's SHA-256."""
    counts = Counter(doc_id(p) for p in paths)
    return {p: doc_id(p) if counts[doc_id(p)] == 1 else
            f"{doc_id(p)}~{hashlib.sha256(p.encode('utf-8')).hexdigest()[:8]}" for p in paths}


def list_files(folder: Path) -> tuple[list[Path], dict[str, int]]:
    """Files under ``folder`` a reader takes (sorted by relative path), and the suffixes of the others."""
    taken: list[Path] = []
    ignored: Counter[str] = Counter()
    for path in folder.rglob("*"):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts) or path.name.startswith("~$") or not path.is_file():
            continue
        if path.suffix.lower() in READERS:
            taken.append(path)
        else:
            ignored[path.suffix.lower()] += 1
    return sorted(taken, key=lambda p: p.relative_to(folder).as_posix()), dict(ignored)


def read_document(path: Path, relative: str, id_: str) -> dict[str, Any]:
    """The corpus record of one file; :class:`DocReadError` when it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DocReadError(f"cannot read the file ({exc.strerror or exc}); check its permissions") from exc
    parsed: ParsedDoc = READERS[path.suffix.lower()](data, path.stem)
    meta: dict[str, Any] = {"source": relative, "format": parsed.format,
                            "sha256": hashlib.sha256(data).hexdigest()[:16],
                            "tables": len(table_spans(parsed.text))}
    if parsed.page_starts:
        meta["pages"] = len(parsed.page_starts)
        meta["page_starts"] = parsed.page_starts
    return {"id": id_, "title": _encodable(parsed.title), "text": _encodable(parsed.text), "metadata": meta}


def _encodable(text: str) -> str:
    """``text`` with lone surrogates (a parser's reading of broken bytes) replaced, so it can be written as UTF-8."""
    return text.encode("utf-8", "replace").decode("utf-8")


@register_importer("docs", summary="a folder of PDF, Word, HTML, Markdown and text files: a corpus only",
                   command="evalkit.commands.importers:docs")
def import_docs(folder: str | Path, name: str, out_dir: str | Path = "eval_sets", *,
                force: bool = False) -> DocsImportResult:
    """Read every document file under ``folder`` and write the corpus ``OUT/corpora/NAME.jsonl``.

    Raises :class:`EvalkitError` when the folder holds no readable document, the name is
    bad, or the corpus exists (unless ``force``); unreadable files are skipped and reported.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise EvalkitError(f"{folder}: no such folder; give the folder holding your PDF, Word, HTML and Markdown "
                           "files")
    if not NAME_RE.fullmatch(name) or name.endswith(".jsonl"):
        raise EvalkitError(f"bad corpus name {name!r}: use letters, digits, '_', '-' and '.', starting with a "
                           "letter or digit, without '.jsonl' (e.g. handbook)")
    check("docs", FEATURE)
    corpus_path = output_paths(out_dir, name)[0]
    if corpus_path.exists() and not force:
        raise EvalkitError(f"corpus '{name}' already exists ({corpus_path}); choose another --name, or pass --force "
                           "to replace it (an unchanged folder gives the same file)")
    files, ignored = list_files(folder)
    rels = [p.relative_to(folder).as_posix() for p in files]
    ids = _ids(rels)
    docs: list[dict[str, Any]] = []
    skips = SkipReport(enabled=True)
    for path, rel in zip(files, rels):
        try:
            if shown(rel) != rel:  # bytes the file system holds that are not UTF-8 (Python keeps them as surrogates)
                raise DocReadError("the file name is not valid UTF-8 (bad bytes shown as \ufffd); rename the file")
            docs.append(read_document(path, rel, ids[rel]))
        except DocReadError as exc:
            skips.add(Skipped(shown(str(path)), None, "file", path.suffix.lower(), str(exc)))
    if not docs:
        why = (f"all {len(files)} document file(s) were unreadable: " + "; ".join(
            f"{s.file}: {s.problem}" for s in skips.rows[:3])) if files else (
            f"no PDF, Word (.docx), HTML, Markdown or text file in it (read: {', '.join(sorted(READERS))})")
        raise EvalkitError(f"{folder}: nothing to import; {why}")
    ensure_folder(corpus_path.parent, "choose another --out-dir")
    write_atomic(corpus_path, b"".join((json.dumps(d, ensure_ascii=False) + "\n").encode("utf-8") for d in docs),
                 hint="choose another --out-dir")
    report = skips.write(corpus_path)
    return DocsImportResult(
        name=name, corpus_path=corpus_path, n_documents=len(docs),
        by_format=dict(Counter(d["metadata"]["format"] for d in docs)),
        n_pages=sum(d["metadata"].get("pages", 0) for d in docs),
        n_tables=sum(d["metadata"]["tables"] for d in docs), skipped=skips.rows, skipped_report=report,
        ignored=ignored)
