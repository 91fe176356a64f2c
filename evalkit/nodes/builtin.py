"""Every built-in node family, imported: each registers its node types (``@register_node``) and declares
its state fields. :func:`evalkit.graph.node.node_types` imports this module, as it imports a plugin."""
from evalkit.nodes import (  # noqa: F401
    compress,
    evidence,
    external,
    generate,
    grade,
    graph_retrieve,
    guard,
    plan,
    rerank,
    retrieve,
    rewrite,
    router,
    safety,
    scheduler,
    self_check,
    sql,
)
