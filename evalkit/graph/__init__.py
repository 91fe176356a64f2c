"""The module-graph engine: state, nodes, edges, execution with full traces, YAML configs."""
from evalkit.graph.config import (
           GraphConfig,
           build_graph,
           config_from_dict,
           load_graph_config,
)
from evalkit.graph.graph import END, START, Graph, Route, RunOutcome
from evalkit.graph.node import Node, NodeParams, node_types, register_node
from evalkit.graph.state import initial_state
from evalkit.graph.sweep import expand_sweep, load_variants

__all__ = ["END", "START", "Graph", "GraphConfig", "Node", "NodeParams", "Route", "RunOutcome",
           "build_graph", "config_from_dict", "expand_sweep", "initial_state", "load_graph_config", "load_variants",
           "node_types",
           "register_node"]
