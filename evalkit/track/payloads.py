"""What each MLflow run holds, computed from evalkit's records (pure functions, no MLflow calls).

- :func:`variant_params` / :func:`variant_metrics`: a child run's params and metrics.
- :func:`headline_metrics` (names) and :func:`parent_metrics`: the per-variant headline
  numbers the parent run holds as ``<metric>/<variant>`` (``hit_at_5/bm25``), so the
  parent's row in the runs table already compares the variants; :func:`variants_table`
  is the same as a table artifact (``variants.json``, shown by MLflow's artifact and
  evaluation views).
- :func:`source_tags`: MLflow's standard ``mlflow.source.*`` / ``mlflow.user`` tags.
- :func:`parent_run_name`: ``demo_kb v1 · 12 variants (agentic_reflect, bm25, ...) ·
  2026-12-01 10:15:02``: two invocations never look like the same row.
- :func:`eval_set_frame`: the eval set as the rows MLflow logs as the runs' dataset input.
"""
from __future__ import annotations

import getpass
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitError
from evalkit.metrics import MetricNameError, parse_metric
from evalkit.metrics.catalog import headline
from evalkit.records import QueryResult, RunSummary, VariantSummary
from evalkit.redact import redact
from evalkit.track.names import mlflow_metric_name, param_value, safe_key, tag_value
from evalkit.track.secrets import mask_secrets

logger = logging.getLogger(__name__)

SUMMARY_COUNTS = ("n_failed", "n_queries", "n_excluded", "seconds")
ANSWER_HEADLINE = headline()
"""Variant-level answer metrics a parent run shows beside the retrieval metrics (``headline`` in the registry)."""
QUERY_ANSWER_HEADLINE = headline(per_query=True)
"""Per-query answer metrics logged as trace assessments beside the retrieval metrics."""

# MLflow's system tags (https://mlflow.org/docs/latest/ml/tracking/tracking-api#system-tags)
SOURCE_NAME, SOURCE_TYPE, GIT_COMMIT = "mlflow.source.name", "mlflow.source.type", "mlflow.source.git.commit"
USER, NOTE, PARENT_RUN_ID = "mlflow.user", "mlflow.note.content", "mlflow.parentRunId"
DATASET_CONTEXT = "mlflow.data.context"


@dataclass
class VariantLog:
    """What one variant of an invocation hands to MLflow.

    ``params`` is the flattened graph config (``"nodes.rerank.params.top_k" -> "50"``);
    ``per_query_path`` is the ``per_query.jsonl`` the runner already wrote (the full
    per-node traces stay there; MLflow traces are a shortened view of it).
    ``summary.mlflow_run_id`` is set when the variant is logged.
    """

    name: str
    params: dict[str, str]
    config_yaml: str
    summary: VariantSummary
    results: list[QueryResult]
    per_query_path: Path


def is_retrieval_metric(name: str) -> bool:
    """Whether ``name`` is a retrieval metric of evalkit's registry (``recall@20``, ``final:hit@5``)."""
    try:
        parse_metric(name)
    except (MetricNameError, ValueError):
        return False
    return True


def headline_metrics(names: Sequence[str], answer: Sequence[str] = ANSWER_HEADLINE) -> list[str]:
    """The headline metrics among ``names``: every retrieval metric the run computed, then ``answer`` ones."""
    present = set(names)
    return sorted(n for n in present if is_retrieval_metric(n)) + [n for n in answer if n in present]


def variant_params(params: dict[str, Any]) -> dict[str, str]:
    """The params MLflow receives: secrets masked, keys made valid, values truncated."""
    out: dict[str, str] = {}
    for key, value in mask_secrets(params).items():
        mkey = safe_key(str(key))
        if mkey in out:
            raise EvalkitError(f"params '{key}' and another key both map to the MLflow key '{mkey}'; rename one")
        out[mkey] = param_value(value)
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


def parent_metrics(variants: dict[str, VariantSummary]) -> dict[str, float]:
    """``{"<metric>/<variant>": value}`` for every variant's headline metrics and failure count."""
    out: dict[str, float] = {}
    for name, v in variants.items():
        for metric in [*headline_metrics(list(v.metrics)), "n_failed"]:
            value = v.metrics.get(metric, getattr(v, metric, None))
            if value is not None:
                out[safe_key(f"{mlflow_metric_name(metric)}/{name}")] = float(value)
    return out


