"""The tokenised passages of a BM25 index: the ``bm25tok-*`` cache entry.

One entry per (corpus, chunking, tokenizer): the vocabulary in order of first use
(``vocab.json``), every passage's token ids end to end (``token_ids.npy``) with their
``offsets.npy``, and a digest of each passage's text (``text_keys.npy``). Several k1/b/IDF
matrices (``evalkit.index.bm25``) are built from one entry; a new entry after a corpus
change tokenises only the texts the closest earlier entry lacks (``evalkit.index.incremental``).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from evalkit.cachestore import load_or_build
from evalkit.index.incremental import (
    KEYS_FILE,
    Reuse,
    Tokens,
    family_of,
    find_base,
    match_passages,
    merge_tokens,
    text_digests,
)
from evalkit.text.tokenize import Tokenizer


def token_entry(texts: list[str], tokenizer: Tokenizer, key: dict[str, Any], cache_root: Path) -> tuple[
        Tokens, dict[str, Any]]:
    """The tokenised passages and their entry's meta: from the cache, or tokenised and cached.

    A new entry tokenises only the texts that the closest earlier entry of the same family
    (same chunking and tokenizer, another corpus) lacks (``evalkit.index.incremental``).
    """
    family = family_of(key)

    def load(folder: Path, meta: dict[str, Any]) -> tuple[Tokens, dict[str, Any]]:
        return read_tokens(folder), meta

    def build(staging: Path) -> dict[str, Any]:
        keys = text_digests(texts)
        name, old, source = base_tokens(cache_root, family, keys)
        toks, computed = merge_tokens(texts, tokenizer, old, source)
        (staging / "vocab.json").write_text(json.dumps(toks.vocab, ensure_ascii=False), encoding="utf-8")
        np.save(staging / "token_ids.npy", toks.token_ids)
        np.save(staging / "offsets.npy", toks.offsets)
        np.save(staging / KEYS_FILE, keys)
        return {"family": family, "incremental": Reuse(name, len(texts) - computed, computed).to_meta()}

    return load_or_build(cache_root, "bm25tok", key, load=load, build=build)


def base_tokens(cache_root: Path, family: str, keys: np.ndarray) -> tuple[
        str | None, Tokens | None, np.ndarray | None]:
    """(folder name, tokens, passage map) of the best earlier token entry to start from; Nones when there is none."""
    base = find_base(cache_root, "bm25tok", family, keys)
    if base is None:
        return None, None, None
    try:
        old = read_tokens(base.folder)
    except (OSError, ValueError):  # removed or replaced since it was verified: tokenise everything
        return None, None, None
    if len(old.offsets) != len(base.keys) + 1:
        return None, None, None  # not one digest per passage: never trust it
    return base.folder.name, old, match_passages(keys, base.keys)


def read_tokens(folder: Path) -> Tokens:
    """The tokens stored in a ``bm25tok-*`` folder."""
    vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    return Tokens(vocab, np.load(folder / "token_ids.npy"), np.load(folder / "offsets.npy"))
