"""What an invocation will send to MLflow, in words (``evalkit run --dry-run``); nothing is logged.

The counts follow :mod:`evalkit.track.mlflow_log`'s layout: the store and where its
artifacts go, one parent run, one child run per variant, one trace per query (up to
``--trace-limit``) with the headline metrics as assessments.
"""
from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalkit.graph.schema import Role
from evalkit.redact import redact
from evalkit.track.payloads import (
    ANSWER_HEADLINE,
    QUERY_ANSWER_HEADLINE,
    headline_metrics,
)
from evalkit.track.store import artifact_root, default_tracking_uri
from evalkit.track.traces import EXAMPLES


def _generates(config: Any) -> bool:
    return Role.GENERATOR in config.roles()


def logging_plan(eval_set: Any, configs: Sequence[Any], output: Path, tracking_uri: str | None, experiment: str,
                 traces: bool, trace_limit: int | None, trace_all: bool, metrics: Sequence[str],
                 background: bool = True) -> list[str]:
    """The dry run's MLflow lines: store, runs, params/metrics/artifacts per run, traces and assessments."""
    folder = Path(output).with_suffix("").parent
    uri = tracking_uri or default_tracking_uri(folder)
    root = artifact_root(uri, folder)
    n, names = len(eval_set.records), [c.name for c in configs]
    where = f"artifacts in {root}" if root is not None else "artifacts stored by the server"
    how = "a background worker process, beside the query loop" if background else "this process, after each variant"
    gen = [c.name for c in configs if _generates(c)]
    answer = f" + {', '.join(ANSWER_HEADLINE)} for the {len(gen)} generating variant(s)" if gen else ""
    lines = [f"MLflow: store {redact(uri)} ({where}), experiment '{experiment}', logged by {how}",
             (f"  parent run: eval set {eval_set.name}@v{eval_set.version} as dataset input, mlflow.source.* tags, "
              f"per-variant headline metrics <metric>/<variant> ({', '.join(headline_metrics(metrics))}{answer}), "
              "variants.json, comparison.json"),
             (f"  {len(names)} child run(s), one per variant: params = its flattened config (secrets masked), all its "
              "metrics, per_query.jsonl, config.yaml, rerank_scores.json, rerank_top1.png")]
    if traces:
        assessed = ", ".join([*headline_metrics(metrics), *(QUERY_ANSWER_HEADLINE if gen else ())])
        if trace_all:
            which = f"all {n} queries of each variant ({n * len(names)} traces)"
        else:
            which = (f"each variant's misses and failures (a retrieval metric at 0, a hallucinated or wrong answer, "
                     f"an error) plus its first {EXAMPLES} other queries (--trace-all: all {n})")
        cap = f", at most {trace_limit} per variant" if trace_limit is not None else ""
        lines.append(f"  traces: {which}{cap}; one span per node execution; assessments per trace: {assessed}"
                     f"{' (answer metrics on generating variants)' if gen else ''}; per_query.jsonl keeps every query")
    else:
        lines.append("  traces: none (--no-traces); per-node traces stay in per_query.jsonl")
    return [textwrap.fill(line, width=118, subsequent_indent="    ", break_on_hyphens=False) for line in lines]
