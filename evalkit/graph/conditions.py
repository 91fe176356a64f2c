"""Conditions as data: one small grammar for routes, the grade gate and metadata filters.

A condition is YAML (or JSON) data, never code::

    {field: rerank_top1, lt: 0.7}                         # a comparison: one field, one operator
    {any: [{field: n_relevant, ge: 3}, {field: atoms_covered, eq: true}]}
    {all: [COND, COND, ...]}                              # every one holds
    {not: COND}

Operators (exactly one per comparison):

======== =====================================================================
``lt``   value < x          ``le``  value <= x
``gt``   value > x          ``ge``  value >= x
``eq``   value == x         ``ne``  value != x
``in``   value equals one of the list x (a non-empty list)
``exists`` x true: the value is present and not null; false: absent or null
======== =====================================================================

Semantics, the same wherever a condition is used:

- An absent field reads as null. ``lt``/``le``/``gt``/``ge``/``in`` on a null value (or
  against a null, as a ``from_record`` value may be) are false; ``eq: null`` holds for a
  null value; ``ne`` is the negation of ``eq``.
- Numbers compare with numbers (int and float alike; a boolean is not a number), strings
  with strings (code-point order, so ISO dates ``2025-06-01`` compare as dates), booleans
  only by ``eq``/``ne``/``in``. A date written unquoted in YAML (``2025-06-01``) is read as
  its ISO string.
- ``any`` of an empty list is false, ``all`` of an empty list is true; both are refused
  at load (say what you mean).

A value may be ``{from_record: NAME}`` where the caller allows it (metadata filters):
the value of the eval record's field ``NAME`` for the query being run (see
:mod:`evalkit.nodes.filters`).

:func:`parse` checks the grammar, :func:`check_types` checks fields and value types
against declared types (the state schema for routes, the gate's variables for the grade
node), :func:`evaluate` decides. Errors are :class:`ConditionError` with the path inside
the condition (``any[1].lt``), which config loading turns into ``file:line`` messages.
"""
from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evalkit.errors import did_you_mean

COMPARISONS = ("lt", "le", "gt", "ge", "eq", "ne", "in", "exists")
ORDERED = ("lt", "le", "gt", "ge")
COMBINATORS = ("any", "all", "not")
_SYMBOL = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "in": "in", "exists": "exists"}
GRAMMAR = ("a condition is {field: NAME, OP: VALUE} with OP one of " + ", ".join(COMPARISONS) +
           ", or {any: [conditions]}, {all: [conditions]}, {not: condition}")


class ConditionError(ValueError):
    """A condition that does not parse or does not type-check; ``path`` is where inside it (``any[1].lt``)."""

    def __init__(self, path: str, message: str):
        self.path = path
        self.problem = message
        super().__init__(f"{path}: {message}" if path else message)


@dataclass(frozen=True)
class Ref:
    """A value taken from the eval record of the query (``{from_record: NAME}``)."""

    name: str


@dataclass(frozen=True)
class Compare:
    field: str
    op: str
    value: Any  # a JSON value, or Ref


@dataclass(frozen=True)
class AnyOf:
    items: tuple[Condition, ...]


@dataclass(frozen=True)
class AllOf:
    items: tuple[Condition, ...]


@dataclass(frozen=True)
class Not:
    item: Condition


Condition = Compare | AnyOf | AllOf | Not


def _join(path: str, part: str) -> str:
    return f"{path}.{part}" if path and not part.startswith("[") else f"{path}{part}"


def _scalar(value: Any) -> Any:
    """YAML dates become ISO strings; everything else is kept."""
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    return value


