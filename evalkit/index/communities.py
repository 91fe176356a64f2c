"""Communities of the entity graph, each with an extractive summary (for global graph retrieval).

Detection runs on the graph's undirected weighted projection (edge weights summed over
relation types): Leiden (``leidenalg`` + ``igraph``, the ``leiden`` extra) when installed,
otherwise networkx's Louvain (``louvain_communities(seed=...)``). Both are seeded, so the
same graph and seed give the same partition. ``algorithm: auto`` takes Leiden when it can;
the algorithm that actually ran is recorded in ``meta`` and is part of the cache key.
``algorithm: leiden`` without the extra is refused when the config is validated (``evalkit
graph check``, ``evalkit run`` before any index is built), with the install command.

Per community:

- ``centrality``: each member's weighted degree inside the community, scaled to max 1;
- ``passages``: membership of each passage, the summed centrality of the members it
  mentions, scaled to max 1 within the community;
- ``summary``: the top ``top_entities`` names by centrality, then the
  ``top_sentences`` sentences whose members carry the most centrality (extractive).

Computed once per (graph, parameters) and cached beside the graph as
``communities-<hash>.json``.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalkit.extras import MissingExtraError, check, require

ALGORITHMS = ("auto", "louvain", "leiden")
SENTENCE_CHARS = 300


class CommunitySpec(BaseModel):
    """Community detection and summary settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    algorithm: Literal["auto", "louvain", "leiden"] = Field(default="auto", description="auto: Leiden when "
                                                            "leidenalg is installed, else Louvain (networkx)")
    resolution: float = Field(default=1.0, gt=0, description="higher: more, smaller communities")
    seed: int | None = Field(default=None, description="default: the graph config's seed")
    min_size: int = Field(default=2, ge=1, description="smaller communities are not matched against queries")
    top_entities: int = Field(default=8, ge=1, description="most central entities named in the summary")
    top_sentences: int = Field(default=3, ge=0, description="most central sentences quoted in the summary")

    @field_validator("algorithm")
    @classmethod
    def _installed(cls, algorithm: str) -> str:
        """``leiden`` only with leidenalg and igraph installed: said at load time, not after the graph is built."""
        if algorithm == "leiden":
            try:
                check_leiden()
            except MissingExtraError as e:
                raise ValueError(f"{e}; or use algorithm: louvain (auto takes Leiden when it is installed)") from None
        return algorithm


@dataclass
class Community:
    """One community: members by centrality, passages by membership, the extractive summary."""

    id: int
    size: int
    centrality: dict[str, float]
    passages: dict[str, float]
    top_entities: list[str]
    summary: str


@dataclass
class Communities:
    """The partition of one graph (communities of at least ``min_size`` members) and its meta."""

    items: list[Community]
    meta: dict[str, Any]


LEIDEN = "community algorithm 'leiden'"


def check_leiden() -> None:
    """``MissingExtraError`` (with ``pip install 'evalkit-ragraph[leiden]'``) unless leidenalg and igraph are installed."""
    check("leiden", LEIDEN)


def leiden_available() -> bool:
    """Whether leidenalg and igraph are installed (nothing is imported)."""
    try:
        check_leiden()
    except MissingExtraError:
        return False
    return True


def _partition(h: Any, algorithm: str, resolution: float, seed: int) -> list[set[str]]:
    if algorithm == "leiden":
        ig = require("leiden", LEIDEN, "igraph")
        leidenalg = require("leiden", LEIDEN, "leidenalg")
        names = list(h.nodes)
        index = {n: i for i, n in enumerate(names)}
        g = ig.Graph(n=len(names), edges=[(index[u], index[v]) for u, v in h.edges()])
        g.es["weight"] = [d["weight"] for _, _, d in h.edges(data=True)]
        part = leidenalg.find_partition(g, leidenalg.RBConfigurationVertexPartition, weights="weight",
                                        resolution_parameter=resolution, seed=seed)
        return [{names[i] for i in members} for members in part]
    import networkx as nx

    return [set(c) for c in nx.community.louvain_communities(h, weight="weight", resolution=resolution, seed=seed)]


def projection(graph: Any) -> Any:
    """Undirected simple graph of the entity graph, weights summed over relations; sorted for determinism."""
    import networkx as nx

    weights: dict[tuple[str, str], float] = {}
    for u, v, d in graph.edges(data=True):
        if u != v:
            a, b = sorted((u, v))
            weights[(a, b)] = weights.get((a, b), 0.0) + float(d["weight"])
    h = nx.Graph()
    h.add_nodes_from(sorted(graph.nodes))
    h.add_weighted_edges_from((a, b, round(w, 6)) for (a, b), w in sorted(weights.items()))
    return h


