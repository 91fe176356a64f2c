"""Two `evalkit evalset append`s of one set at once: no lost, doubled or torn lines; the second waits.

The first append reads its records from a named pipe, so it is caught half-way for as long as the test
likes: after it has read the eval set, before it writes. The second append runs meanwhile.

Before (issue 33): the second append went ahead against the same old file, so two appends of one new id
both succeeded (the set then held the id twice and no longer validated), and a set whose last line had
no newline got a blank line between the two appended records (no longer a valid eval set either).
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

from faultkit import N_QUESTIONS, cli, jsonl, lines_of, question, spawn, wait_until


def _caught_half_way(ws: Path) -> tuple[subprocess.Popen[str], Path]:
    """`evalset append` from a named pipe: started, and blocked reading its records file, so it has read
    the eval set and holds its lock (the lock's holder record appears; without a lock, give it 8 s)."""
    pipe = ws / "first.jsonl"
    os.mkfifo(pipe)
    first = spawn(ws, "evalset", "append", "sets/kb.jsonl", str(pipe))
    deadline = time.monotonic() + 8
    while not (ws / "sets" / ".kb.jsonl.lock.json").exists() and time.monotonic() < deadline:
        assert first.poll() is None, first.stderr.read()
        time.sleep(0.05)
    return first, pipe


def _second_waits(ws: Path, first: subprocess.Popen[str], pipe: Path, records: str, name: str) -> tuple[
        subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """Start the second append while the first is blocked; once it waits (or, unlocked, has finished), let
    the first go on; return both finished processes (first, second)."""
    (ws / name).write_text(records)
    second = spawn(ws, "evalset", "append", "sets/kb.jsonl", name)
    seen: list[str] = []

    def waiting_or_done() -> bool:
        if second.poll() is not None:
            return True
        line = second.stderr.readline()  # "note: ... waiting" is the first thing a waiting append prints
        seen.append(line)
        return "waiting" in line

    wait_until(waiting_or_done, timeout=60)
    with open(pipe, "w", encoding="utf-8") as fh:  # the first append goes on
        fh.write(jsonl([question(N_QUESTIONS)]))
    out1, err1 = first.communicate(timeout=60)
    out2, err2 = second.communicate(timeout=60)
    return (subprocess.CompletedProcess(first.args, first.returncode, out1, err1),
            subprocess.CompletedProcess(second.args, second.returncode, out2, "".join(seen) + err2))


def test_two_appends_of_one_new_id_add_it_once(ws: Path):
    first, pipe = _caught_half_way(ws)
    other = {**question(N_QUESTIONS), "question": "the same id, another question"}
    a, b = _second_waits(ws, first, pipe, jsonl([other]), "second.jsonl")
    assert a.returncode == 0, a.stderr
    assert f"note: sets/kb.jsonl is being changed by pid {first.pid} on host {socket.gethostname()}" in b.stderr
    assert "waiting" in b.stderr
    assert b.returncode == 1 and "Traceback" not in b.stderr
    assert (f"second.jsonl:1: id: id 'q{N_QUESTIONS}' is already used on line {N_QUESTIONS + 1} of sets/kb.jsonl; "
            "give the new record a new id") in b.stderr
    ids = [json.loads(line)["id"] for line in lines_of(ws / "sets" / "kb.jsonl")]
    assert ids == [f"q{n}" for n in range(N_QUESTIONS + 1)]
    assert cli(ws, "evalset", "validate", "sets/kb.jsonl").returncode == 0


def test_two_appends_to_a_set_without_a_final_newline_leave_no_blank_line(ws: Path):
    path = ws / "sets" / "kb.jsonl"
    path.write_text(path.read_text() + json.dumps(question(N_QUESTIONS + 1)))  # appended by hand, no newline
    first, pipe = _caught_half_way(ws)
    a, b = _second_waits(ws, first, pipe, jsonl([question(N_QUESTIONS + 2)]), "second.jsonl")
    assert a.returncode == 0 and b.returncode == 0, (a.stderr, b.stderr)
    lines = lines_of(path)
    assert all(line.strip() for line in lines)  # no blank line: still a valid eval set
    assert sorted(json.loads(line)["id"] for line in lines[N_QUESTIONS:]) == [f"q{N_QUESTIONS + i}" for i in range(3)]
    assert cli(ws, "evalset", "validate", "sets/kb.jsonl").returncode == 0
    froze = cli(ws, "evalset", "freeze", "sets/kb.jsonl")  # the next version covers all of them, numbered v2
    assert froze.returncode == 0 and f"Froze sets/kb.jsonl v2: {N_QUESTIONS + 3} lines" in froze.stdout