def parse(raw: Any, *, refs: bool = False, path: str = "") -> Condition:
    """The condition ``raw`` describes (module docstring); ``ConditionError`` naming where it is wrong.

    ``refs`` allows ``{from_record: NAME}`` values.
    """
    if isinstance(raw, Condition.__args__):
        return raw
    if not isinstance(raw, Mapping) or not raw:
        raise ConditionError(path, f"expected a mapping; {GRAMMAR}")
    keys = [str(k) for k in raw]
    combinators = [k for k in keys if k in COMBINATORS]
    if combinators:
        if len(keys) != 1:
            raise ConditionError(path, f"'{combinators[0]}' must stand alone in its mapping, found {sorted(keys)}")
        key = keys[0]
        body = raw[key]
        if key == "not":
            return Not(parse(body, refs=refs, path=_join(path, "not")))
        if not isinstance(body, list) or not body:
            raise ConditionError(_join(path, key), f"'{key}' takes a non-empty list of conditions")
        items = tuple(parse(c, refs=refs, path=_join(path, f"{key}[{i}]")) for i, c in enumerate(body))
        return AnyOf(items) if key == "any" else AllOf(items)
    if "field" not in raw:
        close = did_you_mean(keys[0], (*COMPARISONS, *COMBINATORS, "field"))
        raise ConditionError(path, f"no 'field' (and no any/all/not){close}; {GRAMMAR}")
    name = raw["field"]
    if not isinstance(name, str) or not name:
        raise ConditionError(_join(path, "field"), f"expected a field name, got {name!r}")
    ops = [k for k in keys if k != "field"]
    unknown = [k for k in ops if k not in COMPARISONS]
    if unknown:
        raise ConditionError(_join(path, unknown[0]), f"unknown operator '{unknown[0]}'"
                             f"{did_you_mean(unknown[0], COMPARISONS)}; valid: {', '.join(COMPARISONS)}")
    if len(ops) != 1:
        raise ConditionError(path, f"a comparison takes exactly one operator, found {ops or 'none'} "
                             f"(combine several with any/all)")
    op = ops[0]
    value = _value(raw[op], refs, _join(path, op))
    where = _join(path, op)
    if op == "in":
        if isinstance(value, Ref):
            raise ConditionError(where, "'in' takes a list of constants, not a from_record value")
        if not isinstance(value, list) or not value:
            raise ConditionError(where, f"'in' takes a non-empty list of values, got {value!r}")
        value = [_value(v, False, f"{where}[{i}]") for i, v in enumerate(value)]
    elif op == "exists" and not isinstance(value, bool):
        raise ConditionError(where, f"'exists' takes true or false, got {value!r}")
    elif op in ORDERED and not isinstance(value, Ref) and _kind(value) not in ("number", "str"):
        raise ConditionError(where, f"'{op}' compares with a number or a string, got {value!r}")
    return Compare(name, op, value)


def _value(raw: Any, refs: bool, path: str) -> Any:
    if isinstance(raw, Mapping):
        if set(raw) == {"from_record"} and refs:
            name = raw["from_record"]
            if not isinstance(name, str) or not name:
                raise ConditionError(_join(path, "from_record"), f"expected an eval-record field name, got {name!r}")
            return Ref(name)
        hint = "{from_record: NAME} is the only mapping a value may be" if refs else \
            "a value must be a constant here (from_record is for metadata filters)"
        raise ConditionError(path, f"unexpected mapping {dict(raw)!r}: {hint}")
    if isinstance(raw, list):
        return [_scalar(v) for v in raw]
    return _scalar(raw)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, Mapping):
        return "dict"
    return "other"


def kinds_of(type_: str) -> frozenset[str]:
    """Value kinds a declared type string admits (``"float | None"`` -> number, null); ``any`` for unknown."""
    out: set[str] = set()
    for part in (p.strip() for p in type_.split("|")):
        base = part.split("[", 1)[0].strip().lower()
        out.add({"int": "number", "float": "number", "bool": "bool", "str": "str", "none": "null",
                 "list": "list", "tuple": "list", "dict": "dict"}.get(base, "any"))
    return frozenset(out)


def check_types(cond: Condition, types: Mapping[str, str], what: str = "state field", path: str = "") -> None:
    """Every field is one of ``types`` (name -> declared type string) and every value fits its type."""
    if isinstance(cond, (AnyOf, AllOf)):
        key = "any" if isinstance(cond, AnyOf) else "all"
        for i, c in enumerate(cond.items):
            check_types(c, types, what, _join(path, f"{key}[{i}]"))
        return
    if isinstance(cond, Not):
        check_types(cond.item, types, what, _join(path, "not"))
        return
    if cond.field not in types:
        raise ConditionError(_join(path, "field"), f"unknown {what} '{cond.field}'{did_you_mean(cond.field, types)}")
    kinds = kinds_of(types[cond.field])
    where = _join(path, cond.op)
    if "any" in kinds or isinstance(cond.value, Ref) or cond.op == "exists":
        return
    shown = f"{what} '{cond.field}' is {types[cond.field]}"
    if cond.op in ORDERED:
        if not kinds & {"number", "str"}:
            raise ConditionError(where, f"'{cond.op}' needs a number or a string, but {shown}")
        if _kind(cond.value) not in kinds:
            raise ConditionError(where, f"{shown}; cannot compare it with {cond.value!r}")
        return
    values = cond.value if cond.op == "in" else [cond.value]
    for v in values:
        if _kind(v) != "null" and _kind(v) not in kinds:
            raise ConditionError(where, f"{shown}; {v!r} can never equal it")


