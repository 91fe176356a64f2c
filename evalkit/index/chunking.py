"""Cutting documents into retrievable passages.

Five methods, chosen by a graph config's ``chunking`` block (every parameter is listed in
``docs/nodes.md#chunking``):

- ``document``: one passage per document (good for short abstracts such as SciFact).
- ``fixed``: windows of ``size`` overlapping by ``overlap``; a window's end moves back to
  the nearest sentence or word boundary in its last fifth, so Chinese and English text is
  not cut mid-word where it can be avoided.
- ``parent_child``: ``parent_size`` windows (no overlap) each cut into ``child_size``
  children (overlap ``child_overlap``), or, with ``child_method: semantic``, into children
  that end where adjacent sentences' ``embedder`` similarity drops (as ``semantic`` does,
  within ``child_min_size`` .. ``child_size``). Retrieval scores children and hands back
  their parent passage.
- ``recursive``: split at the first of ``separators`` that occurs, recursively, then merge
  pieces up to ``size`` with ``overlap`` (``evalkit.index.splitters.recursive_spans``).
- ``semantic``: a new chunk where adjacent sentences' ``embedder`` similarity drops
  (``percentile`` or ``threshold``), within ``min_size`` .. ``max_size``.

``table: true`` (every method but ``document``) keeps each Markdown table of a document
whole, in chunks of its own, cut between rows only when it is larger than the chunk size
(the pieces repeat the header); the prose around it is chunked as the method says
(:mod:`evalkit.index.tables`). With ``parent_child``, a table is its own parent and its
children are row groups of ``child_size``.

Sizes are in characters (a unit that means the same for Chinese and English text), or,
with ``unit: tokens``, in the tokens of ``tokenizer`` (an embedder name: ``e5``,
``minilm``, ``{name: sentence-transformers, path: ...}``; ``evalkit.index.tokens``), so a
config written for "512-token chunks with 128 overlap" is reproduced exactly.
Passage ids are ``DOC#i`` (fixed, recursive, semantic), ``DOC#pI`` (parents) and
``DOC#pI.J`` (children), so every passage maps back to its document.

The identity of a chunking (:func:`chunking_key`, :func:`chunking_id`; part of every index
cache key) is the whole completed block plus the identity of the tokenizer and of the
semantic embedder (model and version), so changing any parameter, or the model behind one,
builds new indexes.
"""
from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from evalkit.errors import did_you_mean
from evalkit.index.cutters import cut_document
from evalkit.index.splitters import CHARS, DEFAULT_SEPARATORS, Measure, window_spans
from evalkit.index.tokens import token_counter
from evalkit.models.embedders import EMBEDDERS, CachedEmbedder, ModelSpec
from evalkit.records import Chunk, Document

METHODS = ("document", "fixed", "parent_child", "recursive", "semantic")
_SIZED = {"unit", "tokenizer"}
_PARAMS = {
    "document": {"method", "prepend_title"},
    "fixed": {"method", "size", "overlap", "prepend_title", "table"} | _SIZED,
    "parent_child": {"method", "parent_size", "child_size", "child_overlap", "prepend_title", "table",
                     "child_method", "embedder", "percentile", "threshold", "child_min_size"} | _SIZED,
    "recursive": {"method", "size", "overlap", "separators", "prepend_title", "table"} | _SIZED,
    "semantic": {"method", "embedder", "percentile", "threshold", "max_size", "min_size", "separators",
                 "prepend_title", "table"} | _SIZED,
}
CHILD_METHODS = ("fixed", "semantic")
_SEMANTIC_CHILD = ("embedder", "percentile", "threshold", "child_min_size")
# What a config that names only the method gets (``chunking: {method: parent_child}``).
DEFAULTS: dict[str, dict[str, Any]] = {
    "document": {"prepend_title": True},
    "fixed": {"size": 400, "overlap": 80, "prepend_title": True},
    "parent_child": {"parent_size": 1200, "child_size": 300, "child_overlap": 50, "prepend_title": True},
    "recursive": {"size": 400, "overlap": 80, "separators": list(DEFAULT_SEPARATORS), "prepend_title": True},
    "semantic": {"embedder": "e5", "max_size": 800, "min_size": 100, "separators": list(DEFAULT_SEPARATORS),
                 "prepend_title": True},
}
UNITS = ("chars", "tokens")


