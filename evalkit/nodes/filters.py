"""Metadata filters: which corpus documents a retrieval may return, as a condition over their fields.

A retrieval node's ``filters:`` is a condition in the grammar of
:mod:`evalkit.graph.conditions` (``lt le gt ge eq ne in exists``, ``any`` / ``all`` /
``not``; a list means ``all``) whose fields are the documents' fields:

- a key of the document's ``metadata`` (``dept``, ``updated``, ``version``, ``tenant``...);
- ``doc_id`` and ``title``: the document's own id and title (unless metadata has a key of
  that name).

A field that no document has is refused when the node is built (a typo), except
``tenant``: in a corpus without tenants every document is shared.

A value is a constant from the config or ``{from_record: NAME}``, the value of the eval
record's field for the query being run: ``tenant``, ``lang``, ``query_id``, or any other
NAME, which is looked up in the record's ``attributes`` (an eval record without that
attribute fails the query with a message naming it; an attribute set to null compares as
null). Examples::

    filters: {field: dept, eq: {from_record: dept}}                 # the asker's department
    filters: [{field: updated, ge: 2025-06-01}, {field: updated, le: {from_record: as_of}}]
    filters: {field: version, in: [v2, v3]}
    filters:                                                        # tenant isolation, shared docs allowed
      any: [{field: tenant, eq: {from_record: tenant}}, {field: tenant, exists: false}]

A document without the field reads it as null (so ``eq`` to a tenant never matches it,
``exists: false`` does). A record without a tenant has ``tenant`` null: the isolation
filter above then allows only documents without a tenant (fail closed).

**How it is applied: a pre-filtered id set, inside the search.** The filter is evaluated
over the corpus documents (once per distinct set of record values, cached), giving the
allowed documents and so the allowed passages of each index. BM25 scores every passage
and the disallowed ones are set to 0 before the top-k cut; the dense (faiss) search is
given the allowed passage positions as an ``IDSelectorBatch``. Either way ``top_k`` is
filled with matching passages whenever that many match (a flat index is exact; an
``ivf`` index probes ``nprobe`` lists and can return fewer when matches are rare). No
over-fetch factor, no post-filter that empties a ranking.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from evalkit.errors import ParamError, did_you_mean
from evalkit.graph.conditions import (
    ORDERED,
    Compare,
    Condition,
    ConditionError,
    Ref,
    evaluate,
    fields,
    parse,
    refs_of,
    resolve,
    to_data,
)
from evalkit.graph.schema import ATTRIBUTES, LANG, QUERY_ID, TENANT

RECORD_FIELDS = {"tenant": TENANT, "lang": LANG, "query_id": QUERY_ID}
"""``from_record`` names that are eval-record fields; any other name is a key of ``attributes``."""
DOCUMENT_FIELDS = ("doc_id", "title")
ALWAYS_KNOWN = ("tenant",)
"""Fields a filter may name although no document has them: a corpus without tenants is all shared."""
_CACHE_LIMIT = 4096


class FilterError(ParamError):
    """A filter that cannot be applied: a field no document has, a missing record attribute, a type clash.

    Raised when the node is built (``param`` set: the config is wrong) or for one query
    (a record without the attribute a ``from_record`` names)."""


def parse_filters(raw: Any) -> Condition:
    """The condition of a ``filters:`` parameter (a list means ``all``); ``ConditionError`` when malformed."""
    if isinstance(raw, list):
        if not raw:
            raise ConditionError("", "an empty filter list: remove 'filters' or give a condition")
        raw = {"all": raw}
    return parse(raw, refs=True)


def state_fields(cond: Condition) -> list[str]:
    """The state fields a filter reads for its ``from_record`` values (tenant, lang, attributes...)."""
    out: list[str] = []
    for name in refs_of(cond):
        f = str(RECORD_FIELDS.get(name, ATTRIBUTES))
        if f not in out:
            out.append(f)
    return out


def record_values(cond: Condition, state: Mapping[str, Any]) -> dict[str, Any]:
    """``{from_record name: value}`` for this query, read from its state; ``FilterError`` for a missing attribute."""
    out: dict[str, Any] = {}
    for name in refs_of(cond):
        if name in RECORD_FIELDS:
            out[name] = state.get(RECORD_FIELDS[name])
            continue
        attributes = state.get(ATTRIBUTES) or {}
        if name not in attributes:
            have = ", ".join(sorted(attributes)) or "none"
            raise FilterError(f"filters: from_record '{name}' is neither a field of this eval record nor one "
                              f"of its attributes ({have}); add \"attributes\": {{\"{name}\": ...}} to the record "
                              "(null for none)")
        out[name] = attributes[name]
    return out


def document_values(doc: Any) -> dict[str, Any]:
    """What a filter's fields name for one document: its metadata plus ``doc_id`` and ``title``."""
    return {"doc_id": doc.id, "title": doc.title, **(doc.metadata or {})}


class DocumentFilter:
    """A parsed filter bound to a corpus: the allowed document ids for given record values (cached)."""

    def __init__(self, raw: Any, documents: Sequence[Any], where: str = "filters"):
        self.cond = parse_filters(raw)
        self.where = where
        self._docs = [(d.id, document_values(d)) for d in documents]
        known = {k for _, values in self._docs for k in values} | set(ALWAYS_KNOWN)
        for name in fields(self.cond):
            if name not in known:
                problem = f"no corpus document has the field '{name}'{did_you_mean(name, sorted(known))}"
                raise FilterError(f"{where}: {problem}", param="filters", problem=problem)
        self._check_constant_types()
        self._cache: dict[str, frozenset[str]] = {}
        self._lock = threading.Lock()
        if not refs_of(self.cond):
            self.allowed({})  # a constant filter: type clashes surface when the node is built

    def key(self, values: Mapping[str, Any]) -> str:
        """The resolved filter as canonical JSON (what the allowed set, and any shared search, depend on)."""
        return json.dumps(to_data(resolve(self.cond, values)), sort_keys=True, ensure_ascii=False, default=str)

    def allowed(self, values: Mapping[str, Any]) -> frozenset[str]:
        """The ids of the documents the filter lets through for these record values."""
        key = self.key(values)
        with self._lock:
            found = self._cache.get(key)
        if found is not None:
            return found
        cond = resolve(self.cond, values)
        ok = []
        for doc_id, fields_ in self._docs:
            try:
                if evaluate(cond, fields_.get):
                    ok.append(doc_id)
            except ConditionError as exc:
                raise FilterError(f"{self.where}: document '{doc_id}': {exc.problem}") from None
        result = frozenset(ok)
        with self._lock:
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = result
        return result

    def _check_constant_types(self) -> None:
        """An ordered comparison with a constant must meet values of the same kind in the corpus."""
        stack: list[Any] = [self.cond]
        while stack:
            c = stack.pop()
            if not isinstance(c, Compare):
                stack.extend([c.item] if hasattr(c, "item") else c.items)
                continue
            if c.op not in ORDERED or isinstance(c.value, Ref):
                continue
            for doc_id, values in self._docs:
                try:
                    evaluate(c, values.get)
                except ConditionError as exc:
                    problem = f"'{c.field}' of document '{doc_id}' is {values.get(c.field)!r}; {exc.problem}"
                    raise FilterError(f"{self.where}: {problem}", param="filters", problem=problem) from None
