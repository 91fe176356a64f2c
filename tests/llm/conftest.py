"""Fixtures for the LLM tests: the fault server (real SmolLM2 behind an OpenAI-compatible API)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest


def _load_fault_server():
    # tests/ is not a package (pytest runs with --import-mode=importlib): load the helper by path
    name = "evalkit_tests_llm_fault_server"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("fault_server.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


fault_server_module = _load_fault_server()


@pytest.fixture
def fault_server():
    """A started ``FaultServer``; push fault entries with ``fault_server.push("429:1", "ok")``."""
    with fault_server_module.FaultServer() as srv:
        yield srv


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (connection refused)."""
    return fault_server_module.closed_port()
