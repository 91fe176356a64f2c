"""Graph variants as YAML: load, validate, build, and write back.

A config file looks like::

    name: hybrid_rrf
    description: dense + BM25 fused by RRF
    chunking: {method: fixed, size: 400, overlap: 80}
    nodes:
      retrieve: {type: retrieve, params: {channels: {dense: {}, bm25: {}}, fusion: {method: rrf}}}
      rerank:   {type: rerank}
    edges: {start: retrieve, retrieve: rerank, rerank: end}
    routes:                       # optional conditional edges, as data
      guard: {field: guard_triggered, cases: {true: end}}
      rerank:                     # or conditions (evalkit.graph.conditions), first match wins
        when: [{if: {field: rerank_top1, lt: 0.7}, to: dense_retry}]

Everything is checked at load time, before any model loads: unknown top-level keys,
node types and parameters (with a did-you-mean), edges and routes to missing nodes,
nodes without a default edge, nodes unreachable from ``start`` and nodes from which
``end`` cannot be reached. Errors name the file, the line and the path inside it.
YAML is read by ``evalkit.yamlio`` (the safe loader; a key given twice is an error naming both
lines): a config never executes code.
"""
from __future__ import annotations

import hashlib
import re
import typing
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from evalkit.errors import ConfigError, ParamError, did_you_mean
from evalkit.graph.conditions import ConditionError, check_types, parse
from evalkit.graph.dataflow import check_dataflow, contracts_of
from evalkit.graph.graph import END, START, Graph, Route, route_targets
from evalkit.graph.node import node_types
from evalkit.graph.schema import FIELDS, Role
from evalkit.index.chunking import check_chunking, with_defaults
from evalkit.runstore import VARIANT_NAME
from evalkit.yamlio import read_yaml

"""What a variant name may hold: it is a folder name, an MLflow run name and a tag value."""
TOP_LEVEL_KEYS = ("name", "description", "seed", "max_steps", "chunking", "nodes", "edges", "routes", "on_error")
NODE_KEYS = ("type", "params", "budget_s")
ROUTE_KEYS = ("field", "cases", "when")


@dataclass
class GraphConfig:
    """A validated graph variant, as plain data (round-trips through ``to_dict``)."""

    name: str
    nodes: dict[str, dict[str, Any]]
    edges: dict[str, str]
    routes: dict[str, dict[str, Any]] = field(default_factory=dict)
    on_error: dict[str, str] = field(default_factory=dict)
    chunking: dict[str, Any] = field(default_factory=lambda: with_defaults(None))
    description: str = ""
    seed: int = 0
    max_steps: int = 50
    source: str = "<dict>"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "description": self.description, "seed": self.seed,
                             "max_steps": self.max_steps, "chunking": self.chunking, "nodes": self.nodes,
                             "edges": self.edges}
        if self.routes:
            d["routes"] = self.routes
        if self.on_error:
            d["on_error"] = self.on_error
        return d

    def roles(self) -> set[Role]:
        """The roles of this variant's nodes (what the runner and analysis ask for)."""
        types = node_types()
        return {types[spec["type"]].role for spec in self.nodes.values()}

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    def sha256(self) -> str:
        """Identity of the variant's behaviour (source path and description excluded)."""
        d = self.to_dict()
        d.pop("description", None)
        return hashlib.sha256(yaml.safe_dump(d, sort_keys=True).encode()).hexdigest()

    def flat_params(self) -> dict[str, str]:
        """The config flattened to ``a.b.c -> value`` pairs (for MLflow params)."""
        out: dict[str, str] = {}

        def walk(prefix: str, v: Any) -> None:
            if isinstance(v, dict) and v:
                for k, sub in v.items():
                    walk(f"{prefix}.{k}" if prefix else str(k), sub)
            else:
                out[prefix] = str(v)

        walk("", {k: v for k, v in self.to_dict().items() if k != "description"})
        return out


def read_config_yaml(path: str | Path) -> tuple[Any, dict[str, int]]:
    """Parse a config file safely: (data, dotted key path -> line number); ``ConfigError`` if unreadable.

    Read with :func:`evalkit.yamlio.read_yaml`: a key given twice (two ``retrieve:`` nodes)
    is an error naming both lines, never a silent merge.
    """
    return read_yaml(path, error=ConfigError, what="graph config")


def load_graph_config(path: str | Path) -> GraphConfig:
    """Read and validate a graph config file; raises ``ConfigError`` naming file, line and path."""
    data, lines = read_config_yaml(path)
    return config_from_dict(data, source=str(path), lines=lines)


