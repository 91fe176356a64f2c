"""Logging analysis outputs (figures, reports) to MLflow as artifacts.

Into an existing run when the analysed run has one (the variant's child run for
calibration, the parent run for reports), else into a new run of the experiment, in
the store the run was logged to (or the sqlite store beside the results). Runs are
addressed by id through ``MlflowClient``, never the fluent API (as in
``evalkit.track.mlflow_log``). mlflow is imported inside the function.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any


def tracking_uri_for(run: Any, explicit: str | None = None) -> str:
    """``explicit``, else the store the run was logged to, else the sqlite store beside its results."""
    from evalkit.track.mlflow_log import default_tracking_uri

    if explicit:
        return explicit
    if run.tracking_uri:
        return run.tracking_uri
    base = run.summary_path.parent if run.summary_path is not None else Path.cwd()
    return default_tracking_uri(base)


def log_artifacts(files: dict[str, Path], *, tracking_uri: str, run_id: str | None = None,
                  artifact_path: str | None = None, experiment: str = "evalkit", run_name: str = "analysis",
                  tags: dict[str, str] | None = None, artifact_root: Path | None = None) -> dict[str, str]:
    """Log ``{artifact name: local file}`` into run ``run_id`` (or a new run); returns ``{tracking_uri, run_id}``.

    A new run is created in ``experiment`` (created if missing, with its artifacts under
    ``artifact_root/mlartifacts`` for local stores) and ends FINISHED (FAILED on error).
    """
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow import MlflowClient

    from evalkit.track.mlflow_log import REMOTE_SCHEMES, _experiment_id, _terminate

    client = MlflowClient(tracking_uri=tracking_uri)
    created = run_id is None
    if created:
        remote = tracking_uri.split(":", 1)[0].lower() in REMOTE_SCHEMES
        location = None if remote or artifact_root is None else (Path(artifact_root) / "mlartifacts").resolve().as_uri()
        exp = _experiment_id(client, experiment, location)
        run_id = client.create_run(exp, run_name=run_name, tags=tags or {}).info.run_id
    else:
        for key, value in (tags or {}).items():
            client.set_tag(run_id, key, value)
    try:
        with tempfile.TemporaryDirectory(prefix="evalkit-artifacts-") as tmp:
            for name, path in sorted(files.items()):   # staged under the names given, not the files' own
                shutil.copyfile(path, Path(tmp) / name)
            client.log_artifacts(run_id, tmp, artifact_path)
    except BaseException as exc:
        if created:
            _terminate(client, run_id, exc)
        raise
    if created:
        client.set_terminated(run_id, "FINISHED")
    return {"tracking_uri": tracking_uri, "run_id": run_id}