def variants_table(variants: dict[str, VariantSummary]) -> dict[str, list[Any]]:
    """One row per variant (name, run id, counts, headline metrics): the parent's ``variants.json`` table."""
    metrics = headline_metrics(sorted({m for v in variants.values() for m in v.metrics}))
    cols: dict[str, list[Any]] = {"variant": [], "mlflow_run_id": [], **{c: [] for c in SUMMARY_COUNTS},
                                  **{m: [] for m in metrics}}
    for name, v in variants.items():
        cols["variant"].append(name)
        cols["mlflow_run_id"].append(v.mlflow_run_id)
        for c in SUMMARY_COUNTS:
            cols[c].append(getattr(v, c))
        for m in metrics:
            cols[m].append(v.metrics.get(m))
    return cols


def comparison(variants: dict[str, VariantSummary]) -> dict[str, Any]:
    """Every variant's main numbers side by side (the parent run's ``comparison.json``)."""
    names = sorted({m for v in variants.values() for m in v.metrics})
    return {
        "metrics": names,
        "variants": {
            name: {
                "mlflow_run_id": v.mlflow_run_id,
                "metrics": {m: v.metrics.get(m) for m in names},
                **{c: getattr(v, c) for c in SUMMARY_COUNTS},
            }
            for name, v in variants.items()
        },
    }


def rerank_scores(results: Sequence[QueryResult]) -> dict[str, list[float]]:
    """``{query_id: [score of each document of the reranked list]}``."""
    return {r.query_id: [float(d["score"]) for d in r.reranked if d.get("score") is not None] for r in results}


# ---------------------------------------------------------------------------- tags and names


def source_tags(source_name: str, git_commit: str | None) -> dict[str, str]:
    """MLflow's standard source tags: what ran (``evalkit run``), as a LOCAL source, at which commit, by whom."""
    tags = {SOURCE_NAME: redact(source_name), SOURCE_TYPE: "LOCAL"}
    if git_commit:
        tags[GIT_COMMIT] = git_commit
    try:
        tags[USER] = getpass.getuser()
    except (KeyError, OSError):  # no user name in a bare container
        pass
    return tags


def parent_run_name(run: RunSummary, names: Sequence[str], now: float | None = None) -> str:
    """``<eval set> v<version> · <n> variants (<first names>) · <local time>``."""
    es = run.eval_set
    shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() if now is None else now))
    label = f"{len(names)} variant{'s' if len(names) != 1 else ''} ({shown})"
    return redact(tag_value(f"{es.name} v{es.version} · {label} · {when}"))[:250]


def parent_note(run: RunSummary, names: Sequence[str], source_name: str) -> str:
    """The parent run's description (``mlflow.note.content``, Markdown)."""
    es = run.eval_set
    return tag_value(redact(
        f"**{source_name}** on eval set `{es.name}` v{es.version} ({es.n_queries} queries, sha256 "
        f"`{es.sha256[:12]}`), {len(names)} variant(s): {', '.join(names)}.\n\n"
        "Headline metrics per variant are the `<metric>/<variant>` metrics of this run and its `variants.json` "
        "table; each child run is one variant; each trace is one query, with its metrics as assessments."))


# ---------------------------------------------------------------------------- the eval set as a dataset


def dataset_name(run: RunSummary) -> str:
    """``<eval set>@v<version>``: the name MLflow's Dataset column shows, as evalkit spells a pinned set."""
    return f"{run.eval_set.name}@v{run.eval_set.version}"


def dataset_digest(run: RunSummary) -> str:
    """The frozen version's content hash, as the CLI prints it (12 hex digits; MLflow allows 36)."""
    return (run.eval_set.sha256 or "")[:12] or "unversioned"


def eval_set_frame(results: Sequence[QueryResult]) -> dict[str, list[Any]]:
    """The eval set's rows (id, question, type, language, gold ids) as columns, in eval-set order."""
    return {"query_id": [r.query_id for r in results],
            "question": [redact(r.question) for r in results],
            "type": [r.type or "" for r in results],
            "lang": [r.lang or "" for r in results],
            "gold_doc_ids": [json.dumps(list(r.gold_doc_ids), ensure_ascii=False) for r in results]}
