"""Log one eval invocation to MLflow: a parent run, one nested child run per variant.

Layout in the tracking store (see ``docs/mlflow.md`` for what to click)::

    experiment "evalkit"           artifacts beside the store (``evalkit.track.store``)
      parent run "demo_kb v1 · 12 variants (...) · 2026-12-01 10:15:02"
        tags      evalset.*, scoring.*, environment.*, evalkit.variants, mlflow.source.name/type/git.commit,
                  mlflow.user,
                  mlflow.note.content (description), evalkit.host/pid (owner), user tags
        dataset   the eval set (``demo_kb@v1``, digest = its frozen sha256[:12], source = its file)
        metrics   <headline metric>/<variant> (``hit_at_5/bm25``), n_failed/<variant>
        artifacts variants.json (table: one row per variant), comparison.json (every metric)
        child run "<variant name>"          tag mlflow.parentRunId
          params   the flattened graph config (secrets masked, long values truncated)
          metrics  summary.metrics (names through ``mlflow_metric_name``), counts, timing, usage
          dataset  the same eval set input
          artifacts per_query.jsonl (masked copy), config.yaml (secrets masked),
                   rerank_scores.json, rerank_top1.png
          traces   one MLflow trace per query, a span per node execution, the query's
                   headline metrics as assessments (``evalkit.track.traces``)

:class:`InvocationLogger` does the work in steps (``open``, ``submit`` a finished
variant, ``close``/``abort``), so it can run in this process (:func:`log_invocation`,
``evalkit run --mlflow-sync``) or in the background worker beside the query loop
(``evalkit.track.background``); both log exactly the same things.

Everything goes through ``MlflowClient`` with explicit run ids, never the fluent
``mlflow.start_run`` API: there is no global active run to leak, and two invocations in
one process do not see each other. Params, metrics and tags are sent with ``log_batch``
in requests that respect MLflow's per-request limits (``evalkit.track.names``). Every
value passes ``evalkit.track.secrets`` (key-named secrets) and ``evalkit.redact``.
mlflow, pandas and matplotlib are imported inside the methods that use them.
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitError
from evalkit.locking import store_lock
from evalkit.machine import environment_tags
from evalkit.records import RunSummary, VariantSummary
from evalkit.redact import redact, redact_obj
from evalkit.track import payloads as pl
from evalkit.track.names import (
    MAX_PARAM_VALUE_LENGTH,
    batches,
    mlflow_metric_name,
    safe_key,
    tag_value,
)
from evalkit.track.payloads import (
    VariantLog,
    comparison,
    rerank_scores,
    variant_metrics,
    variant_params,
)
from evalkit.track.secrets import (
    MASK,
    is_secret_key,
    mask_jsonl_bytes,
    mask_secrets,
    mask_text,
    mask_yaml_secrets,
)
from evalkit.track.store import (
    ARTIFACTS_DIR,
    artifact_root,
    check_store,
    default_tracking_uri,
    end_run,
    ensure_experiment,
    is_remote,
    owner_tags,
    reap_stale_runs,
    sqlite_path,
    status_of,
    ui_hint,
)

logger = logging.getLogger(__name__)

PER_QUERY = "per_query.jsonl"   # the child run's artifact of the variant's records (masked when they hold a secret)

CPU_READ = "read per_query.jsonl"
CPU_RUN = "child run, dataset, artifacts (masking included)"
CPU_TRACES_BUILD = "traces: spans and assessments built by evalkit"
CPU_TRACES_STORE = "traces: MLflow's store (start_trace, log_spans, links)"
CPU_STAGES = (CPU_READ, CPU_RUN, CPU_TRACES_BUILD, CPU_TRACES_STORE)
"""Where the logging process spends its CPU (:attr:`InvocationLogger.cpu`): what the deploy-gate benchmark
prints to say where the MLflow logger's time goes. ``CPU_READ`` is counted by whoever reads the records."""


