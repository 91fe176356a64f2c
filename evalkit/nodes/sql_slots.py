"""Slot filling for the ``sql`` node: a parameterised query from the words of a question, no model.

Per table, from the config (:class:`TableSpec`):

- **entity slot**: the values of the ``match`` columns (``LX-200 Pro``, ``LX-200 4G 版``) found in
  the question (NFKC, case-folded; a value starting or ending with a letter or digit must not run
  on into another one, so ``LX-200`` is not found inside ``LX-2000``). Where matches overlap the
  longest wins (``LX-200 Pro`` over ``LX-200``). Each value found becomes ``"column" = ?``, unless a
  capitalised or numbered word follows it (``LX-200 Max``, ``LX-200 5G``): that names a variant the
  table does not hold, and answering with the LX-200's row would be a wrong answer (``skipped``).
- **attribute slot**: the ``columns`` whose ``aliases`` (or own name) occur in the question
  (``价格``, ``price``, ``how much``), in the order the question names them.

A table can answer when both slots are filled. The table with the most slot words wins (ties:
config order), and :func:`build_query` writes ``SELECT <key>, <match columns>, <attributes>,
<doc column> FROM "table" WHERE (<entity conditions>) ORDER BY <key>``: identifiers quoted from the
config and the file, every value a ``?`` parameter (a question can never change the query's shape).
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field, model_validator

from evalkit.graph.node import NodeParams
from evalkit.nodes.sql_tables import Table, quote_identifier


class ColumnSpec(NodeParams):
    """An answerable column: the words that ask for it, and how its value reads."""

    aliases: list[str] = Field(default_factory=list, description="words that ask for this column (价格, price, "
                               "how much); its own name always counts")
    label: str | None = Field(default=None, description="how the column reads in a rendered row (default: its "
                              "first alias, else its name)")
    unit: str = Field(default="", description="written after the value (元, W, kg)")


class TableSpec(NodeParams):
    """A table named in the config: where it is, its key, what identifies a row, what can be asked."""

    path: str = Field(description="CSV (UTF-8, header row) or parquet file, relative to the config's folder")
    key: str = Field(description="the column whose value is each row's stable id (TABLE:KEY)")
    match: list[str] = Field(default_factory=list, description="columns whose values name a row in a question "
                             "(model, product name); default: the key")
    columns: dict[str, ColumnSpec] = Field(default_factory=dict, description="answerable columns and the "
                                           "words that ask for them")
    doc_column: str | None = Field(default=None, description="column holding the corpus document a row was taken "
                                   "from: its hits carry that document id (cited, scored as retrieval)")
    description: str = Field(default="", description="what the table holds (shown to the llm)")

    @model_validator(mode="after")
    def _default_match(self) -> TableSpec:
        if not self.match:
            object.__setattr__(self, "match", [self.key])
        return self

    def label(self, column: str) -> str:
        spec = self.columns.get(column)
        if spec is None:
            return column
        return spec.label or (spec.aliases[0] if spec.aliases else column)


def fold(text: str) -> str:
    """NFKC and case-folded: how questions and values are compared."""
    return unicodedata.normalize("NFKC", str(text)).casefold()


def find(needle: str, haystack: str) -> list[tuple[int, int]]:
    """Spans of folded ``needle`` in folded ``haystack`` that do not run on into a letter or digit."""
    spans: list[tuple[int, int]] = []
    if not needle:
        return spans
    start = 0
    while True:
        i = haystack.find(needle, start)
        if i < 0:
            return spans
        j = i + len(needle)
        before = haystack[i - 1] if i > 0 else " "
        after = haystack[j] if j < len(haystack) else " "
        cut = ((needle[0].isascii() and needle[0].isalnum() and before.isascii() and before.isalnum())
               or (needle[-1].isascii() and needle[-1].isalnum() and after.isascii() and after.isalnum()))
        if not cut:
            spans.append((i, j))
        start = i + 1


@dataclass(frozen=True)
class Slots:
    """What slot filling found in one table: entity (column, value) pairs and attribute columns."""

    table: str
    entities: tuple[tuple[str, Any], ...] = ()
    attributes: tuple[str, ...] = ()
    words: tuple[str, ...] = ()  # the question's words that filled them (for the trace)
    skipped: tuple[str, ...] = ()  # names found with a variant word after them that no row holds ("LX-200 Max")

    @property
    def filled(self) -> bool:
        return bool(self.entities) and bool(self.attributes)

    @property
    def score(self) -> int:
        return len(self.entities) + len(self.attributes)

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "entities": [list(e) for e in self.entities],
                "attributes": list(self.attributes), "words": list(self.words), "skipped": list(self.skipped)}


@dataclass
class SlotIndex:
    """The values and aliases of every table, folded once, to fill slots from questions."""

    specs: dict[str, TableSpec]
    tables: dict[str, Table]
    values: dict[str, list[tuple[str, str, Any]]] = field(default_factory=dict)  # table -> (folded, column, value)

    def __post_init__(self) -> None:
        for name, spec in self.specs.items():
            table = self.tables[name]
            seen: set[tuple[str, str]] = set()
            entries = []
            for col in spec.match:
                for v in table.values(col):
                    if v is None or (col, str(v)) in seen:
                        continue
                    seen.add((col, str(v)))
                    entries.append((fold(v), col, v))
            self.values[name] = sorted(entries, key=lambda e: -len(e[0]))

    def fill(self, question: str, name: str) -> Slots:
        """The slots of table ``name`` filled from ``question`` (see the module docstring)."""
        q = fold(question)
        plain = unicodedata.normalize("NFKC", question)  # case kept, same positions as q (checked)
        taken: list[tuple[int, int]] = []
        entities: list[tuple[str, Any]] = []
        words: list[str] = []
        skipped: list[str] = []
        for folded, col, value in self.values[name]:  # longest first: a longer value claims its span
            for s, e in find(folded, q):
                if any(s < e2 and s2 < e for s2, e2 in taken):
                    continue
                taken.append((s, e))
                variant = _VARIANT.match(plain, e) if len(plain) == len(q) else None
                if variant is not None:  # "LX-200 Max": a model the table does not hold, not the LX-200
                    skipped.append(plain[s:variant.end()])
                    continue
                if (col, value) not in entities:
                    entities.append((col, value))
                    words.append(folded)
        found: list[tuple[int, int, str, str]] = []
        for order, (col, spec) in enumerate(self.specs[name].columns.items()):
            hits = [(s, a) for a in [col, *spec.aliases] for s, _ in find(fold(a), q)
                    if not any(s2 <= s < e2 for s2, e2 in taken)]
            if hits:
                first, alias = min(hits)
                found.append((first, order, alias, col))
        found.sort()
        return Slots(table=name, entities=tuple(entities), attributes=tuple(c for *_, c in found),
                     skipped=tuple(skipped),
                     words=tuple(dict.fromkeys(words + [a for _, _, a, _ in found])))

    def best(self, question: str) -> Slots | None:
        """The filled table with the highest score (ties: config order); None when no table is filled."""
        filled = [s for s in (self.fill(question, n) for n in self.specs) if s.filled]
        return max(filled, key=lambda s: s.score, default=None) if filled else None


def build_query(spec: TableSpec, table: str, slots: Slots) -> tuple[str, list[Any]]:
    """The parameterised SELECT for filled ``slots`` (identifiers quoted, values as ``?``)."""
    wanted = [spec.key, *spec.match, *slots.attributes, *([spec.doc_column] if spec.doc_column else [])]
    select = ", ".join(quote_identifier(c) for c in dict.fromkeys(wanted))
    where = " OR ".join(f"{quote_identifier(col)} = ?" for col, _ in slots.entities)
    sql = f"SELECT {select} FROM {quote_identifier(table)} WHERE {where} ORDER BY {quote_identifier(spec.key)}"
    return sql, [v for _, v in slots.entities]


_VARIANT = re.compile(r" ?[A-Z0-9][A-Za-z0-9]*\b")  # a capitalised or numbered word right after a name
_WORD = re.compile(r"[a-z0-9]+|[\u3400-\u9fff]+")


def schema_terms(text: str) -> set[str]:
    """Latin words and CJK character pairs of ``text`` (a lone character as itself), folded: what schema
    retrieval compares (pairs, as single characters match almost any column: 低 in 最低温度 and 低于)."""
    out: set[str] = set()
    for w in _WORD.findall(fold(text)):
        if w[0].isascii():
            out.add(w)
        else:
            out.update(w[i:i + 2] for i in range(max(1, len(w) - 1)))
    return out
