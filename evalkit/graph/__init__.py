"""The module-graph engine: state, nodes, edges, execution with full traces, YAML configs.

Importing this package is cheap: each name below loads its module on first use (``config``
brings pydantic and the LLM client), so a reader of finished traces (``evalkit.graph.events``,
``evalkit.graph.schema``) or ``evalkit score --run`` loads none of the engine.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit.lazy import lazy_exports

if TYPE_CHECKING:
    from evalkit.graph.config import GraphConfig, build_graph, config_from_dict, load_graph_config
    from evalkit.graph.graph import END, START, Graph, Route, RunOutcome
    from evalkit.graph.node import Node, NodeParams, node_types, register_node
    from evalkit.graph.state import initial_state
    from evalkit.graph.sweep import expand_sweep, load_variants

_EXPORTS = {**dict.fromkeys(("GraphConfig", "build_graph", "config_from_dict", "load_graph_config"), "evalkit.graph.config"),
            **dict.fromkeys(("END", "START", "Graph", "Route", "RunOutcome"), "evalkit.graph.graph"),
            **dict.fromkeys(("Node", "NodeParams", "node_types", "register_node"), "evalkit.graph.node"),
            "initial_state": "evalkit.graph.state",
            **dict.fromkeys(("expand_sweep", "load_variants"), "evalkit.graph.sweep")}

__all__ = ["END", "Graph", "GraphConfig", "Node", "NodeParams", "Route", "RunOutcome", "START",
           "build_graph", "config_from_dict", "expand_sweep", "initial_state", "load_graph_config",
           "load_variants", "node_types", "register_node"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