class InvocationLogger:
    """One invocation's MLflow runs, logged step by step: ``open`` -> ``submit`` per variant -> ``close``.

    Args:
        run: the invocation's summary; its eval set identity becomes the parent's tags.
        output_dir: the output folder; holds the default store (``mlflow.db``) and, for
            local stores, the artifacts (``mlartifacts/`` beside the database file).
        tracking_uri: ``None`` for ``sqlite:///<output_dir>/mlflow.db``; a database URI;
            or a server (``http://host:port``), which then decides where artifacts go.
        experiment: created if missing (re-created if the store moved, see ``track.store``).
        tags: extra tags of the parent run.
        traces: also log each query's trace (``evalkit.track.traces``); a failure there only warns.
        trace_limit: trace at most this many queries per variant (eval-set order); ``None`` for all.
        trace_policy: ``all`` (every query) or ``misses`` (every miss or failure plus the first
            10 others; ``evalkit.track.traces.select_traced``), before ``trace_limit``.
        source_name: the ``mlflow.source.name`` tag (``evalkit run``, ``evalkit demo``).
        note: called with user-facing one-liners (a moved store, runs marked KILLED).
        stop: polled between logging steps (and between traces); when it returns True the
            current step raises ``KeyboardInterrupt`` at that safe point, never inside an
            MLflow call (an interrupted sqlite transaction would hold the store's lock).
    """

    def __init__(self, run: RunSummary, output_dir: Path, tracking_uri: str | None = None,
                 experiment: str = "evalkit", tags: dict[str, str] | None = None, traces: bool = True,
                 trace_limit: int | None = None, source_name: str = "evalkit run",
                 note: Callable[[str], None] = logger.info, stop: Callable[[], bool] = lambda: False,
                 trace_policy: str = "all"):
        self.run, self.output_dir = run, Path(output_dir)
        self.stop, self.trace_policy = stop, trace_policy
        self.uri = tracking_uri or default_tracking_uri(self.output_dir)
        self.experiment, self.tags = experiment, dict(tags or {})
        self.traces, self.trace_limit, self.source_name, self.note = traces, trace_limit, source_name, note
        self.client: Any = None
        self.experiment_id = self.parent_id = ""
        self.child_ids: dict[str, str] = {}
        self.open_child: str | None = None
        self._dataset: Any = None
        self.traced = 0
        self.cpu: dict[str, float] = dict.fromkeys(CPU_STAGES, 0.0)  # this process's CPU seconds per step, summed

    # ------------------------------------------------------------------ the parent run

    def open(self, names: Sequence[str]) -> dict[str, str]:
        """Create the parent run (RUNNING) for variants ``names``; returns :meth:`info`."""
        os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
        os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
        from mlflow import MlflowClient

        dupes = sorted({n for n in names if list(names).count(n) > 1})
        if dupes:
            raise EvalkitError(f"variant names must be unique in one invocation; repeated: {', '.join(dupes)}")
        self.output_dir.mkdir(parents=True, exist_ok=True)
        db = sqlite_path(self.uri)
        # one process at a time creates (and schema-upgrades) a local store: two at once left it half-migrated
        with store_lock(db, note=self.note) if db is not None else nullcontext():
            check_store(self.uri, self.output_dir)
            self.client = MlflowClient(tracking_uri=self.uri)
            self.experiment_id = ensure_experiment(self.client, self.experiment,
                                                   artifact_root(self.uri, self.output_dir), note=self.note)
        for run_id in reap_stale_runs(self.client, self.experiment_id):
            self.note(f"MLflow: run {run_id} was left RUNNING by a process that is gone; marked KILLED")
        es = self.run.eval_set
        tags = {"evalset.name": es.name, "evalset.version": str(es.version), "evalset.sha256": es.sha256,
                "evalset.corpus_sha256": es.corpus_sha256, "evalkit.variants": ",".join(names),
                **{f"scoring.{k}": str(v) for k, v in self.run.scoring.items()},  # relevance level, tie order
                pl.NOTE: pl.parent_note(self.run, names, self.source_name),
                **pl.source_tags(self.source_name, self.run.git_commit), **owner_tags()}
        if self.run.git_commit:
            tags["git.commit"] = self.run.git_commit
        tags.update(environment_tags(self.run.environment))  # where it ran (evalkit.machine)
        tags.update({str(k): str(v) for k, v in self.tags.items()})
        self.parent_id = self.client.create_run(
            self.experiment_id, run_name=pl.parent_run_name(self.run, list(names)),
            tags={safe_key(redact(k)): tag_value(redact(v)) for k, v in tags.items()}).info.run_id
        return self.info()

    def info(self) -> dict[str, str]:
        """``{"tracking_uri", "experiment_id", "parent_run_id", "ui_command", "ui_url", "hint"}``."""
        return {"tracking_uri": redact(self.uri), "experiment_id": self.experiment_id,
                "parent_run_id": self.parent_id, **ui_hint(redact(self.uri), self.experiment_id, self.parent_id)}

    def close(self, variants: dict[str, VariantSummary], partial: bool = False,
              tags: dict[str, str] | None = None, spare: Sequence[Callable[[], object]] = ()) -> dict[str, str]:
        """Log the parent's headline metrics, tables and ``tags``, then end it FINISHED (KILLED when ``partial``).

        ``spare`` is not run: logging in this process leaves no wait to use (see ``BackgroundLogger.close``)."""
        from mlflow.entities import Metric, RunTag

        for name, v in variants.items():
            v.mlflow_run_id = v.mlflow_run_id or self.child_ids.get(name)
        try:
            ts = int(time.time() * 1000)
            ms = [Metric(k, val, ts, 0) for k, val in pl.parent_metrics(variants).items()]
            ts_tags = [RunTag(safe_key(redact(str(k))), tag_value(redact(str(val)))) for k, val in (tags or {}).items()]
            for bm, _, bt in batches(ms, [], ts_tags):
                self.client.log_batch(self.parent_id, metrics=bm, tags=bt, synchronous=True)
            self.client.log_table(self.parent_id, pl.variants_table(variants), "variants.json")
            self.client.log_dict(self.parent_id, redact_obj(pl.comparison(variants)), "comparison.json")
            if partial:
                self.client.set_tag(self.parent_id, "evalkit.partial", "true")
        except BaseException as exc:
            self.abort(status_of(exc), f"{type(exc).__name__}: {exc}")
            raise
        end_run(self.client, self.parent_id, "KILLED" if partial else "FINISHED",
                "interrupted: only the variants listed in variants.json finished" if partial else None)
        return self.info()

    def abort(self, status: str = "KILLED", reason: str | None = None) -> None:
        """End the open child run and the parent with ``status`` (KILLED on a signal, FAILED on an error)."""
        if self.client is None:
            return
        if self.open_child:
            end_run(self.client, self.open_child, status, reason)
            self.open_child = None
        if self.parent_id:
            end_run(self.client, self.parent_id, status, reason)

    # ------------------------------------------------------------------ one child run per variant

    def submit(self, v: pl.VariantLog) -> str:
        """Log variant ``v`` as a child run (ended FINISHED; FAILED/KILLED and re-raised on error)."""
        params, metrics = pl.variant_params(v.params), pl.variant_metrics(v.summary)
        tags = {pl.PARENT_RUN_ID: self.parent_id, **self._variant_tags(v)}
        child = self.client.create_run(self.experiment_id, run_name=v.name, tags=tags).info.run_id
        self.open_child = v.summary.mlflow_run_id = self.child_ids[v.name] = child
        try:
            c = time.process_time()
            self._checkpoint()
            self._log_dataset(v, child)
            self._checkpoint()
            self._log_child(child, v, params, metrics)
            self._checkpoint()
            self.cpu[CPU_RUN] += time.process_time() - c
            if self.traces:
                from evalkit.track.traces import log_variant_traces

                c = time.process_time()
                done = log_variant_traces(self.client, self.uri, self.experiment_id, child, v.name, v.results,
                                          limit=self.trace_limit, checkpoint=self._checkpoint,
                                          policy=self.trace_policy)
                self.traced += done.logged if done else 0
                store = done.store_cpu if done else 0.0
                self.cpu[CPU_TRACES_STORE] += store
                self.cpu[CPU_TRACES_BUILD] += time.process_time() - c - store
        except BaseException as exc:
            self.open_child = None
            end_run(self.client, child, status_of(exc), f"{type(exc).__name__}: {mask_text(str(exc))}")
            raise
        self.open_child = None
        end_run(self.client, child, "FINISHED")
        return child

    def _checkpoint(self) -> None:
        if self.stop():
            raise KeyboardInterrupt("stopped")

    def _variant_tags(self, v: pl.VariantLog) -> dict[str, str]:
        t: dict[str, Any] = {"evalkit.variant": v.name, **pl.source_tags(self.source_name, self.run.git_commit),
                             **owner_tags()}
        if v.summary.config_sha256:
            t["config.sha256"] = v.summary.config_sha256
        if v.summary.config_path:
            t["config.path"] = v.summary.config_path
        for k, val in sorted(v.summary.index.items()):
            t[safe_key(f"index.{k}")] = val
        return {k: redact(tag_value(val)) for k, val in t.items()}

    def _log_dataset(self, v: pl.VariantLog, run_id: str) -> None:
        """The eval set as the run's dataset input (context ``eval``); the parent gets it with the first variant."""
        from mlflow.entities import DatasetInput, InputTag

        first = self._dataset is None
        if first:
            self._dataset = self._dataset_entity(v)
        inputs = [DatasetInput(self._dataset, tags=[InputTag(pl.DATASET_CONTEXT, "eval")])]
        if first:
            self.client.log_inputs(self.parent_id, datasets=inputs)
        self.client.log_inputs(run_id, datasets=inputs)

    def _dataset_entity(self, v: pl.VariantLog) -> Any:
        import pandas as pd
        from mlflow.data.code_dataset_source import CodeDatasetSource
        from mlflow.data.pandas_dataset import from_pandas

        # mlflow makes this class at import time (one per artifact repository): no static definition to find
        from mlflow.data.sources import LocalArtifactDatasetSource  # type: ignore[attr-defined]
        from mlflow.entities import Dataset

        frame = pd.DataFrame(pl.eval_set_frame(v.results))
        es = self.run.eval_set
        source = (LocalArtifactDatasetSource(redact(str(Path(es.path).resolve()))) if es.path
                  else CodeDatasetSource(tags={"evalkit.eval_set": es.name}))
        ds = from_pandas(frame, source=source, name=pl.dataset_name(self.run),
                                     digest=pl.dataset_digest(self.run), targets="gold_doc_ids")
        d = ds.to_dict()
        return Dataset(name=d["name"], digest=d["digest"], source_type=d["source_type"], source=d["source"],
                       schema=d.get("schema"), profile=d.get("profile"))

    def _log_child(self, run_id: str, v: pl.VariantLog, params: dict[str, str], metrics: dict[str, float]) -> None:
        from mlflow.entities import Metric, Param, RunTag

        from evalkit.track.plots import rerank_histograms

        ts = int(time.time() * 1000)
        ms = [Metric(k, val, ts, 0) for k, val in metrics.items()]
        ps = [Param(k, val) for k, val in params.items()]
        per_query = Path(v.per_query_path)
        if not per_query.is_file():
            raise FileNotFoundError(f"variant '{v.name}': per_query file not found: {per_query}")
        with tempfile.TemporaryDirectory(prefix="evalkit-mlflow-") as tmp:
            stage = Path(tmp)
            (stage / "config.yaml").write_text(mask_yaml_secrets(v.config_yaml), encoding="utf-8")
            (stage / "rerank_scores.json").write_text(json.dumps(pl.rerank_scores(v.results)), encoding="utf-8")
            # the bytes that were checked are the ones logged (not the file again, which might have changed since)
            (stage / PER_QUERY).write_bytes(mask_jsonl_bytes(per_query.read_bytes()))
            _, notes = rerank_histograms(v.results, stage, title=v.name)
            for note in notes:
                logger.info("variant %s: %s", v.name, note)
            ts_tags = [RunTag("evalkit.plots.skipped", tag_value("; ".join(notes)))] if notes else []
            for bm, bp, bt in batches(ms, ps, ts_tags):
                self.client.log_batch(run_id, metrics=bm, params=bp, tags=bt, synchronous=True)
            self.client.log_artifacts(run_id, str(stage))


