"""Loaded model weights, one place for the whole process.

Weights are the expensive, process-level part of a model (an e5 engine, a GGUF server, a
sentence-transformers model): load each once, whoever asks. ``Resources`` (per
invocation: indexes, clients, embedding caches) and the LLM backends both get weights
from :data:`MODELS`, keyed by what identifies the weights (model name and settings, file
path and context size), so two invocations in one notebook or a judge and a graph node
share one copy. Nothing else in evalkit keeps module-level models.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


class ModelStore:
    """Models built once per key, thread-safe (a second caller waits for the first load)."""

    def __init__(self) -> None:
        self._models: dict[Hashable, Any] = {}
        self._locks: dict[Hashable, threading.Lock] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, load: Callable[[], T]) -> T:
        """The model under ``key``, loaded by ``load()`` on first use (a failed load is retried next time)."""
        with self._lock:
            if key in self._models:
                return self._models[key]
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                if key in self._models:
                    return self._models[key]
            model = load()
            with self._lock:
                self._models[key] = model
            return model

    def loaded(self) -> list[Hashable]:
        """Keys of the models loaded so far."""
        with self._lock:
            return list(self._models)


MODELS = ModelStore()
"""The process's loaded models."""
