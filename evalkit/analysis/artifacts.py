"""Logging analysis outputs (figures, reports) to MLflow as artifacts.

Into an existing run when the analysed run has one (the variant's child run for
calibration, the parent run for reports), else into a new run of the experiment, in
the store the run was logged to (or the sqlite store beside the results). Runs are
addressed by id through ``MlflowClient``, never the fluent API, and the experiment and
run life cycle are ``evalkit.track.store``'s (artifacts beside the store, no run left
RUNNING). mlflow is imported inside the function.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from evalkit.errors import EvalkitError
from evalkit.redact import redact_obj
from evalkit.track import store
from evalkit.track.store import default_tracking_uri, sqlite_path


def tracking_uri_for(run: Any, explicit: str | None = None) -> str:
    """``explicit``, else the store the run was logged to, else the sqlite store beside its results.

    A recorded sqlite store that no longer exists while one sits beside the summary moved
    with the results folder: that one is the run's store now. (Opening the recorded path
    would make MLflow create an empty database there, recreating the old folder.)
    """
    if explicit:
        return explicit
    base = run.summary_path.parent if run.summary_path is not None else Path.cwd()
    if run.tracking_uri:
        db = sqlite_path(run.tracking_uri)
        beside = default_tracking_uri(base)
        if db is not None and not db.exists() and sqlite_path(beside).exists():  # type: ignore[union-attr]
            return beside
        return run.tracking_uri
    return default_tracking_uri(base)


def moved_artifacts(client: Any, run_id: str) -> Path | None:
    """The folder of a run's local artifacts when it is gone (the results folder moved), else ``None``.

    MLflow records each run's artifact location as an absolute path; logging into a run
    whose folder moved away would recreate the old folder. ``<root>/mlartifacts/<run>/artifacts``:
    gone means ``<root>`` does not exist.
    """
    uri = client.get_run(run_id).info.artifact_uri or ""
    parsed = urlparse(uri)
    if parsed.scheme not in ("", "file"):
        return None
    path = Path(unquote(parsed.path))
    root = path.parents[2] if len(path.parents) > 2 else path
    return None if root.exists() else root


def log_artifacts(files: dict[str, Path], *, tracking_uri: str, run_id: str | None = None,
                  artifact_path: str | None = None, experiment: str = "evalkit", run_name: str = "analysis",
                  tags: dict[str, str] | None = None, artifact_root: Path | None = None) -> dict[str, str]:
    """Log ``{artifact name: local file}`` into run ``run_id`` (or a new run); returns ``{tracking_uri, run_id}``.

    A new run is created in ``experiment`` (created if missing, with its artifacts beside a
    sqlite store, or under ``artifact_root/mlartifacts`` for other local stores) and ends
    FINISHED (FAILED on error, KILLED on Ctrl-C).
    """
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    created = run_id is None
    tags = redact_obj(dict(tags or {}))
    if run_id is None:
        root = store.artifact_root(tracking_uri, Path(artifact_root) if artifact_root else Path.cwd())
        exp = store.ensure_experiment(client, experiment, root)
        run_id = client.create_run(exp, run_name=run_name, tags={**tags, **store.owner_tags()}).info.run_id
    else:
        gone = moved_artifacts(client, run_id)
        if gone is not None:
            raise EvalkitError(f"run {run_id} keeps its artifacts in {gone}, which no longer exists (the results "
                               "folder moved; MLflow records absolute artifact paths): not logged, the files are "
                               "written")
        for key, value in tags.items():
            client.set_tag(run_id, key, value)
    try:
        with tempfile.TemporaryDirectory(prefix="evalkit-artifacts-") as tmp:
            for name, path in sorted(files.items()):   # staged under the names given, not the files' own
                shutil.copyfile(path, Path(tmp) / name)
            client.log_artifacts(run_id, tmp, artifact_path)
    except BaseException as exc:
        if created:
            store.end_run(client, run_id, store.status_of(exc), f"{type(exc).__name__}: {exc}")
        raise
    if created:
        store.end_run(client, run_id, "FINISHED")
    return {"tracking_uri": tracking_uri, "run_id": run_id}
