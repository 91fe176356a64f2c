"""Log one eval invocation to MLflow: a parent run, one nested child run per variant.

Layout in the tracking store::

    experiment "evalkit"
      parent run  "<eval set> v<version>"   tags evalset.*, scoring.* (relevance level, ties), git.commit, user tags
        artifact comparison.json            every variant's metrics side by side
        child run "<variant name>"          tag mlflow.parentRunId
          params   the flattened graph config (secrets masked, long values truncated)
          metrics  summary.metrics (names through ``mlflow_metric_name``),
                   n_failed, n_queries, n_excluded, seconds
          artifacts per_query.jsonl, config.yaml, rerank_scores.json,
                   rerank_top1_by_hit5.png, rerank_top1_by_answerable.png
          traces   one MLflow trace per query, a span per node execution
                   (``evalkit.track.traces``; ``traces=False`` or ``trace_limit`` to skip/cap)

Everything goes through ``MlflowClient`` with explicit run ids, never the fluent
``mlflow.start_run`` API: there is no global active run to leak, and two calls in one
process (or two threads) do not see each other. Params, metrics and tags are sent with
``log_batch`` in requests that respect MLflow's per-request limits.

MLflow name rules (``mlflow.utils.validation`` in 3.17): metric and param keys may hold
only alphanumerics, ``_ - . / space`` (and ``:`` except on Windows), must not normalise
to another path (``a//b``, ``./a``, leading ``/``) and are at most 250 characters;
param values at most 6000 characters. ``@`` is **not** allowed, so evalkit's printed
metric names are mapped in exactly one place, :func:`mlflow_metric_name`
(``recall@20`` -> ``recall_at_20``).

mlflow and matplotlib are imported inside the functions that use them.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import posixpath
import re
import shlex
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from evalkit.errors import EvalkitError
from evalkit.redact import MASK, is_secret_key, redact, redact_obj, secret_env_values
from evalkit.records import QueryResult, RunSummary, VariantSummary

logger = logging.getLogger(__name__)

# MLflow 3.17 limits (mlflow.utils.validation); repeated here so the module imports cheaply.
MAX_KEY_LENGTH = 250
MAX_PARAM_VALUE_LENGTH = 6000
MAX_TAG_VALUE_LENGTH = 8000
MAX_METRICS_PER_BATCH = 1000
MAX_PARAMS_PER_BATCH = 100
MAX_TAGS_PER_BATCH = 100
MAX_ENTITIES_PER_BATCH = 1000

TRUNCATED = "...[truncated by evalkit: {n} chars]"
SUMMARY_COUNTS = ("n_failed", "n_queries", "n_excluded", "seconds")
REMOTE_SCHEMES = ("http", "https", "databricks", "databricks-uc")

_UNSAFE_KEY_CHARS = re.compile(r"[^\w./\- ]")   # the Windows-safe subset, so logs move between stores


@dataclass
class VariantLog:
    """What one variant of an invocation hands to MLflow.

    ``params`` is the flattened graph config (``"nodes.rerank.params.top_k" -> "50"``);
    ``per_query_path`` is the ``per_query.jsonl`` the runner already wrote.
    ``summary.mlflow_run_id`` is set by :func:`log_invocation`.
    """

    name: str
    params: dict[str, str]
    config_yaml: str
    summary: VariantSummary
    results: list[QueryResult]
    per_query_path: Path


def default_tracking_uri(output_dir: Path) -> str:
    """The embedded store of an output folder: ``sqlite:///<abs output_dir>/mlflow.db``."""
    return f"sqlite:///{(Path(output_dir).resolve() / 'mlflow.db').as_posix()}"


# ---------------------------------------------------------------------------- names


def mlflow_metric_name(name: str) -> str:
    """The MLflow key of an evalkit metric name: the ONE place names are mapped.

    ``@`` becomes ``_at_`` (``recall@20`` -> ``recall_at_20``, ``hit@5`` -> ``hit_at_5``);
    any other character MLflow rejects (or that Windows stores reject, such as ``:``)
    becomes ``_``; names that would normalise to another path (``a//b``, ``/a``) have
    their slashes replaced; names over 250 characters are cut and given a hash suffix.
    Names MLflow already accepts (``mrr``, ``ndcg_10``) are returned unchanged.
    """
    return _safe_key(str(name).replace("@", "_at_"))


