"""Load-time checks of what flows through a graph: every read is written upstream on every path.

A node's required reads (``Node.contract(params).reads``) must hold a value whenever the
node runs. That is true when the field is set at the query's start, or when on **every**
path from ``start`` to the node some earlier node writes it for sure (its ``writes``, not
its ``optional_writes``; a node left through its ``on_error`` edge wrote nothing). The
check searches, for each required read, a path on which nothing writes the field; if it
finds one, the config is refused with that path in the message, naming the file, line and
field, instead of a run in which every query fails.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from evalkit.errors import ConfigError, did_you_mean
from evalkit.graph.graph import route_fields, route_targets
from evalkit.graph.node import check_writes
from evalkit.graph.schema import FIELDS, INITIAL_FIELDS, Contract, check_fields

START, END = "start", "end"
Fail = Callable[[str, str], ConfigError]


def contracts_of(nodes: Mapping[str, Mapping[str, Any]], types: Mapping[str, Any], fail: Fail) -> dict[str, Contract]:
    """Each node's contract with its params; a field the schema does not declare is a config error."""
    out: dict[str, Contract] = {}
    for name, spec in nodes.items():
        cls = types[spec["type"]]
        contract = cls.contract(cls.Params(**spec["params"]))
        try:
            for what, fields in (("reads", contract.all_reads), ("writes", contract.all_writes)):
                check_fields(f"node '{name}' ({spec['type']})", sorted(fields), what)
            check_writes(f"node '{name}' ({spec['type']})", sorted(contract.all_writes))
        except ValueError as exc:
            raise fail(f"nodes.{name}.params", str(exc)) from None
        out[name] = contract
    return out


def check_dataflow(nodes: Mapping[str, Mapping[str, Any]], contracts: Mapping[str, Contract],
                   edges: Mapping[str, str], routes: Mapping[str, Mapping[str, Any]], on_error: Mapping[str, str],
                   dynamic: Mapping[str, tuple[str, ...]], fail: Fail) -> None:
    """Refuse reads that some path leaves unwritten, and routes on fields nothing writes."""
    normal: dict[str, set[str]] = {n: set(dynamic.get(n, ())) for n in [START, *nodes]}
    for src, dst in edges.items():
        normal[src].add(dst)
    for src, r in routes.items():
        normal[src].update(route_targets(r))
    failing: dict[str, set[str]] = {src: {dst} for src, dst in on_error.items()}
    initial = {str(f) for f in INITIAL_FIELDS}
    written = {f for c in contracts.values() for f in c.all_writes}
    for src, r in routes.items():
        for where, f in route_fields(r):
            if f not in written and f not in initial:
                raise fail(f"routes.{src}.{where}", f"no node writes state field '{f}'"
                           f"{did_you_mean(f, sorted(written | initial))}")
    for name, contract in contracts.items():
        for f in sorted(contract.reads - initial):
            path = _path_without(f, name, contracts, normal, failing)
            if path is None:
                continue
            writers = sorted(n for n, c in contracts.items() if f in c.writes and n != name)
            hint = (f"nodes that write it ({', '.join(writers)}) are not on this path" if writers else
                    f"no node in this graph writes it; add one that does ({FIELDS[f].meaning})")
            raise fail(f"nodes.{name}", f"node '{name}' ({nodes[name]['type']}) reads state field '{f}', but on "
                       f"the path {' -> '.join(path)} nothing writes it before '{name}': {hint}")


def _path_without(field: str, target: str, contracts: Mapping[str, Contract], normal: Mapping[str, set[str]],
                  failing: Mapping[str, set[str]]) -> list[str] | None:
    """A path start -> ... -> target on which no node surely writes ``field`` (None if there is none)."""
    parent: dict[str, str | None] = {START: None}
    todo = deque([START])
    while todo:
        node = todo.popleft()
        if node == target:
            path = []
            cur: str | None = node
            while cur is not None:
                path.append(cur)
                cur = parent[cur]
            return path[::-1]
        writes = node != START and field in contracts[node].writes
        nexts = set(failing.get(node, set())) | (set() if writes else set(normal.get(node, set())))
        for nxt in sorted(nexts):
            if nxt != END and nxt not in parent:
                parent[nxt] = node
                todo.append(nxt)
    return None
