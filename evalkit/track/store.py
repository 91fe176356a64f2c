"""Where evalkit's MLflow runs live: the store, its experiment, the life cycle of a run.

- **The store.** By default ``sqlite:///<output folder>/mlflow.db``; artifacts of a local
  store go to ``mlartifacts/`` *beside the database file* (:func:`artifact_root`). A
  server (``http(s)://``) decides itself where artifacts go.
- **The artifact location follows the store.** MLflow records an experiment's artifact
  location as an absolute path, once. When the results folder is moved, the database
  still names the old folder, and new runs would write into it. :func:`ensure_experiment`
  notices (the recorded location is not ``<folder of mlflow.db>/mlartifacts``), renames
  the stale experiment to ``"<name> (moved from <old folder>)"`` so its runs stay
  visible, and creates the experiment afresh at the right place. MLflow offers no public
  way to re-point an experiment, so this is the honest alternative.
- **No run stays RUNNING.** Every run evalkit creates carries :func:`owner_tags` (host,
  pid and that process's start time). :func:`end_run` ends a run FINISHED / FAILED /
  KILLED; :func:`reap_stale_runs`, called when an invocation opens the experiment, marks
  KILLED every RUNNING run of this host whose owning process is gone (a ``kill -9``, a
  power cut), and says so in the run's ``evalkit.ended_by`` tag.

Only public MLflow APIs are used (``MlflowClient``). mlflow is imported by the callers.
"""
from __future__ import annotations

import logging
import os
import shlex
import socket
import sqlite3
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from evalkit.errors import EvalkitError
from evalkit.redact import redact

logger = logging.getLogger(__name__)

REMOTE_SCHEMES = ("http", "https", "databricks", "databricks-uc")
ARTIFACTS_DIR = "mlartifacts"
UI_PORT = 5000  # `mlflow ui`'s default port
OWNER_HOST, OWNER_PID, OWNER_STARTED = "evalkit.host", "evalkit.pid", "evalkit.pid_started"
ENDED_BY = "evalkit.ended_by"


def default_tracking_uri(output_dir: Path) -> str:
    """The embedded store of an output folder: ``sqlite:///<abs output_dir>/mlflow.db``."""
    return f"sqlite:///{(Path(output_dir).resolve() / 'mlflow.db').as_posix()}"


def is_remote(uri: str) -> bool:
    """Whether ``uri`` is a tracking server (which then stores artifacts itself)."""
    return urlparse(uri).scheme.lower() in REMOTE_SCHEMES


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI, else ``None``."""
    if not uri.lower().startswith("sqlite:///"):
        return None
    return Path(unquote(uri[len("sqlite:///"):].split("?", 1)[0]) or ".").resolve()


class StoreError(EvalkitError):
    """A local MLflow store that cannot be used as it is (a schema upgrade left half done); says how to fix it."""


def unfinished_migration(db: Path) -> list[str]:
    """The ``_alembic_tmp_*`` tables of the sqlite store ``db``: left by a schema upgrade that did not finish.

    Alembic upgrades a sqlite table by copying it to ``_alembic_tmp_<table>`` and renaming
    the copy back; a leftover copy means the upgrade stopped half-way (two first runs at
    once migrated the same new store), and MLflow then fails on every later run.
    """
    if not db.is_file():
        return []
    try:
        con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
        try:
            rows = con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB '_alembic_tmp_*' "
                               "ORDER BY name").fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return []  # not a database evalkit can read: MLflow's own error says more
    return [r[0] for r in rows]


def check_store(uri: str | None, output_dir: Path) -> None:
    """Refuse, before any work, a local sqlite store whose schema upgrade was left half done.

    Raises:
        StoreError: naming the store, the leftover tables and the commands that repair it
            (or ``--no-mlflow``); the results of earlier runs in it are kept by the fix.
    """
    db = sqlite_path(uri or default_tracking_uri(output_dir))
    if db is None:
        return
    left = unfinished_migration(db)
    if not left:
        return
    drops = "; ".join(f"DROP TABLE {t}" for t in left)
    raise StoreError(f"MLflow store {db} was left half-migrated (table {', '.join(left)} from a schema upgrade that "
                     "did not finish, e.g. two first runs at once into a new folder), so MLflow would fail on every "
                     f"run; repair it (its runs are kept) with: sqlite3 {shlex.quote(str(db))} "
                     f"{shlex.quote(drops + ';')} && mlflow db upgrade {shlex.quote('sqlite:///' + db.as_posix())}"
                     " ; or run with --no-mlflow (results files only)")


def artifact_root(uri: str, output_dir: Path) -> Path | None:
    """Where a local store's artifacts go: beside the sqlite file, else in ``output_dir``; ``None`` for servers."""
    if is_remote(uri):
        return None
    db = sqlite_path(uri)
    return (db.parent if db is not None else Path(output_dir).resolve()) / ARTIFACTS_DIR


