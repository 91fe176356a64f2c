"""Incremental index builds: when the corpus changes, redo the work only for the passages that changed.

An index entry is keyed by the corpus hash (``evalkit.cachestore``), so adding, editing or
deleting one document gives a new key and, before this module, a build from nothing. The
per-passage work of a build does not depend on the other passages, though: a passage's
tokens depend only on its text and the tokenizer, its vector only on its text and the
embedder. So a new entry reuses that work from an earlier entry of the same *family* (the
same key with the corpus left out: same chunking, tokenizer, settings) by matching passages
on a digest of their text, and computes it only for texts the base lacks.

What depends on the whole corpus is recomputed in full, from the reused per-passage data:
BM25's IDF and average length (so every score in the matrix), the vocabulary's order, and
a faiss IVF's clusters or HNSW's graph. That is what makes the new entry byte-identical to
a cold full build of the same corpus: the full build is the same code with no base
(``tests/index/test_incremental.py`` compares every file and every ranking). The base entry
is only read: an interrupted update leaves it, and every other entry, as it was.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from evalkit.cachestore import check_entry

CORPUS_FIELDS = ("corpus_sha256", "n")  # what a family leaves out of an entry's key
DIGEST_BYTES = 16  # xxh3-128 per passage text
KEYS_FILE = "text_keys.npy"


def family_of(key_meta: dict[str, Any]) -> str:
    """The digest of ``key_meta`` without the corpus: entries that share it can reuse each other's passages."""
    rest = {k: v for k, v in key_meta.items() if k not in CORPUS_FIELDS}
    return hashlib.sha256(json.dumps(rest, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()[:20]


def text_digests(texts: Sequence[str]) -> np.ndarray:
    """An ``(n, 16)`` uint8 array: the xxh3-128 digest of each text's UTF-8 bytes."""
    raw = b"".join(xxhash.xxh3_128_digest(t.encode("utf-8")) for t in texts)
    return np.frombuffer(raw, dtype=np.uint8).reshape(len(texts), DIGEST_BYTES).copy()


def match_passages(new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """For each digest in ``new``, the position of the same digest in ``old`` (its first), or -1."""
    where: dict[bytes, int] = {}
    flat = old.tobytes()
    for j in range(len(old)):
        where.setdefault(flat[j * DIGEST_BYTES:(j + 1) * DIGEST_BYTES], j)
    flat = new.tobytes()
    return np.fromiter((where.get(flat[i * DIGEST_BYTES:(i + 1) * DIGEST_BYTES], -1) for i in range(len(new))),
                       dtype=np.int64, count=len(new))


@dataclass(frozen=True)
class Base:
    """A verified earlier entry of the same family: its folder, ``meta.json`` and text digests."""

    folder: Path
    meta: dict[str, Any]
    keys: np.ndarray


def find_base(root: Path, kind: str, family: str, keys: np.ndarray) -> Base | None:
    """The verified entry of ``kind`` and ``family`` sharing the most passages with ``keys`` (ties: newest).

    Entries that fail their checksums, or that an older evalkit wrote without text digests,
    are skipped (never repaired here: ``load_or_build`` does that when their own key is asked for).
    """
    ranked = []
    for meta_path in (Path(root) / "indexes").glob(f"{kind}-*/meta.json"):
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            if not isinstance(meta, dict) or meta.get("family") != family or KEYS_FILE not in meta.get("files", {}):
                continue
            old = np.load(meta_path.parent / KEYS_FILE)
        except (OSError, ValueError):
            continue  # unreadable or being replaced: not a base
        shared = int((match_passages(keys, old) >= 0).sum()) if old.shape[1:] == (DIGEST_BYTES,) else 0
        if shared:
            ranked.append((shared, str(meta.get("created", "")), meta_path.parent.name, meta_path.parent))
    ranked.sort(key=lambda r: r[2])
    ranked.sort(key=lambda r: (r[0], r[1]), reverse=True)  # most passages shared, then newest (stable)
    for _, _, _, folder in ranked:
        found = check_entry(folder)
        if found.ok and found.meta is not None:
            try:
                return Base(folder, found.meta, np.load(folder / KEYS_FILE))
            except (OSError, ValueError):
                continue
    return None


# -- tokens --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Tokens:
    """Tokenised passages: ``vocab`` in order of first use, ``token_ids`` of all passages end to end, ``offsets``."""

    vocab: list[str]
    token_ids: np.ndarray
    offsets: np.ndarray


@dataclass(frozen=True)
class Reuse:
    """What an incremental build took from its base: how many passages were reused and how many computed."""

    base: str | None
    reused: int
    computed: int

    def to_meta(self) -> dict[str, Any]:
        return {"base": self.base, "reused": self.reused, "computed": self.computed}


def merge_tokens(texts: Sequence[str], tokenize: Callable[[str], list[str]], base: Tokens | None = None,
                 source: np.ndarray | None = None) -> tuple[Tokens, int]:
    """Tokenise ``texts``, taking passage ``i``'s tokens from ``base`` passage ``source[i]`` when that is >= 0.

    Returns the tokens exactly as tokenising every text would give them (vocabulary in order
    of first use over the new passages, the same token ids) and how many texts were tokenised.
    Base tokens and new words share one id space (base ids, then new words); the ids are then
    renumbered by first use, which is the order a from-nothing build assigns them in.
    """
    ext: dict[str, int] = {t: i for i, t in enumerate(base.vocab)} if base is not None else {}
    pieces: list[np.ndarray] = []
    computed = 0
    for i, text in enumerate(texts):
        j = int(source[i]) if source is not None else -1
        if j >= 0 and base is not None:
            pieces.append(base.token_ids[base.offsets[j]:base.offsets[j + 1]].astype(np.int64))
            continue
        computed += 1
        pieces.append(np.fromiter((ext.setdefault(t, len(ext)) for t in tokenize(text)), dtype=np.int64))
    seq = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum([len(p) for p in pieces], dtype=np.int64)]).astype(np.int64)
    words = list(ext)
    if base is None:  # ids were handed out in order of first use already
        return Tokens(words, seq.astype(np.int32), offsets), computed
    uniq, first = np.unique(seq, return_index=True)
    order = uniq[np.argsort(first, kind="stable")]  # ids in order of first use
    remap = np.full(len(words), -1, dtype=np.int64)
    remap[order] = np.arange(len(order))
    return Tokens([words[g] for g in order.tolist()], remap[seq].astype(np.int32), offsets), computed
