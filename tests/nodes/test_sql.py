"""The ``sql`` node (structured route): tables loaded and checked, read-only queries, slot filling with
parameters, hostile questions and hostile SQL, Text2SQL against the scripted LLM server, and the
figures reports/mechanisms.md gives for eval_sets/demo_structured.jsonl, recomputed here."""
from __future__ import annotations

import json
import re
import types
import unicodedata
from pathlib import Path

import pytest

from evalkit.errors import ConfigError
from evalkit.graph import config_from_dict, initial_state, load_graph_config
from evalkit.nodes.sql import Sql, SqlParams
from evalkit.nodes.sql_tables import (
    ReadOnlyDB,
    TableError,
    UnsafeSQL,
    check_select,
    load_table,
)

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "graph_configs" / "structured_sql.yaml"
QUESTIONS = [json.loads(x) for x in (REPO / "eval_sets" / "demo_structured.jsonl").read_text("utf-8").splitlines()]
REPORT = (REPO / "reports" / "mechanisms.md").read_text(encoding="utf-8")
# the value(s) a correct answer to each structured question states (prices, specs: the table's cells)
GOLD_VALUES = {"s01": ["3999"], "s02": ["8999"], "s03": ["5499"], "s04": ["4599"], "s05": ["8gb"],
               "s06": ["-40", "70"], "s07": ["ip54"], "s08": ["0.6kg"], "s09": ["8w"], "s10": ["ks-2210"],
               "s11": ["64gb"], "s12": ["4gb"], "s13": ["8999"], "s14": ["1.4kg"], "s25": ["lx-300", "ip54"],
               "s26": ["3999", "4599"]}


def sql_params() -> dict:
    return load_graph_config(CONFIG).to_dict()["nodes"]["sql"]["params"]


def make(**over) -> Sql:
    """The bundled config's sql node (tables resolved from graph_configs/, as a run resolves them)."""
    return Sql("sql", SqlParams(**{**sql_params(), **over}), types.SimpleNamespace(base_dir=CONFIG.parent))


@pytest.fixture(scope="module")
def node() -> Sql:
    return make()


def ask(n: Sql, question: str, lang: str = "en") -> dict:
    return n.run(initial_state("q", question, lang))


def norm(text: str) -> str:
    """NFKC, case-folded, no whitespace, no thousands separators: how gold values are looked for."""
    t = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"(?<=\d),(?=\d{3})", "", re.sub(r"\s+", "", t))


def states(text: str, qid: str) -> bool:
    return all(v in norm(text) for v in GOLD_VALUES[qid])


# --- tables and the read-only database ---------------------------------------------------------
def test_the_config_round_trips_and_the_tables_load(node):
    cfg = load_graph_config(CONFIG)
    assert config_from_dict(cfg.to_dict()).to_dict() == cfg.to_dict()
    assert {n: len(t.rows) for n, t in node.tables.items()} == {"products": 4, "price_list": 24}
    assert node.tables["price_list"].types["price_cny"] == "INTEGER"
    assert node.tables["products"].types["weight_kg"] == "REAL"
    assert node.fingerprint()["tables"].keys() == {"products", "price_list"}


@pytest.mark.parametrize("text, where, line", [
    ("id,name\na,1\nb,2,3\n", "row 2", 3),            # ragged row
    ("id,name\na,1\na,2\n", "id", 3),                 # repeated key
    ("id,name\n,1\n", "id", 2),                       # empty key
    ("id,id\na,1\n", "id", 1),                        # column named twice
])
def test_a_bad_table_names_file_line_and_column(tmp_path: Path, text, where, line):
    path = tmp_path / "t.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TableError) as err:
        load_table("t", path, "id")
    assert err.value.file == str(path) and err.value.where == where and err.value.line == line


