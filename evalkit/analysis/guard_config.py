"""Writing a graph config whose guard uses a calibrated threshold.

The variant's own config (as it ran) is copied; its ``guard`` node gets
``mode: absolute, threshold: t`` (or ``mode: relative`` with the percentile and the run's
``per_query.jsonl`` as calibration). A config without a guard gets one inserted right
after its rerank node, routed to ``end`` when it trips. The result is validated with the
same loader ``evalkit run`` uses before it is written, and starts with comment lines
saying where the threshold came from (run, variant, reranker, objective, interval).
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitError
from evalkit.graph.config import END, config_from_dict
from evalkit.graph.node import node_types
from evalkit.graph.schema import GUARD_TRIGGERED, Role

GUARD_DEFAULTS = {"min_documents": 1, "evidence_k": 5}


def with_guard(config: Any, *, threshold: float | None = None, percentile: float | None = None,
               calibration: str | None = None, name: str | None = None) -> Any:
    """A validated copy of ``config`` whose guard uses ``threshold`` (absolute) or ``percentile`` (relative)."""
    types = node_types()

    def having(role: Role) -> list[str]:
        return [n for n, spec in data["nodes"].items() if types[spec["type"]].role is role]

    if (threshold is None) == (percentile is None):
        raise ValueError("give exactly one of threshold (absolute) or percentile (relative)")
    data = copy.deepcopy(config.to_dict())
    guards = having(Role.GUARD)
    if len(guards) > 1:
        raise EvalkitError(f"config '{config.name}' has {len(guards)} guard nodes ({', '.join(guards)}); "
                           "edit the threshold by hand")
    if guards:
        node = guards[0]
        old = data["nodes"][node].get("params") or {}
        kept = {k: old[k] for k in ("min_documents", "evidence_k") if k in old}
    else:
        reranks = having(Role.RERANKER)
        if len(reranks) != 1:
            raise EvalkitError(f"config '{config.name}' has no guard and {len(reranks)} rerank nodes; "
                               "add a guard node after the rerank node by hand")
        node = "guard" if "guard" not in data["nodes"] else "calibrated_guard"
        kept = dict(GUARD_DEFAULTS)
        data["nodes"][node] = {"type": "guard", "params": {}}
        data["edges"][node] = data["edges"][reranks[0]]
        data["edges"][reranks[0]] = node
        data.setdefault("routes", {})[node] = {"field": GUARD_TRIGGERED, "cases": {True: END}}
    if threshold is not None:
        params = {"mode": "absolute", "threshold": round(float(threshold), 6), **kept}
    else:
        assert percentile is not None  # exactly one of the two is given (checked above)
        params = {"mode": "relative", "percentile": float(percentile), "calibration": calibration, **kept}
    data["nodes"][node]["params"] = params
    data["name"] = name or f"{config.name}_calibrated"
    return config_from_dict(data, source=f"<calibrated {config.name}>")


def write_config(config: Any, path: Path, header: list[str]) -> Path:
    """Write ``config`` as YAML with ``# `` comment lines first; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(f"# {line}\n" for line in header) + config.to_yaml()
    path.write_text(text, encoding="utf-8")
    return path