def config_from_dict(data: Any, source: str = "<dict>", lines: dict[str, int] | None = None) -> GraphConfig:
    """Validate a config given as a dict (as parsed from YAML) and return it."""
    lines = lines or {}

    def fail(where: str, message: str) -> ConfigError:
        return ConfigError(source, where, message, line=lines.get(where))

    if not isinstance(data, dict):
        raise fail("", "a graph config must be a mapping with 'nodes' and 'edges'")
    for key in data:
        if key == "sweep":
            raise fail("sweep", "a sweep file holds several variants: load it with "
                       "evalkit.graph.sweep.load_variants (evalkit run and graph check do)")
        if key not in TOP_LEVEL_KEYS:
            raise fail(str(key), f"unknown key '{key}'{did_you_mean(key, TOP_LEVEL_KEYS)}")
    for key in ("nodes", "edges"):
        if not isinstance(data.get(key), dict) or not data[key]:
            raise fail(key, f"'{key}' is required and must be a non-empty mapping")

    types = node_types()
    nodes: dict[str, dict[str, Any]] = {}
    for name, spec in data["nodes"].items():
        where = f"nodes.{name}"
        if name in (START, END):
            raise fail(where, f"'{name}' is reserved for the graph's entry/exit; rename the node")
        if not isinstance(spec, dict):
            raise fail(where, "a node must be a mapping with 'type' and optional 'params'")
        for key in spec:
            if key not in NODE_KEYS:
                raise fail(f"{where}.{key}", f"unknown key '{key}'{did_you_mean(key, NODE_KEYS)}")
        ntype = spec.get("type")
        if ntype not in types:
            raise fail(f"{where}.type", f"unknown node type '{ntype}'{did_you_mean(str(ntype), types)}")
        params = spec.get("params") or {}
        if not isinstance(params, dict):
            raise fail(f"{where}.params", "params must be a mapping")
        _check_params(types[ntype], params, f"{where}.params", fail)
        nodes[str(name)] = {"type": ntype, "params": params}
        if "budget_s" in spec:
            budget = spec["budget_s"]
            if isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget <= 0:
                raise fail(f"{where}.budget_s", f"budget_s must be a positive number of seconds, got {budget!r}")
            nodes[str(name)]["budget_s"] = float(budget)

    edges = _string_map(data["edges"], "edges", fail)
    routes_raw = data.get("routes") or {}
    on_error = _string_map(data.get("on_error") or {}, "on_error", fail)
    known = set(nodes) | {END}
    if START not in edges:
        raise fail("edges", f"no edge from '{START}': add '{START}: <first node>'")
    for section, mapping in (("edges", edges), ("on_error", on_error)):
        for src, dst in mapping.items():
            if src != START and src not in nodes:
                raise fail(f"{section}.{src}", f"edge from unknown node '{src}'{did_you_mean(src, nodes)}")
            if dst not in known:
                raise fail(f"{section}.{src}", f"edge to unknown node '{dst}'{did_you_mean(dst, known)}")
    for name in nodes:
        if name not in edges:
            raise fail(f"nodes.{name}", f"node '{name}' has no default edge: add '{name}: <next node or end>' under edges")
    if not isinstance(routes_raw, dict):
        raise fail("routes", "'routes' must map a node name to its route")
    routes: dict[str, dict[str, Any]] = {}
    for src, spec in routes_raw.items():
        where = f"routes.{src}"
        if src not in nodes:
            raise fail(where, f"route from unknown node '{src}'{did_you_mean(src, nodes)}")
        routes[str(src)] = _check_route(spec, where, known, fail)

    dynamic = {name: types[spec["type"]].next_targets(types[spec["type"]].Params(**spec["params"]))
               for name, spec in nodes.items()}
    for name, targets in dynamic.items():
        for dst in targets:
            if dst not in known:
                raise fail(f"nodes.{name}.params", f"next() may go to unknown node '{dst}'{did_you_mean(dst, known)}")
    _check_reachability(nodes, edges, routes, on_error, dynamic, fail)
    check_dataflow(nodes, contracts_of(nodes, types, fail), edges, routes, on_error, dynamic, fail)
    seed, max_steps = data.get("seed", 0), data.get("max_steps", 50)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise fail("seed", f"seed must be an integer, got {seed!r}")
    if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
        raise fail("max_steps", f"max_steps must be a positive integer, got {max_steps!r}")
    if not isinstance(data.get("chunking") or {}, dict):
        raise fail("chunking", "chunking must be a mapping such as {method: fixed, size: 400, overlap: 80}")
    chunking = with_defaults(data.get("chunking"))
    problem = check_chunking(chunking)
    if problem:
        raise fail("chunking", problem)
    name = variant_name(data.get("name"), source, fail)
    return GraphConfig(name=str(name), nodes=nodes, edges=edges, routes=routes, on_error=on_error,
                       chunking=chunking, description=str(data.get("description", "")), seed=seed,
                       max_steps=max_steps, source=source)


