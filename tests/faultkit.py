"""Helpers of the fault suite (tests/faults/): the real CLI in subprocesses, and what a user must see.

Every case runs ``python -m evalkit.cli`` in its own process (what a user or a CI job
does), so what is asserted is what the user sees: the exit code and the lines on
stderr. ``one_line_error`` is the shared check: the expected exit code, no traceback,
exactly one error line.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PLUGINS = REPO / "tests" / "faults"  # hold_nodes.py: a node that holds a run half-way while a file exists
N_QUESTIONS = 40
DOCS = [(f"d{i}", f"document {i} about topic {i % 7} with words " + "filler " * 40) for i in range(60)]
SET = "sets/kb.jsonl@v1"


def question(n: int) -> dict:
    """Question ``q<n>``, whose one gold document is ``d<n>``."""
    return {"id": f"q{n}", "question": f"topic {n % 7} document {n}", "type": "single",
            "relevant_doc_ids": [f"d{n}"], "lang": "en"}


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def env_for(ws: Path) -> dict[str, str]:
    """This checkout's evalkit, the test node plugin, and a cache inside the workspace."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(PLUGINS)]), "EVALKIT_PLUGINS": "hold_nodes",
            "EVALKIT_CACHE": str(ws / "cache"), "PYTHONUNBUFFERED": "1"}


def cli(ws: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``evalkit ARGS`` run to its end in ``ws``."""
    return subprocess.run([sys.executable, "-m", "evalkit.cli", *args], cwd=ws, env=env_for(ws),
                          capture_output=True, text=True, timeout=timeout)


def spawn(ws: Path, *args: str) -> subprocess.Popen[str]:
    """``evalkit ARGS`` started in ``ws`` (not waited for)."""
    return subprocess.Popen([sys.executable, "-m", "evalkit.cli", *args], cwd=ws, env=env_for(ws),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_until(done: Callable[[], bool], proc: subprocess.Popen[str] | None = None, timeout: float = 60) -> None:
    """Poll ``done`` until it holds; fails when ``proc`` ended first or the time is up."""
    deadline = time.monotonic() + timeout
    while not done():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the process ended first (exit {proc.returncode}): {proc.stderr.read()[-2000:]}")
        if time.monotonic() > deadline:
            pytest.fail("timed out")
        time.sleep(0.05)


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def one_line_error(proc: subprocess.CompletedProcess[str], code: int) -> str:
    """The one error line of a command that failed as a user should see it: ``code``, no traceback."""
    assert proc.returncode == code, (proc.returncode, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.lower().startswith("error")]
    assert len(errors) == 1, proc.stderr[-3000:]
    return errors[0]
