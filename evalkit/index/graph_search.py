"""Local search over the entity graph: link query entities, expand, score passages.

Used by the ``graph_local`` node and by the ``agent_scheduler`` node's graph tool (one
implementation, two callers).

1. **Linking.** Entities of the query are linked to graph nodes in three steps: *exact*
   (a mention's normalised id is a node, or a node's normalised name occurs in the
   normalised query; a one-word Latin name such as ``Film`` or ``IT`` must occur with its
   own capitalisation, so "the film" does not link it), *alias* (the mention is a
   variant in the alias table) and *embedding* (a mention still unlinked is compared,
   with the e5 embedder, to the names of the ``candidates`` nodes sharing the most
   character bigrams with it; the best one at or above ``threshold`` is linked).
2. **Expansion.** Breadth-first from each linked entity, up to ``depth`` hops. A node
   reached at distance ``d`` from seed ``s`` gets ``w_s * decay**d * r``, where ``w_s``
   is the link weight (1 for exact and alias, the cosine for embedding) and ``r`` the
   product of the relation weights along the path (best path). Scores from several
   seeds add up, so a bridge entity reached from two question entities stands out. Each
   expanded node follows its ``max_neighbors`` strongest edges; a node found in more than
   ``hub_share`` of the passages (and in more than ``hub_min_passages``) is scored but
   not expanded through (seeds always are).
3. **Passages.** ``score(p) = sum over entities e in p of score(e) * idf(e)``, with
   ``idf(e) = log(1 + N / df(e))``; best first, ties by passage id.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalkit.index.entities import find_keys, ident, normalise
from evalkit.index.entity_rules import FUNCTION_WORDS, STOP_CAPS


@dataclass
class LocalResult:
    """What one local search found: passages, linked entities, evidence lines, reached nodes."""

    passages: list[tuple[str, str, float]]  # (passage id, doc id, score), best first
    entities: list[dict[str, Any]]
    evidence: list[str]
    reached: dict[str, float] = field(default_factory=dict)


class LocalGraphSearch:
    """Entity linking + BFS over one ``EntityGraph``. ``settings`` has the ``graph_local`` fields."""

    def __init__(self, egraph: Any, settings: Any, embedder: Any = None):
        self.g, self.s, self.embedder = egraph, settings, embedder
        nodes = egraph.graph.nodes
        self._keys = sorted({d["key"] for _, d in nodes(data=True) if self._matchable(d)},
                            key=lambda k: (-len(k), k))
        self._by_key: dict[str, list[str]] = {}
        for n, d in nodes(data=True):
            self._by_key.setdefault(d["key"], []).append(n)
        self._bigrams: dict[str, list[str]] | None = None

    @staticmethod
    def _matchable(d: dict[str, Any]) -> bool:
        key = d["key"]
        return len(key.replace(" ", "")) >= 2 and key not in FUNCTION_WORDS and key not in STOP_CAPS

    # ------------------------------------------------------------------ linking
    def link(self, queries: list[str]) -> list[dict[str, Any]]:
        """Linked query entities: ``{mention, node, name, how, score}``, one per node, in query order."""
        links: dict[str, dict[str, Any]] = {}
        unlinked: list[str] = []

        def add(mention: str, node: str, how: str, score: float) -> None:
            if node not in links or links[node]["score"] < score:
                links[node] = {"mention": mention, "node": node, "name": self.g.name(node), "how": how,
                               "score": round(float(score), 6)}

        nodes = self.g.graph.nodes
        for q in queries:
            for m in self.g.extractor.mentions(q):
                if m.id in nodes:
                    add(m.surface, m.id, "alias" if m.label == "alias" or m.id != ident(m.key) else "exact", 1.0)
                else:
                    unlinked.append(m.surface)
            spaced = normalise(q, strip_legal=False)
            for s, e, key in find_keys(spaced, self._keys):
                for node in self._by_key[key]:
                    if node not in links and (" " in key or not key.isascii() or not key.isalpha()
                                              or _cased_in(nodes[node]["surfaces"], q)):
                        add(spaced[s:e], node, "exact", 1.0)
        if self.embedder is not None and self.s.link.embedding:
            for mention in dict.fromkeys(unlinked):
                best = self._embedding_link(mention)
                if best is not None and best[0] not in links:
                    add(mention, best[0], "embedding", best[1])
        return sorted(links.values(), key=lambda x: (-x["score"], x["node"]))

    def _embedding_link(self, mention: str) -> tuple[str, float] | None:
        candidates = self._candidates(mention)
        if not candidates:
            return None
        names = [self.g.name(n) for n in candidates]
        vecs = self.embedder.encode_queries([mention, *names])
        sims = vecs[1:] @ vecs[0]
        order = sorted(range(len(candidates)), key=lambda i: (-float(sims[i]), candidates[i]))
        best = order[0]
        if float(sims[best]) >= self.s.link.threshold:
            return candidates[best], float(sims[best])
        return None

    def _candidates(self, mention: str) -> list[str]:
        """Nodes sharing the most character bigrams with ``mention`` (Jaccard), at most ``candidates``."""
        if self._bigrams is None:  # built once; assigned whole, so other query threads never see it half-built
            index: dict[str, list[str]] = {}
            for n in sorted(self.g.graph.nodes):
                for bg in _bigrams(n):
                    index.setdefault(bg, []).append(n)
            self._bigrams = index
        mine = _bigrams(ident(normalise(mention)))
        overlap: Counter = Counter()
        for bg in mine:
            overlap.update(self._bigrams.get(bg, ()))
        scored = [(c / (len(mine) + len(_bigrams(n)) - c), n) for n, c in overlap.items()]
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [n for _, n in scored[: self.s.link.candidates]]

    # ------------------------------------------------------------------ expansion
    def expand(self, seeds: dict[str, float]) -> tuple[dict[str, float], dict[str, tuple[str, str, int]]]:
        """Node scores summed over seeds, and for each reached node its best (parent, relation, distance)."""
        score: dict[str, float] = {}
        parent: dict[str, tuple[float, str, str, int]] = {}
        hub_df = max(self.s.hub_share * self.g.n_passages, self.s.hub_min_passages)
        for seed, w in sorted(seeds.items()):
            best = {seed: 1.0}
            frontier = [seed]
            score[seed] = score.get(seed, 0.0) + w
            for d in range(1, self.s.depth + 1):
                nxt: dict[str, float] = {}
                for u in frontier:
                    if u != seed and self.g.df(u) > hub_df:
                        continue
                    for v, rel, _ in self.g.adjacency[u][: self.s.max_neighbors]:
                        if v in best:
                            continue
                        r = best[u] * self.s.relation_weights.get(rel, 1.0)
                        if r > nxt.get(v, 0.0):
                            nxt[v] = r
                            contribution = w * self.s.decay ** d * r
                            if v not in parent or contribution > parent[v][0]:
                                parent[v] = (contribution, u, rel, d)
                for v, r in nxt.items():
                    best[v] = r
                    score[v] = score.get(v, 0.0) + w * self.s.decay ** d * r
                frontier = sorted(nxt)
        return score, {v: (u, rel, d) for v, (_, u, rel, d) in parent.items() if v not in seeds}

    def rank(self, scores: dict[str, float], allowed: frozenset[str] | None = None) -> list[tuple[str, str, float]]:
        """Passages by the summed ``score * idf`` of the entities they contain; best first, ties by id.
        ``allowed``: document ids a metadata filter lets through (None: all), applied before the top_k cut."""
        totals: dict[str, float] = {}
        for node, s in scores.items():
            idf = self.g.idf(node)
            for pid in self.g.graph.nodes[node]["chunks"]:
                if allowed is not None and self.g.passage_doc.get(pid) not in allowed:
                    continue
                totals[pid] = totals.get(pid, 0.0) + s * idf
        ranked = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))[: self.s.top_k]
        return [(pid, self.g.passage_doc[pid], float(s)) for pid, s in ranked]

    def evidence(self, scores: dict[str, float], parents: dict[str, tuple[str, str, int]], limit: int,
                 allowed: frozenset[str] | None = None) -> list[str]:
        """``A [relation] B (doc-id)`` for the best reached entities and the edge that reached them;
        with ``allowed`` (document ids), only edges stated in an allowed document, cited by it."""
        lines: list[str] = []
        for v in sorted(parents, key=lambda n: (-scores[n], n)):
            if len(lines) >= limit:
                break
            u, rel, _ = parents[v]
            a, b = u, v
            data = self.g.graph.get_edge_data(u, v, rel)
            if data is None:
                data = self.g.graph.get_edge_data(v, u, rel) or {}
                if data.get("directed"):  # a typed relation reached backwards: say it the way it reads
                    a, b = v, u
            chunks = data.get("chunks", {})
            if allowed is not None:
                chunks = {c: w for c, w in chunks.items() if self.g.passage_doc.get(c) in allowed}
                if not chunks:
                    continue  # only another tenant's (or a filtered-out) document states this edge
            pid = min(chunks.items(), key=lambda kv: (-kv[1], kv[0]))[0] if chunks else ""
            lines.append(f"{self.g.name(a)} [{rel}] {self.g.name(b)} ({self.g.passage_doc.get(pid, '?')})")
        return lines

    def search(self, queries: list[str], max_evidence: int = 0, allowed: frozenset[str] | None = None) -> LocalResult:
        """Link, expand, rank; ``allowed``: the document ids a metadata filter lets through (passages and
        evidence lines of other documents are left out; the expansion itself walks the whole graph)."""
        links = self.link(queries)
        seeds = {x["node"]: x["score"] for x in links}
        scores, parents = self.expand(seeds)
        evidence = self.evidence(scores, parents, max_evidence, allowed) if max_evidence else []
        return LocalResult(self.rank(scores, allowed), links, evidence, scores)


def _cased_in(surfaces: dict[str, int], text: str) -> bool:
    """Whether one of a node's spellings occurs in ``text`` with its own capitalisation, as a whole word."""
    return any(re.search(rf"(?<![A-Za-z0-9]){re.escape(s)}(?![A-Za-z0-9])", text) for s in surfaces)


def _bigrams(text: str) -> set[str]:
    text = unicodedata.normalize("NFKC", text)
    return {text[i:i + 2] for i in range(len(text) - 1)} or {text}


def cosine_top(query_vecs: np.ndarray, item_vecs: np.ndarray) -> np.ndarray:
    """Best cosine of each item over several query vectors (rows are L2-normalised)."""
    if len(item_vecs) == 0 or len(query_vecs) == 0:
        return np.zeros(len(item_vecs), dtype=np.float32)
    return (item_vecs @ query_vecs.T).max(axis=1)
