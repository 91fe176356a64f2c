"""Benchmark scripts loaded by path for the tests of their pure parts.

A benchmark imports its neighbours by name (``from judge_held_out import ...``), so benchmarks/ must be on
sys.path while it loads; it must not stay there, or its graphrag.py would shadow tests/graphrag.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str, *needs: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module, and the benchmark modules it imports when called (``needs``,
    imported by name while benchmarks/ is on the path)."""
    saved = list(sys.path)
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"evalkit_bench_{name}", BENCH / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        for other in needs:
            importlib.import_module(other)
        return module
    finally:
        sys.path[:] = saved
