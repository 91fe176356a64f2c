"""The ``sql`` node: the structured route. Questions about table values are answered from a database.

The tables named in ``tables`` (CSV or parquet, relative to the config's folder) are loaded into an
in-memory SQLite queried read-only (:mod:`evalkit.nodes.sql_tables`). Per question:

1. **Slot filling** (offline, ``slot_filling: true``): a row named in the question (a value of a
   ``match`` column: ``LX-200 Pro``) and a column asked for (one of its ``aliases``: ``价格``,
   ``price``) fill a parameterised SELECT (:mod:`evalkit.nodes.sql_slots`); values are always ``?``
   parameters, so an injection attempt in the question is only text that matches no value.
2. **Text2SQL** (optional ``llm``), for the questions slot filling could not answer: the model sees
   the schema *retrieved* for the question (the tables and columns whose names, aliases,
   descriptions or values share words with it, at most ``schema_k`` columns a table, with a few
   sample values) and replies ``{"sql": "<one SELECT>" | null, "reason": ...}``. Its SQL runs only
   if it is a single SELECT; the authorizer, ``query_only``, ``max_rows`` and ``timeout_s`` hold
   for it as for any query. A refused query, a failed call or garbage JSON falls back to the other
   route and is appended to ``llm_fallback`` (kind ``unsafe_sql``, ``bad_sql``, ``timeout``, or
   the call's own); ``null`` is the model saying the tables cannot answer.
3. Rows came back: ``route`` = ``route`` (default ``sql``); else ``fallback_route`` (default
   ``text``), and the graph's ``routes`` send the question to retrieval.

Each row becomes a hit with a stable id ``<table>:<key value>`` (spaces as ``_``: ids hold no blanks; rows of a model's query without
a key column: ``sql:<hash of the row>``) and the document id of its ``doc_column`` (else its own
id), rendered as one line (``price_list LX200P-5G: name_zh LX-200 Pro 5G 版; 目录价 / list price
8999 元``). The node writes them as ``retrieved`` and ``evidence`` (empty on the other route, where
retrieval replaces them), their lines as ``evidence_text`` (what ``generate`` shows and quotes)
and ``evidence_texts`` (what the judges check the answer against), and its trace ``sql``:
``source`` (slots, llm, none), ``query``, ``params``, ``columns``, ``rows``, ``row_ids``,
``truncated``, ``slots``, ``schema`` (what the model was shown) and ``rejected`` (why a query did
not run). As a ``router`` it writes ``route``, ``route_reason`` and ``route_source`` (``rule`` for
slot filling, ``llm``, ``default``), so ``route_accuracy`` scores it against ``gold_route``.

YAML::

    sql:
      type: sql
      params:
        tables:
          price_list:
            path: ../eval_sets/tables/price_list.csv
            key: sku
            match: [sku, model, name_zh, name_en]
            doc_column: source_doc
            columns: {price_cny: {aliases: [价格, 多少钱, price, how much], label: 目录价 / list price, unit: 元}}
        llm: {backend: openai, base_url: ..., model: ...}      # optional: Text2SQL
    routes: {sql: {field: route, cases: {sql: generate}}}      # the default edge goes to retrieval
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from evalkit.errors import ParamError, did_you_mean
from evalkit.graph.node import Node, NodeParams, register_node
from evalkit.graph.schema import (
    ATTEMPT,
    EVIDENCE,
    EVIDENCE_TEXT,
    LLM_FALLBACK,
    QUESTION,
    RETRIEVED,
    ROUTE,
    ROUTE_REASON,
    ROUTE_SOURCE,
    Role,
    declare_field,
)
from evalkit.llm.base import LLMError, LLMSpec
from evalkit.nodes.rewrite import fallback_record
from evalkit.nodes.sql_slots import (
    SlotIndex,
    TableSpec,
    build_query,
    find,
    fold,
    schema_terms,
)
from evalkit.nodes.sql_tables import (
    QueryResult,
    ReadOnlyDB,
    Table,
    UnsafeSQL,
    load_table,
)
from evalkit.nodes.system_outputs import EVIDENCE_TEXTS
from evalkit.records import Hit

SQL_TRACE = declare_field("sql", dict, "the sql node's trace: source (slots, llm, none), query, params, columns, "
                          "rows, row_ids, truncated, slots, schema shown to the llm, rejected (why a query did not run)")

TEXT2SQL_PROMPT = (
    "You translate questions into one SQLite SELECT over the tables given. Use only their tables and columns. "
    "If the tables cannot answer the question, reply with null. "
    'Reply with JSON only: {"sql": "<one SELECT statement>" or null, "reason": "<one short sentence>"}'
)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_BLANKS = re.compile(r"\s+")


class SqlParams(NodeParams):
    tables: dict[str, TableSpec] = Field(min_length=1, description="table name -> its file, key, match columns, "
                                         "answerable columns (docs/nodes.md: sql)")
    route: str = Field(default="sql", description="the route written when the tables answered")
    fallback_route: str = Field(default="text", description="the route written otherwise (retrieval)")
    exclude: list[str] = Field(default_factory=list, description="questions holding one of these words (relations, "
                               "how-to: 供应商, supplier, 怎么, how do i) take the fallback route at once")
    slot_filling: bool = Field(default=True, description="fill a parameterised query from the question's words "
                               "first (offline)")
    llm: LLMSpec | None = Field(default=None, description="Text2SQL for the questions slot filling did not answer")
    system_prompt: str = Field(default=TEXT2SQL_PROMPT, description="the llm's instructions")
    schema_k: int = Field(default=8, ge=1, description="columns of a table shown to the llm at most (besides its "
                          "key, match and doc columns), the ones sharing most words with the question")
    max_rows: int = Field(default=20, ge=1, le=1000, description="rows fetched at most")
    timeout_s: float = Field(default=2.0, gt=0, le=60, description="a query running longer is stopped")

    @field_validator("tables")
    @classmethod
    def _names(cls, tables: dict[str, TableSpec]) -> dict[str, TableSpec]:
        for name in tables:
            if not _NAME.match(name):
                raise ValueError(f"table name '{name}': use letters, digits and _ (it is the SQL table name)")
        return tables


def _value(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def render_row(table: str, spec: TableSpec | None, columns: tuple[str, ...], row: tuple[Any, ...],
               key: str | None) -> str:
    """One line a generator can quote: ``<table> <key>: <label> <value><unit>; ...`` (NULLs and the doc
    column left out; no sentence-ending punctuation, so the line is one quotable sentence)."""
    parts = []
    for col, v in zip(columns, row):
        if v is None or (spec is not None and (col == spec.doc_column or col == spec.key)):
            continue
        unit = spec.columns[col].unit if spec is not None and col in spec.columns else ""
        label = spec.label(col) if spec is not None else col
        parts.append(f"{label} {_value(v)}{(' ' + unit) if unit else ''}")
    head = f"{table} {key}" if key is not None else table
    return f"{head}: " + "; ".join(parts)


@register_node
class Sql(Node[SqlParams]):
    """The structured route: answers from tables by slot filling or Text2SQL, else routes to retrieval."""

    type = "sql"
    role = Role.ROUTER
    reads = (QUESTION,)
    optional_reads = (ATTEMPT,)
    writes = (ROUTE, ROUTE_REASON, ROUTE_SOURCE, SQL_TRACE, RETRIEVED, EVIDENCE, EVIDENCE_TEXT, EVIDENCE_TEXTS)
    optional_writes = (LLM_FALLBACK,)
    Params = SqlParams

    def __init__(self, name: str, params: SqlParams, resources: Any = None):
        super().__init__(name, params, resources)
        base = getattr(resources, "base_dir", None)
        tables: dict[str, Table] = {}
        for tname, spec in params.tables.items():
            path = Path(spec.path)
            if not path.is_absolute() and base is not None:
                path = Path(base) / path
            if not path.exists():
                raise ParamError(f"tables.{tname}.path: {path} does not exist (a CSV or parquet file, relative "
                                 "to the config's folder)", f"tables.{tname}.path")
            tables[tname] = load_table(tname, path, spec.key)
            self._check_columns(tname, spec, tables[tname])
        self.tables = tables
        self.db = ReadOnlyDB(list(tables.values()))
        self.slots = SlotIndex(dict(params.tables), tables)
        self.client = self.llm_client(params.llm, "sql") if params.llm is not None else None
        self._digest = {n: hashlib.sha256(Path(t.path).read_bytes()).hexdigest()[:16] for n, t in tables.items()}

    @staticmethod
    def _check_columns(tname: str, spec: TableSpec, table: Table) -> None:
        named = [("match", c) for c in spec.match] + [("columns", c) for c in spec.columns]
        named += [("doc_column", spec.doc_column)] if spec.doc_column else []
        for where, col in named:
            if col not in table.columns:
                raise ParamError(f"tables.{tname}.{where}: '{col}' is not a column of {table.path}"
                                 f"{did_you_mean(col, table.columns)}", f"tables.{tname}.{where}")

    def fingerprint(self) -> dict[str, Any]:
        """The tables' contents decide the answers: a changed file is a different node."""
        return {"tables": dict(self._digest)}

    # --- one question ---------------------------------------------------------------------------
    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        p = self.params
        question = state[QUESTION]
        trace: dict[str, Any] = {"source": "none", "query": None, "params": [], "columns": [], "rows": 0,
                                 "row_ids": [], "truncated": False, "slots": None, "schema": None, "rejected": None}
        out: dict[str, Any] = {}
        reason = "slot filling is off"
        folded = fold(question)
        excluded = next((w for w in p.exclude if find(fold(w), folded)), None)
        if excluded is not None:
            return self._fallback(trace, out, f"exclude word '{excluded}'", "rule")
        if p.slot_filling:
            slots = self.slots.best(question)
            if slots is None:
                reason = "no table has both a row and a column named in the question"
            else:
                spec = p.tables[slots.table]
                sql, args = build_query(spec, slots.table, slots)
                trace.update(source="slots", query=sql, params=list(args), slots=slots.to_dict())
                try:
                    result = self.db.query(sql, args, limit=p.max_rows, timeout_s=p.timeout_s)
                except UnsafeSQL as exc:  # past timeout_s: the question goes on to retrieval, said in the trace
                    trace["rejected"] = f"{exc.kind}: {exc}"[:300]
                    result = QueryResult(columns=(), rows=())
                if result.rows:
                    hits, texts = self._rows(result, slots.table)
                    return self._answered(trace, result, hits, texts, "rule",
                                          f"slots: {', '.join(slots.words)} in table {slots.table}")
                reason = "the slot query returned no rows"
        if self.client is not None:
            attempt = int(state.get(ATTEMPT) or 0) or 1
            answered = self._text2sql(question, trace, attempt, out)
            if answered is not None:
                return answered
            reason = f"{reason}; llm: {trace['rejected'] or 'no rows'}"
        source = "llm" if self.client is not None and LLM_FALLBACK not in out and trace["source"] == "llm" else "default"
        return self._fallback(trace, out, reason, source)

    def _fallback(self, trace: dict[str, Any], out: dict[str, Any], reason: str, source: str) -> dict[str, Any]:
        route = self.params.fallback_route
        return {**out, ROUTE: route, ROUTE_REASON: f"{reason}: route {route}", ROUTE_SOURCE: source,
                SQL_TRACE: trace, RETRIEVED: [], EVIDENCE: [], EVIDENCE_TEXT: {}, EVIDENCE_TEXTS: {}}

    def _answered(self, trace: dict[str, Any], result: QueryResult, hits: list[Hit], texts: dict[str, str],
                  source: str, reason: str) -> dict[str, Any]:
        trace.update(columns=list(result.columns), rows=len(result.rows), row_ids=[h.id for h in hits],
                     truncated=result.truncated)
        return {ROUTE: self.params.route, ROUTE_REASON: reason, ROUTE_SOURCE: source, SQL_TRACE: trace,
                RETRIEVED: hits, EVIDENCE: hits, EVIDENCE_TEXT: dict(texts), EVIDENCE_TEXTS: dict(texts)}

    def _rows(self, result: QueryResult, table: str | None) -> tuple[list[Hit], dict[str, str]]:
        """Hits (stable ids, document ids) and rendered lines of the result's rows."""
        spec = self.params.tables.get(table) if table is not None else None
        cols = result.columns
        hits: list[Hit] = []
        texts: dict[str, str] = {}
        for row in result.rows:
            key = row[cols.index(spec.key)] if spec is not None and spec.key in cols else None
            text = render_row(table or "sql", spec, cols, row, None if key is None else _value(key))
            rid = (f"{table}:{_BLANKS.sub('_', _value(key))}" if key is not None
                   else "sql:" + hashlib.sha1(text.encode()).hexdigest()[:12])
            doc = row[cols.index(spec.doc_column)] if spec is not None and spec.doc_column in cols else None
            if rid in texts:
                continue
            hits.append(Hit(rid, str(doc) if doc else rid, 1.0))
            texts[rid] = text
        return hits, texts

    # --- Text2SQL -------------------------------------------------------------------------------
    def schema_for(self, question: str) -> dict[str, list[str]]:
        """The tables and columns shown to the llm: those sharing words with the question (all when none
        does), each table's key, match and doc columns always, at most ``schema_k`` others."""
        terms = schema_terms(question)
        shown: dict[str, list[str]] = {}
        scored_tables = []
        for tname, spec in self.params.tables.items():
            table = self.tables[tname]
            scores = {}
            for col in table.columns:
                words = [col.replace("_", " "), *(spec.columns[col].aliases if col in spec.columns else [])]
                if table.types[col] == "TEXT":
                    words += [str(v) for v in table.values(col) if v is not None][:50]
                scores[col] = len(terms & schema_terms(" ".join(words)))
            fixed = list(dict.fromkeys([spec.key, *spec.match, *([spec.doc_column] if spec.doc_column else [])]))
            ranked = sorted((c for c in table.columns if c not in fixed and scores[c] > 0),
                            key=lambda c: (-scores[c], table.columns.index(c)))[: self.params.schema_k]
            total = sum(scores.values()) + len(terms & schema_terms(tname.replace("_", " ") + " " + spec.description))
            scored_tables.append((total, tname, fixed + ranked))
        hits = [t for t in scored_tables if t[0] > 0] or scored_tables
        for _, tname, cols in hits:
            shown[tname] = cols
        return shown

    def schema_text(self, shown: Mapping[str, list[str]]) -> str:
        lines = []
        for tname, cols in shown.items():
            spec, table = self.params.tables[tname], self.tables[tname]
            lines.append(f"TABLE {tname}" + (f"  -- {spec.description}" if spec.description else ""))
            for col in cols:
                note = [spec.label(col)] if col in spec.columns else []
                if col in spec.columns and spec.columns[col].unit:
                    note.append(f"unit {spec.columns[col].unit}")
                if col in spec.match:
                    sample = list(dict.fromkeys(str(v) for v in table.values(col) if v is not None))[:6]
                    note.append("e.g. " + ", ".join(repr(v) for v in sample))
                lines.append(f"  {col} {table.types[col]}" + (f"  -- {'; '.join(note)}" if note else ""))
        return "\n".join(lines)

    def _text2sql(self, question: str, trace: dict[str, Any], attempt: int, out: dict[str, Any]) -> dict[str, Any] | None:
        """The answered writes when the llm's query returned rows; else None (``trace``/``out`` say why)."""
        client = self.client
        if client is None:
            return None
        shown = self.schema_for(question)
        trace.update(source="llm", schema=shown, query=None, params=[])
        prompt = f"Tables:\n{self.schema_text(shown)}\n\nQuestion: {question}\nReply:"
        try:
            value, _ = client.chat_json(prompt, system=self.params.system_prompt, expect=dict, max_tokens=300)
            sql = value.get("sql")
            if sql is None or (isinstance(sql, str) and not sql.strip()):
                trace["rejected"] = "the llm says the tables cannot answer: " + str(value.get("reason", ""))[:160]
                return None
            if not isinstance(sql, str):
                raise LLMError(f"text2sql reply's 'sql' is not a string: {str(value)[:120]}", kind="bad_json")
            trace["query"] = sql[:2000]
            result = self.db.query(sql, (), limit=self.params.max_rows, timeout_s=self.params.timeout_s)
        except UnsafeSQL as exc:
            trace["rejected"] = f"{exc.kind}: {exc}"[:300]
            out[LLM_FALLBACK] = {"node": self.name, "attempt": attempt, "kind": exc.kind, "message": str(exc)[:200]}
            return None
        except Exception as exc:  # noqa: BLE001 - a failed or lying llm degrades the query, never stops it
            record = fallback_record(self.name, attempt, exc)
            trace["rejected"] = f"llm failed ({record['kind']})"
            out[LLM_FALLBACK] = record
            return None
        if not result.rows:
            trace.update(columns=list(result.columns), rejected="the llm's query returned no rows")
            return None
        table = next((t for t in self.params.tables
                      if re.search(rf"(?i)\b{re.escape(t)}\b", sql) and self.params.tables[t].key in result.columns),
                     None)
        hits, texts = self._rows(result, table)
        return self._answered(trace, result, hits, texts, "llm", f"llm: {str(value.get('reason', ''))[:160]}")