def variant_name(raw: Any, source: str, fail: Any) -> str:
    """The variant's name: ``name:``, or the file's stem; it becomes a folder under ``--output``.

    An explicit name must be a safe identifier (:data:`VARIANT_NAME`: letters, digits and
    ``_ . -``, not ``.`` or ``..``), refused at load with the line of ``name:``, so that
    ``name: ../../x`` or an absolute path can never write outside the results folder.
    A name taken from the file's stem has every other character replaced by ``_``.
    """
    if raw is None or raw == "":
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(source).stem).strip("._") or "variant"
        return stem
    name = str(raw)
    if not VARIANT_NAME.fullmatch(name) or name in (".", ".."):
        raise fail("name", f"variant name {name[:80]!r} is not a safe identifier: use letters, digits, '_', '.' "
                   "and '-' only (it names the variant's results folder), e.g. hybrid_rrf-v2")
    return name


def build_graph(config: GraphConfig, resources: Any = None, check_mutation: bool = False,
                memo: Any = None) -> Graph:
    """Instantiate the nodes of a validated config (models and indexes load here).

    With ``memo`` (a ``WorkMemo`` shared across variants), identical node executions and
    shared parts of different variants are computed once (``evalkit.graph.memo``).
    """
    from evalkit.graph.memo import node_identity

    types = node_types()
    nodes = {}
    context = {"chunking": config.chunking, "seed": config.seed}
    for name, spec in config.nodes.items():
        cls = types[spec["type"]]
        try:
            node = cls(name, cls.Params(**spec["params"]), resources)
        except ParamError as exc:  # checked against the corpus or a model: say where in the config
            if exc.param is None:
                raise
            where = f"nodes.{name}.params.{exc.param}"
            raise ConfigError(config.source, where, exc.problem, line=_config_lines(config.source).get(where)) from None
        node.context, node.work = dict(context), memo
        node.identity = node_identity(node.type, node.params, context, node.fingerprint())
        if memo is not None:  # what WorkMemo.retain reads: the identity a config alone gives (run.plan.work_keys)
            memo.note_node(node.identity, node_identity(node.type, node.params, context))
        nodes[name] = node
    routes = {src: Route.from_spec(r) for src, r in config.routes.items()}
    budgets = {name: float(spec["budget_s"]) for name, spec in config.nodes.items() if "budget_s" in spec}
    return Graph(name=config.name, nodes=nodes, edges=dict(config.edges), routes=routes,
                 on_error=dict(config.on_error), max_steps=config.max_steps, check_mutation=check_mutation,
                 memo=memo, budgets=budgets)


def _config_lines(source: str) -> dict[str, int]:
    """Dotted key path -> line of a config file (empty for a config built in memory or gone)."""
    try:
        return read_config_yaml(source)[1] if source != "<dict>" and Path(source).is_file() else {}
    except ConfigError:
        return {}