def with_defaults(cfg: dict[str, Any] | None) -> dict[str, Any]:
    """A chunking block completed with its method's defaults (``fixed`` when none is named).

    ``unit: chars`` is the default and is left out (so ``{method: fixed}`` and ``{method: fixed, unit:
    chars}`` are one chunking; so are ``table: false`` and no ``table``, ``child_method: fixed`` and
    none); ``unit: tokens`` gets ``tokenizer: e5`` (the semantic method: its own ``embedder``) unless one
    is named; ``semantic`` (and ``child_method: semantic``) gets ``percentile: 90`` unless a ``threshold``
    is given; semantic children get ``embedder: e5`` and ``child_min_size: 50`` unless named.
    """
    cfg = dict(cfg or {})
    method = cfg.setdefault("method", "fixed")
    out = {"method": method, **DEFAULTS.get(method, {}), **cfg}
    for key, neutral in (("unit", "chars"), ("table", False), ("child_method", "fixed")):
        if key in out and out[key] == neutral and type(out[key]) is type(neutral):
            del out[key]
    semantic = method == "semantic" or out.get("child_method") == "semantic"
    if out.get("child_method") == "semantic":
        out.setdefault("embedder", "e5")
        out.setdefault("child_min_size", 50)
    if out.get("unit") == "tokens":
        out.setdefault("tokenizer", out.get("embedder", "e5") if semantic else "e5")
    if semantic and "threshold" not in out:
        out.setdefault("percentile", 90.0)
    return out


def check_chunking(cfg: dict[str, Any]) -> str | None:
    """Return a problem description for a bad chunking config, or None when it is valid."""
    method = cfg.get("method")
    if method not in METHODS:
        return f"unknown chunking method '{method}'{did_you_mean(str(method), METHODS)}"
    if method == "document" and "table" in cfg:
        return ("table is for the methods that cut a document (fixed, recursive, semantic, parent_child); "
                "document keeps each document whole already")
    for key in cfg:
        if key not in _PARAMS[method]:
            return f"unknown chunking parameter '{key}' for method '{method}'{did_you_mean(key, _PARAMS[method])}"
    if "table" in cfg and not isinstance(cfg["table"], bool):
        return f"table must be true or false (got {cfg['table']!r})"
    problem = _check_unit(cfg)
    if problem:
        return problem
    if method in ("fixed", "recursive"):
        size, overlap = cfg.get("size"), cfg.get("overlap", 0)
        if not _pos_int(size) or not isinstance(overlap, int) or not 0 <= overlap < size:
            return f"{method} chunking needs size > 0 and 0 <= overlap < size (got size={size}, overlap={overlap})"
    if method == "parent_child":
        p, c, o = cfg.get("parent_size"), cfg.get("child_size"), cfg.get("child_overlap", 0)
        if not (_pos_int(p) and _pos_int(c) and isinstance(o, int) and 0 <= o < c <= p):
            return ("parent_child chunking needs parent_size >= child_size > child_overlap >= 0 "
                    f"(got parent_size={p}, child_size={c}, child_overlap={o})")
        return _check_children(cfg)
    if method in ("recursive", "semantic"):
        seps = cfg.get("separators")
        if not isinstance(seps, list) or not seps or not all(isinstance(x, str) for x in seps):
            return f"separators must be a non-empty list of strings such as ['\\n\\n', '。', ' '] (got {seps!r})"
    if method == "semantic":
        return _check_semantic(cfg)
    return None


