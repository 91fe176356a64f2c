"""The corpus: JSONL documents (``id``, ``title``, ``text``, optional ``metadata``)."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from evalkit.errors import EvalSetError
from evalkit.fileio import describe_unencodable, jsonl_lines, unencodable
from evalkit.records import Document
from evalkit.runstore import record_parser


@dataclass
class Corpus:
    """Documents in file order, looked up by id; ``sha256`` identifies the content."""

    path: str
    documents: list[Document]
    sha256: str
    by_id: dict[str, Document] = field(init=False)

    def __post_init__(self) -> None:
        self.by_id = {d.id: d for d in self.documents}

    def __len__(self) -> int:
        return len(self.documents)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self.by_id


def load_corpus(path: str | Path) -> Corpus:
    """Read a corpus JSONL file; a bad line raises ``EvalSetError`` naming file, line, field."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise EvalSetError(str(path), "", f"cannot read corpus ({exc.strerror})") from exc
    docs: list[Document] = []
    seen: dict[str, int] = {}
    parse = record_parser(raw)  # json.loads, or orjson where it reads the very same values (~5x faster)
    for lineno, line in enumerate(jsonl_lines(raw.decode("utf-8")), start=1):
        if not line.strip():
            continue
        try:
            obj = parse(line)
        except json.JSONDecodeError as exc:
            raise EvalSetError(str(path), "", f"not valid JSON ({exc.msg})", line=lineno) from exc
        if not isinstance(obj, dict):
            raise EvalSetError(str(path), "", "each line must be a JSON object", line=lineno)
        bad = unencodable(obj) if "\\u" in line else None  # a lone surrogate would kill the run that writes it
        if bad:
            raise EvalSetError(str(path), bad[0], describe_unencodable(bad), line=lineno)
        doc_id = obj.get("id", obj.get("_id"))
        if not isinstance(doc_id, str) or not doc_id:
            raise EvalSetError(str(path), "id", "missing or empty document id (a non-empty string)", line=lineno)
        text = obj.get("text")
        if not isinstance(text, str):
            raise EvalSetError(str(path), "text", f"document '{doc_id}' has no 'text' string", line=lineno)
        title = obj.get("title") or ""
        if not isinstance(title, str):
            raise EvalSetError(str(path), "title", f"document '{doc_id}': title must be a string", line=lineno)
        meta = obj.get("metadata") or {}
        if not isinstance(meta, dict):
            raise EvalSetError(str(path), "metadata", f"document '{doc_id}': metadata must be an object", line=lineno)
        if doc_id in seen:
            raise EvalSetError(str(path), "id", f"duplicate document id '{doc_id}' (first on line {seen[doc_id]})",
                               line=lineno)
        seen[doc_id] = lineno
        docs.append(Document(id=doc_id, title=title, text=text, metadata=meta))
    if not docs:
        raise EvalSetError(str(path), "", "the corpus has no documents")
    return Corpus(path=str(path), documents=docs, sha256=hashlib.sha256(raw).hexdigest())


def context_id(text: str) -> str:
    """The corpus id of a ragas context: ``ctx-`` + 16 hex of SHA-256 of the whitespace-collapsed text."""
    return "ctx-" + hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:16]
