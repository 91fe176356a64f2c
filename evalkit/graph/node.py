"""Nodes: the units of work in a graph, and the registry that names them for YAML.

A node reads named fields of the shared state and returns the fields it writes. It
declares both (``reads``, ``writes``) so the graph can check its wiring at load time
and the trace can record exactly what each step wrote. Parameters are a pydantic model
(``Params``) so unknown or mistyped parameters are rejected before anything runs.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict


class NodeParams(BaseModel):
    """Base of every node's parameter model: unknown keys are errors, values are typed."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Node:
    """Base class of graph nodes.

    Subclasses set ``type`` (the name used in YAML), ``reads`` and ``writes`` (state
    fields), and ``Params``; they implement ``run``. ``run(state)`` returns a dict of
    the fields it writes (a subset of ``writes``) and never mutates ``state`` or the
    objects in it. ``next(state)`` may name the next node; "" takes the graph's edges.
    ``next_targets(params)`` lists the nodes ``next`` can return, so reachability can be checked.
    """

    type: ClassVar[str] = ""
    memoize: ClassVar[bool] = True  # output depends only on params + the fields it reads (see graph.memo)
    reads: ClassVar[tuple[str, ...]] = ()
    writes: ClassVar[tuple[str, ...]] = ()
    Params: ClassVar[type[NodeParams]] = NodeParams

    def __init__(self, name: str, params: NodeParams, resources: Any = None):
        self.name = name
        self.params = params
        self.resources = resources

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def next(self, state: Mapping[str, Any]) -> str:
        return ""

    def prepare(self, questions: Sequence[str]) -> None:
        """Called once per variant before any query runs, with every question about to run.

        Batch work belongs here (encode all questions in one call, warm a cache). It must
        not change any result: a query's output is the same whether or not ``prepare`` ran.
        """

    @classmethod
    def reads_for(cls, params: NodeParams) -> tuple[str, ...]:
        """The fields this node reads with these params (default: the class's ``reads``)."""
        return cls.reads

    @classmethod
    def next_targets(cls, params: NodeParams) -> tuple[str, ...]:
        """The node names ``next()`` may return with these params (for load-time checks)."""
        return ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


NODE_TYPES: dict[str, type[Node]] = {}


def register_node(cls: type[Node]) -> type[Node]:
    """Class decorator: make a node type available to graph configs under ``cls.type``."""
    if not cls.type:
        raise TypeError(f"{cls.__name__} has no 'type' name")
    if cls.type in NODE_TYPES and NODE_TYPES[cls.type] is not cls:
        raise TypeError(f"node type '{cls.type}' registered twice")
    NODE_TYPES[cls.type] = cls
    return cls


PLUGINS_ENV = "EVALKIT_PLUGINS"


def node_types() -> dict[str, type[Node]]:
    """All registered node types: the built-in families, then the user's plugin modules.

    ``EVALKIT_PLUGINS=my_pkg.nodes,other.nodes`` names modules to import, each of which
    registers its own node types with ``@register_node``. Plugins are named by the user in
    the environment, never by a graph config (a config never causes code to run).
    """
    import importlib
    import os

    import evalkit.nodes  # noqa: F401  (registers the built-ins)

    for module in filter(None, (m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(","))):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            from evalkit.errors import EvalkitError

            raise EvalkitError(f"{PLUGINS_ENV} names '{module}', which cannot be imported ({exc}); "
                               "fix the module name or PYTHONPATH") from exc
    return NODE_TYPES
