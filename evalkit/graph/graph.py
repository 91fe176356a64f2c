"""A graph of nodes over one shared state: nodes, default edges, conditional routes.

Three ideas only (as in LangGraph): the state (a dict whose fields the schema declares),
nodes (``evalkit.graph.node``) and edges. Every node has one default edge. A route is
data: a state field and a map from its value to the next node, or a list of conditions
(``evalkit.graph.conditions``) each naming the next node. A node's ``next(state)``
may also name the next node. Order of precedence after a node runs: ``next()`` result,
then the route, then the default edge. ``on_error`` optionally names where to go when a
node raises; without it the query stops and is marked failed. Execution starts at
``start`` and stops at ``end``.

The engine enforces each node's contract: the node sees a :class:`StateView` that fails
on an undeclared read; what it returns must be a dict holding every field it promised
(``writes``) and nothing it did not declare; writes are combined with the state by the
schema's reducers. With ``check_types`` (``EVALKIT_CHECK_STATE=1``; on in the tests) every
written value must also be of its field's declared Python type (:mod:`evalkit.graph.typecheck`).
A broken contract fails the query with a :class:`GraphError` naming the node, its type and the field. Each trace event carries the node's role, the loop
``attempt`` the state was at, the LLM work the node did (calls, tokens), and ``reused``
when the result came from another variant's identical execution (``memo``).
"""
from __future__ import annotations

import contextvars
import copy
import dataclasses
import pickle
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalkit.errors import EvalkitError
from evalkit.frozen import SCALARS
from evalkit.graph.conditions import Condition, describe, evaluate, fields, parse
from evalkit.graph.memo import Stored, WorkMemo, detached
from evalkit.graph.node import Node
from evalkit.graph.schema import FIELDS, NODE_ERRORS, Contract
from evalkit.graph.state import StateView, UndeclaredRead, compact
from evalkit.graph.typecheck import checks_on, mismatches
from evalkit.llm.usage import flat, replay, usage_delta, usage_snapshot
from evalkit.records import TraceEvent
from evalkit.redact import redact

START, END = "start", "end"


@dataclass(frozen=True)
class Route:
    """A conditional edge, as data: after its node runs, the first matching case or condition wins.

    Either ``field`` + ``cases`` (go to ``cases[state[field]]``; YAML keys such as ``true`` match
    by text) or ``when``: ``(condition, target)`` pairs tried in order (``evalkit.graph.conditions``:
    ``{field: rerank_top1, lt: 0.7}``, ``any`` / ``all`` / ``not``). No match: the default edge.
    """

    field: str = ""
    cases: Mapping[Any, str] = dataclasses.field(default_factory=dict)
    when: tuple[tuple[Condition, str], ...] = ()

    def match(self, state: Mapping[str, Any]) -> tuple[str, str] | None:
        """(target, why) of the first case or condition that holds in ``state``; None when none does."""
        if self.field:
            value = state.get(self.field)
            for case, target in self.cases.items():
                if _same(case, value):
                    return target, f"condition {self.field}={value!r}"
        for cond, target in self.when:
            if evaluate(cond, state.get):
                return target, f"condition {describe(cond, state.get)}"
        return None

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Route:
        """A route from its validated config form (``{field, cases}`` or ``{when: [{if, to}, ...]}``)."""
        when = tuple((parse(w["if"]), str(w["to"])) for w in spec.get("when") or ())
        return cls(field=str(spec.get("field") or ""), cases=dict(spec.get("cases") or {}), when=when)


def route_targets(spec: Mapping[str, Any]) -> list[str]:
    """The nodes a route (config form) can lead to."""
    return [*(spec.get("cases") or {}).values(), *(str(w["to"]) for w in spec.get("when") or ())]