def _check_route(spec: Any, where: str, known: set[str], fail: Any) -> dict[str, Any]:
    """A route's config form, checked: ``{field, cases}`` or ``{when: [{if: condition, to: node}, ...]}``."""
    if isinstance(spec, dict):
        for key in spec:
            if key not in ROUTE_KEYS:
                raise fail(f"{where}.{key}", f"unknown key '{key}'{did_you_mean(key, ROUTE_KEYS)}")
    if isinstance(spec, dict) and "when" in spec:
        if "field" in spec or "cases" in spec:
            raise fail(where, "a route takes either 'field' + 'cases' or 'when', not both")
        rules = spec["when"]
        if not isinstance(rules, list) or not rules:
            raise fail(f"{where}.when", "'when' takes a non-empty list of {if: condition, to: node}")
        for i, rule in enumerate(rules):
            at = f"{where}.when[{i}]"
            if not isinstance(rule, dict) or set(rule) != {"if", "to"}:
                raise fail(at, f"each 'when' entry is {{if: condition, to: node}}, got {rule!r}")
            if rule["to"] not in known:
                raise fail(f"{at}.to", f"route to unknown node '{rule['to']}'{did_you_mean(str(rule['to']), known)}")
            try:
                types = {n: f.type_name for n, f in FIELDS.items()}
                check_types(parse(rule["if"], path=f"{at}.if"), types, path=f"{at}.if")
            except ConditionError as exc:
                raise fail(exc.path, exc.problem) from None
        return {"when": [{"if": r["if"], "to": r["to"]} for r in rules]}
    if not isinstance(spec, dict) or not isinstance(spec.get("cases"), dict) or not spec.get("field"):
        raise fail(where, "a route needs 'field' (a state field) and 'cases' (value -> node), or 'when' "
                   "(a list of {if: condition, to: node})")
    for value, dst in spec["cases"].items():
        if dst not in known:
            raise fail(f"{where}.cases.{value}", f"route to unknown node '{dst}'{did_you_mean(str(dst), known)}")
    return {"field": spec["field"], "cases": dict(spec["cases"])}


def _check_params(cls: Any, params: dict[str, Any], where: str, fail: Any) -> None:
    allowed = cls.Params.model_fields
    for key in params:
        if key not in allowed:
            raise fail(f"{where}.{key}", f"unknown parameter '{key}' for node type '{cls.type}'"
                       f"{did_you_mean(key, allowed)}")
    try:
        cls.Params(**params)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        msg = first["msg"]
        cause = (first.get("ctx") or {}).get("error")
        if isinstance(cause, ConditionError):  # a condition parameter (gate, filters): point inside it
            loc = ".".join(p for p in (loc, cause.path) if p).replace(".[", "[")
            msg = cause.problem
        elif first["type"] == "value_error" and isinstance(cause, ValueError):
            msg = str(cause)  # a validator's own sentence, without pydantic's "Value error, " prefix
        if first["type"] == "extra_forbidden":
            model = _nested_model(cls.Params, first["loc"][:-1])
            key = str(first["loc"][-1])
            msg = f"unknown parameter '{key}'" + (did_you_mean(key, model.model_fields) if model else "")
        raise fail(f"{where}.{loc}" if loc else where, msg) from exc


def _nested_model(model: Any, loc: tuple) -> Any:
    """The pydantic model class found at ``loc`` inside ``model`` (None when not a model)."""
    for part in loc:
        info = model.model_fields.get(str(part)) if model else None
        if info is None:
            return None
        candidates = [info.annotation, *typing.get_args(info.annotation)]
        model = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
    return model


def _string_map(raw: Any, section: str, fail: Any) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise fail(section, f"'{section}' must map a node name to the next node's name")
    out = {}
    for src, dst in raw.items():
        if not isinstance(dst, str):
            raise fail(f"{section}.{src}", f"expected the name of one node, got {dst!r}")
        out[str(src)] = dst
    return out


def _check_reachability(nodes: dict, edges: dict, routes: dict, on_error: dict,
                        dynamic: dict[str, tuple[str, ...]], fail: Any) -> None:
    succ: dict[str, set[str]] = {n: set(dynamic.get(n, ())) for n in [START, *nodes]}
    for src, dst in [*edges.items(), *on_error.items()]:
        succ[src].add(dst)
    for src, r in routes.items():
        succ[src].update(route_targets(r))
    seen = _closure(START, succ)
    if END not in seen:
        raise fail("edges", f"'{END}' cannot be reached from '{START}'; every path must finish at '{END}'")
    for name in nodes:
        if name not in seen:
            raise fail(f"nodes.{name}", f"node '{name}' is unreachable from '{START}'; connect it or remove it")
    # every reachable node must be able to reach end (no trap loops)
    pred: dict[str, set[str]] = {}
    for src, dsts in succ.items():
        for d in dsts:
            pred.setdefault(d, set()).add(src)
    alive = _closure(END, pred)
    for name in nodes:
        if name not in alive:
            raise fail(f"nodes.{name}", f"'{END}' cannot be reached from node '{name}' (a loop with no exit)")


def _closure(origin: str, links: dict[str, set[str]]) -> set[str]:
    """Every name reachable from ``origin`` through ``links`` (breadth first), origin included."""
    seen, todo = {origin}, deque([origin])
    while todo:
        for nxt in links.get(todo.popleft(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen
