"""Nodes: the units of work in a graph, and the registry that names them for YAML.

A node reads named fields of the shared state and returns the fields it writes. It
declares both against the state schema (:mod:`evalkit.graph.schema`):

- ``reads``: fields it needs; config loading checks that something writes each of them
  upstream on every path, and the engine fails the query if one is absent;
- ``optional_reads``: fields it reads when present (``reflection`` on a retry);
- ``writes``: fields it writes on every successful run (checked by the engine);
- ``optional_writes``: fields it writes only sometimes (``llm_fallback`` after a failure).

Declarations that depend on parameters (``evidence_from``, ``fuse_with``) come from
``contract(params)``. At run time a node sees a read-only view of the state that fails on
any field it did not declare and records what it read: work sharing
(:mod:`evalkit.graph.memo`) is keyed by those recorded reads, so sharing can never change a
number. A node class declares its ``role`` (:class:`evalkit.graph.schema.Role`); it must
write the fields its role produces. Parameters are a pydantic model (``Params``), so
unknown or mistyped parameters are rejected before anything runs; ``Node`` is generic
over it, so ``self.params.top_k`` type-checks.

A new node type is one module: a ``Params`` model, a class with ``type``, ``role``,
``reads``/``writes`` and ``run``, and ``@register_node`` (see the example in docs/concepts.md).
"""
from __future__ import annotations

import builtins
import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from evalkit.graph.memo import WorkMemo, part_identity
from evalkit.graph.schema import (
    ENGINE_FIELDS,
    FIELDS,
    ROLE_FIELDS,
    Contract,
    Role,
    check_fields,
)
from evalkit.llm.client import LLMClient
from evalkit.plugins import load_plugins

T = TypeVar("T")


class NodeParams(BaseModel):
    """Base of every node's parameter model: unknown keys are errors, values are typed."""

    model_config = ConfigDict(extra="forbid", frozen=True)


P = TypeVar("P", bound=NodeParams)


