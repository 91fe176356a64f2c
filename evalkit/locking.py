"""One writer at a time: exclusive locks on a run's output, an eval set, and a local MLflow store.

Every lock is a :class:`filelock.FileLock` (the operating system's lock, ``flock``; on a
file system without it, filelock's own marker file): the kernel lets it go when its
process dies, even by ``kill -9``, so a lock can never be left behind by a crash. Beside
the lock, its holder writes who it is (:class:`Holder`: pid, host, start time, command)
to ``<lock>.json``, and removes it on release. That file is what the user sees:

* a second writer is refused (an output) or waits (an eval set, an MLflow store) with
  the holder named: ``results/kb/ is being written by pid 4242 on host ci-7 since
  2026-12-04 05:50:01 UTC (evalkit run ...)``;
* a holder that died without releasing (``kill -9``, a power cut) left its ``.json``
  behind: the next writer takes the lock and says whose it was and that it is gone.

Locks are reentrant within one thread (``evalkit run`` takes the output's lock, then
the runner takes it again), so library calls and commands can both hold them.

``output_lock`` guards ``results/NAME/`` (``run``, ``run --resume``, ``score``, ``demo``);
``evalset_lock`` guards ``eval_sets/NAME.jsonl`` and its manifest (``append``, ``freeze``,
``import``); ``store_lock`` guards the creation and schema upgrade of a local
``mlflow.db`` (two first runs at once half-migrated it).
"""
from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitError
from evalkit.fileio import output_error
from evalkit.redact import redact

__all__ = ["Holder", "LockBusyError", "evalset_lock", "hold", "output_lock", "store_lock"]

OUTPUT_LOCK = ".evalkit.lock"
"""The lock file inside a results folder (``results/NAME/.evalkit.lock``); its holder in ``.evalkit.lock.json``."""
EVALSET_WAIT_S = 60.0  # an append or freeze holds an eval set for well under a second
STORE_WAIT_S = 300.0  # creating and migrating a new mlflow.db takes a few seconds on a slow disk


class LockBusyError(EvalkitError):
    """Another process holds the lock (an output being written, an eval set being changed); says who and what to do."""

    exit_code = 2


@dataclass(frozen=True)
class Holder:
    """Who holds a lock: written beside it, read by whoever is refused or takes it over."""

    pid: int
    host: str
    started: str  # when the lock was taken, UTC
    command: str = ""
    process_started: float | None = None  # the process's own start time (psutil), to tell a reused pid

    def describe(self) -> str:
        what = f" ({self.command})" if self.command else ""
        return f"pid {self.pid} on host {self.host} since {self.started}{what}"

    def alive(self) -> bool | None:
        """Whether the holder's process still runs; ``None`` when it ran on another host (unknowable here)."""
        if self.host != socket.gethostname():
            return None
        started = _process_started(self.pid)
        if started is None:
            return False
        return self.process_started is None or abs(started - self.process_started) < 1.0


def _process_started(pid: int) -> float | None:
    import psutil

    try:
        return round(psutil.Process(pid).create_time(), 1)
    except (psutil.Error, OSError):
        return None


def this_process() -> Holder:
    """The :class:`Holder` record of the calling process."""
    # the command line may carry a credential (--tracking-uri https://user:token@host): never written as is
    command = redact(" ".join(["evalkit", *sys.argv[1:]]) if Path(sys.argv[0]).name in ("evalkit", "cli.py")
                     else " ".join(sys.argv))
    return Holder(pid=os.getpid(), host=socket.gethostname(),
                  started=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), command=command[:200],
                  process_started=_process_started(os.getpid()))


def read_holder(lock_path: Path) -> Holder | None:
    """The holder recorded beside ``lock_path`` (``None`` when there is none or it cannot be read)."""
    try:
        data = json.loads(_holder_path(lock_path).read_text(encoding="utf-8"))
        return Holder(**{k: data[k] for k in Holder.__dataclass_fields__ if k in data})
    except (OSError, ValueError, TypeError):
        return None


def _holder_path(lock_path: Path) -> Path:
    return lock_path.with_name(lock_path.name + ".json")


_HELD: dict[str, list[int]] = {}  # lock path -> [owning thread id, depth]
_HELD_GUARD = threading.Lock()


