"""``evalkit run --dry-run``: what a run will cost, from the configs and the cache state.

Nothing runs and no model loads. The estimate follows each variant's default path from
``start`` to ``end`` (conditional routes and loops can add executions; the estimate says
so), counts node executions before and after sharing (a node whose whole prefix on the
path is identical in another variant runs once per query), LLM calls per query
(``generate`` and any node with a model ``llm``; judge calls for generating variants),
and, per dense index, how many passages the embedding cache has not seen yet.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.graph import END, START, GraphConfig, node_types
from evalkit.graph.memo import node_identity

MODEL_BACKENDS = ("local", "openai")


@dataclass
class VariantPlan:
    name: str
    path: list[str]
    loops: bool
    llm_calls_per_query: int
    tokens_per_query: int


@dataclass
class Plan:
    queries: int
    variants: list[VariantPlan]
    node_executions: int
    node_executions_shared: int
    judge_calls: int
    to_encode: dict[str, int] = field(default_factory=dict)  # embedder identity -> passages not in the cache

    def table(self) -> str:
        lines = [f"dry run: {self.queries} queries x {len(self.variants)} variants = "
                 f"{self.queries * len(self.variants)} query runs"]
        for v in self.variants:
            loop = "  (has routes/loops: may run more nodes)" if v.loops else ""
            lines.append(f"  {v.name}: {' -> '.join(v.path)}; LLM calls/query {v.llm_calls_per_query}, "
                         f"~{v.tokens_per_query} tokens/query{loop}")
        saved = self.node_executions - self.node_executions_shared
        lines.append(f"node executions: {self.node_executions} on the default paths, "
                     f"{self.node_executions_shared} after sharing identical prefixes ({saved} saved)")
        llm = sum(v.llm_calls_per_query for v in self.variants) * self.queries
        lines.append(f"LLM calls: at most {llm} by nodes and {self.judge_calls} by the judge "
                     "(before the LLM cache; cached calls cost nothing)")
        for ident, n in self.to_encode.items():
            lines.append(f"passages to encode with {ident}: {n}" + (" (all cached)" if n == 0 else ""))
        return "\n".join(lines)


def default_path(config: GraphConfig) -> tuple[list[str], bool]:
    """Node names on the default edges from start to end, and whether routes/loops exist."""
    path, node, seen = [], config.edges[START], set()
    while node != END and node not in seen:
        seen.add(node)
        path.append(node)
        node = config.edges[node]
    return path, bool(config.routes) or node != END


def _llm_per_query(config: GraphConfig, path: list[str]) -> tuple[int, int]:
    calls = tokens = 0
    for name in path:
        params = config.nodes[name]["params"]
        llm = params.get("llm")
        if isinstance(llm, dict) and llm.get("backend", "local") in MODEL_BACKENDS:
            calls += 1
            chars = params.get("evidence_k", 5) * params.get("max_chars_per_passage", 600)
            tokens += chars // 2 + 200 + int(llm.get("max_tokens", 512))
    return calls, tokens


def make_plan(eval_set: Any, configs: Sequence[GraphConfig], judge: str, cache_root: Path,
              share_work: bool = True) -> Plan:
    """Estimate the work of running ``configs`` on ``eval_set`` (no model loads)."""
    types = node_types()
    n = len(eval_set.records)
    variants, chains, total = [], set(), 0
    judge_calls = 0
    for config in configs:
        path, loops = default_path(config)
        calls, tokens = _llm_per_query(config, path)
        variants.append(VariantPlan(config.name, path, loops, calls, tokens))
        context = {"chunking": config.chunking, "seed": config.seed}
        prefix: tuple[str, ...] = ()
        for name in path:
            spec = config.nodes[name]
            prefix = (*prefix, _identity(types[spec["type"]], spec, context))
            chains.add(prefix if share_work else (config.name, *prefix))
            total += 1
        if judge in ("llm", "ragas") and any(config.nodes[x]["type"] == "generate" for x in path):
            judge_calls += 2 * n
    return Plan(queries=n, variants=variants, node_executions=total * n,
                node_executions_shared=len(chains) * n, judge_calls=judge_calls,
                to_encode=_to_encode(eval_set, configs, cache_root))


def _identity(cls: Any, spec: dict[str, Any], context: dict[str, Any]) -> str:
    class _Probe:  # node_identity reads only .type and .params
        type = cls.type
        params = cls.Params(**spec["params"])

    return node_identity(_Probe, context)


def _to_encode(eval_set: Any, configs: Sequence[GraphConfig], cache_root: Path) -> dict[str, int]:
    """Passages each dense index still has to encode (not in the embedding cache)."""
    from evalkit.index.chunking import chunk_corpus
    from evalkit.index.corpus import load_corpus
    from evalkit.models.cache import EmbeddingCache, text_key
    from evalkit.models.embedders import ModelSpec, embedder_identity

    corpus = getattr(eval_set, "corpus", None) or load_corpus(eval_set.corpus_path)
    cache = EmbeddingCache(Path(cache_root) / "embeddings.sqlite")
    out: dict[str, int] = {}
    seen: set[tuple[str, str]] = set()
    for config in configs:
        for spec in config.nodes.values():
            dense = spec["params"].get("dense") if spec["type"] == "retrieve" else None
            if dense is None:
                continue
            ident = embedder_identity(ModelSpec.of(dense.get("embedder", "e5")))
            key = (str(ident), str(sorted(config.chunking.items())))
            if ident is None or key in seen:
                continue
            seen.add(key)
            keys = list(dict.fromkeys(text_key(t) for t in chunk_corpus(corpus, config.chunking).unit_texts()))
            found = cache.get_many(ident, "passage", keys)
            out[ident] = out.get(ident, 0) + len(keys) - len(found)
    cache.close()
    return out