def _safe_key(key: str) -> str:
    """A key MLflow accepts: allowed characters only, not path-like, at most 250 characters."""
    key = _UNSAFE_KEY_CHARS.sub("_", key)
    if posixpath.normpath(key) != key or key.startswith(("/", "..")) or key in ("", "."):
        key = key.replace("/", "_")                 # without slashes only dots remain to fix
        if key.startswith(".") or not key:
            key = "_" + key[1:]
    if len(key) > MAX_KEY_LENGTH:
        digest = hashlib.sha256(key.encode()).hexdigest()[:8]
        key = f"{key[:MAX_KEY_LENGTH - 9]}-{digest}"
    return key


def mask_secrets(params: dict[str, Any]) -> dict[str, str]:
    """A copy of ``params`` with every secret masked: the value of a key that names one
    (:func:`evalkit.redact.is_secret_key`) wholly, and any credential inside other values
    (``base_url: http://user:KEY@host/v1``) by :func:`evalkit.redact.redact`."""
    secrets = secret_env_values()
    return {k: (MASK if is_secret_key(k) else redact(str(v), secrets)) for k, v in params.items()}


_YAML_PAIR = re.compile(
    r"""(?P<key>["']?[\w.\-]+["']?)(?P<sep>[ \t]*:[ \t]+)"""
    r"""(?P<value>"[^"\n]*"|'[^'\n]*'|[^,{}\[\]\n#\s](?:[^,}\]\n#]*[^,}\]\n#\s])?)""")


def mask_yaml_secrets(text: str) -> str:
    """The config text with the value of every secret key set to ``***``.

    The config is logged as an artifact, so a secret the params mask must not leak
    through it. ``key: value`` pairs (block or flow style) are masked in place, keeping
    comments and layout; if a secret is still left (a value nested under a secret key,
    as in ``secrets: {openai: sk-...}``, which the flattened params mask as
    ``secrets.openai``), the masked document is re-dumped without its comments.
    """
    def repl(m: re.Match[str]) -> str:
        if not is_secret_key(m.group("key").strip("\"'")):
            return m.group(0)
        return f"{m.group('key')}{m.group('sep')}'{MASK}'"

    masked = redact(_YAML_PAIR.sub(repl, text))
    import yaml

    from evalkit.yamlio import YamlError, parse_yaml

    try:
        data, _ = parse_yaml(masked)
    except YamlError:
        return masked
    clean, changed = _mask_tree(data, "")
    if not changed:
        return masked
    header = "# secrets masked by evalkit (comments dropped)\n"
    return header + yaml.safe_dump(clean, sort_keys=False, allow_unicode=True)


def _mask_tree(node: Any, path: str) -> tuple[Any, bool]:
    if isinstance(node, dict):
        items = [(k, _mask_tree(v, f"{path}.{k}" if path else str(k))) for k, v in node.items()]
        return {k: v for k, (v, _) in items}, any(c for _, (_, c) in items)
    if isinstance(node, list):
        items = [_mask_tree(v, path) for v in node]
        return [v for v, _ in items], any(c for _, c in items)
    if path and node is not None and node != MASK and is_secret_key(path):
        return MASK, True
    return node, False


def _param_value(value: str) -> str:
    if len(value) <= MAX_PARAM_VALUE_LENGTH:
        return value
    marker = TRUNCATED.format(n=len(value))
    return value[:MAX_PARAM_VALUE_LENGTH - len(marker)] + marker


def _tag_value(value: Any) -> str:
    value = redact(value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str))
    return value if len(value) <= MAX_TAG_VALUE_LENGTH else value[:MAX_TAG_VALUE_LENGTH - 3] + "..."


# ---------------------------------------------------------------------------- payloads


def variant_params(params: dict[str, Any]) -> dict[str, str]:
    """The params MLflow receives: secrets masked, keys made valid, values truncated."""
    out: dict[str, str] = {}
    for key, value in mask_secrets(params).items():
        mkey = _safe_key(str(key))
        if mkey in out:
            raise EvalkitError(f"params '{key}' and another key both map to the MLflow key '{mkey}'; rename one")
        out[mkey] = _param_value(value)
    return out


