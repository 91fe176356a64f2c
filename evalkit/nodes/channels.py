"""The ``retrieve`` node's channel settings: what each channel searches with, and how channels are fused.

One params class per channel (``dense``: a bi-encoder and a faiss index; ``bm25``: lexical), plus
``Fusion``. They live apart from the node so that other nodes that search the same indexes (the
``agent_scheduler``'s tools, the relax rule) share one definition.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from evalkit.graph.node import NodeParams
from evalkit.models.embedders import EMBEDDERS, ModelSpec, check_model_name

CHANNELS = ("dense", "bm25", "title")
"""The ``retrieve`` node's channels, in the order they are searched and fused (title: evalkit.nodes.title_channel)."""

INDEX_PARAMS = {"flat": (), "ivf": ("nlist", "nprobe"), "hnsw": ("hnsw_m", "ef_construction", "ef_search")}


class DenseChannel(NodeParams):
    """Dense channel: a bi-encoder and a faiss index: ``flat`` (exact), ``ivf`` or ``hnsw``
    (approximate; for big corpora, see docs/scaling.md), each with its own parameters."""

    embedder: str | ModelSpec = Field(default="e5", description="the bi-encoder: e5, minilm, or "
                                      "{name: sentence-transformers, path: ...}")
    query_embedder: str | ModelSpec | None = Field(
        default=None, description="query-side model; must equal the index's (checked) - leave unset")
    top_k: int = Field(default=100, ge=1, description="passages this channel retrieves per query")
    weight: float = Field(default=1.0, ge=0, description="this channel's weight in the fusion")
    index: Literal["flat", "ivf", "hnsw"] = Field(default="flat", description="flat: exact inner product; ivf: "
                                                  "faiss IVF; hnsw: faiss HNSW (see docs/scaling.md)")
    nlist: int = Field(default=64, ge=1, description="ivf: number of clusters")
    nprobe: int = Field(default=8, ge=1, description="ivf: clusters searched per query")
    hnsw_m: int = Field(default=32, ge=4, le=128, description="hnsw: links per node")
    ef_construction: int = Field(default=100, ge=8, description="hnsw: candidate list while building")
    ef_search: int = Field(default=128, ge=1, description="hnsw: candidate list while searching")

    @field_validator("embedder", "query_embedder", mode="before")
    @classmethod
    def _known_embedder(cls, value: Any) -> Any:
        return value if value is None else check_model_name(value, EMBEDDERS, "embedder")

    @model_validator(mode="after")
    def _params_of_the_kind(self) -> DenseChannel:
        for kind, names in INDEX_PARAMS.items():
            stray = [n for n in names if n in self.model_fields_set and kind != self.index]
            if stray:
                raise ValueError(f"{', '.join(stray)} applies to index: {kind}, not to index: {self.index}")
        if self.index == "ivf" and self.nprobe > self.nlist:
            raise ValueError(f"nprobe ({self.nprobe}) cannot exceed nlist ({self.nlist})")
        if self.index == "hnsw" and self.ef_search < self.top_k:
            raise ValueError(f"ef_search ({self.ef_search}) must be at least top_k ({self.top_k}): HNSW returns "
                             "at most ef_search candidates")
        return self

    def index_settings(self) -> dict[str, Any]:
        """The keyword arguments of ``resources.dense_index`` for this channel's index kind."""
        return {n: getattr(self, n) for n in INDEX_PARAMS[self.index]}


class BM25Channel(NodeParams):
    """Lexical channel: BM25 (Lucene IDF and k1/b defaults) with language-aware tokenisation."""

    tokenizer: Literal["auto", "en", "zh", "whitespace"] = Field(
        default="auto", description="auto: jieba for Chinese runs, Porter-stemmed words for English")
    k1: float = Field(default=0.9, ge=0, description="BM25 term-frequency saturation")
    b: float = Field(default=0.4, ge=0, le=1, description="BM25 length normalisation")
    idf: Literal["lucene", "okapi"] = Field(default="lucene", description="IDF formula")
    stem: bool = Field(default=True, description="Porter-stem English words")
    stopwords: bool = Field(default=True, description="drop stop words")
    accents: Literal["keep", "strip"] = Field(default="keep", description="strip: Besançon and Besancon are one "
                                              "term (matching only)")
    letters: Literal["unicode", "ascii"] = Field(default="unicode", description="ascii: the tokenizer before "
                                                 "Unicode letters (reproduces old numbers)")
    top_k: int = Field(default=100, ge=1, description="passages this channel retrieves per query")
    weight: float = Field(default=1.0, ge=0, description="this channel's weight in the fusion")


class Fusion(NodeParams):
    """How several rankings become one: ``rrf`` (k) or ``weighted`` (norm, missing)."""

    method: Literal["rrf", "weighted"] = Field(default="rrf", description="rrf: reciprocal rank fusion; "
                                               "weighted: weighted sum of normalised scores")
    k: int = Field(default=60, ge=0, description="rrf: the constant k in w / (k + rank)")
    norm: Literal["minmax", "zscore"] = Field(default="minmax", description="weighted: score normalisation")
    missing: Literal["min", "zero"] = Field(default="min", description="weighted: normalised score of a "
                                            "passage a channel did not return")
