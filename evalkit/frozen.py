"""Lists that refuse to change: values several variants' states and records hold at once.

What it is for: the work memo (:mod:`evalkit.graph.memo`) shares one ranking between the
variants of a sweep, and the writer of per-query records (:mod:`evalkit.redact`) writes
such a list once; both read these types, so they live below both.
"""
from __future__ import annotations

from copy import deepcopy
from typing import Any

__all__ = ["SCALARS", "FrozenList", "frozen_all_the_way"]


class FrozenList(list[Any]):
    """A ``list`` that refuses to change (``TypeError``): for values several variants' states or
    records hold at once, so that one of them cannot change what the others see. A copy
    (``list(x)``, ``x.copy()``, ``copy.copy``, ``copy.deepcopy``, a slice) is a plain list, yours to
    change. Reads, equality and JSON are a list's; a pickle keeps the type (a Ray worker's result).
    ``_json``: what a writer of records made of it once (:func:`evalkit.redact.dumps_line`), kept
    only for a list that is frozen all the way down."""

    __slots__ = ("_json",)
    _json: tuple[Any, bool]  # (its JSON as an orjson.Fragment, whether it is plain and finite); unset until written

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"this {type(self).__name__} is shared by several variants and cannot be changed; "
                        "copy it first (list(value)) and change the copy")

    append = extend = insert = pop = remove = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse

    def __reduce__(self) -> tuple[Any, tuple[list[Any]]]:
        return type(self), (list(self),)

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [deepcopy(v, memo) for v in self]


SCALARS = frozenset({str, int, float, bool, type(None)})
"""The JSON scalar types, exactly (no subclasses): immutable, so never copied."""


def frozen_all_the_way(value: FrozenList) -> bool:
    """Whether nothing inside ``value`` can change: every item a str, number, bool, None or such a frozen list."""
    return all(type(v) in SCALARS or (isinstance(v, FrozenList) and frozen_all_the_way(v)) for v in value)
