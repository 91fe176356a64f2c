"""Run-time checks of state writes against the schema's declared Python types (a debug switch).

Every state field declares a real type (``list[Hit]``, ``str | None``, ``dict[str, Any]``: see
:mod:`evalkit.graph.schema`). With ``EVALKIT_CHECK_STATE=1`` in the environment (the test suite sets
it) the engine checks each value a node writes against its field's type and fails the query with a
``GraphError`` naming the node, the field, the declared type and what was written. Off by default:
the check walks every item of every ranking a node writes (benchmarks/state_check.py measures it).

The forms the schema uses are checked here by hand (a class, ``None``, ``Any``, unions, ``list[X]``,
``tuple[X, ...]``, ``dict[K, V]``) rather than through a library such as typeguard: that is the
whole grammar, and a debug switch should not add a run-time dependency. As in mypy, an ``int`` is
accepted where a ``float`` is declared.
"""
from __future__ import annotations

import os
import types
from collections.abc import Mapping
from typing import Any, Union, get_args, get_origin

CHECK_ENV = "EVALKIT_CHECK_STATE"


def checks_on() -> bool:
    """Whether ``EVALKIT_CHECK_STATE`` asks for state writes to be type-checked (``1``, ``true``, ``yes``)."""
    return os.environ.get(CHECK_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def type_text(tp: Any) -> str:
    """How a declared type reads in docs and errors: ``list[Hit]``, ``str | None``, ``dict[str, Any]``."""
    if tp is None or tp is type(None):
        return "None"
    if tp is Any:
        return "Any"
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        return " | ".join(type_text(a) for a in get_args(tp))
    if origin is not None:
        args = get_args(tp)
        inner = ", ".join("..." if a is Ellipsis else type_text(a) for a in args)
        return f"{origin.__name__}[{inner}]" if args else origin.__name__
    return tp.__name__ if isinstance(tp, type) else str(tp)


def is_type(tp: Any) -> bool:
    """Whether ``tp`` is a type :func:`conforms` can check (no strings, no ``TypeVar``, no ``Literal``)."""
    if tp is None or tp is Any:
        return True
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        return all(is_type(a) for a in get_args(tp))
    if origin in (list, tuple, dict):
        return all(a is Ellipsis or is_type(a) for a in get_args(tp))
    return origin is None and isinstance(tp, type)


def conforms(value: Any, tp: Any) -> bool:
    """Whether ``value`` is of the declared type ``tp`` (every item of a container is checked)."""
    if tp is Any:
        return True
    if tp is None or tp is type(None):
        return value is None
    origin = get_origin(tp)
    if origin is None:
        if tp is float:
            return isinstance(value, (float, int))
        return isinstance(value, tp)
    args = get_args(tp)
    if origin in (Union, types.UnionType):
        return any(conforms(value, a) for a in args)
    if not isinstance(value, origin):
        return False
    if not args:
        return True
    if origin is list:
        return all(conforms(v, args[0]) for v in value)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(v, args[0]) for v in value)
        return len(value) == len(args) and all(conforms(v, a) for v, a in zip(value, args, strict=True))
    if origin is dict:
        return all(conforms(k, args[0]) and conforms(v, args[1]) for k, v in value.items())
    return True


def item_type(tp: Any) -> Any:
    """What one write of an ``append`` field adds: the item type of its ``list[X]`` (``Any`` for a bare list)."""
    args = get_args(tp) if get_origin(tp) is list else ()
    return args[0] if args else Any


def mismatches(wrote: Mapping[str, Any], declared: Mapping[str, tuple[Any, bool]]) -> list[str]:
    """``field: declared type, got what`` for each written value that is not of its field's type.

    ``declared``: field name -> (its type, whether a write is one appended item).
    """
    out = []
    for key, value in wrote.items():
        tp, appends = declared[str(key)]
        want = item_type(tp) if appends else tp
        if not conforms(value, want):
            out.append(f"'{key}' is declared {type_text(want)}{' (one appended item)' if appends else ''}, "
                       f"got {_shown(value)}")
    return out


def _shown(value: Any) -> str:
    """The written value's type, and the first item of a container that is off, for the error."""
    kind = type(value).__name__
    if isinstance(value, (list, tuple)) and value:
        return f"{kind} of {', '.join(sorted({type(v).__name__ for v in value}))}"
    if isinstance(value, dict) and value:
        keys = ", ".join(sorted({type(k).__name__ for k in value}))
        return f"{kind} of {keys} -> {', '.join(sorted({type(v).__name__ for v in value.values()}))}"
    return f"{kind} {value!r:.60}"
