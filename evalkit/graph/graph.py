"""A graph of nodes over one shared state: nodes, default edges, conditional routes.

Three ideas only (as in LangGraph): the state (a dict), nodes (``evalkit.graph.node``)
and edges. Every node has one default edge. A route is data: a state field and a map
from its value to the next node. A node's ``next(state)`` may also name the next node.
Order of precedence after a node runs: ``next()`` result, then the route, then the
default edge. ``on_error`` optionally names where to go when a node raises; without it
the query stops and is marked failed. Execution starts at ``start`` and stops at ``end``.
Each trace event also carries the loop ``attempt`` the state was at (reflection loops
count attempts in ``state["attempt"]``), the LLM work the node did (calls, tokens), and
``reused`` when the result came from another variant's identical execution (``memo``).
"""
from __future__ import annotations

import copy
import pickle
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalkit.graph.node import Node
from evalkit.graph.state import compact
from evalkit.llm.usage import flat, replay, usage_delta, usage_snapshot
from evalkit.records import TraceEvent

START, END = "start", "end"


@dataclass(frozen=True)
class Route:
    """A conditional edge: after ``node`` runs, go to ``cases[state[field]]`` if present."""

    field: str
    cases: Mapping[Any, str]


@dataclass
class RunOutcome:
    """What executing a graph on one query produced."""

    state: dict[str, Any]
    trace: list[TraceEvent]
    error: dict[str, Any] | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None


class GraphError(Exception):
    """A node broke the graph's contract at run time (undeclared write, in-place mutation)."""


@dataclass
class Graph:
    """Nodes by name plus the edges between them. Build with ``evalkit.graph.load_graph``."""

    name: str
    nodes: dict[str, Node]
    edges: dict[str, str]
    routes: dict[str, Route] = field(default_factory=dict)
    on_error: dict[str, str] = field(default_factory=dict)
    max_steps: int = 50
    check_mutation: bool = False
    memo: Any = None  # a NodeMemo shared by the variants of one invocation (evalkit.graph.memo)

    def prepare(self, questions: Sequence[str]) -> None:
        """Let every node batch its work for these questions (``Node.prepare``); changes no result."""
        for node in self.nodes.values():
            node.prepare(questions)

    def run(self, initial: Mapping[str, Any]) -> RunOutcome:
        """Execute the graph on a deep copy of ``initial``; never raises for node errors."""
        state: dict[str, Any] = copy.deepcopy(dict(initial))
        trace: list[TraceEvent] = []
        current = self.edges[START]
        for step in range(self.max_steps):
            if current == END:
                return RunOutcome(state, trace)
            node = self.nodes[current]
            started = time.time()
            t0 = time.perf_counter()
            error: dict[str, str] | None = None
            wrote: dict[str, Any] = {}
            llm_before = usage_snapshot()
            memo_key = self.memo.key(node, state) if self.memo is not None else None
            reused = self.memo.get(memo_key) if memo_key is not None else None
            try:
                if reused is not None:
                    wrote = reused[0]
                    replay(reused[1])
                else:
                    before = _fingerprint(state) if self.check_mutation else None
                    updates = node.run(state)
                    self._check_contract(node, state, updates, before)
                    wrote = updates
                nxt, reason = self._choose_edge(node, {**state, **wrote})
            except Exception as exc:  # a failing node must not kill the run
                error = {"type": type(exc).__name__, "message": str(exc)}
            llm_used = usage_delta(llm_before)
            if error is None and reused is None and memo_key is not None:
                self.memo.put(memo_key, wrote, llm_used, (time.perf_counter() - t0) * 1000.0)
            # a reused result reports the duration of the execution it came from: per-query latency
            # describes the pipeline, not which variant happened to run first
            elapsed = (time.perf_counter() - t0) * 1000.0
            duration = reused[2] if reused is not None else elapsed
            if error is None:
                state = {**state, **wrote}
            elif current in self.on_error:
                nxt, reason = self.on_error[current], "on_error"
                state = {**state, "node_errors": [*state.get("node_errors", []), {"node": current, **error}]}
            else:
                nxt, reason = None, "error"
            trace.append(TraceEvent(step=step, node=current, type=node.type, started_at=started,
                                    duration_ms=duration, wrote=compact(wrote), edge=nxt,
                                    edge_reason=reason, error=error, attempt=state.get("attempt"),
                                    llm=flat(llm_used), reused=reused is not None, elapsed_ms=elapsed))
            if nxt is None:
                return RunOutcome(state, trace, {"node": current, "step": step, **(error or {})})
            current = nxt
        if current == END:
            return RunOutcome(state, trace)
        err = {"node": current, "step": self.max_steps, "type": "MaxStepsExceeded",
               "message": f"stopped after max_steps={self.max_steps} without reaching '{END}'"}
        return RunOutcome(state, trace, err)

    def _choose_edge(self, node: Node, state: Mapping[str, Any]) -> tuple[str, str]:
        chosen = node.next(state)
        if chosen:
            if chosen != END and chosen not in self.nodes:
                raise GraphError(f"node '{node.name}' next() returned unknown node '{chosen}'")
            return chosen, "next()"
        route = self.routes.get(node.name)
        if route is not None:
            value = state.get(route.field)
            for case, target in route.cases.items():
                if _same(case, value):
                    return target, f"condition {route.field}={value!r}"
        return self.edges[node.name], "default"

    @staticmethod
    def _check_contract(node: Node, state: Mapping[str, Any], updates: Any, before: bytes | None) -> None:
        if not isinstance(updates, dict):
            raise GraphError(f"node '{node.name}' returned {type(updates).__name__}, expected a dict of state fields")
        undeclared = sorted(set(updates) - set(node.writes))
        if undeclared:
            raise GraphError(f"node '{node.name}' ({node.type}) wrote undeclared field(s) {undeclared}; "
                             f"declared writes: {list(node.writes)}")
        if before is not None and _fingerprint(state) != before:
            raise GraphError(f"node '{node.name}' ({node.type}) mutated the state in place; "
                             "return new values instead")


def _same(case: Any, value: Any) -> bool:
    """Route case matching: equal values, or equal text for YAML keys like 'true'/'1'."""
    if case == value and type(case) is type(value):
        return True
    return str(case).lower() == str(value).lower()


def _fingerprint(state: Mapping[str, Any]) -> bytes:
    return pickle.dumps(sorted(state.items(), key=lambda kv: kv[0]), protocol=4)