def variant_metrics(summary: VariantSummary) -> dict[str, float]:
    """The metrics MLflow receives: ``summary.metrics`` (names mapped), the counts, seconds and timings."""
    out: dict[str, float] = {}
    origin: dict[str, str] = {}
    values = dict(summary.metrics)
    for name in SUMMARY_COUNTS:
        values.setdefault(name, getattr(summary, name))
    for name, value in summary.timing.items():  # latency and build time: not quality, but watched
        values.setdefault(f"timing.{name}", value)
    for purpose, usage in summary.usage.items():  # LLM calls, tokens, latency of generation and judging
        for name, value in usage.items():
            values.setdefault(f"usage.{purpose}.{name}", value)
    for qtype, group in summary.by_type.items():  # e.g. hit@5 of multi_hop questions alone
        for name, value in group.items():
            values.setdefault(f"by_type.{qtype}.{name}", value)
    for name, value in values.items():
        if value is None:
            logger.info("metric %s has no value; not logged", name)
            continue
        key = mlflow_metric_name(name)
        if key in out:
            raise EvalkitError(f"metrics '{origin[key]}' and '{name}' both map to the MLflow name '{key}'; "
                               "rename one (see evalkit.track.mlflow_metric_name)")
        out[key], origin[key] = float(value), name
    return out


def rerank_scores(results: Sequence[QueryResult]) -> dict[str, list[float]]:
    """``{query_id: [score of each document of the reranked list]}``."""
    return {r.query_id: [float(d["score"]) for d in r.reranked if d.get("score") is not None] for r in results}


def comparison(variants: Sequence[VariantLog]) -> dict[str, Any]:
    """Every variant's main numbers side by side (the parent run's ``comparison.json``)."""
    names = sorted({m for v in variants for m in v.summary.metrics})
    return {
        "metrics": names,
        "variants": {
            v.name: {
                "mlflow_run_id": v.summary.mlflow_run_id,
                "metrics": {m: v.summary.metrics.get(m) for m in names},
                **{c: getattr(v.summary, c) for c in SUMMARY_COUNTS},
            }
            for v in variants
        },
    }


def _batches(metrics: list[Any], params: list[Any],
             tags: list[Any]) -> Iterator[tuple[list[Any], list[Any], list[Any]]]:
    """Split into ``log_batch`` requests: <=1000 metrics, <=100 params, <=100 tags, <=1000 in all."""
    m, p, t = list(metrics), list(params), list(tags)
    while m or p or t:
        bp, p = p[:MAX_PARAMS_PER_BATCH], p[MAX_PARAMS_PER_BATCH:]
        bt, t = t[:MAX_TAGS_PER_BATCH], t[MAX_TAGS_PER_BATCH:]
        room = min(MAX_METRICS_PER_BATCH, MAX_ENTITIES_PER_BATCH - len(bp) - len(bt))
        bm, m = m[:room], m[room:]
        yield bm, bp, bt


# ---------------------------------------------------------------------------- logging


