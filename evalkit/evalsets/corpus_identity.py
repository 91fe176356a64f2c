"""The identity of the corpus an eval set version was labelled against.

Gold labels are only true of the documents they were written for: edit a gold document
after freezing and every number computed on it changes meaning (hit@5 1.0 -> 0.8 on the
same "v1"). So each frozen version records the corpus's *content* hash, and ``validate``
and ``run`` refuse a corpus whose content changed, naming the changed, added and removed
document ids.

* A document's fingerprint is 16 hex digits of the SHA-256 of its canonical content
  (title, text and metadata as sorted JSON): re-serialising the file, reordering its
  lines or its JSON keys changes nothing.
* The corpus content hash is the SHA-256 of the sorted ``id<TAB>fingerprint`` lines:
  independent of file order and formatting, dependent on every document's content.
* A version entry of the manifest holds it as ``corpus_content_sha256``; the document
  fingerprints of each content hash are kept beside the manifest in
  ``NAME.corpus-<first 16 hex>.json`` (one ``"id": "fingerprint"`` pair per line), so a
  change can be named document by document.

Versions frozen before evalkit recorded a corpus hash load with a warning saying how to
record one (``evalkit evalset freeze NAME`` records a new version of the same lines).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from evalkit.errors import EvalSetError
from evalkit.fileio import write_atomic
from evalkit.index.corpus import Corpus

MAX_SHOWN = 5  # ids listed per kind of change; the rest are counted


def doc_fingerprint(title: str, text: str, metadata: Mapping[str, object]) -> str:
    """16 hex digits of the SHA-256 of a document's canonical content: the JSON of ``{title, text,
    metadata}``, keys sorted, no spaces, non-ASCII as is."""
    return hashlib.sha256(canonical_json(title, text, metadata).encode("utf-8")).hexdigest()[:16]


_STRING = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) writes a string with


def canonical_json(title: str, text: str, metadata: Mapping[str, object]) -> str:
    """``json.dumps({"title": title, "text": text, "metadata": metadata}, sort_keys=True, ensure_ascii=False,
    separators=(",", ":"))``, character for character, with the two strings written directly: a json.dumps
    per document (a new encoder each) was ~0.3 s of loading a 50,000-document corpus (issue 34)."""
    if type(title) is not str or type(text) is not str:
        return json.dumps({"title": title, "text": text, "metadata": metadata}, sort_keys=True, ensure_ascii=False,
                          separators=(",", ":"))
    meta = "{}" if type(metadata) is dict and not metadata else json.dumps(
        metadata, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return f'{{"metadata":{meta},"text":{_STRING(text)},"title":{_STRING(title)}}}'


def fingerprints(corpus: Corpus) -> dict[str, str]:
    """``{doc id: fingerprint}`` of every document, sorted by id."""
    return {d.id: doc_fingerprint(d.title, d.text, d.metadata) for d in sorted(corpus.documents, key=lambda d: d.id)}


def content_hash(prints: Mapping[str, str]) -> str:
    """The corpus content hash of ``{doc id: fingerprint}`` (order-independent)."""
    h = hashlib.sha256()
    for doc_id in sorted(prints):
        h.update(f"{doc_id}\t{prints[doc_id]}\n".encode())
    return h.hexdigest()


def sidecar_path(manifest_path: Path, name: str, digest: str) -> Path:
    """Where the fingerprints of content hash ``digest`` are kept: ``NAME.corpus-<16 hex>.json``."""
    return Path(manifest_path).with_name(f"{name}.corpus-{digest[:16]}.json")


def save_fingerprints(path: Path, prints: Mapping[str, str]) -> None:
    """Write the fingerprints file atomically (one pair per line, so it diffs well); never leaves a ``.tmp``."""
    write_atomic(path, json.dumps(dict(prints), indent=0, ensure_ascii=False) + "\n",
                 hint="make the eval set's folder writable")


def load_fingerprints(path: Path) -> dict[str, str] | None:
    """The fingerprints in ``path``, or ``None`` when the file is missing or unreadable."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@dataclass
class CorpusChange:
    """How a corpus differs from the one a version was frozen with."""

    changed: list[str]
    added: list[str]
    removed: list[str]
    named: bool = True  # False when the old fingerprints were not available

    def describe(self) -> str:
        if not self.named:
            return ("its content differs, but the per-document fingerprints of the frozen corpus are missing, so "
                    "the documents cannot be named")
        parts = [f"{len(ids)} {what} ({_ids(ids)})" for what, ids in
                 (("changed", self.changed), ("added", self.added), ("removed", self.removed)) if ids]
        return ", ".join(parts) if parts else "its content differs"


def diff(old: Mapping[str, str] | None, new: Mapping[str, str]) -> CorpusChange:
    """The documents that differ between two fingerprint maps."""
    if old is None:
        return CorpusChange([], [], [], named=False)
    return CorpusChange(changed=sorted(d for d in new if d in old and old[d] != new[d]),
                        added=sorted(d for d in new if d not in old), removed=sorted(d for d in old if d not in new))


def _ids(ids: list[str]) -> str:
    shown = ", ".join(ids[:MAX_SHOWN])
    return shown + (f" and {len(ids) - MAX_SHOWN} more" if len(ids) > MAX_SHOWN else "")


CONTENT_KEY = "corpus_content_sha256"
"""The key of a manifest version entry that holds the corpus content hash."""


def record(manifest_path: Path, name: str, corpus: Corpus) -> str:
    """The content hash of ``corpus``, its fingerprints saved beside the manifest (once per hash)."""
    prints = fingerprints(corpus)
    digest = content_hash(prints)
    path = sidecar_path(manifest_path, name, digest)
    if load_fingerprints(path) != prints:
        save_fingerprints(path, prints)
    return digest


def check(manifest_path: Path, name: str, entry: Mapping[str, object], latest: int, corpus: Corpus,
          eval_set_file: str, corpus_shown: str) -> str | None:
    """Refuse a corpus that differs from the one version ``entry`` was frozen with; a warning when unknown.

    Returns a warning for a version frozen without a corpus hash, else ``None``.

    Raises:
        EvalSetError: the corpus content changed; names the documents and the command that
            freezes a new version.
    """
    version = entry["version"]
    frozen = entry.get(CONTENT_KEY)
    if not frozen:
        return (f"v{version} was frozen without a corpus hash (by an older evalkit), so a changed corpus cannot be "
                f"detected; record the current corpus with `evalkit evalset freeze {eval_set_file}` (a new version "
                f"v{latest + 1} of the same lines)")
    prints = fingerprints(corpus)
    if content_hash(prints) == frozen:
        return None
    change = diff(load_fingerprints(sidecar_path(manifest_path, name, str(frozen))), prints)
    raise EvalSetError(eval_set_file, "", f"corpus {corpus_shown} changed since v{version} was frozen: "
                       f"{change.describe()}. The gold labels of v{version} refer to the corpus as it was; restore it, "
                       f"or, if the labels still hold, freeze a new version that records it: "
                       f"evalkit evalset freeze {eval_set_file}")