def _check_children(cfg: dict[str, Any]) -> str | None:
    """``child_method`` of parent_child, and the semantic parameters only semantic children take."""
    child = cfg.get("child_method", "fixed")
    if child not in CHILD_METHODS:
        return f"unknown child_method '{child}' (valid: fixed, semantic){did_you_mean(str(child), CHILD_METHODS)}"
    if child == "fixed":
        extra = [k for k in _SEMANTIC_CHILD if k in cfg]
        return (f"{', '.join(extra)}: only used with child_method: semantic (children are fixed windows "
                "otherwise)") if extra else None
    lo = cfg.get("child_min_size")
    if not (isinstance(lo, int) and not isinstance(lo, bool) and 0 <= lo < cfg["child_size"]):
        return f"semantic children need 0 <= child_min_size < child_size (got child_min_size={lo!r})"
    return _check_semantic({**cfg, "min_size": 0, "max_size": cfg["child_size"]})


def _check_unit(cfg: dict[str, Any]) -> str | None:
    unit = cfg.get("unit", "chars")
    if unit not in UNITS:
        return f"unknown unit '{unit}'; valid: {', '.join(UNITS)}"
    if "tokenizer" in cfg and unit != "tokens":
        return "tokenizer is only used with unit: tokens (sizes are in characters otherwise)"
    if unit == "tokens":
        return _check_model(cfg.get("tokenizer"), "tokenizer", ("e5", "minilm", "sentence-transformers"))
    return None


def _check_model(value: Any, field: str, names: tuple[str, ...]) -> str | None:
    try:
        spec = ModelSpec.of(value)
    except Exception as exc:  # noqa: BLE001 - reported as a config problem
        return f"{field} must be an embedder name such as e5, or {{name: ..., path: ...}} ({exc})"
    if spec.name not in names:
        return f"{field}: unknown embedder '{spec.name}'{did_you_mean(spec.name, names)}"
    return None


def _check_semantic(cfg: dict[str, Any]) -> str | None:
    problem = _check_model(cfg.get("embedder"), "embedder", tuple(EMBEDDERS))
    if problem:
        return problem
    pct, thr = cfg.get("percentile"), cfg.get("threshold")
    if (pct is None) == (thr is None):
        return "semantic chunking needs exactly one of percentile (0-100) and threshold (a cosine)"
    if pct is not None and not (isinstance(pct, (int, float)) and 0 < pct <= 100):
        return f"percentile must be in (0, 100] (got {pct!r})"
    if thr is not None and not (isinstance(thr, (int, float)) and -1 <= thr <= 1):
        return f"threshold must be a cosine in [-1, 1] (got {thr!r})"
    lo, hi = cfg.get("min_size"), cfg.get("max_size")
    if not (_pos_int(hi) and isinstance(lo, int) and 0 <= lo < hi):
        return f"semantic chunking needs max_size > min_size >= 0 (got min_size={lo}, max_size={hi})"
    return None


