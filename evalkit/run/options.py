"""How ``evalkit run`` and ``evalkit score`` run and write: :class:`RunOptions`, passed from the commands
to the runner (:mod:`evalkit.run.runner`) and to the writer of scored outputs (:mod:`evalkit.scoring.writing`).

Its own module, so that writing a scored run loads none of the runner's graph, index and judge code.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.metrics import DEFAULT_METRICS, Scoring

__all__ = ["RunOptions"]


@dataclass
class RunOptions:
    """How to run: output location, parallelism, resume, metrics, MLflow target."""

    output: Path
    workers: int = 1
    resume: bool = False
    metrics: Sequence[str] = DEFAULT_METRICS
    tracking_uri: str | None = None
    experiment: str = "evalkit"
    mlflow: bool = True
    mlflow_background: bool = True  # log in a worker process beside the query loop (run.tracking)
    source_name: str = "evalkit run"  # MLflow's mlflow.source.name tag
    progress: bool = True
    cache_root: Path | None = None
    check_mutation: bool = False
    tags: dict[str, str] = field(default_factory=dict)
    share_work: bool = True  # compute identical node executions once across variants (graph.memo)
    traces: bool = True  # also log each query's node path as an MLflow trace
    trace_limit: int | None = None
    trace_policy: str = "misses"  # which queries get an MLflow trace: misses (+10 others) or all (track.traces)
    judge: str = "offline"  # judge backend for generating variants (evalkit.judges registry)
    judge_options: dict[str, Any] = field(default_factory=dict)
    executor: str = "local"  # local (threads) or ray
    ray_address: str | None = None
    scoring: Scoring = field(default_factory=Scoring)  # relevance level and tie order of the retrieval metrics
    overwrite: bool = False  # replace the results of another eval set found in the output folder
    prepare: bool = True  # let nodes batch work for all queries first (Node.prepare); numbers identical
    gc_freeze: bool = True  # exempt long-lived objects from garbage collection during a query loop; identical