def log_invocation(run: RunSummary, variants: list[VariantLog], output_dir: Path,
                   tracking_uri: str | None = None, experiment: str = "evalkit",
                   tags: dict[str, str] | None = None, traces: bool = True,
                   trace_limit: int | None = None) -> dict[str, str]:
    """Log an invocation: one parent run, one nested child run per variant.

    Args:
        run: the invocation's summary; its eval set identity becomes the parent's tags.
        variants: what to log per variant; each ``summary.mlflow_run_id`` is set here.
        output_dir: the invocation's output folder; holds the default store
            (``mlflow.db``) and, for local stores, the artifacts (``mlartifacts/``).
        tracking_uri: ``None`` for :func:`default_tracking_uri`; a database URI; or a
            server (``http://host:port``), which then decides where artifacts go.
        experiment: created if missing.
        tags: extra tags of the parent run.
        traces: also log each query's node trace as an MLflow trace linked to its
            variant's run (:mod:`evalkit.track.traces`); a failure there only warns.
        trace_limit: trace at most this many queries per variant (the first ones in
            eval-set order); ``None`` for all.

    Returns:
        ``{"tracking_uri", "experiment_id", "parent_run_id", "ui_command"}``; for a
        server ``ui_command`` is the URL of the parent run.

    Runs end FINISHED; a run open when logging raises ends FAILED (KILLED on Ctrl-C)
    and the error is re-raised.
    """
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow import MlflowClient
    from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    uri = tracking_uri or default_tracking_uri(output_dir)
    remote = urlparse(uri).scheme.lower() in REMOTE_SCHEMES

    names = [v.name for v in variants]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise EvalkitError(f"variant names must be unique in one invocation; repeated: {', '.join(dupes)}")
    # Build every payload first: a bad name fails before any run exists.
    payloads = {v.name: (variant_params(v.params), variant_metrics(v.summary)) for v in variants}

    client = MlflowClient(tracking_uri=uri)
    artifact_location = None if remote else (output_dir / "mlartifacts").resolve().as_uri()
    experiment_id = _experiment_id(client, experiment, artifact_location)

    es = run.eval_set
    parent_tags = {"evalset.name": es.name, "evalset.version": str(es.version), "evalset.sha256": es.sha256,
                   "evalset.corpus_sha256": es.corpus_sha256, "evalkit.variants": ",".join(names),
                   **{f"scoring.{k}": str(v) for k, v in run.scoring.items()}}
    if run.git_commit:
        parent_tags["git.commit"] = run.git_commit
    parent_tags.update({str(k): str(v) for k, v in (tags or {}).items()})
    parent_tags = {k: _tag_value(v) for k, v in parent_tags.items()}
    parent_id = client.create_run(experiment_id, tags=parent_tags,
                                  run_name=f"{es.name} v{es.version}").info.run_id
    started = time.perf_counter()
    try:
        for v in variants:
            child_id = client.create_run(experiment_id, run_name=v.name,
                                         tags={MLFLOW_PARENT_RUN_ID: parent_id, **_variant_tags(v)}).info.run_id
            v.summary.mlflow_run_id = child_id
            try:
                _log_variant(client, child_id, v, *payloads[v.name])
                if traces:
                    from evalkit.track.traces import log_variant_traces

                    log_variant_traces(client, uri, experiment_id, child_id, v.name, v.results, limit=trace_limit)
            except BaseException as e:
                _terminate(client, child_id, e)
                raise
            client.set_terminated(child_id, "FINISHED")
        client.log_dict(parent_id, redact_obj(comparison(variants)), "comparison.json")
    except BaseException as e:
        _terminate(client, parent_id, e)
        raise
    client.set_terminated(parent_id, "FINISHED")
    logger.info("logged %d variant(s) to %s in %.2f s", len(variants), uri, time.perf_counter() - started)

    if remote:
        ui = f"{uri.rstrip('/')}/#/experiments/{experiment_id}/runs/{parent_id}"
    else:
        ui = f"mlflow ui --backend-store-uri {shlex.quote(uri)}"
    return {"tracking_uri": uri, "experiment_id": experiment_id, "parent_run_id": parent_id, "ui_command": ui}


def _experiment_id(client: Any, name: str, artifact_location: str | None) -> str:
    from mlflow.exceptions import MlflowException

    exp = client.get_experiment_by_name(name)
    if exp is None:
        try:
            return client.create_experiment(name, artifact_location=artifact_location)
        except MlflowException as e:          # created meanwhile by a concurrent invocation
            exp = client.get_experiment_by_name(name)
            if exp is None:
                raise
            logger.debug("experiment %s appeared concurrently: %s", name, e)
    if exp.lifecycle_stage == "deleted":
        raise EvalkitError(f"MLflow experiment '{name}' is deleted; restore it "
                           f"(mlflow experiments restore --experiment-id {exp.experiment_id}) or pick another name")
    return exp.experiment_id


def _variant_tags(v: VariantLog) -> dict[str, str]:
    t: dict[str, Any] = {"evalkit.variant": v.name}
    if v.summary.config_sha256:
        t["config.sha256"] = v.summary.config_sha256
    if v.summary.config_path:
        t["config.path"] = v.summary.config_path
    for k, val in sorted(v.summary.index.items()):
        t[_safe_key(f"index.{k}")] = val
    return {k: _tag_value(val) for k, val in t.items()}


def _log_variant(client: Any, run_id: str, v: VariantLog, params: dict[str, str], metrics: dict[str, float]) -> None:
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
        (stage / "rerank_scores.json").write_text(json.dumps(rerank_scores(v.results)), encoding="utf-8")
        _, notes = rerank_histograms(v.results, stage, title=v.name)
        for note in notes:
            logger.info("variant %s: %s", v.name, note)
        ts_tags = [RunTag("evalkit.plots.skipped", _tag_value("; ".join(notes)))] if notes else []
        for bm, bp, bt in _batches(ms, ps, ts_tags):
            client.log_batch(run_id, metrics=bm, params=bp, tags=bt, synchronous=True)
        if per_query.name == "per_query.jsonl":
            client.log_artifact(run_id, str(per_query))
        else:
            (stage / "per_query.jsonl").write_bytes(per_query.read_bytes())
        client.log_artifacts(run_id, str(stage))


def _terminate(client: Any, run_id: str, error: BaseException) -> None:
    status = "KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED"
    try:
        client.set_terminated(run_id, status)
    except Exception as e:  # the original error matters more than this one
        logger.warning("could not mark MLflow run %s %s: %s", run_id, status, e)
