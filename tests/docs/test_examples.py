"""Every example of README.md, README.zh-CN.md and docs/*.md runs as written.

The blocks are extracted by ``doc_blocks.py`` (what counts as an example, and the
``<!-- no-test: ... -->`` / ``<!-- test: ... -->`` markers, are described there). Each page's
examples run in order in a scratch copy of the repository's data folders, offline, with the
venv's ``evalkit``:

* the demo eval set there is a **slice**: 12 of demo_kb's questions (10 answerable, 2
  unanswerable) over 24 of its documents (their 11 gold ones and 13 others), frozen as v1,
  so ``eval_sets/demo_kb.jsonl@v1`` runs in seconds; the numbers differ from the full demo's that the pages print, and are not
  compared;
* ``results/demo_kb.json`` is there before the first command: ``evalkit run`` of the bundled
  configs the pages name, on that slice (what ``evalkit demo`` writes, for those variants).

The README's set-up lines (``./setup.sh && ...``) are what CI itself runs (``.ci/run``).
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("evalkit_tests_doc_blocks", Path(__file__).with_name("doc_blocks.py"))
doc_blocks = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = doc_blocks
_spec.loader.exec_module(doc_blocks)

REPO = doc_blocks.REPO
FIXTURE_CONFIGS = ("bm25", "hybrid_rrf", "hybrid_weighted", "hybrid_rrf_rerank_guard", "rag_extractive",
                   "agentic_reflect")
SLICE_QUESTIONS = 10  # answerable questions of the slice (the first ones), plus the first 2 unanswerable
SLICE_DOCS = 24
TIMEOUT_S = 600


def shell_env(bindir: Path) -> dict[str, str]:
    """The environment commands run in: this checkout's evalkit first on the PATH, offline."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "120"}
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


def make_bindir(root: Path) -> Path:
    """``evalkit``, ``python`` and ``mlflow`` for the shell: this interpreter, this checkout."""
    bindir = root / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    for name, target in (("evalkit", f'"{sys.executable}" -m evalkit.cli'), ("python", f'"{sys.executable}"'),
                         ("mlflow", f'"{sys.executable}" -m mlflow')):
        script = bindir / name
        script.write_text(f"#!/bin/sh\nexec {target} \"$@\"\n")
        script.chmod(0o755)
    return bindir


TIMINGS: list[tuple[float, str, str]] = []  # (seconds, where, command): printed with -s, to keep the examples small


def run_command(cmd: str, cwd: Path, env: dict[str, str], where: str) -> subprocess.CompletedProcess:
    start = time.monotonic()
    res = subprocess.run(["bash", "-c", cmd], check=False, cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=TIMEOUT_S)
    TIMINGS.append((time.monotonic() - start, where, cmd.split("\n")[0][:90]))
    assert res.returncode == 0, f"{where}: `{cmd}` exited {res.returncode}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res


def write_slice(ws: Path, env: dict[str, str]) -> None:
    """Replace the workspace's demo_kb with a 12-question slice over 24 documents, frozen as v1."""
    rows = [json.loads(line) for line in (REPO / "eval_sets" / "demo_kb.jsonl").read_text(encoding="utf-8").splitlines()]
    answerable = [r for r in rows if r["relevant_doc_ids"]][:SLICE_QUESTIONS]
    unanswerable = [r for r in rows if not r["relevant_doc_ids"]][:2]
    keep = answerable + unanswerable
    docs = [json.loads(line) for line in
            (REPO / "eval_sets" / "corpora" / "demo_kb.jsonl").read_text(encoding="utf-8").splitlines()]
    gold = {d for r in keep for d in r["relevant_doc_ids"]}
    chosen = [d for d in docs if d["id"] in gold]
    chosen += [d for d in docs if d["id"] not in gold][: SLICE_DOCS - len(chosen)]
    es = ws / "eval_sets"
    for old in [*es.glob("demo_kb.*")]:
        old.unlink()
    (es / "demo_kb.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in keep), encoding="utf-8")
    (es / "corpora" / "demo_kb.jsonl").write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in chosen),
                                                  encoding="utf-8")
    run_command("evalkit evalset freeze demo_kb --corpus eval_sets/corpora/demo_kb.jsonl", ws, env, "slice")


