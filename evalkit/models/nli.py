"""NLI / fact-checking models from a local folder: loading, scoring pairs, fingerprint, score cache.

What it is for: the model side of the ``nli`` judge (:mod:`evalkit.judges.nli`), the one
place it touches torch and transformers (imported inside :func:`load_scorer` only, when a
model is first needed). :func:`load_scorer` loads tokenizer and model
with ``local_files_only=True`` (never a hub name), puts the model in eval mode and returns
a function from a batch of pairs to probability rows: softmax over the labels for
``three_way`` and ``binary`` models, a sigmoid of the single logit for ``score`` models,
or the model's own ``predict()`` scores when the folder ships code that has one
(HHEM-2.1-open style, with ``trust_remote_code: true``).

Truncation cuts the premise, never the claim: ``only_first`` for tokenizer pairs; for
``eos_joined`` input (one text, premise + eos token + claim, as MiniCheck's RoBERTa and
DeBERTa checkers read it) the text is cut from the left.
"""
from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evalkit.errors import ModelSetupError
from evalkit.sqlitedb import connect

__all__ = ["NLICache", "default_max_length", "load_scorer", "model_fingerprint", "pair_key"]

MAX_LENGTH = 512  # when the tokenizer names no usable maximum
_SKIP = {"README.md", ".gitattributes", ".gitignore"}


def default_max_length(tokenizer: Any, config: Any) -> int:
    """The tokenizer's ``model_max_length`` when it is a real number, else 512; at most the model's positions."""
    n = getattr(tokenizer, "model_max_length", None)
    n = int(n) if isinstance(n, (int, float)) and 8 <= n <= 100_000 else MAX_LENGTH
    positions = getattr(config, "max_position_embeddings", None)
    return min(n, int(positions)) if isinstance(positions, int) and positions > 8 else n


def _quiet_transformers() -> None:
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def load_scorer(folder: Path, labels: Any, options: Any) -> Callable[[list[tuple[str, str]]], np.ndarray]:
    """A scorer for the model in ``folder`` (see the module docstring); setup problems are ``ModelSetupError``.

    ``labels`` is the judge's :class:`evalkit.judges.nli_rules.Labels` (kind and output count);
    ``options`` its :class:`evalkit.judges.nli.NLIOptions`.
    """
    import torch

    if options.threads:
        torch.set_num_threads(int(options.threads))  # process-wide: torch has one intra-op pool
    _quiet_transformers()
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    remote = bool(options.trust_remote_code)
    try:
        model, info = AutoModelForSequenceClassification.from_pretrained(
            str(folder), local_files_only=True, trust_remote_code=remote, output_loading_info=True)
    except Exception as exc:  # noqa: BLE001 - transformers raises OSError, ValueError, KeyError...
        raise ModelSetupError(f"NLI model folder {folder}: transformers could not load the model "
                              f"({type(exc).__name__}: {str(exc)[:300]})") from None
    missing = sorted(info.get("missing_keys") or [])
    if missing:  # transformers would score with freshly initialised (random) layers: refuse
        raise ModelSetupError(f"NLI model folder {folder}: the weights lack {len(missing)} layer(s) of a "
                              f"sequence classifier ({', '.join(missing[:3])}...): it is not a fine-tuned "
                              "NLI / fact-checking classifier (a base model, or a seq2seq model such as "
                              "MiniCheck-Flan-T5, cannot be used)")
    model.eval()
    predict = getattr(model, "predict", None) if remote else None
    if labels.kind == "score" and callable(predict):
        return _predict_scorer(model, predict)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True, trust_remote_code=remote)
    except Exception as exc:  # noqa: BLE001
        raise ModelSetupError(f"NLI model folder {folder}: no usable tokenizer ({type(exc).__name__}: "
                              f"{str(exc)[:300]}); the folder needs the tokenizer files the model was saved with") \
            from None
    n_out = int(getattr(model.config, "num_labels", labels.n_outputs))
    if n_out != labels.n_outputs:
        raise ModelSetupError(f"NLI model folder {folder}: the model has {n_out} outputs, config.json names "
                              f"{labels.n_outputs} labels")
    max_length = options.max_length or default_max_length(tokenizer, model.config)
    encode = _encoder(tokenizer, max_length, options.input_format, folder)

    def score(pairs: list[tuple[str, str]]) -> np.ndarray:
        with torch.no_grad():
            logits = model(**encode(pairs)).logits.float()
        probs = torch.sigmoid(logits) if labels.kind == "score" else torch.softmax(logits, dim=-1)
        return probs.cpu().numpy().astype(np.float64)

    return score


