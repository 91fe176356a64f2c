"""User plugins: modules named in ``EVALKIT_PLUGINS``, imported once, that register extensions.

Every extension point of evalkit is a registry filled by a decorator or a register call in
the module that defines the extension:

| extension point | registers with | registry |
|---|---|---|
| node type | ``@register_node`` (:mod:`evalkit.graph.node`) | ``NODE_TYPES`` |
| ranking metric family | ``_register(MetricFamily(...))`` (:mod:`evalkit.metrics.registry`) | ``REGISTRY`` |
| answer / agentic / cost / tenancy metric | ``register_metrics(concern, NamedMetric(...))`` (:mod:`evalkit.metrics.catalog`) | ``NAMED`` |
| LLM backend | ``@register_backend(name, model=...)`` (:mod:`evalkit.llm.registry`) | ``BACKENDS`` |
| judge | ``@register_judge(name, calls_model=...)`` (:mod:`evalkit.judges.base`) | ``JUDGES`` |
| importer (``evalkit import <verb>``) | ``@register_importer(name)`` (:mod:`evalkit.importers.registry`) | ``IMPORTERS`` |

``EVALKIT_PLUGINS=my_pkg.nodes,my_pkg.judges`` names modules to import; each registers what
it defines with the decorators above, for any of the registries. Every registry's lookup
calls :func:`load_plugins` first, so a plugin is visible wherever a built-in is. Plugins are
named by the user in the environment, never by a config (a config never causes code to run).
"""
from __future__ import annotations

import importlib
import os

from evalkit.errors import EvalkitError

PLUGINS_ENV = "EVALKIT_PLUGINS"

_loaded: set[str] = set()


def plugin_modules() -> list[str]:
    """The module names ``EVALKIT_PLUGINS`` lists (comma-separated, blanks ignored), in order."""
    return [m for m in (s.strip() for s in os.environ.get(PLUGINS_ENV, "").split(",")) if m]


def load_plugins() -> list[str]:
    """Import every module ``EVALKIT_PLUGINS`` names (each once per process); returns their names.

    A module that cannot be imported raises :class:`~evalkit.errors.EvalkitError` naming it and
    saying what to fix.
    """
    names = plugin_modules()
    for module in names:
        if module in _loaded:
            continue
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise EvalkitError(f"{PLUGINS_ENV} names '{module}', which cannot be imported ({exc}); "
                               "fix the module name or PYTHONPATH") from exc
        _loaded.add(module)
    return names
