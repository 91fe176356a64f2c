"""Loading an NLI model folder with transformers and scoring (premise, claim) pairs with it.

What it is for: the one place the ``nli`` judge touches torch and transformers (imported
here only, when a model is first needed). :func:`load_scorer` loads tokenizer and model
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

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from evalkit.judges.base import JudgeSetupError
from evalkit.judges.nli_rules import Labels

__all__ = ["default_max_length", "load_scorer"]

MAX_LENGTH = 512  # when the tokenizer names no usable maximum


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


def load_scorer(folder: Path, labels: Labels, options: Any) -> Callable[[list[tuple[str, str]]], np.ndarray]:
    """A scorer for the model in ``folder`` (see the module docstring); setup problems are ``JudgeSetupError``."""
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
        raise JudgeSetupError(f"NLI model folder {folder}: transformers could not load the model "
                              f"({type(exc).__name__}: {str(exc)[:300]})") from None
    missing = sorted(info.get("missing_keys") or [])
    if missing:  # transformers would score with freshly initialised (random) layers: refuse
        raise JudgeSetupError(f"NLI model folder {folder}: the weights lack {len(missing)} layer(s) of a "
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
        raise JudgeSetupError(f"NLI model folder {folder}: no usable tokenizer ({type(exc).__name__}: "
                              f"{str(exc)[:300]}); the folder needs the tokenizer files the model was saved with") \
            from None
    n_out = int(getattr(model.config, "num_labels", labels.n_outputs))
    if n_out != labels.n_outputs:
        raise JudgeSetupError(f"NLI model folder {folder}: the model has {n_out} outputs, config.json names "
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
            raise JudgeSetupError(f"NLI model folder {folder}: input_format eos_joined needs a tokenizer with an "
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