def _encoder(tokenizer: Any, max_length: int, input_format: str, folder: Path) -> Callable[[list], Any]:
    if input_format == "eos_joined":
        joiner = tokenizer.eos_token or tokenizer.sep_token
        if not joiner:
            raise ModelSetupError(f"NLI model folder {folder}: input_format eos_joined needs a tokenizer with an "
                                  "eos (or sep) token")
        tokenizer.truncation_side = "left"  # keep the claim at the end of the text

        def joined(pairs: list[tuple[str, str]]) -> Any:
            return tokenizer([p + joiner + c for p, c in pairs], padding=True, truncation=True,
                             max_length=max_length, return_tensors="pt")

        return joined

    def paired(pairs: list[tuple[str, str]]) -> Any:
        premises, claims = [p for p, _ in pairs], [c for _, c in pairs]
        try:
            return tokenizer(premises, claims, padding=True, truncation="only_first", max_length=max_length,
                             return_tensors="pt")
        except Exception:  # noqa: BLE001 - a claim longer than max_length alone: cut both
            return tokenizer(premises, claims, padding=True, truncation="longest_first", max_length=max_length,
                             return_tensors="pt")

    return paired


def _predict_scorer(model: Any, predict: Callable[..., Any]) -> Callable[[list[tuple[str, str]]], np.ndarray]:
    """The model's own ``predict(pairs)`` (scores in [0, 1], one per pair)."""
    import torch

    def score(pairs: list[tuple[str, str]]) -> np.ndarray:
        with torch.no_grad():
            out = predict(list(pairs))
        values = np.asarray(out.detach().cpu().numpy() if hasattr(out, "detach") else out, dtype=np.float64)
        values = values.reshape(len(pairs), -1)[:, :1]
        if not np.all(np.isfinite(values)) or values.min() < 0 or values.max() > 1:
            raise ValueError("the model's predict() returned scores outside [0, 1]")
        return values

    return score


_DIGESTS: dict[tuple[str, int, int], str] = {}


def _file_digest(f: Path) -> str:
    """sha256 of a file's bytes, remembered per (path, size, mtime) for the process."""
    st = f.stat()
    key = (str(f.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        h = hashlib.sha256()
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def model_fingerprint(path: str | Path) -> str:
    """A hash of every file of a model folder (config, tokenizer, weights, code) by content:
    other weights of the same size are another model."""
    path = Path(path)
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        rel = f.relative_to(path)
        if f.name in _SKIP or any(part.startswith(".") for part in rel.parts):
            continue
        h.update(f"{rel.as_posix()}\0{_file_digest(f)}\n".encode())
    return h.hexdigest()[:16]


class NLICache:
    """Model outputs by (model fingerprint, pair key) in one sqlite file; safe to share between threads."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = connect(self.path, "CREATE TABLE IF NOT EXISTS nli (model TEXT, key TEXT, scores TEXT,"
                                      " PRIMARY KEY (model, key))")

    def get_many(self, model: str, keys: Sequence[str]) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                batch = list(keys[i:i + 500])
                rows = self._db.execute(f"SELECT key, scores FROM nli WHERE model=? AND key IN "
                                        f"({','.join('?' * len(batch))})", [model, *batch]).fetchall()
                out.update((k, json.loads(v)) for k, v in rows)
        return out

    def put_many(self, model: str, items: Mapping[str, list[float]]) -> None:
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO nli VALUES (?, ?, ?)",
                                 [(model, k, json.dumps(v)) for k, v in items.items()])
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()


def pair_key(premise: str, claim: str, settings: str) -> str:
    """The cache key of one (premise, claim) pair under the input ``settings``."""
    blob = json.dumps([premise, claim, settings], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