def log_invocation(run: RunSummary, variants: list[pl.VariantLog], output_dir: Path,
                   tracking_uri: str | None = None, experiment: str = "evalkit",
                   tags: dict[str, str] | None = None, traces: bool = True,
                   trace_limit: int | None = None, source_name: str = "evalkit run",
                   note: Callable[[str], None] = logger.info, trace_policy: str = "all") -> dict[str, str]:
    """Log a finished invocation in this process: one parent run, one nested child run per variant.

    The arguments are :class:`InvocationLogger`'s; ``variants`` each get their
    ``summary.mlflow_run_id``. Returns :meth:`InvocationLogger.info`. Runs end FINISHED;
    a run open when logging raises ends FAILED (KILLED on Ctrl-C or a signal) and the
    error is re-raised. Nothing is created when the variant names or payloads are invalid.
    """
    names = [v.name for v in variants]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise EvalkitError(f"variant names must be unique in one invocation; repeated: {', '.join(dupes)}")
    for v in variants:      # a bad name fails before any run exists
        pl.variant_params(v.params)
        pl.variant_metrics(v.summary)
    logger_ = InvocationLogger(run, output_dir, tracking_uri, experiment, tags, traces, trace_limit,
                               source_name, note, trace_policy=trace_policy)
    logger_.open(names)
    started = time.perf_counter()
    try:
        for v in variants:
            logger_.submit(v)
    except BaseException as exc:
        logger_.abort(status_of(exc), f"{type(exc).__name__}: {mask_text(str(exc))}")
        raise
    info = logger_.close({v.name: v.summary for v in variants})
    logger.info("logged %d variant(s) to %s in %.2f s", len(variants), logger_.uri, time.perf_counter() - started)
    return info


# Besides the logger, the helpers this module held before it was split by concept stay importable from here.
__all__ = [
    "ARTIFACTS_DIR",
    "MASK",
    "MAX_PARAM_VALUE_LENGTH",
    "InvocationLogger",
    "VariantLog",
    "comparison",
    "default_tracking_uri",
    "is_remote",
    "is_secret_key",
    "log_invocation",
    "mask_secrets",
    "mlflow_metric_name",
    "rerank_scores",
    "variant_metrics",
    "variant_params",
]