def test_a_parquet_table_loads_like_its_csv(tmp_path: Path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow.csv as pacsv

    src = REPO / "eval_sets" / "tables" / "price_list.csv"
    pq.write_table(pacsv.read_csv(src), tmp_path / "price_list.parquet")
    a, b = load_table("p", src, "sku"), load_table("p", tmp_path / "price_list.parquet", "sku")
    assert (a.columns, a.types, a.rows) == (b.columns, b.types, b.rows)


def test_config_errors_say_where_and_what_to_do(tmp_path: Path):
    (tmp_path / "t.csv").write_text("id,price\na,1\n", encoding="utf-8")
    base = {"name": "s", "nodes": {"sql": {"type": "sql", "params": {"tables": {"t": {
        "path": str(tmp_path / "t.csv"), "key": "id", "columns": {"prise": {"aliases": ["price"]}}}}}}},
        "edges": {"start": "sql", "sql": "end"}}
    from evalkit.graph.config import build_graph

    with pytest.raises(ConfigError, match=r"nodes\.sql\.params\.tables\.t\.columns.*'prise' is not a column.*"
                                          r"did you mean 'price'"):
        build_graph(config_from_dict(base), types.SimpleNamespace(base_dir=tmp_path))
    bad = json.loads(json.dumps(base).replace('"t": {', '"my table": {'))
    with pytest.raises(ConfigError, match="table name 'my table': use letters, digits and _"):
        config_from_dict(bad)


@pytest.mark.parametrize("sql, kind", [
    ("DROP TABLE products", "unsafe_sql"),
    ("DELETE FROM price_list", "unsafe_sql"),
    ("SELECT 1; DROP TABLE products", "unsafe_sql"),
    ("SELECT 1;; SELECT 2", "unsafe_sql"),
    ("WITH x AS (SELECT 1) DELETE FROM products", "unsafe_sql"),
    ("-- just a comment\nDROP TABLE products", "unsafe_sql"),
    ("SELECT * FROM pragma_table_info('products')", "unsafe_sql"),   # the authorizer: no pragma
    ("SELECT random()", "unsafe_sql"),                                # nor non-deterministic functions
    ("SELECT * FROM missing_table", "bad_sql"),
    ("", "bad_sql"),
])
def test_only_one_select_runs_and_nothing_changes_the_tables(node, sql, kind):
    with pytest.raises(UnsafeSQL) as err:
        node.db.query(sql)
    assert err.value.kind == kind
    assert node.db.query("SELECT count(*) FROM price_list").rows == ((24,),)
    assert node.db.query("SELECT count(*) FROM products").rows == ((4,),)


def test_a_quoted_semicolon_is_one_statement_and_rows_are_capped():
    assert check_select("SELECT ';' AS x;") == "SELECT ';' AS x"
    db = ReadOnlyDB([load_table("p", REPO / "eval_sets" / "tables" / "price_list.csv", "sku")])
    out = db.query("SELECT sku FROM p ORDER BY sku", limit=5)
    assert len(out.rows) == 5 and out.truncated and out.rows[0] == ("ACC-ANT4G",)


def test_a_slow_query_is_stopped_at_its_deadline():
    db = ReadOnlyDB([load_table("p", REPO / "eval_sets" / "tables" / "price_list.csv", "sku")])
    with pytest.raises(UnsafeSQL) as err:  # 24^6 = 191 million rows
        db.query("SELECT count(*) FROM p a, p b, p c, p d, p e, p f", timeout_s=0.05)
    assert err.value.kind == "timeout"


# --- slot filling ------------------------------------------------------------------------------
def test_slots_fill_a_parameterised_query_and_the_rows_become_citable_evidence(node):
    out = ask(node, "How much does the LX-200 Pro 5G cost?")
    assert out["route"] == "sql" and out["route_source"] == "rule"
    trace = out["sql"]
    assert trace["query"] == ('SELECT "sku", "name_zh", "name_en", "model", "price_cny", "source_doc" FROM '
                              '"price_list" WHERE "name_en" = ? ORDER BY "sku"')
    assert trace["params"] == ["LX-200 Pro 5G"] and trace["row_ids"] == ["price_list:LX200P-5G"]
    hit = out["evidence"][0]
    assert (hit.id, hit.doc_id) == ("price_list:LX200P-5G", "prod-016") and out["retrieved"] == out["evidence"]
    assert out["evidence_text"][hit.id] == out["evidence_texts"][hit.id] == (
        "price_list LX200P-5G: name_zh LX-200 Pro 5G 版; name_en LX-200 Pro 5G; model LX-200 Pro; "
        "目录价 / list price 8999 元")


def test_the_longest_name_wins_and_names_do_not_run_on(node):
    assert ask(node, "LX-200 Pro 的内存多大？")["sql"]["row_ids"] == ["products:LX-200_Pro"]
    both = ask(node, "LX-200 和 LX-200 Pro 的内存分别是多少？")["sql"]["row_ids"]
    assert both == ["products:LX-200", "products:LX-200_Pro"]
    assert ask(node, "What is the memory of the LX-2000?")["route"] == "text"


def test_a_variant_the_tables_lack_is_not_answered_with_its_namesake(node):
    out = ask(node, "LX-200 Max 的内存有多大？", "zh")   # demo_kb q110, unanswerable: no LX-200 Max exists
    assert out["route"] == "text" and out["evidence"] == []
    assert ask(node, "How much does the LX-200 cost?")["sql"]["row_ids"] == ["price_list:LX200-4G",
                                                                             "price_list:LX200-STD"]
    skipped = node.slots.fill("LX-200 Max 的内存有多大？", "products").skipped
    assert skipped == ("LX-200 Max",)


@pytest.mark.parametrize("question", [
    "What is the price of the LX-200 Pro 5G'; DROP TABLE price_list; --",
    "LX-200 Pro 5G 的价格\" OR 1=1; DELETE FROM price_list --",
    "price of LX-200 Pro 5G UNION SELECT sql FROM sqlite_master",   # UNION reads as a variant name: text route
])
def test_an_injection_in_the_question_is_only_text(node, question):
    out = ask(node, question)
    if "UNION" in question:
        assert out["route"] == "text" and out["sql"]["query"] is None
    else:
        assert out["sql"]["params"] == ["LX-200 Pro 5G"] and out["sql"]["row_ids"] == ["price_list:LX200P-5G"]
        assert "DROP" not in out["sql"]["query"] and "DELETE" not in out["sql"]["query"]
    assert node.db.query("SELECT count(*) FROM price_list").rows == ((24,),)


def test_exclude_words_and_unnamed_columns_take_the_text_route(node):
    out = ask(node, "LX-200 Pro 的主控芯片供应商是谁？", "zh")
    assert out["route"] == "text" and out["route_reason"] == "exclude word '供应商': route text"
    out = ask(node, "What is the NPU performance of the LX-300?")   # no npu column
    assert out["route"] == "text" and out["route_source"] == "default"
    assert (out["evidence"], out["retrieved"], out["evidence_text"], out["sql"]["source"]) == ([], [], {}, "none")


# --- the structured eval set, offline (reports/mechanisms.md) ---------------------------------
def report_figure(label: str) -> tuple[int, int]:
    words = r"\s+".join(re.escape(w) for w in label.split())  # the report wraps its lines anywhere
    m = re.search(rf"{words}\s+\*\*(\d+)/(\d+)\*\*", REPORT)
    assert m, f"reports/mechanisms.md has no '{label} **k/n**'"
    return int(m.group(1)), int(m.group(2))


def test_the_eval_set_is_bilingual_with_both_routes():
    assert len(QUESTIONS) == 26 and {q["gold_route"] for q in QUESTIONS} == {"sql", "text"}
    assert sum(q["lang"] == "en" for q in QUESTIONS) == 13
    assert {q["id"] for q in QUESTIONS if q["gold_route"] == "sql"} == set(GOLD_VALUES)


def test_offline_route_accuracy_is_the_reports(node):
    routes = {q["id"]: ask(node, q["question"], q["lang"])["route"] for q in QUESTIONS}
    wrong = sorted(q["id"] for q in QUESTIONS if routes[q["id"]] != q["gold_route"])
    assert wrong == ["s25", "s26"]  # no product named: slot filling has no row to look up
    assert report_figure("offline (slot filling) route accuracy") == (len(QUESTIONS) - len(wrong), len(QUESTIONS))


# --- Text2SQL against the scripted LLM server ------------------------------------------------
# what the scripted model replies per question: the SQL a competent model writes, null for questions the
# tables cannot answer, and three hostile or broken replies (s13 echoes the injection, s14 names a column
# that does not exist, s23 obeys the question's DROP TABLE)
GOLD_SQL = {
    "s01": "SELECT sku, name_zh, price_cny FROM price_list WHERE model = 'LX-200' AND category = 'device'",
    "s02": "SELECT sku, price_cny FROM price_list WHERE name_en = 'LX-200 Pro 5G'",
    "s03": "SELECT sku, price_cny FROM price_list WHERE sku = 'LX300-STD'",
    "s04": "SELECT sku, price_cny FROM price_list WHERE sku = 'LX200-4G'",
    "s05": "SELECT model, memory_gb FROM products WHERE model = 'LX-200 Pro'",
    "s06": "SELECT model, temp_min_c, temp_max_c FROM products WHERE model = 'LX-200 Pro'",
    "s07": "SELECT model, ip_rating FROM products WHERE model = 'LX-300'",
    "s08": "SELECT model, weight_kg FROM products WHERE model = 'LX-200'",
    "s09": "SELECT model, typical_power_w FROM products WHERE model = 'LX-200'",
    "s10": "SELECT model, soc FROM products WHERE model = 'LX-300'",
    "s11": "SELECT model, storage_gb FROM products WHERE model = 'LX-200 Pro'",
    "s12": "SELECT model, memory_gb FROM products WHERE model = 'LX-300'",
    "s13": "SELECT price_cny FROM price_list WHERE sku = 'LX200P-5G'; DROP TABLE price_list",
    "s14": "SELECT model, weight FROM products WHERE model = 'LX-200 Pro'",
    "s23": "DROP TABLE products",
    "s25": "SELECT model, ip_rating FROM products WHERE ip_rating IS NOT NULL "
           "ORDER BY CAST(substr(ip_rating, 3) AS INTEGER) DESC LIMIT 1",
    "s26": "SELECT sku, name_zh, price_cny FROM price_list WHERE category = 'device' AND price_cny < 5000",
}


def reply(qid: str) -> str:
    return "text:" + json.dumps({"sql": GOLD_SQL.get(qid), "reason": "scripted"})


@pytest.fixture
def llm(fault_server) -> dict:
    return {"backend": "openai", "model": "scripted", "base_url": fault_server.base_url, "max_retries": 0,
            "timeout_s": 30.0, "cache": "off"}


def run_set(n: Sql, server) -> dict[str, dict]:
    """Every question in order, the scripted reply pushed only when the node will call the model."""
    outs = {}
    for q in QUESTIONS:
        before = len(server.requests)
        server.push(reply(q["id"]))
        outs[q["id"]] = ask(n, q["question"], q["lang"])
        if len(server.requests) == before:  # slot filling or an exclude word answered: no call was made
            server.script.clear()
    return outs


def figures(outs: dict[str, dict]) -> tuple[int, int, int]:
    """(correct routes, sql-routed structured questions whose rows state the gold values, llm fallbacks)."""
    gold = {q["id"]: q["gold_route"] for q in QUESTIONS}
    routes = sum(o["route"] == gold[i] for i, o in outs.items())
    rows = sum(o["route"] == "sql" and states(" ".join(o["evidence_text"].values()), i)
               for i, o in outs.items() if i in GOLD_VALUES)
    return routes, rows, sum("llm_fallback" in o for o in outs.values())


def test_text2sql_alone_on_the_eval_set_is_the_reports(fault_server, llm):
    n = make(slot_filling=False, llm=llm)
    outs = run_set(n, fault_server)
    assert {i for i, o in outs.items() if "llm_fallback" in o} == {"s13", "s14", "s23"}
    assert outs["s13"]["llm_fallback"]["kind"] == "unsafe_sql" and outs["s14"]["llm_fallback"]["kind"] == "bad_sql"
    assert outs["s23"]["route"] == "text" and "DROP TABLE products" in outs["s23"]["sql"]["query"]
    assert n.db.query("SELECT count(*) FROM products").rows == ((4,),)
    routes, rows, fallbacks = figures(outs)
    assert report_figure("Text2SQL alone route accuracy") == (routes, len(QUESTIONS))
    assert report_figure("Text2SQL alone: rows holding the gold values") == (rows, len(GOLD_VALUES))
    assert (routes, rows, fallbacks) == (24, 14, 3)  # s13 and s14 fall back to text; s23 is refused, rightly text


def test_slots_then_text2sql_on_the_eval_set_is_the_reports(fault_server, llm):
    outs = run_set(make(llm=llm), fault_server)
    called = {i for i, o in outs.items() if o["sql"]["source"] == "llm"}
    assert called == {"s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26"}
    assert outs["s25"]["sql"]["row_ids"] == ["products:LX-300"] and outs["s25"]["route_source"] == "llm"
    assert outs["s26"]["sql"]["row_ids"] == ["price_list:LX200-STD", "price_list:LX200-4G"]
    routes, rows, fallbacks = figures(outs)
    assert report_figure("slot filling, then Text2SQL route accuracy") == (routes, len(QUESTIONS))
    assert report_figure("slot filling, then Text2SQL: rows holding the gold values") == (rows, len(GOLD_VALUES))
    assert fallbacks == 1  # s23's DROP TABLE


def test_the_model_sees_the_schema_retrieved_for_the_question(fault_server, llm):
    fault_server.push(reply("s26"))
    ask(make(llm=llm, slot_filling=False), QUESTIONS[25]["question"], "zh")
    prompt = fault_server.requests[0].body["messages"][-1]["content"]
    assert "TABLE price_list" in prompt and "price_cny INTEGER  -- 目录价 / list price; unit 元" in prompt
    assert "TABLE products" not in prompt and "目录价低于 5,000 元" in prompt


@pytest.mark.parametrize("script, kind", [(("500",), "server_error"), (("text:{oops", "text:<html>"), "bad_json"),
                                          (("text:" + json.dumps({"sql": 42}),), "bad_json")])
def test_an_llm_down_or_lying_falls_back_to_text_and_is_recorded(fault_server, llm, script, kind):
    fault_server.push(*script)
    out = ask(make(llm=llm, slot_filling=False), "Which product has the highest IP rating?")
    assert out["route"] == "text" and out["route_source"] == "default" and out["llm_fallback"]["kind"] == kind
    assert out["llm_fallback"]["node"] == "sql" and out["evidence"] == []


def test_a_slow_llm_query_is_stopped_and_recorded(fault_server, llm):
    fault_server.push("text:" + json.dumps({"sql": "SELECT count(*) FROM price_list a, price_list b, price_list c, "
                                                   "price_list d, price_list e, price_list f"}))
    out = ask(make(llm=llm, slot_filling=False, timeout_s=0.05), "How many price combinations are there?")
    assert out["route"] == "text" and out["llm_fallback"]["kind"] == "timeout"
    assert out["sql"]["rejected"].startswith("timeout: the query ran past its 0.05 s limit")


def test_a_null_reply_means_the_tables_cannot_answer(fault_server, llm):
    fault_server.push("text:" + json.dumps({"sql": None, "reason": "a travel policy question"}))
    out = ask(make(llm=llm, slot_filling=False), "每晚住宿标准是多少？", "zh")
    assert out["route"] == "text" and out["route_source"] == "llm" and "llm_fallback" not in out
    assert "a travel policy question" in out["sql"]["rejected"]


# --- answers: the structured route through the extractive generator -------------------------
def test_structured_answers_through_the_generator_are_the_reports(tmp_path: Path):
    """The sql node, then the bundled config's extractive generator; the text route ends in the fallback
    (no retrieval: nothing to encode). route_accuracy is evalkit's own figure; answer correctness here is
    the share of the 16 structured questions whose answer states the table's values."""
    from evalkit.evalsets import load_eval_set
    from evalkit.run.runner import RunOptions, run_eval
    from evalkit.runstore import read_results

    params = sql_params()
    for spec in params["tables"].values():
        spec["path"] = str((CONFIG.parent / spec["path"]).resolve())
    gen = load_graph_config(CONFIG).to_dict()["nodes"]["generate"]
    config = {"name": "sql_answers", "chunking": {"method": "document"},
              "nodes": {"sql": {"type": "sql", "params": params}, "generate": gen, "fallback": {"type": "fallback"}},
              "edges": {"start": "sql", "sql": "fallback", "generate": "end", "fallback": "end"},
              "routes": {"sql": {"field": "route", "cases": {"sql": "generate"}}}}
    out = tmp_path / "out.json"
    summary = run_eval(load_eval_set(f"{REPO / 'eval_sets' / 'demo_structured.jsonl'}@v1"), [config_from_dict(config)],
                       RunOptions(output=out, progress=False, mlflow=False), echo=lambda m: None)
    rows = {r.query_id: r for r in read_results(out.with_suffix("") / "sql_answers" / "per_query.jsonl")}
    m = summary.variants["sql_answers"].metrics
    assert m["route_accuracy"] == pytest.approx(24 / 26)
    correct = [q for q in GOLD_VALUES if states(rows[q].generation["answer"], q)]
    assert report_figure("offline answers stating the table's values") == (len(correct), len(GOLD_VALUES))
    # every sql-routed answer cites the row's source document, which is gold
    assert all(rows[q].generation["used_documents"] == ["prod-016"] for q in ("s01", "s02", "s03", "s04", "s13"))