def fields(cond: Condition) -> list[str]:
    """Every field the condition reads, in order of appearance (each once)."""
    out: list[str] = []
    for c in _leaves(cond):
        if c.field not in out:
            out.append(c.field)
    return out


def refs_of(cond: Condition) -> list[str]:
    """Every ``from_record`` name the condition uses, in order (each once)."""
    out: list[str] = []
    for c in _leaves(cond):
        if isinstance(c.value, Ref) and c.value.name not in out:
            out.append(c.value.name)
    return out


def _leaves(cond: Condition) -> Iterable[Compare]:
    if isinstance(cond, Compare):
        yield cond
    elif isinstance(cond, Not):
        yield from _leaves(cond.item)
    else:
        for c in cond.items:
            yield from _leaves(c)


def resolve(cond: Condition, refs: Mapping[str, Any]) -> Condition:
    """The condition with every ``from_record`` value replaced by ``refs[name]``."""
    if isinstance(cond, Compare):
        if isinstance(cond.value, Ref):
            return Compare(cond.field, cond.op, _scalar(refs[cond.value.name]))
        return cond
    if isinstance(cond, Not):
        return Not(resolve(cond.item, refs))
    items = tuple(resolve(c, refs) for c in cond.items)
    return AnyOf(items) if isinstance(cond, AnyOf) else AllOf(items)


def _equal(a: Any, b: Any) -> bool:
    ka, kb = _kind(a), _kind(b)
    return ka == kb and a == b


def _compare(op: str, value: Any, x: Any) -> bool:
    if op == "exists":
        return (value is not None) is bool(x)
    if op == "eq":
        return _equal(value, x)
    if op == "ne":
        return not _equal(value, x)
    if value is None or x is None:  # null is never ordered (a from_record value may resolve to null)
        return False
    if op == "in":
        return any(_equal(value, v) for v in x)
    kv, kx = _kind(value), _kind(x)
    if kv != kx or kv not in ("number", "str"):
        raise ConditionError("", f"cannot compare {value!r} with {x!r} ({_SYMBOL[op]}): "
                             "numbers compare with numbers, strings with strings")
    return bool({"lt": value < x, "le": value <= x, "gt": value > x, "ge": value >= x}[op])


def evaluate(cond: Condition, get: Callable[[str], Any]) -> bool:
    """Whether ``cond`` holds; ``get(field)`` returns a field's value (None when absent)."""
    if isinstance(cond, Compare):
        if isinstance(cond.value, Ref):
            raise ConditionError("", f"'{cond.field}' compares with from_record {cond.value.name!r}, which was not "
                                 "resolved (evalkit.graph.conditions.resolve)")
        return _compare(cond.op, get(cond.field), cond.value)
    if isinstance(cond, Not):
        return not evaluate(cond.item, get)
    if isinstance(cond, AnyOf):
        return any(evaluate(c, get) for c in cond.items)
    return all(evaluate(c, get) for c in cond.items)


def describe(cond: Condition, get: Callable[[str], Any] | None = None) -> str:
    """A short text of the condition (for traces and reasons); with ``get``, each field's value too."""
    if isinstance(cond, Compare):
        seen = f"={get(cond.field)!r}" if get is not None else ""
        value = f"from_record.{cond.value.name}" if isinstance(cond.value, Ref) else repr(cond.value)
        return f"{cond.field}{seen} {_SYMBOL[cond.op]} {value}"
    if isinstance(cond, Not):
        return f"not({describe(cond.item, get)})"
    key = "any" if isinstance(cond, AnyOf) else "all"
    return f"{key}({', '.join(describe(c, get) for c in cond.items)})"


def to_data(cond: Condition) -> Any:
    """The YAML/JSON form of a parsed condition (``parse(to_data(c)) == c``)."""
    if isinstance(cond, Compare):
        value = {"from_record": cond.value.name} if isinstance(cond.value, Ref) else cond.value
        return {"field": cond.field, cond.op: value}
    if isinstance(cond, Not):
        return {"not": to_data(cond.item)}
    return {"any" if isinstance(cond, AnyOf) else "all": [to_data(c) for c in cond.items]}
