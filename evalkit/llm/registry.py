"""The registry of LLM backends: the names ``backend:`` may take in an LLM spec, and what each can do.

A backend registers a factory with :func:`register_backend`, under the name configs write,
and says whether it is a language **model** (follows instructions, answers in JSON: can
judge, grade, extract entities) or not (``extractive`` quotes evidence sentences):

    @register_backend("my_server", model=True, description="my in-house server")
    def _my_server(spec, cache_root):
        from my_pkg.backend import MyBackend  # heavy imports inside: registering costs nothing
        return MyBackend(spec)

Code that needs a model asks :func:`require_model` (or :func:`is_model`) instead of naming a
backend; ``LLMSpec`` refuses a name that is not registered. Plugin modules named in
``EVALKIT_PLUGINS`` (:mod:`evalkit.plugins`) register their own backends the same way.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalkit.errors import UnknownNameError, did_you_mean
from evalkit.plugins import load_plugins

if TYPE_CHECKING:
    from evalkit.llm.base import Backend, LLMSpec

BackendFactory = Callable[["LLMSpec", "Path | None"], "Backend"]


@dataclass(frozen=True)
class BackendInfo:
    """One registered backend: its factory, whether it is a language model, and what it is (one line)."""

    name: str
    factory: BackendFactory
    model: bool
    description: str
    limitation: str = ""  # for a non-model backend: why it cannot do a model's work (shown in errors)
    concurrent: bool = True  # calls may run in parallel threads (False: one in-process model, one call at a time)


BACKENDS: dict[str, BackendInfo] = {}
"""Backends by the name an LLM spec's ``backend:`` gives."""


def register_backend(name: str, *, model: bool, description: str, limitation: str = "", concurrent: bool = True
                     ) -> Callable[[BackendFactory], BackendFactory]:
    """Decorator: register ``factory(spec, cache_root) -> Backend`` as backend ``name`` (once)."""
    def add(factory: BackendFactory) -> BackendFactory:
        if name in BACKENDS and BACKENDS[name].factory is not factory:
            raise ValueError(f"LLM backend '{name}' is registered twice")
        BACKENDS[name] = BackendInfo(name, factory, model, description, limitation, concurrent)
        return factory
    return add


def backends() -> dict[str, BackendInfo]:
    """Every registered backend (the built-ins, then the user's plugins)."""
    load_plugins()
    return BACKENDS


def choices(names: list[str] | None = None) -> str:
    """``'openai', 'local' or 'extractive'``: the names in registration order, as a sentence."""
    quoted = [f"'{n}'" for n in (list(backends()) if names is None else names)]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def backend_info(name: str) -> BackendInfo:
    """The backend registered as ``name``; ``UnknownNameError`` with the choices and a did-you-mean."""
    found = backends().get(name)
    if found is None:
        close = did_you_mean(name, BACKENDS)
        raise UnknownNameError(f"unknown LLM backend '{name}': one of {choices()}"
                               f"{close if 'did you mean' in close else ''}")
    return found


def is_model(name: str) -> bool:
    """Whether backend ``name`` is a language model (can follow instructions and answer in JSON)."""
    return backend_info(name).model


def model_backends() -> list[str]:
    """The registered backends that are language models."""
    return [n for n, b in backends().items() if b.model]


def require_model(name: str, what: str) -> str:
    """``""`` when backend ``name`` is a model, else the sentence saying ``what`` needs one and why."""
    info = backend_info(name)
    if info.model:
        return ""
    return (f"{what} needs a model backend ({choices(model_backends())}): the '{name}' backend "
            f"{info.limitation or 'is not a language model'}")


@register_backend("openai", model=True, description="any OpenAI-compatible server")
def _openai(spec: LLMSpec, cache_root: Path | None) -> Backend:
    from evalkit.llm.openai_compat import OpenAIBackend

    return OpenAIBackend(spec)


@register_backend("local", model=True, description="a GGUF in-process (SmolLM2 by default)", concurrent=False)
def _local(spec: LLMSpec, cache_root: Path | None) -> Backend:
    from evalkit.llm.local import LocalBackend

    return LocalBackend(spec)


@register_backend("extractive", model=False, description="quotes evidence, no model",
                  limitation="only quotes evidence and cannot answer in JSON")
def _extractive(spec: LLMSpec, cache_root: Path | None) -> Backend:
    from evalkit.llm.extractive import ExtractiveBackend

    return ExtractiveBackend(spec, cache_root)
