"""The ``retrieve`` node's ``title`` channel: the query matched against document titles only.

A title says what a whole document is about ("差旅费报销制度（2026版）", "LX-200 Pro datasheet"), and
a question that names it should find the document even when its passages use other words. The
channel is BM25 (same tokenizer options as the ``bm25`` channel) over one line per document, its
``title`` (documents without a title are not in it), cached on disk like the passage indexes. A
matched document enters the ranking as its first passage (its parent, with parent-child chunks),
with the title's BM25 score; at most ``top_k`` documents. It is a channel like ``dense`` and
``bm25``: its own ranking is in ``channel_hits["title"]`` and it is fused with the others by the
node's ``fusion`` (``weight`` for ``weighted`` fusion and weighted RRF). A ``filters`` condition
restricts it to the matching documents, like the other channels.

YAML::

    retrieve:
      type: retrieve
      params:
        dense: {embedder: e5, top_k: 100}
        bm25: {tokenizer: auto, top_k: 100}
        title: {tokenizer: auto, top_k: 20, weight: 0.5}
        fusion: {method: rrf, k: 60}
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from evalkit.graph.node import NodeParams
from evalkit.index.bm25 import build_or_load_bm25
from evalkit.records import Hit
from evalkit.text.tokenize import Tokenizer


class TitleChannel(NodeParams):
    """Title channel: BM25 over the documents' titles; a matched document enters as its first passage."""

    tokenizer: Literal["auto", "en", "zh", "whitespace"] = Field(
        default="auto", description="auto: jieba for Chinese runs, Porter-stemmed words for English")
    k1: float = Field(default=0.9, ge=0, description="BM25 term-frequency saturation")
    b: float = Field(default=0.4, ge=0, le=1, description="BM25 length normalisation")
    stem: bool = Field(default=True, description="Porter-stem English words")
    stopwords: bool = Field(default=True, description="drop stop words")
    top_k: int = Field(default=20, ge=1, description="documents this channel retrieves per query")
    weight: float = Field(default=1.0, ge=0, description="this channel's weight in the fusion")


class TitleSearch:
    """The title index of a corpus and how its document hits become passage hits."""

    def __init__(self, resources: Any, channel: TitleChannel):
        passages = resources.passages()
        self.first: dict[str, str] = {}  # document id -> its first passage (the parent, with parent-child)
        for u in passages.units:
            self.first.setdefault(u.doc_id, passages.parent_of(u.id))
        titled = [d for d in resources.corpus.documents if (d.title or "").strip() and d.id in self.first]
        self.ids = [d.id for d in titled]
        tok = Tokenizer(channel.tokenizer, channel.stem, channel.stopwords)
        key = {"corpus_sha256": resources.corpus.sha256, "field": "title"}
        self.index = build_or_load_bm25([d.title for d in titled], self.ids, tok, key, Path(resources.cache_root),
                                        channel.k1, channel.b)
        self.top_k = channel.top_k
        self._allowed: dict[str, np.ndarray] = {}

    def search(self, queries: list[str], allowed: tuple[str, frozenset[str]] | None = None) -> list[list[Hit]]:
        """One ranking of passage hits per query; ``allowed``: (a resolved filter's key, its document ids)."""
        if not self.ids:
            return [[] for _ in queries]
        if allowed is None:
            found = self.index.search_many(queries, self.top_k)
        else:
            positions = self._positions(allowed)
            found = [self.index.search(q, self.top_k, allowed=positions) for q in queries]
        return [[Hit(self.first[doc], doc, score) for doc, score in f[: self.top_k]] for f in found]

    def _positions(self, allowed: tuple[str, frozenset[str]]) -> np.ndarray:
        """Positions in the title index of the allowed documents, cached by the filter's key."""
        key, docs = allowed
        if key not in self._allowed:
            if len(self._allowed) > 1024:
                self._allowed.clear()
            self._allowed[key] = np.asarray([i for i, d in enumerate(self.ids) if d in docs], dtype=np.int64)
        return self._allowed[key]
