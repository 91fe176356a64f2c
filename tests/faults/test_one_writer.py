"""One writer per output: a second `run`, `run --resume`, `score` or `demo` into an output being written is
refused at once (exit 2) naming the holder; a writer killed with SIGKILL leaves nothing that blocks the next one.

Before (issue 33): two `evalkit run`s into one --output both exited 0; the summary held only the second
run's variants and a per_query.jsonl could hold a torn line.
"""
from __future__ import annotations

import json
import signal
import socket
import subprocess
from pathlib import Path

from faultkit import N_QUESTIONS, SET, cli, lines_of, one_line_error, spawn, wait_until

HELD_RUN = ("run", "--eval-set", SET, "--graph-config", "held.yaml", "--output", "out/kb.json", "--no-mlflow",
            "--no-progress", "--no-share")
HELD_AFTER = 25  # conftest.HELD_AFTER: held.yaml runs 25 queries, then waits while the file HOLD exists


def _whole_ids(path: Path) -> list[str]:
    """Query ids of the whole lines of a per_query.jsonl (every line must be a whole record)."""
    return [json.loads(line)["query_id"] for line in lines_of(path)]


def _caught_half_way(ws: Path) -> tuple[subprocess.Popen[str], Path]:
    """A real `evalkit run` that has written 25 records and waits (while ws/HOLD exists) in its query loop."""
    (ws / "HOLD").touch()
    per_query = ws / "out" / "kb" / "held" / "per_query.jsonl"
    first = spawn(ws, *HELD_RUN)
    wait_until(lambda: len(lines_of(per_query)) >= HELD_AFTER, first, timeout=120)
    return first, per_query


def test_a_second_run_into_an_output_being_written_is_refused(ws: Path):
    first, per_query = _caught_half_way(ws)
    second = cli(ws, "run", "--eval-set", SET, "--graph-config", "bm25.yaml", "--output", "out/kb.json",
                 "--no-mlflow", "--no-progress")
    resumed = cli(ws, "run", "--resume", "out/kb.json", "--no-progress")  # --resume is a writer too
    (ws / "HOLD").unlink()  # the first run goes on
    assert first.wait(timeout=120) == 0, first.stderr.read()
    msg = one_line_error(second, 2)
    assert msg.startswith("error: out/kb/ is being written by ")
    assert f"pid {first.pid} on host {socket.gethostname()} since 20" in msg and " UTC (evalkit run " in msg
    assert "wait for it to finish, choose another --output" in msg and "`evalkit run --resume out/kb.json`" in msg
    assert f"pid {first.pid}" in one_line_error(resumed, 2)
    # nothing the first run finished was lost or torn, and nothing of the refused runs got in
    summary = json.loads((ws / "out" / "kb.json").read_text())
    assert list(summary["variants"]) == ["held"] and summary["status"] == "complete"
    assert _whole_ids(per_query) == [f"q{n}" for n in range(N_QUESTIONS)]
    assert not (ws / "out" / "kb" / "bm25").exists()
    assert not (ws / "out" / "kb" / ".evalkit.lock.json").exists()  # released: the holder record is gone


def test_a_killed_writer_is_taken_over_with_a_notice_and_resumed(ws: Path):
    first, per_query = _caught_half_way(ws)
    first.send_signal(signal.SIGKILL)
    assert first.wait(timeout=30) == -signal.SIGKILL
    assert _whole_ids(per_query) == [f"q{n}" for n in range(HELD_AFTER)]
    (ws / "HOLD").unlink()
    resumed = cli(ws, "run", "--resume", "out/kb.json", "--no-progress")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    notes = [line for line in resumed.stderr.splitlines() if line.startswith("note: ") and "taking it over" in line]
    assert len(notes) == 1, resumed.stderr
    assert notes[0].startswith(f"note: out/kb/ was last locked by pid {first.pid} on host {socket.gethostname()}")
    assert "which is no longer running (killed?)" in notes[0]
    assert f"held: resuming, {HELD_AFTER} finished queries kept, {N_QUESTIONS - HELD_AFTER} to run" in resumed.stderr
    assert _whole_ids(per_query) == [f"q{n}" for n in range(N_QUESTIONS)]
    again = cli(ws, "run", "--resume", "out/kb.json", "--no-progress")  # released cleanly: no notice now
    assert again.returncode == 0 and "taking it over" not in again.stderr


def test_score_and_demo_into_an_output_being_written_are_refused(ws: Path):
    (ws / "mine.trec").write_text("".join(f"q{n} Q0 d{n} 1 1.0 mine\n" for n in range(N_QUESTIONS)))
    first, per_query = _caught_half_way(ws)
    score = cli(ws, "score", "--eval-set", SET, "--run", "mine.trec", "--name", "mine", "--output", "out/kb.json",
                "--no-mlflow")
    demo = cli(ws, "demo", "--output", "out/kb.json", "--no-progress", "--config", "bm25", timeout=60)
    (ws / "HOLD").unlink()
    assert first.wait(timeout=120) == 0, first.stderr.read()
    for proc in (score, demo):
        msg = one_line_error(proc, 2)
        assert f"out/kb/ is being written by pid {first.pid} on host {socket.gethostname()}" in msg
    summary = json.loads((ws / "out" / "kb.json").read_text())  # the run's summary, not the scored file's
    assert list(summary["variants"]) == ["held"] and summary["status"] == "complete"
    assert _whole_ids(per_query) == [f"q{n}" for n in range(N_QUESTIONS)]
    assert not (ws / "out" / "kb" / "mine").exists()
    score = cli(ws, "score", "--eval-set", SET, "--run", "mine.trec", "--name", "mine", "--output", "out/kb.json",
                "--no-mlflow")  # the lock released: the same command now writes
    assert score.returncode == 0, score.stderr[-2000:]
    assert len(_whole_ids(ws / "out" / "kb" / "mine" / "per_query.jsonl")) == N_QUESTIONS