def route_fields(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(path inside the route, state field) of every field a route (config form) reads."""
    out = [("field", str(spec["field"]))] if spec.get("field") else []
    for i, w in enumerate(spec.get("when") or ()):
        out += [(f"when[{i}].if", f) for f in fields(parse(w["if"]))]
    return out


@dataclass
class RunOutcome:
    """What executing a graph on one query produced."""

    state: dict[str, Any]
    trace: list[TraceEvent]
    error: dict[str, Any] | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None


class GraphError(EvalkitError):
    """A node broke its contract at run time (undeclared read or write, missing write, in-place mutation)."""


class BudgetExceeded(GraphError):
    """A node ran longer than its ``budget_s``; the graph goes on as after any node error."""

    kind = "budget_exceeded"


def run_within(node: Node[Any], view: StateView, budget_s: float | None) -> Any:
    """``node.run(view)``, given at most ``budget_s`` seconds of wall time (None: no limit).

    Python cannot stop a thread, so an overrunning node is left to finish on a daemon thread
    and its result is discarded; the query goes on at once (its ``on_error`` edge, or failed).
    """
    if budget_s is None:
        return node.run(view)
    box: dict[str, Any] = {}
    context = contextvars.copy_context()  # the query's LLM usage accounting follows the call

    def target() -> None:
        try:
            box["value"] = context.run(node.run, view)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the query's thread
            box["error"] = exc

    worker = threading.Thread(target=target, name=f"evalkit-node-{node.name}", daemon=True)
    worker.start()
    worker.join(budget_s)
    if worker.is_alive():
        raise BudgetExceeded(f"node '{node.name}' ({node.type}) ran longer than its budget_s={budget_s:g}")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def merge(state: Mapping[str, Any], wrote: Mapping[str, Any]) -> dict[str, Any]:
    """The state after a node's writes, combined field by field with the schema's reducers."""
    out = dict(state)
    for key, value in wrote.items():
        name = str(key)  # a StateField or its name: the state is keyed by plain names
        if FIELDS[name].reducer == "append":
            out[name] = [*out.get(name, []), value]
        else:
            out[name] = value
    return out


@dataclass
class Graph:
    """Nodes by name plus the edges between them. Build with ``evalkit.graph.build_graph``."""

    name: str
    nodes: dict[str, Node[Any]]
    edges: dict[str, str]
    routes: dict[str, Route] = field(default_factory=dict)
    on_error: dict[str, str] = field(default_factory=dict)
    max_steps: int = 50
    check_mutation: bool = False
    memo: WorkMemo | None = None  # shared by the variants of one invocation (evalkit.graph.memo)
    budgets: dict[str, float] = field(default_factory=dict)  # node name -> wall-clock budget_s
    check_types: bool = field(default_factory=checks_on)  # writes of the declared types (EVALKIT_CHECK_STATE)
    _contracts: dict[str, Contract] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._contracts = {n: type(node).contract(node.params) for n, node in self.nodes.items()}

    def prepare(self, questions: Sequence[str]) -> None:
        """Let every node batch its work for these questions (``Node.prepare``); changes no result."""
        for node in self.nodes.values():
            node.prepare(questions)

    def run(self, initial: Mapping[str, Any]) -> RunOutcome:
        """Execute the graph on a deep copy of ``initial``; never raises for node errors."""
        state: dict[str, Any] = _deep_copied(dict(initial))
        if self.check_types:
            _check_types("the query's initial state holds", {k: v for k, v in state.items() if k in FIELDS})
        trace: list[TraceEvent] = []
        current = self.edges[START]
        for step in range(self.max_steps):
            if current == END:
                return RunOutcome(state, trace)
            node = self.nodes[current]
            contract = self._contracts[current]
            started = time.time()
            t0 = time.perf_counter()
            error: dict[str, str] | None = None
            wrote: dict[str, Any] = {}
            nxt: str | None = None
            llm_before = usage_snapshot()
            identity = getattr(node, "identity", None) if self.memo is not None and node.memoize else None
            reused = self.memo.lookup(identity, state) if identity is not None and self.memo is not None else None
            view = StateView(state, contract.all_reads)
            try:
                if reused is not None:
                    wrote = detached(reused.wrote)  # this query's own containers: the memo's copy stays as stored
                    replay(reused.usage)
                else:
                    before = _fingerprint(state) if self.check_mutation else None
                    updates: Any = None
                    try:
                        updates = run_within(node, view, self.budgets.get(current))
                    except UndeclaredRead:
                        pass
                    if view.violation is not None:
                        raise GraphError(f"node '{node.name}' ({node.type}) read state field '{view.violation}', "
                                         f"which it does not declare; declared reads: {sorted(contract.all_reads)}. "
                                         "Add it to the node's reads (or optional_reads / contract())")
                    self._check_contract(node, contract, state, updates, before)
                    if self.check_types:
                        _check_types(f"node '{node.name}' ({node.type}) wrote", updates)
                    changed = view.changed_in_place()
                    if changed is not None:
                        raise GraphError(f"node '{node.name}' ({node.type}) changed state field '{changed}' in place; "
                                         "return a new value instead (e.g. sorted(hits) rather than hits.sort())")
                    wrote = updates
                nxt, reason = self._choose_edge(node, merge(state, wrote))
            except Exception as exc:  # a failing node must not kill the run
                error = {"type": type(exc).__name__, "message": redact(str(exc))}
                if isinstance(getattr(exc, "kind", None), str):  # LLMError and friends: timeout, rate_limited...
                    error["kind"] = exc.kind  # type: ignore[attr-defined]
            llm_used = usage_delta(llm_before)
            elapsed = (time.perf_counter() - t0) * 1000.0
            if error is None and reused is None and identity is not None and self.memo is not None:
                self.memo.store(identity, view.read, Stored(detached(wrote), llm_used, elapsed))
            # a reused result reports the duration of the execution it came from: per-query latency
            # describes the pipeline, not which variant happened to run first (elapsed_ms is the real time)
            duration = reused.duration_ms if reused is not None else elapsed
            if error is None:
                state = merge(state, wrote)
            elif current in self.on_error:
                nxt, reason = self.on_error[current], "on_error"
                state = merge(state, {NODE_ERRORS: {"node": current, **error}})
            else:
                nxt, reason = None, "error"
            trace.append(TraceEvent(step=step, node=current, type=node.type, started_at=started,
                                    duration_ms=duration, wrote=compact(wrote), edge=nxt,
                                    edge_reason=reason, error=error, attempt=state.get("attempt"),
                                    llm=flat(llm_used), reused=reused is not None, elapsed_ms=elapsed,
                                    role=node.role.value))
            if nxt is None:
                return RunOutcome(state, trace, {"node": current, "step": step, **(error or {})})
            current = nxt
        if current == END:
            return RunOutcome(state, trace)
        err = {"node": current, "step": self.max_steps, "type": "MaxStepsExceeded",
               "message": f"stopped after max_steps={self.max_steps} without reaching '{END}'"}
        return RunOutcome(state, trace, err)

    def _choose_edge(self, node: Node[Any], state: Mapping[str, Any]) -> tuple[str, str]:
        chosen = node.next(state)
        if chosen:
            if chosen != END and chosen not in self.nodes:
                raise GraphError(f"node '{node.name}' next() returned unknown node '{chosen}'")
            return chosen, "next()"
        route = self.routes.get(node.name)
        matched = route.match(state) if route is not None else None
        return matched if matched is not None else (self.edges[node.name], "default")

    @staticmethod
    def _check_contract(node: Node[Any], contract: Contract, state: Mapping[str, Any], updates: Any,
                        before: bytes | None) -> None:
        where = f"node '{node.name}' ({node.type})"
        if before is not None and _fingerprint(state) != before:
            raise GraphError(f"{where} mutated the state in place; return new values instead")
        if not isinstance(updates, dict):
            raise GraphError(f"{where} returned {type(updates).__name__}, expected a dict of state fields")
        undeclared = sorted(set(updates) - contract.all_writes)
        if undeclared:
            raise GraphError(f"{where} wrote undeclared field(s) {undeclared}; declared writes: "
                             f"{sorted(contract.all_writes)}")
        missing = sorted(contract.writes - set(updates))
        if missing:
            raise GraphError(f"{where} did not write {missing}, which it declares it always writes "
                             "(move them to optional_writes if they are sometimes absent)")


def _check_types(who: str, wrote: Mapping[str, Any]) -> None:
    """``GraphError`` when a written value is not of its field's declared type (``EVALKIT_CHECK_STATE``)."""
    wrong = mismatches(wrote, {str(k): (FIELDS[str(k)].type_, FIELDS[str(k)].reducer == "append") for k in wrote})
    if wrong:
        raise GraphError(f"{who} a value of the wrong type: {'; '.join(wrong)} "
                         "(the state schema, evalkit.graph.schema, declares each field's type)")


def _same(case: Any, value: Any) -> bool:
    """Route case matching: equal values, or equal text for YAML keys like 'true'/'1'."""
    if case == value and type(case) is type(value):
        return True
    return str(case).lower() == str(value).lower()


def _deep_copied(value: Any) -> Any:
    """``copy.deepcopy(value)``, made by hand for the plain data a query starts from (strings, numbers,
    lists and dicts: ``initial_state``), which deepcopy's bookkeeping made ~4x slower; any other object
    inside is deep-copied by ``copy.deepcopy``. (Two references to one list become two lists.)"""
    kind = type(value)
    if kind in SCALARS:
        return value
    if kind is dict:
        return {k: _deep_copied(v) for k, v in value.items()}
    if kind is list:
        return [_deep_copied(v) for v in value]
    if kind is tuple:
        return tuple([_deep_copied(v) for v in value])
    return copy.deepcopy(value)


def _fingerprint(state: Mapping[str, Any]) -> bytes:
    return pickle.dumps(sorted(state.items(), key=lambda kv: kv[0]), protocol=4)