class Node(Generic[P]):
    """Base class of graph nodes (see the module docstring for the contract).

    ``run(state)`` returns a dict of the fields it writes and never mutates ``state`` or the
    objects in it. ``next(state)`` may name the next node; "" takes the graph's edges.
    ``next_targets(params)`` lists the nodes ``next`` can return, so reachability can be
    checked. ``memoize = False`` for nodes whose output is not a function of their params
    and reads (a live external service). ``external = True`` for nodes whose outputs come
    from the user's own system (evalkit sees none of the model calls made there).
    """

    type: ClassVar[str] = ""
    role: ClassVar[Role] = Role.OTHER
    memoize: ClassVar[bool] = True
    external: ClassVar[bool] = False
    reads: ClassVar[tuple[str, ...]] = ()
    optional_reads: ClassVar[tuple[str, ...]] = ()
    writes: ClassVar[tuple[str, ...]] = ()
    optional_writes: ClassVar[tuple[str, ...]] = ()
    Params: ClassVar[builtins.type[NodeParams]] = NodeParams

    def __init__(self, name: str, params: P, resources: Any = None):
        self.name = name
        self.params: P = params
        self.resources = resources
        self.context: dict[str, Any] = {}  # the variant context that changes outputs (chunking, seed)
        self.work: WorkMemo | None = None  # shared work across variants (set by build_graph)
        self.identity: str | None = None  # type + params + context + fingerprint (set by build_graph)
        self._parts: list[tuple[dict[str, Any], tuple[str, ...]]] | None = None  # shared_parts(params), once
        self._part_ids: list[tuple[Any, dict[str, Any], str]] = []  # (part, context, identity) seen by shared

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def next(self, state: Mapping[str, Any]) -> str:
        return ""

    def prepare(self, questions: Sequence[str]) -> None:
        """Called once per variant before any query runs, with every question about to run.

        Batch work belongs here (encode all questions in one call, warm a cache). It must
        not change any result: a query's output is the same whether or not ``prepare`` ran.
        """

    def llm_client(self, spec: Any, purpose: str) -> Any:
        """The ``LLMClient`` for ``spec``: shared through the resources (one per spec and purpose), or
        a client of its own for a node built without resources (a test, a notebook)."""
        if self.resources is not None and hasattr(self.resources, "llm"):
            return self.resources.llm(spec, purpose)
        return LLMClient(spec, None, purpose=purpose)

    @classmethod
    def contract(cls, params: Any) -> Contract:
        """What this node reads and writes with these params (default: the class declarations)."""
        return Contract(frozenset(cls.reads), frozenset(cls.optional_reads), frozenset(cls.writes),
                        frozenset(cls.optional_writes))

    @classmethod
    def next_targets(cls, params: Any) -> tuple[str, ...]:
        """The node names ``next()`` may return with these params (for load-time checks)."""
        return ()

    def fingerprint(self) -> dict[str, Any]:
        """What besides params and context determines this node's output (a guard's calibrated threshold)."""
        return {}

    def resume_fingerprint(self) -> dict[str, Any]:
        """What ``--resume`` must find unchanged besides the config's text before it keeps finished queries:
        :meth:`fingerprint` (a calibration file's threshold), unless a node overrides it."""
        return self.fingerprint()

    @classmethod
    def shared_parts(cls, params: Any) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
        """Sub-computations other variants may share: (part description, state fields it depends on).

        ``run`` computes each through :meth:`shared` with the same description, so the
        ``--dry-run`` estimate and the real sharing come from the same declarations.
        """
        return []

    def parts(self) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
        """``shared_parts(self.params)``, computed once per node (params are frozen): pass these
        descriptions to :meth:`shared` and their identities are computed once too."""
        if self._parts is None:
            self._parts = self.shared_parts(self.params)
        return self._parts

    def part_identity(self, part: Mapping[str, Any]) -> str:
        """``memo.part_identity(part, self.context)``, remembered for the descriptions of :meth:`parts`.

        A remembered identity is used only for the very same description object (never edited:
        nodes treat their parts as read-only) in an equal context; any other part is hashed anew.
        """
        known = self._part_ids
        for seen, context, identity in known:
            if seen is part and context == self.context:
                return identity
        identity = part_identity(part, self.context)
        if any(part is p for p, _ in self.parts()):
            known[:] = [k for k in known if k[0] is not part]
            known.append((part, dict(self.context), identity))
        return identity

    def shared(self, part: Mapping[str, Any], inputs: Any, compute: Callable[[], T]) -> T:
        """``compute()``, done once per (part, inputs) for all variants of an invocation (when sharing is on)."""
        if self.work is None:
            return compute()
        return self.work.shared(self.part_identity(part), inputs, compute)

    def has_shared(self, part: Mapping[str, Any], inputs: Any) -> bool:
        """Whether :meth:`shared` would reuse a value (another variant computed it); counts nothing."""
        if self.work is None:
            return False
        return self.work.has(self.part_identity(part), inputs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


NODE_TYPES: dict[str, type[Node[Any]]] = {}

_N = TypeVar("_N", bound=type[Node[Any]])


def register_node(cls: _N) -> _N:
    """Class decorator: make a node type available to graph configs under ``cls.type``.

    Checks the declarations against the state schema: every field is declared, no node
    writes a field only the query's start may set, and the node writes its role's fields.
    """
    if not cls.type:
        raise TypeError(f"{cls.__name__} has no 'type' name")
    if cls.type in NODE_TYPES and NODE_TYPES[cls.type] is not cls:
        raise TypeError(f"node type '{cls.type}' registered twice")
    owner = f"node type '{cls.type}'"
    for what, fields in (("reads", cls.reads), ("optionally reads", cls.optional_reads),
                         ("writes", cls.writes), ("optionally writes", cls.optional_writes)):
        check_fields(owner, fields, what)
    check_writes(owner, [*cls.writes, *cls.optional_writes])
    missing = [f for f in ROLE_FIELDS[cls.role] if f not in cls.writes]
    if missing:
        raise TypeError(f"{owner} has role '{cls.role.value}' but does not declare writing {missing}")
    NODE_TYPES[cls.type] = cls
    return cls


def check_writes(owner: str, fields: Sequence[str]) -> None:
    """``ValueError`` when a node would write a field that only the query's start (or the engine) sets."""
    for f in fields:
        if FIELDS[f].reducer == "initial":
            raise ValueError(f"{owner} writes '{f}', which is set when the query starts; no node may write it")
        if f in ENGINE_FIELDS:
            raise ValueError(f"{owner} writes '{f}', which only the engine writes")


PLUGINS_ENV = "EVALKIT_PLUGINS"
BUILTIN_NODES = "evalkit.nodes.builtin"
"""The package of the built-in node families, loaded the way a plugin is (by name): the engine
runs any registered node and imports none (docs/concepts.md, Layers)."""


def node_types() -> dict[str, type[Node[Any]]]:
    """All registered node types: the built-in families, then the user's plugin modules.

    ``EVALKIT_PLUGINS=my_pkg.nodes,other.nodes`` names modules to import, each of which
    registers its own node types with ``@register_node`` (:mod:`evalkit.plugins`). Plugins are
    named by the user in the environment, never by a graph config (a config never causes code to run).
    """
    importlib.import_module(BUILTIN_NODES)  # registers the built-ins
    load_plugins()
    return NODE_TYPES
