"""Console tables: empty columns hidden, fitted to the width, --wide / --columns, split by concern.

The wide-run case is a summary with every metric a full ``evalkit demo`` run reports (the
names below are those of a demo run's ``summary.json``, values made up): 12 variants,
retrieval, guard, answer, loop and router metrics. Before this module it printed lines
of 226 (retrieval), 185 (answers) and 395 (other) characters.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.cells import cell_len

from evalkit.analysis import concerns
from evalkit.analysis.report import (
    comparison_markdown,
    comparison_table,
    summary_tables,
)
from evalkit.analysis.tables import (
    Column,
    ColumnsError,
    Layout,
    TableData,
    arrange,
    natural_width,
    render,
)
from evalkit.cli import cli
from evalkit.records import EvalSetRef, RunSummary, VariantSummary

REPO = Path(__file__).resolve().parents[2]
RETRIEVAL = ["recall@20", "hit@5", "mrr@10", "ndcg@10"]
GUARD = ["abstain_rate_answerable", "abstain_rate_unanswerable"]
ANSWERS = ["abstention_rate", "answer_em", "answer_f1", "citation_precision", "claim_hallucination_rate",
           "correct_abstention_rate", "faithfulness", "hallucination_rate", "invalid_citation_rate", "n_abstained",
           "n_answered", "n_judge_failed", "n_no_checkable_claims", "unanswerable_hallucination_rate"]
LOOPS = ["attempt2_hit@5", "attempt2_queries", "attempt2_recall@20", "attempt3_hit@5", "attempt3_queries",
         "attempt3_recall@20", "attempts_mean", "first_attempt_hit@5", "first_attempt_recall@20", "futile",
         "futile_rate", "futile_rewrites", "gate_fail_rate_first", "harm_rate", "harmed", "llm_fallbacks",
         "loop_llm_calls", "loop_llm_calls_per_rescue", "loop_ms", "loop_ms_mean", "loop_ms_per_rescue", "loop_rate",
         "loop_tokens", "rescue_rate", "rescued", "rescued_new_docs"]
ROUTES = ["route_share.graph", "route_share.hybrid", "route_share.keyword", "route_share.vector"]
DEMO = {"agent_scheduler": RETRIEVAL, "agentic_reflect": RETRIEVAL + ANSWERS + LOOPS, "bm25": RETRIEVAL,
        "graphrag_global": RETRIEVAL, "graphrag_local": RETRIEVAL, "hybrid_rrf": RETRIEVAL,
        "hybrid_rrf_rerank_guard": RETRIEVAL + GUARD, "hybrid_weighted": RETRIEVAL,
        "modular_rag": RETRIEVAL + GUARD + ANSWERS + LOOPS[6:], "rag_extractive": RETRIEVAL + GUARD + ANSWERS,
        "router": RETRIEVAL + ["llm_fallbacks"] + ROUTES, "vector": RETRIEVAL}


def _value(name: str, i: int) -> float:
    if concerns.is_count(name):
        return float(3 * i + 100)
    if name in ("attempts_mean", "loop_ms_mean", "loop_ms_per_rescue", "loop_llm_calls_per_rescue"):
        return 1.0 + i / 7
    return round(0.5 + i / 40, 4)


def demo_like() -> RunSummary:
    variants = {name: VariantSummary(metrics={m: _value(m, i) for m in names}, n_failed=0, n_queries=120,
                                     n_excluded=13, timing={"latency_ms_mean": 12.5 * i, "latency_ms_p95": 40.0 * i})
                for i, (name, names) in enumerate(DEMO.items())}
    return RunSummary(eval_set=EvalSetRef("demo_kb", 1, "ab" * 32, 120), variants=variants)


def _lines(text: str) -> list[str]:
    return text.splitlines()


def test_every_line_fits_120_and_nothing_is_lost_silently():
    summary = demo_like()
    text = comparison_table(summary, Layout(width=120))
    assert max(cell_len(line) for line in _lines(text)) <= 120
    shown = " ".join(text.split())
    every = {m for names in DEMO.values() for m in names}
    for m in every:                                             # each metric is a column or named as left out
        assert concerns.header(m) in shown or m in shown, m
    assert "not shown to fit 120 columns" in shown and "--wide shows every column" in shown


def test_split_by_concern_and_stars():
    titles = [t.title for t in summary_tables(demo_like())]
    assert titles == ["retrieval", "answers (generating variants; judged claims)", "agentic (reflection loops)",
                      "routes (share of queries per route)", "cost"]
    text = comparison_table(demo_like(), Layout(wide=True))
    retrieval = text.split("\n\n")[0]
    assert "first_attempt" not in retrieval and "faithful" not in retrieval   # no loop / answer column there
    vector = next(line for line in _lines(retrieval) if line.startswith("vector "))
    assert vector.split()[1:5] == ["0.7750*"] * 4               # the highest value of each column is starred
    answers = next(t for t in summary_tables(demo_like()) if t.title.startswith("answers"))
    halluc = [c.key for c in answers.columns].index("hallucination_rate")
    assert [r[halluc] for r in answers.rows] == ["0.5250*", "0.7000", "0.7250"]  # i = 1, 8, 9; lower is better
    loops = next(t for t in summary_tables(demo_like()) if t.title.startswith("agentic"))
    assert all("*" not in r[[c.key for c in loops.columns].index("loop_rate")] for r in loops.rows)  # descriptive


def test_wide_keeps_every_column_and_columns_choose():
    wide = comparison_table(demo_like(), Layout(wide=True))
    assert "not shown" not in wide and "loop_llm_calls_per_rescue" in wide and max(map(len, _lines(wide))) > 120
    chosen = comparison_table(demo_like(), Layout(columns=("hit@5", "faithfulness", "keyword")))
    headers = [line.split() for line in _lines(chosen) if line.startswith("variant")]
    assert headers == [["variant", "hit@5"], ["variant", "faithful"], ["variant", "keyword"]]
    with pytest.raises(ColumnsError, match="did you mean 'hit@5'"):
        comparison_table(demo_like(), Layout(columns=("hit@6",)))


def test_empty_columns_hidden_fit_drops_from_the_right_and_cjk_counts_double():
    t = TableData("t", [Column("name", numeric=False), Column("a"), Column("empty"), Column("b"), Column("c")],
                  [["变体一", "1", "-", "2", "3"], ["v2", "4", "", "5", "6"]])
    full = arrange([t], Layout(wide=True))[0]
    assert [c.key for c in full.columns] == ["name", "a", "b", "c"]
    width = natural_width(full)
    fitted = arrange([t], Layout(width=width - 1))[0]
    assert [c.key for c in fitted.columns] == ["name", "a", "b"] and "c" in fitted.notes[0]
    out = render([t], Layout(width=width))
    assert max(cell_len(line) for line in _lines(out)) <= width and "变体一" in out
    assert cell_len("变体一") == 6                               # rich measures CJK as two cells each


def test_markdown_twin_has_the_same_rows():
    md = comparison_markdown(demo_like())
    assert "| variant | recall@20 | hit@5 | mrr@10 | ndcg@10 | guard(ans) | guard(unans) |" in md
    assert md.count("| router |") == 4                           # retrieval, agentic, routes, cost


def test_run_cli_prints_fitted_tables(tmp_path: Path):
    """``evalkit demo`` (BM25 only, so it runs in seconds) through click: exit 0, every line <= 120."""
    out = tmp_path / "demo.json"
    res = CliRunner().invoke(cli, ["demo", "--config", "bm25", "--output", str(out)])
    assert res.exit_code == 0, res.output
    assert "\r" not in res.stderr and "bm25: 120/120 q (100%)" in res.stderr   # progress as lines in a log
    lines = _lines(res.stdout)
    tables = lines[:next(i for i, line in enumerate(lines) if line.startswith("summary: "))]  # then file paths
    assert len(tables) > 10 and max(cell_len(line) for line in tables) <= 120, max(tables, key=len)
    bm25 = next(line for line in lines if line.startswith("bm25 "))
    import json

    metrics = json.loads(out.read_text())["variants"]["bm25"]["metrics"]
    assert bm25.split()[1:5] == [f"{metrics[m]:.4f}" for m in RETRIEVAL]
    res = CliRunner().invoke(cli, ["demo", "--config", "bm25", "--output", str(out), "--no-progress",
                                   "--columns", "hit@5"])
    assert res.exit_code == 0
    assert next(line.split() for line in _lines(res.output) if line.startswith("variant")) == ["variant", "hit@5"]