def detect_communities(egraph: Any, spec: CommunitySpec, seed: int = 0) -> Communities:
    """The communities of ``egraph`` (an ``EntityGraph``), from its cache folder when present."""
    algorithm = spec.algorithm
    if algorithm == "auto":
        algorithm = "leiden" if leiden_available() else "louvain"
    elif algorithm == "leiden":
        check_leiden()  # a spec built before the package was removed: the same message as at load time
    seed = spec.seed if spec.seed is not None else seed
    key = {"graph": egraph.meta.get("path", ""), "graph_created": egraph.meta.get("created", ""),
           **spec.model_dump(exclude={"algorithm", "seed"}), "algorithm": algorithm, "seed": seed}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    # cached beside the graph while its entry exists (another process may have replaced a damaged one meanwhile)
    path = egraph.folder / f"communities-{digest}.json" if egraph.folder and egraph.folder.is_dir() else None
    if path is not None and path.exists():
        cached = _read_cached(path)
        if cached is not None:
            return cached
    t0 = time.perf_counter()
    h = projection(egraph.graph)
    parts = _partition(h, algorithm, spec.resolution, seed)
    import networkx as nx

    modularity = nx.community.modularity(h, parts, weight="weight") if h.number_of_edges() else 0.0
    parts = sorted(parts, key=lambda c: (-len(c), min(c)))
    items = [_community(i, sorted(c), h, egraph, spec) for i, c in enumerate(parts) if len(c) >= spec.min_size]
    meta = {"index_type": "graph_communities", "graph_path": egraph.meta.get("path", ""),
            "corpus_sha256": egraph.meta.get("corpus_sha256"), "chunking": egraph.meta.get("chunking"),
            "algorithm": algorithm, "resolution": spec.resolution, "seed": seed, "min_size": spec.min_size,
            "stats": {"communities": len(items), "partition_size": len(parts),
                      "singletons": sum(1 for c in parts if len(c) == 1), "modularity": round(modularity, 4),
                      "largest_share": round(len(parts[0]) / max(1, h.number_of_nodes()), 4) if parts else 0.0,
                      "detect_s": round(time.perf_counter() - t0, 3)}}
    if path is not None:
        from evalkit.cachestore import write_file

        write_file(path, json.dumps({"meta": {**meta, "path": str(path)}, "communities": [asdict(c) for c in items]},
                                    ensure_ascii=False).encode("utf-8"))
        meta["path"] = str(path)
    return Communities(items, meta)


def _read_cached(path: Path) -> Communities | None:
    """The communities stored at ``path``; None (after a warning naming the file) when it is damaged."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Communities([Community(**c) for c in data["communities"]], data["meta"])
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        from evalkit.cachestore import warn

        warn(f"cache file {path} is damaged ({type(exc).__name__}: {exc}); recomputing the communities")
        return None


def _community(cid: int, members: list[str], h: Any, egraph: Any, spec: CommunitySpec) -> Community:
    inside = set(members)
    degree = {m: sum(d["weight"] for _, n, d in h.edges(m, data=True) if n in inside) for m in members}
    top = max(degree.values()) if degree else 0.0
    centrality = {m: (round(degree[m] / top, 6) if top > 0 else 1.0) for m in members}
    ranked = sorted(members, key=lambda m: (-centrality[m], m))
    passages: dict[str, float] = {}
    for m in members:
        for pid in egraph.graph.nodes[m]["chunks"]:
            passages[pid] = passages.get(pid, 0.0) + centrality[m]
    best = max(passages.values()) if passages else 1.0
    passages = {p: round(w / best, 6) for p, w in sorted(passages.items())}
    scored = []
    for pid in passages:
        for i, (text, ids) in enumerate(egraph.sentences.get(pid, [])):
            s = sum(centrality.get(e, 0.0) for e in ids)
            if s > 0:
                scored.append((-s, pid, i, text))
    scored.sort()
    seen: set[str] = set()
    sentences: list[str] = []
    for _, _, _, text in scored:
        if text not in seen and len(sentences) < spec.top_sentences:
            seen.add(text)
            sentences.append(text[:SENTENCE_CHARS])
    names = [egraph.name(m) for m in ranked[: spec.top_entities]]
    summary = "; ".join(names) + ("\n" + "\n".join(sentences) if sentences else "")
    return Community(id=cid, size=len(members), centrality=dict(sorted(centrality.items())), passages=passages,
                     top_entities=ranked[: spec.top_entities], summary=summary)