@contextmanager
def hold(lock_path: Path, *, timeout: float, busy: Callable[[Holder | None], str],
         note: Callable[[str], None] | None = None, waiting: Callable[[Holder | None], str] | None = None
         ) -> Iterator[None]:
    """Hold the exclusive lock ``lock_path`` for the block; reentrant within the thread that holds it.

    Args:
        timeout: seconds to wait for another holder to finish (0: refuse at once).
        busy: the message of the :class:`LockBusyError` raised when the lock stays taken.
        note: called with one line when a dead holder's lock is taken over, or (with
            ``waiting``) before waiting.
        waiting: the line ``note`` gets before this process waits for another holder.
    """
    key = str(Path(lock_path).absolute())
    me = threading.get_ident()
    with _HELD_GUARD:
        held = _HELD.get(key)
        if held is not None and held[0] == me:
            held[1] += 1
    if held is not None and held[0] == me:  # this thread holds it already (the command, then the library)
        try:
            yield
        finally:
            with _HELD_GUARD:
                _HELD[key][1] -= 1
        return
    lock = _acquire(Path(lock_path), timeout, busy, note, waiting)
    try:
        previous = read_holder(Path(key))
        if previous is not None and note is not None and (previous.pid, previous.host) != (os.getpid(),
                                                                                           socket.gethostname()):
            note(_taken_over(Path(lock_path), previous))
        try:
            _holder_path(Path(key)).write_text(json.dumps(asdict(this_process())) + "\n", encoding="utf-8")
        except OSError as exc:
            raise output_error(_holder_path(Path(lock_path)), exc, LOCK_HINT) from None
        with _HELD_GUARD:
            _HELD[key] = [me, 1]
        try:
            yield
        finally:
            with _HELD_GUARD:
                _HELD.pop(key, None)
            _holder_path(Path(key)).unlink(missing_ok=True)  # before the lock goes: a holder file names a holder
    finally:
        lock.release()


LOCK_HINT = "make the folder writable (evalkit writes a lock file there while it changes it)"


def _acquire(lock_path: Path, timeout: float, busy: Callable[[Holder | None], str],
             note: Callable[[str], None] | None, waiting: Callable[[Holder | None], str] | None) -> Any:
    """The acquired ``FileLock``: at once, or after waiting up to ``timeout`` s (saying so); else ``LockBusyError``."""
    from filelock import FileLock, Timeout

    lock = FileLock(str(lock_path.absolute()), thread_local=False)
    try:
        try:
            lock.acquire(timeout=0)
            return lock
        except Timeout:
            if timeout <= 0:
                raise LockBusyError(busy(read_holder(lock_path))) from None
        if note is not None and waiting is not None:
            note(waiting(read_holder(lock_path)))
        try:
            lock.acquire(timeout=timeout)
        except Timeout:
            raise LockBusyError(busy(read_holder(lock_path))) from None
    except OSError as exc:  # a read-only folder, a missing permission: one line, not a traceback
        raise output_error(lock_path, exc, LOCK_HINT) from None
    return lock


def _taken_over(lock_path: Path, previous: Holder) -> str:
    state = {False: "is no longer running (killed?)", None: "ran on another host and no longer holds it"}
    return (f"note: {lock_path.parent}/ was last locked by {previous.describe()}, which "
            f"{state.get(previous.alive(), 'did not release it')}; taking it over")


def output_lock(output: Path, note: Callable[[str], None] | None = None) -> AbstractContextManager[None]:
    """The one-writer lock of a run's results folder (``results/x.json`` -> ``results/x/.evalkit.lock``).

    A second writer is refused at once (:class:`LockBusyError`, exit code 2) naming the holder
    and what to do. The folder must exist (``evalkit.runstore.prepare_output`` checks and creates it).
    """
    output = Path(output)
    folder = output.with_suffix("")

    def busy(holder: Holder | None) -> str:
        who = holder.describe() if holder else "another process (it did not say who)"
        return (f"{folder}/ is being written by {who}; one writer per output: wait for it to finish, choose "
                f"another --output, or, once it has stopped, continue with `evalkit run --resume {output}`")

    return hold(folder / OUTPUT_LOCK, timeout=0, busy=busy, note=note)


def evalset_lock(path: Path, note: Callable[[str], None] | None = None,
                 timeout: float = EVALSET_WAIT_S) -> AbstractContextManager[None]:
    """The lock of an eval set and its manifest (``eval_sets/.NAME.jsonl.lock``): a second changer waits."""
    path = Path(path)

    def busy(holder: Holder | None) -> str:
        who = holder.describe() if holder else "another process"
        return (f"{path}: being changed by {who} for more than {timeout:.0f} s; try again when it has finished "
                "(nothing was written)")

    def waiting(holder: Holder | None) -> str:
        return f"note: {path} is being changed by {holder.describe() if holder else 'another process'}; waiting"

    return hold(path.with_name(f".{path.name}.lock"), timeout=timeout, busy=busy, note=note, waiting=waiting)


def store_lock(db: Path, note: Callable[[str], None] | None = None,
               timeout: float = STORE_WAIT_S) -> AbstractContextManager[None]:
    """The lock serialising the creation and schema upgrade of a local MLflow store (``mlflow.db.lock``)."""
    db = Path(db)

    def busy(holder: Holder | None) -> str:
        who = holder.describe() if holder else "another process"
        return (f"MLflow store {db} is being created or upgraded by {who} for more than {timeout:.0f} s; "
                "try again later, or run with --no-mlflow")

    return hold(db.with_name(db.name + ".lock"), timeout=timeout, busy=busy, note=note)
