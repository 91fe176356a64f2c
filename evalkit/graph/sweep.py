"""Parameter sweeps: one graph config file that expands into several named variants.

A config may carry a top-level ``sweep`` mapping from a dotted path inside the config
to the list of values to try::

    name: hybrid
    nodes:
      retrieve: {type: retrieve, params: {dense: {}, bm25: {}, fusion: {method: rrf}}}
    edges: {start: retrieve, retrieve: end}
    sweep:
      nodes.retrieve.params.fusion.method: [rrf, weighted]
      retrieve.top_k: [50, 100]          # short form of nodes.retrieve.params.top_k

Paths:

* a full path starts with a top-level key (``nodes``, ``chunking``, ``seed``,
  ``max_steps``, ``edges``, ``routes``, ``on_error``);
* a short path ``NODE.PARAM[.SUB...]`` starts with a node name and means
  ``nodes.NODE.params.PARAM[.SUB...]``. A first segment that is both a node name and
  a top-level key is ambiguous and refused (write the full path).

Missing mappings under a node's ``params`` (or ``chunking``) are created (``fusion`` may be left to its
defaults in the base config); anywhere else every segment but the last must exist.

Expansion is the cartesian product of the value lists in the declared order (the
first key varies slowest). Each variant is named ``NAME__label-value__label-value``
where ``label`` is the shortest trailing part of the path (without ``nodes.`` and
``params.``) that tells the sweep keys apart, e.g. ``hybrid__method-rrf__top_k-50``.
Names use only ``[A-Za-z0-9_.-]`` beyond the base name: valid folder names, shell
words without quoting, and MLflow keys (the runner puts variant names in tag keys,
where ``[``, ``=`` and ``,`` are rejected, so ``NAME[top_k=50]`` is not an option). Each variant's ``description`` gets the
assignments appended, and each is validated like any other config; an error caused
by a swept value names the sweep key, its line, the value and the variant.
"""
from __future__ import annotations

import copy
import itertools
import json
import re
from pathlib import Path
from typing import Any

from evalkit.errors import ConfigError, did_you_mean
from evalkit.graph.config import (
    TOP_LEVEL_KEYS,
    GraphConfig,
    config_from_dict,
    read_config_yaml,
)

SWEEP_KEY = "sweep"
MAX_VARIANTS = 512
_SLUG = re.compile(r"[^A-Za-z0-9_.-]+")

Variant = tuple[str, dict[str, Any]]


def load_variants(path: str | Path) -> list[GraphConfig]:
    """Read a graph config file: one ``GraphConfig`` for a plain file, one per variant for a sweep.

    Every variant is validated before any is returned; errors are ``ConfigError``
    naming the file, the line and the path (for a swept value: the sweep key).
    """
    data, lines = read_config_yaml(path)
    source = str(path)
    if not isinstance(data, dict) or SWEEP_KEY not in data:
        return [config_from_dict(data, source=source, lines=lines)]
    return [_validate(name, cfg, data, source, lines) for name, cfg in expand_sweep(data, source, lines)]


def expand_sweep(raw: dict[str, Any], source: str = "<dict>",
                 lines: dict[str, int] | None = None) -> list[Variant]:
    """Expand the ``sweep`` of a raw config dict into ``(variant name, config dict)`` pairs.

    The dicts are plain configs without ``sweep`` (not validated yet: see
    :func:`load_variants`). A dict without ``sweep`` comes back as itself, once.
    """
    lines = lines or {}

    def fail(where: str, message: str) -> ConfigError:
        return ConfigError(source, where, message, line=lines.get(where))

    if not isinstance(raw, dict):
        raise fail("", "a graph config must be a mapping with 'nodes' and 'edges'")
    base = {k: v for k, v in raw.items() if k != SWEEP_KEY}
    name = str(raw.get("name") or Path(source).stem)
    if SWEEP_KEY not in raw:
        return [(name, copy.deepcopy(base))]
    spec = raw[SWEEP_KEY]
    if not isinstance(spec, dict) or not spec:
        raise fail(SWEEP_KEY, "sweep must be a non-empty mapping of config path -> list of values, e.g. "
                   "{retrieve.top_k: [50, 100]}")
    paths: list[tuple[str, ...]] = []
    values: list[list[Any]] = []
    seen: dict[tuple[str, ...], str] = {}
    for key, options in spec.items():
        where = f"{SWEEP_KEY}.{key}"
        path = resolve_path(base, str(key), lambda msg, w=where: fail(w, msg))
        if path in seen:
            raise fail(where, f"'{key}' and '{seen[path]}' both set {'.'.join(path)}; keep one")
        seen[path] = str(key)
        if not isinstance(options, list) or not options:
            raise fail(where, f"expected a non-empty list of values, e.g. [{_show(options)}], got {_show(options)}")
        shown = [_canonical(v) for v in options]
        twice = sorted({s for s in shown if shown.count(s) > 1})
        if twice:
            raise fail(where, f"value {twice[0]} is listed twice; list each value once")
        paths.append(path)
        values.append(list(options))
    total = 1
    for v in values:
        total *= len(v)
    if total > MAX_VARIANTS:
        raise fail(SWEEP_KEY, f"the sweep expands to {total} variants, more than {MAX_VARIANTS}; split it into "
                   "several files")
    labels = short_labels(paths)
    out: list[Variant] = []
    names: dict[str, str] = {}
    for combo in itertools.product(*values):
        cfg = copy.deepcopy(base)
        for path, value in zip(paths, combo, strict=True):
            _set(cfg, path, copy.deepcopy(value))
        suffix = "__".join(f"{label}-{_slug(v)}" for label, v in zip(labels, combo, strict=True))
        vname = f"{name}__{suffix}"
        assigned = ", ".join(f"{label}={_canonical(v)}" for label, v in zip(labels, combo, strict=True))
        if vname in names:
            raise fail(SWEEP_KEY, f"values {names[vname]} and {assigned} give the same variant name '{vname}'; "
                       "use values that differ in letters or digits")
        names[vname] = assigned
        cfg["name"] = vname
        desc = str(base.get("description") or "").strip()
        cfg["description"] = f"{desc} (sweep: {assigned})" if desc else f"sweep: {assigned}"
        out.append((vname, cfg))
    return out