def ensure_experiment(client: Any, name: str, root: Path | None, note: Any = logger.info) -> str:
    """The id of experiment ``name`` with its artifacts under ``root``, created (or re-created) as needed.

    Args:
        client: an ``MlflowClient`` of the store.
        name: the experiment name (``--experiment``).
        root: :func:`artifact_root` of the store; ``None`` lets the server choose.
        note: called with one line when a moved store's stale experiment is renamed.

    Raises:
        EvalkitError: the experiment is deleted (restore it or choose another name).
    """
    from mlflow.exceptions import MlflowException

    location = root.as_uri() if root is not None else None
    exp = client.get_experiment_by_name(name)
    if exp is not None and exp.lifecycle_stage == "deleted":
        raise EvalkitError(f"MLflow experiment '{name}' is deleted; restore it "
                           f"(mlflow experiments restore --experiment-id {exp.experiment_id}) or pick another name")
    if exp is not None and location is not None and _is_local(exp.artifact_location) \
            and _norm(exp.artifact_location) != _norm(location):
        old = _local_path(exp.artifact_location)
        stale = _free_name(client, f"{name} (moved from {old.parent})")
        client.rename_experiment(exp.experiment_id, stale)
        note(f"MLflow: the results folder moved (experiment '{name}' wrote artifacts to {old}); its runs are kept "
             f"as experiment '{stale}', new runs go to '{name}' with artifacts in {root}")
        exp = None
    if exp is not None:
        return exp.experiment_id
    try:
        return client.create_experiment(name, artifact_location=location)
    except MlflowException as e:          # created meanwhile by a concurrent invocation
        exp = client.get_experiment_by_name(name)
        if exp is None:
            raise
        logger.debug("experiment %s appeared concurrently: %s", name, e)
        return exp.experiment_id


def _is_local(location: str) -> bool:
    return urlparse(location).scheme in ("", "file")


def _local_path(location: str) -> Path:
    parsed = urlparse(location)
    return Path(unquote(parsed.path) if parsed.scheme == "file" else location)


def _norm(location: str) -> str:
    return os.path.normpath(str(_local_path(location)))


def _free_name(client: Any, base: str) -> str:
    name, i = base, 2
    while client.get_experiment_by_name(name) is not None:
        name, i = f"{base} #{i}", i + 1
    return name


# ---------------------------------------------------------------------------- run life cycle


def _process_started(pid: int) -> float | None:
    import psutil

    try:
        return round(psutil.Process(pid).create_time(), 1)
    except (psutil.Error, OSError):
        return None


def owner_tags() -> dict[str, str]:
    """Tags naming the process that owns a run (so a later invocation can tell it is gone)."""
    pid = os.getpid()
    return {OWNER_HOST: socket.gethostname(), OWNER_PID: str(pid), OWNER_STARTED: str(_process_started(pid))}


def owner_alive(tags: dict[str, str]) -> bool | None:
    """Whether the process named by :func:`owner_tags` still runs; ``None`` when unknowable (other host, no tags)."""
    if tags.get(OWNER_HOST) != socket.gethostname() or not tags.get(OWNER_PID, "").isdigit():
        return None
    started = _process_started(int(tags[OWNER_PID]))
    return started is not None and str(started) == tags.get(OWNER_STARTED)


def end_run(client: Any, run_id: str, status: str = "FINISHED", reason: str | None = None) -> None:
    """End run ``run_id`` with ``status``; ``reason`` goes to its ``evalkit.ended_by`` tag. Never raises."""
    try:
        if reason:
            client.set_tag(run_id, ENDED_BY, redact(reason)[:500])
        client.set_terminated(run_id, status)
    except Exception as e:  # noqa: BLE001 - the original error (if any) matters more than this one
        logger.warning("could not mark MLflow run %s %s: %s", run_id, status, e)


def status_of(error: BaseException) -> str:
    """The MLflow status a run interrupted by ``error`` ends in: KILLED on a signal or Ctrl-C, else FAILED."""
    return "KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED"


def reap_stale_runs(client: Any, experiment_id: str) -> list[str]:
    """Mark KILLED every RUNNING run of the experiment whose owning process (this host) is gone.

    Runs logged from another host, or without :func:`owner_tags`, are left alone: nothing
    here can tell whether they still run. Returns the ids marked.
    """
    marked = []
    runs = client.search_runs([experiment_id], "attributes.status = 'RUNNING'", max_results=1000)
    for run in runs:
        if owner_alive(run.data.tags) is False:
            when = time.strftime("%Y-%m-%d %H:%M:%S")
            end_run(client, run.info.run_id, "KILLED",
                    f"marked KILLED by evalkit (pid {os.getpid()}) at {when}: its process "
                    f"{run.data.tags.get(OWNER_PID)} ended without closing it")
            marked.append(run.info.run_id)
    if marked:
        logger.warning("marked %d MLflow run(s) KILLED whose process had gone: %s", len(marked), ", ".join(marked))
    return marked


# ---------------------------------------------------------------------------- what to open


def ui_hint(uri: str, experiment_id: str, parent_run_id: str) -> dict[str, str]:
    """How to look at an invocation: ``{"ui_command", "ui_url", "hint"}`` (``hint`` is one line)."""
    if is_remote(uri):
        base, command = uri.rstrip("/"), ""
    else:
        base, command = f"http://127.0.0.1:{UI_PORT}", f"mlflow ui --backend-store-uri {shlex.quote(uri)}"
    url = f"{base}/#/experiments/{experiment_id}/runs/{parent_run_id}"
    then = f"{command}, then open {url}" if command else f"open {url}"
    hint = (f"MLflow: {then} (variants: the child runs below it; traced queries, misses first: the experiment's "
            "Traces page, or mlflow.search_traces(filter_string=\"feedback.hit_at_5 < 1\"))")
    return {"ui_command": command or url, "ui_url": url, "hint": hint}
