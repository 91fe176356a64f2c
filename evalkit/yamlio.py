"""The one YAML reader of evalkit: safe, strict about duplicate keys, and aware of line numbers.

Every YAML file evalkit reads (graph configs and sweeps, ``--judge-llm`` LLM specs, the
``config.yaml`` artifact of a finished run) goes through :func:`read_yaml` or
:func:`parse_yaml`:

* **safe**: ``yaml.SafeLoader`` (its libyaml twin ``CSafeLoader`` when PyYAML has it; an invalid
  file is re-read by the pure-Python one, so errors read as they always have), so a file never
  constructs Python objects or runs code;
* **no silent merges**: PyYAML keeps the *last* of two equal keys in a mapping, so two
  ``retrieve:`` nodes silently become one. Here a repeated key is an error naming both
  lines (``a.yaml:9: nodes.retrieve: key 'retrieve' appears twice, on lines 4 and 9``).
  Keys are compared as YAML reads them, so ``true:`` and ``True:`` (both the boolean
  true) are the same key. A ``<<:`` merge key may override what it merges, as YAML
  intends;
* **line numbers**: it returns, beside the data, a map from each dotted key path
  (``nodes.rerank.params.top_k``) to the 1-based line of that key, which errors quote.

Errors are :class:`~evalkit.errors.LocatedError` subclasses chosen by the caller
(``ConfigError`` for graph configs), so each command reports them as it reports any
other error in that kind of file.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from evalkit.errors import LocatedError

__all__ = ["YamlError", "parse_yaml", "read_yaml"]

_MERGE_TAG = "tag:yaml.org,2002:merge"


class YamlError(LocatedError):
    """A YAML file that cannot be read: not valid YAML, or a key given twice in one mapping."""


def read_yaml(path: str | Path, *, error: type[LocatedError] = YamlError,
              what: str = "YAML file") -> tuple[Any, dict[str, int]]:
    """Read ``path`` with :func:`parse_yaml`; an unreadable file raises ``error`` naming it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise error(str(path), "", f"cannot read {what}: not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise error(str(path), "", f"cannot read {what} ({exc.strerror})") from exc
    return parse_yaml(text, str(path), error=error)


def parse_yaml(text: str, source: str = "<string>", *,
               error: type[LocatedError] = YamlError) -> tuple[Any, dict[str, int]]:
    """Parse one YAML document safely: ``(data, {dotted key path: line})``.

    Raises ``error`` (a ``LocatedError``) for invalid YAML (with the line of the problem)
    and for a key that appears twice in one mapping (with both lines).
    """
    if _FAST is not None:
        try:
            return _parse(_FAST, text, source, error)
        except yaml.YAMLError:
            pass  # the pure-Python loader below reports it, in its words and with its line, as always
    try:
        return _parse(yaml.SafeLoader, text, source, error)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise error(source, "", f"not valid YAML: {exc}", line=line) from exc


# libyaml's safe loader, when PyYAML was built with it: the same nodes, marks and constructor as
# yaml.SafeLoader, parsed in C (a graph config: 1.7 -> 0.2 ms; a sweep reads one per variant)
_FAST: type[yaml.SafeLoader] | None = getattr(yaml, "CSafeLoader", None)


MAX_ALIASES = 1_000
"""Most alias uses (``*name``) one YAML file may hold; a graph config or sweep uses a handful."""
MAX_EXPANDED_NODES = 100_000
"""Most nodes a YAML file may stand for once its aliases are expanded (a big sweep is a few thousand)."""


def _parse(loader_class: Any, text: str, source: str, error: type[LocatedError]) -> tuple[Any, dict[str, int]]:
    loader = loader_class(text)
    try:
        root = loader.get_single_node()
        lines: dict[str, int] = {}
        if root is not None:
            _check_aliases(root, source, error)  # before anything walks or builds the expanded tree
            _walk(loader, root, "", lines, source, error)
        data = loader.construct_document(root) if root is not None else None
    finally:
        loader.dispose()
    return data, lines


def _check_aliases(root: yaml.Node, source: str, error: type[LocatedError]) -> None:
    """Refuse an alias bomb: too many alias uses, too big a tree once expanded, or an alias inside itself.

    An alias is the same node object reached twice, so the expanded size is counted over
    the node graph without expanding it (each node once, its size remembered): 9 levels of
    9 aliases, 387 million nodes expanded, are counted in 81 steps.
    """
    size: dict[int, int] = {}
    open_: set[int] = set()
    aliases = 0

    def fail(node: yaml.Node, message: str) -> LocatedError:
        return error(source, "", f"{message}; YAML aliases (*name) are limited to {MAX_ALIASES:,} uses and "
                     f"{MAX_EXPANDED_NODES:,} nodes once expanded: write the repeated part out, or split the file",
                     line=node.start_mark.line + 1)

    def count(node: yaml.Node, parent: yaml.Node) -> int:
        """Nodes under ``node`` once expanded; errors point at ``parent``, where the alias is used."""
        nonlocal aliases
        key = id(node)
        if key in size:
            aliases += 1
            if aliases > MAX_ALIASES:
                raise fail(parent, f"more than {MAX_ALIASES:,} alias uses")
            return size[key]
        if key in open_:
            raise fail(parent, "an alias refers to a node that contains it (a recursive alias)")
        open_.add(key)
        children = [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else \
            list(node.value) if isinstance(node, yaml.SequenceNode) else []
        total = 1
        for child in children:
            total += count(child, node)
            if total > MAX_EXPANDED_NODES:
                raise fail(node, f"this document expands to more than {MAX_EXPANDED_NODES:,} nodes (an alias bomb?)")
        open_.discard(key)
        size[key] = total
        return total

    count(root, root)


def _walk(loader: yaml.SafeLoader, node: yaml.Node, prefix: str, lines: dict[str, int], source: str,
          error: type[LocatedError]) -> None:
    """Record the line of every key path and refuse a key repeated within one mapping."""
    if isinstance(node, yaml.SequenceNode):  # list items by index ('routes.x.when[0].if') and, first, without
        for i, item in enumerate(node.value):
            lines.setdefault(f"{prefix}[{i}]", item.start_mark.line + 1)
            _walk(loader, item, f"{prefix}[{i}]", lines, source, error)
            _walk_lines(item, prefix, lines)
        return
    if not isinstance(node, yaml.MappingNode):
        return
    seen: dict[Any, int] = {}
    merged = [value for key, value in node.value if key.tag == _MERGE_TAG]
    for key_node, value_node in node.value:
        if key_node.tag == _MERGE_TAG:
            continue
        line = key_node.start_mark.line + 1
        path = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
        key = _key(loader, key_node)
        if key in seen:
            raise error(source, path, f"key '{key_node.value}' appears twice in one mapping, on lines {seen[key]} "
                        f"and {line}; YAML would silently keep only the second: merge them or rename one",
                        line=line)
        seen[key] = line
        lines.setdefault(path, line)
        _walk(loader, value_node, path, lines, source, error)
    for value_node in merged:  # keys merged in by `<<:` (explicit keys keep their own lines)
        _walk(loader, value_node, prefix, lines, source, error)


def _walk_lines(node: yaml.Node, prefix: str, lines: dict[str, int]) -> None:
    """Lines of the key paths under ``node`` without list indexes (``rules.keywords``), first occurrence kept."""
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _walk_lines(item, prefix, lines)
    elif isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            path = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
            lines.setdefault(path, key_node.start_mark.line + 1)
            _walk_lines(value_node, path, lines)


def _key(loader: yaml.SafeLoader, key_node: yaml.Node) -> Any:
    """A mapping key as YAML reads it (``true`` and ``True`` are one key), hashable."""
    if isinstance(key_node, yaml.ScalarNode):
        value = loader.construct_object(key_node)
        try:
            hash(value)
        except TypeError:
            return ("unhashable", key_node.value)
        return value
    return ("node", yaml.serialize(key_node))