def resolve_path(config: dict[str, Any], key: str, fail: Any) -> tuple[str, ...]:
    """The full path (tuple of keys) a sweep key names inside ``config``; ``fail(msg)`` builds the error."""
    parts = tuple(key.split("."))
    if not key or any(not p for p in parts):
        raise fail(f"'{key}' is not a dotted path such as nodes.retrieve.params.top_k or retrieve.top_k")
    nodes: dict[str, Any] = config["nodes"] if isinstance(config.get("nodes"), dict) else {}
    head = parts[0]
    if head == SWEEP_KEY or head == "name":
        raise fail(f"'{head}' cannot be swept (variant names come from the sweep)")
    is_top, is_node = head in TOP_LEVEL_KEYS, head in nodes
    if is_top and is_node:
        raise fail(f"'{key}' is ambiguous: '{head}' is both a top-level key and a node name; write "
                   f"'{key}' as a full path ('nodes.{head}.params.{'.'.join(parts[1:])}' for the node)")
    if is_node:
        if len(parts) < 2:
            raise fail(f"'{key}' names a whole node; sweep one of its parameters, e.g. {head}.top_k")
        return ("nodes", head, "params", *parts[1:])
    if not is_top:
        raise fail(f"'{head}' is neither a top-level key nor a node name"
                   f"{did_you_mean(head, [*TOP_LEVEL_KEYS, *nodes])}")
    if head == "nodes":
        if len(parts) < 2 or parts[1] not in nodes:
            missing = parts[1] if len(parts) > 1 else ""
            raise fail(f"no node '{missing}' in this config{did_you_mean(missing, nodes)}")
        if len(parts) < 4 or parts[2] != "params":
            raise fail(f"'{key}': sweep a node's parameters (nodes.{parts[1]}.params.NAME), not its "
                       f"{'.'.join(parts[2:]) or 'whole spec'}")
    # every container before the last segment must exist, except under a node's params or chunking
    node: Any = config
    for i, part in enumerate(parts[:-1]):
        creatable = (parts[0] == "nodes" and i >= 2) or parts[0] == "chunking"
        if not isinstance(node, dict):
            raise fail(f"'{'.'.join(parts[:i])}' is not a mapping, so it has no '{part}'")
        child = node.get(part)
        if child is None:
            if part not in node and not creatable:
                raise fail(f"no key '{part}' under '{'.'.join(parts[:i]) or 'the config'}'"
                           f"{did_you_mean(part, [str(k) for k in node])}")
            child = {}
        node = child
    return parts


def short_labels(paths: list[tuple[str, ...]]) -> list[str]:
    """The shortest trailing parts of each path (``nodes`` and ``params`` dropped) that tell them apart."""
    trimmed = []
    for p in paths:
        parts = list(p)
        if parts[:1] == ["nodes"] and len(parts) > 3 and parts[2] == "params":
            parts = [parts[1], *parts[3:]]
        trimmed.append(parts)
    out = []
    for parts in trimmed:
        for n in range(1, len(parts) + 1):
            label = ".".join(parts[-n:])
            if sum(1 for other in trimmed if ".".join(other[-n:]) == label) == 1:
                break
        out.append(_SLUG.sub("_", label))
    return out


def _set(config: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = config
    for part in path[:-1]:
        if node.get(part) is None:
            node[part] = {}
        node = node[part]
    node[path[-1]] = value


def _validate(name: str, cfg: dict[str, Any], raw: dict[str, Any], source: str,
              lines: dict[str, int]) -> GraphConfig:
    """Validate one expanded variant; a failure caused by a swept value names the sweep key."""
    try:
        return config_from_dict(cfg, source=source, lines=lines)
    except ConfigError as exc:
        sweep = raw[SWEEP_KEY]
        culprit, best = None, -1
        for key in sweep:
            path = ".".join(resolve_path(raw, str(key), lambda m: ConfigError(source, "", m)))
            related = exc.where == path or exc.where.startswith(path + ".") or path.startswith(exc.where + ".")
            if related and len(path) > best:
                culprit, best = str(key), len(path)
        if culprit is None:
            raise ConfigError(source, exc.where, f"{exc.message} (in sweep variant '{name}')", line=exc.line) from exc
        value = _get(cfg, resolve_path(raw, culprit, lambda m: ConfigError(source, "", m)))
        where = f"{SWEEP_KEY}.{culprit}"
        raise ConfigError(source, where, f"value {_canonical(value)} (variant '{name}'): {exc.where}: "
                          f"{exc.message}", line=lines.get(where)) from exc


def _get(config: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = config
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _slug(value: Any) -> str:
    """A value as a name part: scalars as written, others as compact JSON; then only ``[A-Za-z0-9_.-]``."""
    text = value if isinstance(value, str) else ("true" if value is True else "false" if value is False
                                                 else _canonical(value))
    return _SLUG.sub("_", str(text)).strip("_") or "_"


def _show(value: Any) -> str:
    text = _canonical(value)
    return text if len(text) <= 60 else text[:57] + "..."
