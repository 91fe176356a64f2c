"""``evalkit.locking``: reentrant in one thread, exclusive between threads and processes, the holder named,
a dead holder's record taken over with a note (the real two-process cases: tests/faults/test_one_writer.py)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from evalkit.locking import Holder, LockBusyError, evalset_lock, output_lock, read_holder, this_process

REPO = Path(__file__).resolve().parents[1]


def test_reentrant_in_one_thread_and_released_at_the_outer_exit(tmp_path: Path):
    (tmp_path / "kb").mkdir()
    record = tmp_path / "kb" / ".evalkit.lock.json"
    with output_lock(tmp_path / "kb.json"):
        with output_lock(tmp_path / "kb.json"):  # the command, then the runner
            assert read_holder(tmp_path / "kb" / ".evalkit.lock").pid == os.getpid()
        assert record.exists()  # the inner exit keeps the lock
    assert not record.exists()


def test_another_thread_is_refused_naming_this_process(tmp_path: Path):
    (tmp_path / "kb").mkdir()
    errors: list[str] = []

    def second() -> None:
        try:
            with output_lock(tmp_path / "kb.json"):
                errors.append("entered")
        except LockBusyError as exc:
            errors.append(str(exc))

    with output_lock(tmp_path / "kb.json"):
        t = threading.Thread(target=second)
        t.start()
        t.join()
    assert len(errors) == 1 and errors[0].startswith(f"{tmp_path / 'kb'}/ is being written by pid {os.getpid()} "
                                                     f"on host {socket.gethostname()} since ")
    assert LockBusyError.exit_code == 2


def test_a_dead_holders_record_is_taken_over_with_a_note(tmp_path: Path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(gone.stdout)  # a process that has ended
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / ".evalkit.lock.json").write_text(json.dumps(
        {"pid": pid, "host": socket.gethostname(), "started": "2026-12-04 05:00:00 UTC", "command": "evalkit run x"}))
    notes: list[str] = []
    with output_lock(tmp_path / "kb.json", note=notes.append):
        assert read_holder(tmp_path / "kb" / ".evalkit.lock").pid == os.getpid()
    assert notes == [f"note: {tmp_path / 'kb'}/ was last locked by pid {pid} on host {socket.gethostname()} since "
                     "2026-12-04 05:00:00 UTC (evalkit run x), which is no longer running (killed?); taking it over"]


def test_holder_liveness():
    me = this_process()
    assert me.alive() is True and me.pid == os.getpid()
    assert Holder(pid=os.getpid(), host=me.host, started="", process_started=(me.process_started or 0) + 60).alive() \
        is False  # the pid now belongs to a process started later: reused
    assert Holder(pid=1, host="another-host-" + me.host, started="").alive() is None


def test_an_eval_set_changer_waits_then_gives_up_writing_nothing(tmp_path: Path):
    path = tmp_path / "kb.jsonl"
    path.write_text("")
    notes: list[str] = []
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path; "
                               "from evalkit.locking import evalset_lock\n"
                               f"with evalset_lock(Path({str(path)!r})):\n print('held', flush=True); time.sleep(30)"],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(LockBusyError) as err, evalset_lock(path, note=notes.append, timeout=0.3):
            pass
    finally:
        holder.kill()
        holder.wait()
    assert notes == [f"note: {path} is being changed by pid {holder.pid} on host {socket.gethostname()} since "
                     f"{read_holder_started(notes[0])} (-c); waiting"]
    assert str(err.value).startswith(f"{path}: being changed by pid {holder.pid}")
    assert "for more than 0 s; try again when it has finished (nothing was written)" in str(err.value)
    with evalset_lock(path, timeout=0.3):  # its holder killed: the lock went with it
        pass


def read_holder_started(note: str) -> str:
    """The ``since ...`` time of a note (it is the holder's clock, read back rather than guessed)."""
    return note.split(" since ", 1)[1].split(" (", 1)[0]


def test_the_holder_record_never_keeps_a_credential_of_the_command_line(monkeypatch):
    """The holder's command is written beside the lock and printed to the next writer: a tracking URI with a
    user and token in it must be redacted there as everywhere else."""
    import sys

    from evalkit.locking import this_process

    monkeypatch.setattr(sys, "argv", ["evalkit", "run", "--tracking-uri", "https://alice:s3cr3tT0ken@mlflow.example.com"])
    command = this_process().command
    assert "s3cr3tT0ken" not in command and "alice" not in command and "mlflow.example.com" in command
