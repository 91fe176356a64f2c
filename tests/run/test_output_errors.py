"""Bad output locations: one-line errors naming the path and the fix, no tracebacks, no ``*.tmp`` left.

The read-only and full-disk cases are real: the CLI runs in a private mount namespace
(``unshare -m``) on a read-only or a tiny tmpfs; where the machine does not allow that
(no root, no ``unshare``) they are skipped with the reason.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalkit.evalsets import freeze
from evalkit.fileio import OutputError, write_atomic

REPO = Path(__file__).resolve().parents[2]
DOCS = [(f"d{i}", f"document {i} about topic {i % 7} with words " + "filler " * 40) for i in range(60)]


def _set(folder: Path, name: str, n_questions: int) -> Path:
    (folder / "corpora").mkdir(parents=True, exist_ok=True)
    corpus = folder / "corpora" / f"{name}.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": "", "text": t}) + "\n" for i, t in DOCS))
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{n}", "question": f"topic {n % 7} document {n}", "type": "single",
                                        "relevant_doc_ids": [f"d{n}"], "lang": "en"}) + "\n"
                            for n in range(n_questions)))
    freeze(path, corpus=str(corpus))
    return path


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    _set(tmp_path / "sets", "kb", 40)
    _set(tmp_path / "sets", "other", 5)
    (tmp_path / "bm25.yaml").write_text("name: bm25\nchunking: {method: document}\nnodes:\n  retrieve: {type: "
                                        "retrieve, params: {bm25: {tokenizer: en}}}\nedges: {start: retrieve, "
                                        "retrieve: end}\n")
    return tmp_path


def run_cli(ws: Path, output: str, *extra: str, eval_set: str = "kb", wrap: str | None = None, after: str = "true"):
    args = [sys.executable, "-m", "evalkit.cli", "run", "--eval-set", f"sets/{eval_set}.jsonl@v1",
            "--graph-config", "bm25.yaml", "--output", output, "--no-mlflow", "--no-progress", *extra]
    if wrap is not None:  # in a private mount namespace: `wrap` first, the run, then `after` (its stdout to ours)
        args = ["unshare", "-m", "sh", "-c", f"{wrap} && \"$@\"; rc=$?; {after}; exit $rc", "sh", *args]
    env = {**os.environ, "PYTHONPATH": str(REPO), "EVALKIT_CACHE": str(ws / "cache")}
    return subprocess.run(args, cwd=ws, env=env, capture_output=True, text=True, timeout=600)


def one_line_error(proc) -> str:
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


def no_tmp(root: Path) -> None:
    assert sorted(root.rglob("*.tmp")) == []


def test_a_results_folder_that_is_a_file(ws: Path):
    (ws / "out").mkdir()
    (ws / "out" / "kb").write_text("not a folder")
    msg = one_line_error(run_cli(ws, "out/kb.json"))
    assert msg == "error: cannot write out/kb: out/kb is a file, not a folder; move it away or choose another --output"
    msg = one_line_error(run_cli(ws, "out/kb/x.json"))
    assert "out/kb is a file, not a folder" in msg
    assert (ws / "out" / "kb").read_text() == "not a folder"


def test_another_eval_sets_results_are_not_overwritten(ws: Path):
    assert run_cli(ws, "out/res.json", eval_set="other").returncode == 0
    before = (ws / "out" / "res.json").read_bytes()
    msg = one_line_error(run_cli(ws, "out/res.json"))
    assert "out/res/ holds the results of eval set 'other' v1" in msg and "not of 'kb' v1" in msg
    assert "--overwrite" in msg
    assert (ws / "out" / "res.json").read_bytes() == before  # untouched, invocation.json included
    assert "other.jsonl" in (ws / "out" / "res" / "invocation.json").read_text()
    ok = run_cli(ws, "out/res.json", "--overwrite")
    assert ok.returncode == 0, ok.stderr
    assert json.loads((ws / "out" / "res.json").read_text())["eval_set"]["name"] == "kb"
    assert run_cli(ws, "out/res.json").returncode == 0  # the same eval set again: a plain re-run
    no_tmp(ws)


def test_a_killed_run_of_another_set_is_recognised_by_its_variant_files(ws: Path):
    assert run_cli(ws, "out/res.json", eval_set="other").returncode == 0
    (ws / "out" / "res.json").unlink()  # as if killed before the summary was written
    assert "holds the results of eval set 'other' v1" in one_line_error(run_cli(ws, "out/res.json"))


def _can_mount() -> str | None:
    """Why a private tmpfs cannot be mounted here, or None when it can."""
    if shutil.which("unshare") is None:
        return "no unshare command"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                           capture_output=True, text=True)
    return None if probe.returncode == 0 else f"cannot mount a private tmpfs ({probe.stderr.strip()[:80]})"


MOUNT = _can_mount()


@pytest.mark.skipif(MOUNT is not None, reason=f"read-only / full disk need a private mount: {MOUNT}")
def test_a_read_only_file_system(ws: Path):
    (ws / "ro").mkdir()
    msg = one_line_error(run_cli(ws, "ro/kb.json", wrap="mount -t tmpfs -o size=1m,ro tmpfs ro"))
    assert msg == "error: cannot write ro/kb: the file system is read-only; choose another --output"


@pytest.mark.skipif(MOUNT is not None, reason=f"read-only / full disk need a private mount: {MOUNT}")
@pytest.mark.parametrize("size", ["12k", "64k"])
def test_a_full_disk(ws: Path, size: str):
    """Full at the first records (12k: the summary, the invocation and the lock's holder record take a page
    each) or mid-run (64k): one line, no *.tmp, and what was written is
    kept for --resume."""
    (ws / "full").mkdir()
    proc = run_cli(ws, "full/kb.json", wrap=f"mount -t tmpfs -o size={size} tmpfs full",
                   after="find full -name '*.tmp' | sed 's/^/LEFT /'; wc -l < full/kb/bm25/per_query.jsonl")
    msg = one_line_error(proc)
    assert msg.startswith("error: cannot write full/kb")
    assert "no space left on the device (disk full or over quota)" in msg and "--resume" in msg
    assert "LEFT " not in proc.stdout  # no *.tmp on the full disk


@pytest.mark.skipif(MOUNT is not None, reason=f"read-only / full disk need a private mount: {MOUNT}")
def test_records_that_fit_once_need_no_second_copy(ws: Path):
    """500k: the 40 records (~330 KB) fit once but not twice. They are written in eval-set order,
    so per_query.jsonl is kept as written (VariantStore.finish) and the run completes; it used to
    fail at a final ordered rewrite that needed room for a second copy."""
    (ws / "full").mkdir()
    proc = run_cli(ws, "full/kb.json", wrap="mount -t tmpfs -o size=500k tmpfs full",
                   after="find full -name '*.tmp' | sed 's/^/LEFT /'; wc -l < full/kb/bm25/per_query.jsonl")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "LEFT " not in proc.stdout and proc.stdout.split()[-1] == "40"


def test_a_full_disk_leaves_no_tmp_and_keeps_the_old_file(tmp_path: Path):
    target = tmp_path / "summary.json"
    target.write_text("old")

    def fill(fh):
        fh.write("partial")
        raise OSError(errno.ENOSPC, "No space left on device", str(target) + ".tmp")

    with pytest.raises(OutputError) as info:
        write_atomic(target, fill)
    assert "no space left on the device" in str(info.value) and "free some space or choose another --output" in str(
        info.value)
    assert target.read_text() == "old"
    no_tmp(tmp_path)


def test_write_atomic_replaces_and_maps_errors(tmp_path: Path):
    write_atomic(tmp_path / "a" / "b.json", "x")
    assert (tmp_path / "a" / "b.json").read_text() == "x"
    (tmp_path / "file").write_text("")
    with pytest.raises(OutputError, match=r"file is a file, not a folder"):
        write_atomic(tmp_path / "file" / "c.json", "y")
    with pytest.raises(OutputError, match="it is a folder, not a file"):
        write_atomic(tmp_path / "a", "z")
    no_tmp(tmp_path)
