"""Where queries run: in this process (one or more threads), or on a Ray cluster.

Every executor yields ``QueryResult``s in the order the records were given, so the
runner's files and numbers never depend on the executor or the number of workers.

- ``local``: a thread pool (``--workers N``); LLM calls are I/O-bound, model calls are
  serialised by the model wrappers.
- ``ray``: batches of queries run as Ray tasks (``--executor ray``; ``--ray-address`` for
  an existing cluster, otherwise a local Ray with ``--workers`` CPUs). Before a variant's
  queries, one Ray task builds its indexes on a worker (tokenising and encoding the
  passages) into the cache, which must be a folder every node sees at the same path
  (shared storage; see docs/scaling.md); the driver then only reads them (memory-mapped).
  Each worker process rebuilds the corpus, indexes (loaded from the shared cache), the
  graph and the judge once per variant, keeps them for later batches, and batches each
  task's searches (``Node.prepare``) as the local runner does.
"""
from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from evalkit.extras import require
from evalkit.graph import build_graph, config_from_dict
from evalkit.index.corpus import load_corpus
from evalkit.index.resources import Resources
from evalkit.metrics import Scoring
from evalkit.metrics.tenancy import document_tenants
from evalkit.records import EvalRecord, QueryResult
from evalkit.run.query import QueryContext, run_query

EXECUTORS = ("local", "ray")
RAY_BATCH = 8  # smallest task; larger runs get larger tasks (see ray_batch_size)
RAY_BATCH_MAX = 256
# environment every Ray worker needs: offline models, quiet libraries, the user's plugins
_WORKER_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "MLFLOW_DISABLE_TELEMETRY", "TOKENIZERS_PARALLELISM",
               "RAGAS_DO_NOT_TRACK", "EVALKIT_CACHE", "EVALKIT_PLUGINS", "PYTHONPATH")


def run_local(ctx: Any, records: Sequence[EvalRecord], workers: int) -> Iterator[QueryResult]:
    """Run ``records`` through ``ctx`` (a ``QueryContext``) on ``workers`` threads, yielding in order."""
    if workers <= 1:
        for rec in records:
            yield run_query(ctx, rec)
        return

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for fut in [pool.submit(run_query, ctx, rec) for rec in records]:
            yield fut.result()


def ray_init(address: str | None, num_cpus: int) -> None:
    """Connect to ``address`` or start a local Ray with ``num_cpus`` (once per process)."""
    ray = require("ray", "--executor ray")

    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    env = {k: os.environ[k] for k in _WORKER_ENV if k in os.environ}
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([*sys.path, *env.get("PYTHONPATH", "").split(os.pathsep)]))
    kwargs: dict[str, Any] = {"runtime_env": {"env_vars": env}, "log_to_driver": False}
    if address:
        ray.init(address=address, **kwargs)
    else:
        # address="local": start our own Ray, never attach to a cluster someone else left running here
        ray.init(address="local", num_cpus=max(1, num_cpus), include_dashboard=False, **kwargs)


def build_on_ray(payload: dict[str, Any], workers: int, address: str | None) -> dict[str, Any]:
    """Build (or load) a variant's indexes in a Ray worker, into the shared cache; returns where it ran."""
    ray = require("ray", "--executor ray")
    ray_init(address, workers)
    return ray.get(ray.remote(_build_task).remote(payload))


def _build_task(payload: dict[str, Any]) -> dict[str, Any]:
    _worker_context(payload)  # corpus, passages, indexes (built and written to the cache), graph
    return {"host": socket.gethostname(), "pid": os.getpid()}


def run_ray(payload: dict[str, Any], records: Sequence[EvalRecord], workers: int,
            address: str | None) -> Iterator[QueryResult]:
    """Run ``records`` as Ray tasks of ``RAY_BATCH`` queries; yields results in record order.

    ``payload`` says how a worker rebuilds the query context: corpus path, cache root,
    the variant's config dict and source, metric names, judge name and options.
    """
    ray = require("ray", "--executor ray")
    ray_init(address, workers)
    task = ray.remote(_run_batch)
    payload_ref = ray.put(payload)
    size = ray_batch_size(len(records), workers)
    refs = [task.remote(payload_ref, [r.to_dict() for r in records[i:i + size]])
            for i in range(0, len(records), size)]
    for ref in refs:
        for d in ray.get(ref):
            yield QueryResult.from_dict(d)


def ray_batch_size(n: int, workers: int) -> int:
    """Queries per Ray task: about four tasks per worker (batched searches), between RAY_BATCH and RAY_BATCH_MAX."""
    return max(RAY_BATCH, min(RAY_BATCH_MAX, -(-n // (4 * max(1, workers)))))


_WORKER_CONTEXTS: dict[str, Any] = {}


def _run_batch(payload: dict[str, Any], records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Ray task: build (or reuse) this worker's context for the variant, run the batch."""
    ctx = _worker_context(payload)
    recs = [EvalRecord(**{**d, "relevant_doc_ids": tuple(d["relevant_doc_ids"]), "tags": tuple(d["tags"])})
            for d in records]
    if payload.get("prepare", True):
        ctx.graph.prepare([r.question for r in recs])  # this batch's searches in one go, as the local runner does
    return [run_query(ctx, rec).to_dict() for rec in recs]


def _worker_context(payload: dict[str, Any]) -> Any:
    key = json.dumps(payload, sort_keys=True, default=str)
    if key not in _WORKER_CONTEXTS:
        _WORKER_CONTEXTS[key] = build_context(payload)
    return _WORKER_CONTEXTS[key]


def build_context(payload: dict[str, Any], resources: Any = None, memo: Any = None) -> Any:
    """A ``QueryContext`` from a payload: what the local runner builds, rebuilt in a worker."""
    config = config_from_dict(payload["config"], source=payload["source"])
    if resources is None:
        from evalkit.judges import make_judge

        resources = Resources(load_corpus(payload["corpus_path"]), cache_root=Path(payload["cache_root"]),
                              make_judge=make_judge)
    view = resources.for_variant(config.chunking, config.seed, Path(payload["source"]).parent)
    graph = build_graph(config, view, memo=memo)
    judge = None
    if payload.get("judge"):
        from evalkit.judges import make_judge
        from evalkit.llm.base import LLMSpec

        options = dict(payload.get("judge_options") or {})
        if isinstance(options.get("llm"), dict):
            options["llm"] = LLMSpec(**options["llm"])
        judge = make_judge(payload["judge"], cache_root=resources.cache_root, **options)

    rules = payload.get("abstention")
    if rules is not None:
        from evalkit.evalsets.evalset import AbstentionRules

        rules = AbstentionRules.from_dict(rules)

    return QueryContext(graph, tuple(payload["metrics"]), generates=bool(payload.get("judge")), judge=judge,
                        passages=view.passages(), scoring=Scoring.from_dict(payload.get("scoring")), abstention=rules,
                        tenants=document_tenants(view.corpus.documents))