@pytest.fixture(scope="module")
def base_workspace(tmp_path_factory):
    """Data folders, the demo slice and its results, built once; each page gets a copy."""
    root = tmp_path_factory.mktemp("docs_examples")
    env = shell_env(make_bindir(root))
    ws = root / "base"
    ws.mkdir()
    for folder in ("eval_sets", "graph_configs", "examples"):
        shutil.copytree(REPO / folder, ws / folder)
    write_slice(ws, env)
    configs = " ".join(f"--graph-config graph_configs/{c}.yaml" for c in FIXTURE_CONFIGS)
    run_command(f"evalkit run --eval-set eval_sets/demo_kb.jsonl@v1 {configs} --output results/demo_kb.json "
                "--no-progress --no-mlflow", ws, env, "fixture")
    yield ws, env
    for seconds, where, cmd in sorted(TIMINGS, reverse=True)[:10]:
        print(f"{seconds:6.1f} s  {where}  {cmd}")


def page_blocks() -> dict[str, list]:
    return {str(p.relative_to(REPO)): [b for b in doc_blocks.blocks(p) if b.lang in doc_blocks.RUNNABLE]
            for p in doc_blocks.pages()}


RUN_PAGES = sorted(name for name, bs in page_blocks().items() if any(b.mark is None for b in bs))


def test_every_command_shown_is_run_or_says_why_not():
    blocks = doc_blocks.all_blocks()
    assert not doc_blocks.unmarked_commands(blocks), [b.where for b in doc_blocks.unmarked_commands(blocks)]
    for b in blocks:
        if b.mark == "no-test":
            assert b.reason, f"{b.where}: a no-test marker needs a reason"
        if b.mark == "test":
            test_file = REPO / b.reason.split()[0]
            assert test_file.is_file(), f"{b.where}: the test named in its marker does not exist: {test_file}"
            assert b.page.name in test_file.read_text(encoding="utf-8"), f"{b.where}: {test_file} does not read {b.page.name}"
    runnable = [b for b in blocks if b.lang in doc_blocks.RUNNABLE]
    tested_here = [b for b in runnable if b.mark is None]
    # the parametrised test below runs every runnable block not marked otherwise, page by page
    assert {str(b.page.relative_to(REPO)) for b in tested_here} == set(RUN_PAGES)
    assert any(b.page.name == "running.md" and b.commands()[0].startswith("evalkit run") for b in tested_here)
    print(f"{len(tested_here)} example blocks run here on {len(RUN_PAGES)} pages; "
          f"{sum(b.mark == 'test' for b in blocks)} run by other tests; "
          f"{sum(b.mark == 'no-test' for b in blocks)} not run: "
          + "; ".join(f"{b.where} ({b.reason})" for b in blocks if b.mark == "no-test"))



@contextlib.contextmanager
def _process_state_kept() -> Iterator[None]:
    """Run a page's Python block, then undo what it set process-wide for the tests that follow.

    A block written for a reader sets ``mlflow.set_tracking_uri(...)`` and ``set_experiment``: MLflow keeps both
    in module globals and in ``os.environ``, where a later test's "no store given" case would find them.
    """
    env = dict(os.environ)
    try:
        yield
    finally:
        if "mlflow" in sys.modules:
            import mlflow
            from mlflow.tracking import fluent

            mlflow.set_tracking_uri(None)  # type: ignore[arg-type]  # None unsets the global and the env var
            fluent._active_experiment_id = None
        os.environ.clear()
        os.environ.update(env)

@pytest.mark.slow
@pytest.mark.parametrize("page", RUN_PAGES)
def test_page_examples_run(page: str, base_workspace, tmp_path: Path):
    base, env = base_workspace
    ws = tmp_path / "ws"
    shutil.copytree(base, ws)
    ran = 0
    namespace: dict = {}
    cwd = Path.cwd()
    for b in page_blocks()[page]:
        if b.mark is not None:
            continue
        if b.lang == "python":
            os.chdir(ws)
            try:
                with _process_state_kept():
                    exec(compile(b.code, b.where, "exec"), namespace)  # noqa: S102 - our own docs
            finally:
                os.chdir(cwd)
        else:
            commands = b.commands()
            assert commands, f"{b.where}: a {b.lang} block without a command"
            for cmd in commands:
                run_command(cmd, ws, env, b.where)
        ran += 1
    assert ran == sum(1 for b in page_blocks()[page] if b.mark is None) and ran > 0