def _pos_int(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def chunking_key(cfg: dict[str, Any]) -> dict[str, Any]:
    """What identifies a chunking: the block itself, plus the identities (model, version) of its
    tokenizer (``unit: tokens``) and semantic embedder. Equal to ``cfg`` for character-sized methods."""
    key = dict(cfg)
    if cfg.get("unit") == "tokens":
        from evalkit.index.tokens import tokenizer_identity

        key["tokenizer_identity"] = tokenizer_identity(cfg["tokenizer"])
    if _semantic(cfg):
        from evalkit.models.embedders import embedder_identity

        spec = ModelSpec.of(cfg["embedder"])
        key["embedder_identity"] = embedder_identity(spec) or spec.key()
    return key


def _semantic(cfg: dict[str, Any]) -> bool:
    """Whether the chunking embeds sentences (the semantic method, or semantic children)."""
    return cfg.get("method") == "semantic" or cfg.get("child_method") == "semantic"


def chunking_id(cfg: dict[str, Any]) -> str:
    """A stable identity of a chunking config (:func:`chunking_key` hashed; part of every index cache key)."""
    return hashlib.sha256(json.dumps(chunking_key(cfg), sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class Passages:
    """The retrievable units of a corpus (``units``) and what retrieval hands back.

    ``units`` are the passages indexes are built over (fixed chunks, or children);
    ``parent_of`` maps a child to its parent for parent-child chunking; ``text`` gives
    the text of any passage id (unit or parent) with the title prepended when asked;
    ``pages`` the page numbers a passage covers, for documents whose metadata has
    ``page_starts`` (PDFs imported by ``evalkit import docs``).
    """

    units: list[Chunk]
    parents: dict[str, Chunk]
    titles: dict[str, str]
    prepend_title: bool
    page_starts: dict[str, list[int]] = field(default_factory=dict)

    def parent_of(self, passage_id: str) -> str:
        unit = self._by_id.get(passage_id)
        return unit.parent_id if unit is not None and unit.parent_id else passage_id

    def text(self, passage_id: str) -> str:
        chunk = self.parents.get(passage_id) or self._by_id[passage_id]
        title = self.titles.get(chunk.doc_id, "")
        return f"{title}\n{chunk.text}" if self.prepend_title and title else chunk.text

    def unit_texts(self) -> list[str]:
        return [self.text(u.id) for u in self.units]

    def doc_of(self, passage_id: str) -> str:
        chunk = self.parents.get(passage_id) or self._by_id[passage_id]
        return chunk.doc_id

    def pages(self, passage_id: str) -> list[int]:
        """The 1-based pages the passage's text comes from (empty when its document has no pages)."""
        chunk = self.parents.get(passage_id) or self._by_id[passage_id]
        starts = self.page_starts.get(chunk.doc_id)
        if not starts:
            return []
        first = bisect.bisect_right(starts, chunk.start)
        last = bisect.bisect_right(starts, max(chunk.start, chunk.end - 1))
        return list(range(max(first, 1), max(last, 1) + 1))

    def __post_init__(self) -> None:
        self._by_id = {u.id: u for u in self.units}


Encoder = Callable[[Any], Any]  # ModelSpec -> an embedder with encode_passages (semantic chunking)


def chunk_corpus(corpus: Any, cfg: dict[str, Any], embedder: Encoder | None = None) -> Passages:
    """Cut every document of ``corpus`` as ``cfg`` says (:func:`evalkit.index.cutters.cut_document`);
    deterministic for the same input.

    ``embedder(spec)`` gives the semantic method (and semantic children) its sentence embedder
    (``Resources.embedder``, with its cache); without it the embedder is loaded behind the default
    embedding cache.
    """
    measure = _measure(cfg)
    encode = _sentence_encoder(cfg, embedder) if _semantic(cfg) else None
    units: list[Chunk] = []
    parents: dict[str, Chunk] = {}
    for doc in corpus.documents:
        doc_units, doc_parents = cut_document(doc, cfg, measure, encode)
        units += doc_units
        parents.update((p.id, p) for p in doc_parents)
    return Passages(units=units, parents=parents, titles={d.id: d.title for d in corpus.documents},
                    prepend_title=bool(cfg.get("prepend_title", True)), page_starts=_page_starts(corpus.documents))


def _page_starts(documents: list[Document]) -> dict[str, list[int]]:
    """``{doc id: page_starts}`` of the documents whose metadata has a valid list of page offsets."""
    out: dict[str, list[int]] = {}
    for d in documents:
        starts = (d.metadata or {}).get("page_starts")
        if isinstance(starts, list) and starts and all(isinstance(x, int) for x in starts):
            out[d.id] = starts
    return out


def _measure(cfg: dict[str, Any]) -> Measure:
    """Characters, or the configured tokenizer's tokens."""
    if cfg.get("unit") != "tokens":
        return CHARS

    return Measure(token_counter(cfg["tokenizer"]))


def _sentence_encoder(cfg: dict[str, Any], embedder: Encoder | None) -> Callable[[list[str]], Any]:
    spec = ModelSpec.of(cfg["embedder"])
    if embedder is None:
        from evalkit.cachestore import default_cache_root
        from evalkit.models.cache import EmbeddingCache

        model: Any = CachedEmbedder.lazy(spec, EmbeddingCache(default_cache_root() / "embeddings.sqlite"))
    else:
        model = embedder(spec)
    return lambda sentences: model.encode_passages(list(sentences))


def split_spans(text: str, size: int, overlap: int) -> list[tuple[int, int]]:
    """Character windows of ``size`` overlapping by ``overlap`` (``fixed``; see ``window_spans``)."""
    return window_spans(text, size, overlap)
