"""``evalkit run --dry-run``: what a run will cost, from the configs and the cache state.

Nothing runs and no model loads. The estimate follows each variant's default path from
``start`` to ``end`` (conditional routes and loops can add executions; the estimate says
so) and counts node executions and shared parts (channel searches) before and after
sharing with the work memo's own code (:mod:`evalkit.graph.memo`): the same node
identities and the same input digests, where each input is the *provenance* of a field's
value (the start of the query, or the node execution that wrote it) instead of the value.
Two executions with the same identity whose declared reads come from the same
executions are shared; the real run can only share more (equal values from different
executions), never less. It also counts LLM calls per query (any node whose params hold
an LLM on a model backend; judge calls for generating variants) and, per dense index, how
many passages the embedding cache has not seen yet.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evalkit.graph import END, START, GraphConfig, node_types
from evalkit.graph.memo import ABSENT, WorkKeys, inputs_digest, node_identity, part_identity
from evalkit.graph.schema import INITIAL_FIELDS, Role
from evalkit.index.chunking import chunk_corpus
from evalkit.index.corpus import load_corpus
from evalkit.judges.base import calls_model
from evalkit.llm.base import LLMSpec
from evalkit.llm.registry import is_model
from evalkit.models.cache import EmbeddingCache, text_key
from evalkit.models.embedders import ModelSpec, embedder_identity

# above this many passages an exact (flat) dense index costs ~50 ms/query on one core (reports/scale.md)
FLAT_SUGGEST_ABOVE = 100_000


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
    searches: int = 0
    searches_shared: int = 0
    to_encode: dict[str, int] = field(default_factory=dict)  # embedder identity -> passages not in the cache
    suggestions: list[str] = field(default_factory=list)  # e.g. an approximate index for a big corpus
    tracking: list[str] = field(default_factory=list)  # what MLflow will receive (evalkit.track.describe)

    def table(self) -> str:
        lines = [f"dry run: {self.queries} queries x {len(self.variants)} variants = "
                 f"{self.queries * len(self.variants)} query runs"]
        for v in self.variants:
            loop = "  (has routes/loops: may run more nodes)" if v.loops else ""
            lines.append(f"  {v.name}: {' -> '.join(v.path)}; LLM calls/query {v.llm_calls_per_query}, "
                         f"~{v.tokens_per_query} tokens/query{loop}")
        saved = self.node_executions - self.node_executions_shared
        lines.append(f"node executions: {self.node_executions} on the default paths, "
                     f"{self.node_executions_shared} after sharing ({saved} saved)")
        if self.searches:
            lines.append(f"channel searches: {self.searches} needed by the executions that run, "
                         f"{self.searches_shared} after sharing")
        llm = sum(v.llm_calls_per_query for v in self.variants) * self.queries
        lines.append(f"LLM calls: at most {llm} by nodes and {self.judge_calls} by the judge "
                     "(before the LLM cache; cached calls cost nothing)")
        for ident, n in self.to_encode.items():
            lines.append(f"passages to encode with {ident}: {n}" + (" (all cached)" if n == 0 else ""))
        lines.extend(f"suggestion: {s}" for s in self.suggestions)
        lines.extend(self.tracking)
        return "\n".join(lines)


def default_path(config: GraphConfig) -> tuple[list[str], bool]:
    """Node names on the default edges from start to end, and whether routes/loops exist."""
    path, node, seen = [], config.edges[START], set()
    while node != END and node not in seen:
        seen.add(node)
        path.append(node)
        node = config.edges[node]
    return path, bool(config.routes) or node != END


def llm_specs(params: Any) -> Iterator[Any]:
    """Every ``LLMSpec`` inside a params model (nested models, lists and dicts included)."""
    if isinstance(params, LLMSpec):
        yield params
    elif isinstance(params, BaseModel):
        for name in type(params).model_fields:
            yield from llm_specs(getattr(params, name))
    elif isinstance(params, (list, tuple)):
        for v in params:
            yield from llm_specs(v)
    elif isinstance(params, dict):
        for v in params.values():
            yield from llm_specs(v)


def _llm_per_query(params: Any) -> tuple[int, int]:
    calls = tokens = 0
    for spec in llm_specs(params):
        if is_model(spec.backend):
            calls += 1
            chars = getattr(params, "evidence_k", 5) * getattr(params, "max_chars_per_passage", 600)
            tokens += chars // 2 + 200 + int(spec.max_tokens)
    return calls, tokens


def make_plan(eval_set: Any, configs: Sequence[GraphConfig], judge: str, cache_root: Path,
              share_work: bool = True) -> Plan:
    """Estimate the work of running ``configs`` on ``eval_set`` (no model loads)."""
    types = node_types()
    judge_calls_model = calls_model(judge)  # the judge's registered capability, not its name
    n = len(eval_set.records)
    variants: list[VariantPlan] = []
    nodes_seen: set[Any] = set()
    parts_seen: set[Any] = set()
    total = searches = judge_calls = 0
    for config in configs:
        path, loops = default_path(config)
        context = {"chunking": config.chunking, "seed": config.seed}
        provenance: dict[str, Any] = {str(f): f"start:{f}" for f in INITIAL_FIELDS}
        calls = tokens = 0
        generator = False
        for name in path:
            spec = config.nodes[name]
            cls = types[spec["type"]]
            params = cls.Params(**spec["params"])
            contract = cls.contract(params)
            c, t = _llm_per_query(params)
            calls, tokens, generator = calls + c, tokens + t, generator or cls.role is Role.GENERATOR
            identity = node_identity(cls.type, params, context)
            inputs = inputs_digest((f, provenance.get(f, ABSENT)) for f in sorted(contract.all_reads))
            key = (identity, inputs) if share_work and cls.memoize else (config.name, name, identity, inputs)
            total += 1
            if key not in nodes_seen:
                nodes_seen.add(key)
                for part, fields in cls.shared_parts(params):
                    searches += 1
                    pkey = (part_identity(part, context),
                            inputs_digest((f, provenance.get(f, ABSENT)) for f in fields))
                    parts_seen.add(pkey if share_work else (config.name, name, *pkey))
            for f in contract.all_writes:
                provenance[f] = f"{key}:{f}"
        variants.append(VariantPlan(config.name, path, loops, calls, tokens))
        # a cascade (offline+llm) calls the model twice per escalated claim: unknown before the run, shown as
        # a model judge's count (its cost table then says how many claims it actually sent)
        if judge_calls_model and generator:
            judge_calls += 2 * n
    return Plan(queries=n, variants=variants, node_executions=total * n,
                node_executions_shared=len(nodes_seen) * n, judge_calls=judge_calls, searches=searches * n,
                searches_shared=len(parts_seen) * n, to_encode=_to_encode(eval_set, configs, cache_root),
                suggestions=_index_suggestions(eval_set, configs))


def _index_suggestions(eval_set: Any, configs: Sequence[GraphConfig]) -> list[str]:
    """An approximate index (hnsw, ivf) for each flat dense channel over more than FLAT_SUGGEST_ABOVE passages."""
    corpus = getattr(eval_set, "corpus", None) or load_corpus(eval_set.corpus_path)
    if len(corpus) * 50 < FLAT_SUGGEST_ABOVE:  # cannot reach the size whatever the chunking: skip chunking
        return []
    types = node_types()
    out: list[str] = []
    sizes: dict[str, int] = {}
    for config in configs:
        for name, spec in config.nodes.items():
            cls = types[spec["type"]]
            for part, _ in cls.shared_parts(cls.Params(**spec["params"])):  # the channels a node searches
                if part.get("search") != "dense" or part.get("index", "flat") != "flat":
                    continue
                key = str(sorted(config.chunking.items()))
                if key not in sizes:
                    sizes[key] = len(chunk_corpus(corpus, config.chunking).units)
                if sizes[key] > FLAT_SUGGEST_ABOVE:
                    out.append(f"{config.name}: node '{name}' searches {sizes[key]:,} passages with an exact (flat) "
                               "index; consider `index: hnsw` (or `ivf`) in its dense channel: see docs/scaling.md "
                               "for the speed and the recall@k it costs")
    return out


def _to_encode(eval_set: Any, configs: Sequence[GraphConfig], cache_root: Path) -> dict[str, int]:
    """Passages each dense index still has to encode (not in the embedding cache)."""
    types = node_types()
    corpus = getattr(eval_set, "corpus", None) or load_corpus(eval_set.corpus_path)
    cache = EmbeddingCache(Path(cache_root) / "embeddings.sqlite")
    out: dict[str, int] = {}
    seen: set[tuple[str, str]] = set()
    for config in configs:
        for spec in config.nodes.values():
            cls = types[spec["type"]]
            for part, _ in cls.shared_parts(cls.Params(**spec["params"])):
                if part.get("search") != "dense":
                    continue
                ident = embedder_identity(ModelSpec.of(part.get("embedder", "e5")))
                key = (str(ident), str(sorted(config.chunking.items())))
                if ident is None or key in seen:
                    continue
                seen.add(key)
                keys = list(dict.fromkeys(text_key(t) for t in chunk_corpus(corpus, config.chunking).unit_texts()))
                found = cache.get_many(ident, "passage", keys)
                out[ident] = out.get(ident, 0) + len(keys) - len(found)
    cache.close()
    return out


def work_keys(configs: Sequence[Any], all_configs: Sequence[Any]) -> WorkKeys:
    """:class:`WorkKeys` of ``configs`` (``GraphConfig``), among the parts of ``all_configs``, read from the configs
    alone (no index or model is built), as the graph builder and ``Node.part_identity`` compute them."""
    def keys(config: Any) -> tuple[set[str], set[str]]:
        types = node_types()
        context = {"chunking": config.chunking, "seed": config.seed}
        nodes: set[str] = set()
        parts: set[str] = set()
        for spec in config.nodes.values():
            cls = types[spec["type"]]
            params = cls.Params(**spec["params"])
            nodes.add(node_identity(cls.type, params, context))
            parts.update(part_identity(part, context) for part, _ in cls.shared_parts(params))
        return nodes, parts

    mine = [keys(c) for c in configs]
    known = set().union(*(keys(c)[1] for c in all_configs)) if all_configs else set()
    return WorkKeys(frozenset().union(*(n for n, _ in mine)), frozenset().union(*(p for _, p in mine)),
                    frozenset(known))
