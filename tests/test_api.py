"""``evalkit.evaluate`` / ``evalkit.score`` / ``Results``: the notebook path over the CLI's own code and files.

Checked against the CLI on the same inputs (the same numbers and tables), for every form
an eval set and a graph config can take; in-memory eval sets are frozen by content (same
rows -> same eval set, a changed row -> another one), bad rows are located errors, and
``import evalkit`` loads nothing heavy.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import evalkit
from evalkit.cli import cli
from evalkit.errors import EvalkitError, EvalSetError
from evalkit.evalsets import freeze, load_eval_set
from evalkit.graph import config_from_dict

REPO = Path(__file__).resolve().parents[1]
DOCS = [{"id": "fin-001", "title": "Invoices", "text": "Electronic invoices above 5000 yuan need a director."},
        {"id": "fin-002", "title": "Hotels", "text": "The hotel allowance is 600 yuan per night."},
        {"id": "it-001", "title": "Laptops", "text": "Broken laptops are repaired by IT within three days."},
        {"id": "hr-001", "title": "Leave", "text": "Parents get ten days of parental leave after a birth."}]
ROWS = [{"id": "a1", "question": "invoice above 5000 approval", "relevant_doc_ids": ["fin-001"]},
        {"id": "a2", "question": "hotel allowance per night", "relevant_doc_ids": ["fin-002"],
         "reference_answer": "600 yuan"},
        {"id": "a3", "question": "laptop broken repair", "relevant_doc_ids": ["it-001"], "type": "colloquial"},
        {"id": "a4", "question": "what is the CEO salary", "relevant_doc_ids": []}]
BM25 = {"name": "bm25", "nodes": {"retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "en"}}}},
        "edges": {"start": "retrieve", "retrieve": "end"}}
OKAPI = {**BM25, "name": "okapi", "nodes": {"retrieve": {"type": "retrieve", "params": {
    "bm25": {"tokenizer": "en", "k1": 1.2, "b": 0.75, "stem": False}}}}}


def test_import_evalkit_is_cheap():
    code = ("import sys, evalkit; heavy = [m for m in ('torch', 'mlflow', 'pandas', 'faiss', 'ragas', "
            "'sentence_transformers', 'datasets', 'evalkit.graph') if m in sys.modules]; print(heavy); "
            "evalkit.evaluate; print([m for m in ('torch', 'mlflow', 'pandas') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "[]"]
    assert {"evaluate", "score", "load_results", "Results"} <= set(dir(evalkit))


@pytest.fixture
def file_set(tmp_path: Path) -> Path:
    (tmp_path / "es" / "corpora").mkdir(parents=True)
    corpus = tmp_path / "es" / "corpora" / "api.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    path = tmp_path / "es" / "api.jsonl"
    full = [{"type": "single" if r["relevant_doc_ids"] else "unanswerable", "lang": "en", **r} for r in ROWS]
    path.write_text("".join(json.dumps(r) + "\n" for r in full))
    freeze(path, corpus=str(corpus))
    return path


def test_evaluate_matches_the_cli_for_every_config_form(tmp_path: Path, file_set: Path):
    (tmp_path / "bm25.yaml").write_text(json.dumps(BM25))  # JSON is YAML
    res = CliRunner().invoke(cli, ["run", "--eval-set", f"{file_set}@v1", "--graph-config", str(tmp_path / "bm25.yaml"),
                                   "--output", str(tmp_path / "cli.json"), "--no-mlflow", "--no-progress"])
    assert res.exit_code == 0, res.output
    cli_summary = json.loads((tmp_path / "cli.json").read_text())
    for form in (tmp_path / "bm25.yaml", BM25, config_from_dict(BM25)):
        out = tmp_path / f"api_{type(form).__name__}.json"
        results = evalkit.evaluate(load_eval_set(f"{file_set}@v1") if isinstance(form, dict) else f"{file_set}@v1",
                                   [form, OKAPI], output=out, mlflow=False, progress=False)
        assert results.summary.loc["bm25"][list(cli_summary["variants"]["bm25"]["metrics"])].to_dict() == \
            cli_summary["variants"]["bm25"]["metrics"]
        assert results.results("bm25")[0].metrics == evalkit.load_results(tmp_path / "cli.json").results("bm25")[0].metrics
    # configs given in memory are kept beside their records, and read back by compare/report
    assert (tmp_path / "api_dict.json").with_suffix("").joinpath("okapi", "config.yaml").is_file()
    assert results.run.config("okapi").to_dict() == config_from_dict(OKAPI).to_dict()


def test_results_tables_compare_and_report_are_the_clis(tmp_path: Path, file_set: Path):
    out = tmp_path / "r.json"
    results = evalkit.evaluate(f"{file_set}@v1", [BM25, OKAPI], output=out, mlflow=False, progress=False)
    df = results.to_pandas()
    assert len(df) == 8 and not df.columns.duplicated().any()
    for variant in ("bm25", "okapi"):
        rows = [json.loads(x) for x in (tmp_path / "r" / variant / "per_query.jsonl").read_text().splitlines()]
        mine = df[df["variant"] == variant].set_index("query_id")
        for r in rows:
            for m, v in r["metrics"].items():
                assert mine.loc[r["query_id"], m] == v
    summary = json.loads(out.read_text())["variants"]
    assert results.summary.loc["okapi", "ndcg@10"] == summary["okapi"]["metrics"]["ndcg@10"]
    assert results.summary.loc["okapi", "n_queries"] == 4
    comparison = results.compare("bm25", "okapi", resamples=300)
    res = CliRunner().invoke(cli, ["compare", str(out), "--variants", "bm25,okapi", "--resamples", "300",
                                   "--no-fusion"])
    assert res.exit_code == 0 and res.output.strip() == str(comparison).strip()
    html, md = results.report(tmp_path / "rep" / "r.html", resamples=200)
    assert html.is_file() and md == tmp_path / "rep" / "r.md" and "okapi" in md.read_text()
    # a variant of another run of the same eval set pairs too
    other = evalkit.evaluate(f"{file_set}@v1", [BM25], output=tmp_path / "o.json", mlflow=False, progress=False)
    assert str(results.compare("bm25", (other, "bm25"), resamples=200)).count("+0.0000") >= 4
    with pytest.raises(EvalkitError, match="okapy"):
        results.compare("bm25", "okapy")


def test_in_memory_eval_sets_are_frozen_by_content(tmp_path: Path, file_set: Path, monkeypatch):
    monkeypatch.setenv("EVALKIT_CACHE", str(tmp_path / "cache"))
    from_list = evalkit.evaluate(ROWS, BM25, corpus=DOCS, name="mine", output=tmp_path / "l.json", mlflow=False,
                                 progress=False)
    frame = pd.DataFrame(ROWS)  # lists become arrays, missing cells NaN: the same eval set all the same
    from_frame = evalkit.evaluate(frame, BM25, corpus=pd.DataFrame(DOCS), name="mine", output=tmp_path / "f.json",
                                  mlflow=False, progress=False)
    assert from_list.eval_set.name == from_frame.eval_set.name and from_list.eval_set.name.startswith("mine-")
    assert from_list.eval_set.sha256 == from_frame.eval_set.sha256
    assert len(list((tmp_path / "cache" / "evalsets").iterdir())) == 1
    frozen = load_eval_set(f"{from_list.eval_set.path}@v1")  # an ordinary frozen eval set in the cache
    assert [r.type for r in frozen.records] == ["single", "single", "colloquial", "unanswerable"]
    on_file = evalkit.evaluate(f"{file_set}@v1", BM25, output=tmp_path / "file.json", mlflow=False, progress=False)
    assert from_list.summary.loc["bm25"].to_dict() | {"seconds": 0} == on_file.summary.loc["bm25"].to_dict() | \
        {"seconds": 0}
    edited = [dict(ROWS[0], question="invoice approval"), *ROWS[1:]]
    other = evalkit.evaluate(edited, BM25, corpus=DOCS, name="mine", output=tmp_path / "e.json", mlflow=False,
                             progress=False)
    assert other.eval_set.name != from_list.eval_set.name
    res = CliRunner().invoke(cli, ["compare", str(tmp_path / "l.json"), str(tmp_path / "e.json"),
                                   "--variants", "l:bm25,e:bm25"])
    assert res.exit_code != 0 and "different eval sets" in str(res.exception)


@pytest.mark.parametrize("rows, where", [
    ([{"question": "q?", "relevant_doc_ids": "fin-001"}], ":1: relevant_doc_ids: expected a list"),
    ([{"question": "q?", "relevant_doc_ids": ["fin-001"]}, {"question": "", "relevant_doc_ids": []}],
     ":2: question: expected a non-empty string"),
    ([{"question": "q?", "relevant_doc_ids": ["fin-001"], "typ": "single"}], ":1: typ: unknown field"),
])
def test_bad_rows_name_the_row_and_field(tmp_path: Path, rows, where):
    with pytest.raises(EvalSetError, match=where):
        evalkit.evaluate(rows, BM25, corpus=DOCS, output=tmp_path / "x.json", mlflow=False, cache_root=tmp_path)


def test_rows_need_a_corpus_and_known_gold(tmp_path: Path):
    with pytest.raises(EvalkitError, match="needs its corpus"):
        evalkit.evaluate(ROWS, BM25, output=tmp_path / "x.json", mlflow=False, cache_root=tmp_path)
    with pytest.raises(EvalSetError, match="fin-404"):
        evalkit.evaluate([{"question": "q?", "relevant_doc_ids": ["fin-404"]}], BM25, corpus=DOCS,
                         output=tmp_path / "x.json", mlflow=False, cache_root=tmp_path)


def test_a_graph_config_of_another_kind_is_a_clear_error(tmp_path: Path):
    # found by mypy over the whole package: anything but a path, dict or GraphConfig reached Path() (a TypeError)
    with pytest.raises(EvalkitError, match="graph_configs: got a int; give a config file path"):
        evalkit.evaluate(ROWS, [BM25, 42], corpus=DOCS, output=tmp_path / "x.json", mlflow=False,
                         cache_root=tmp_path)


def test_score_mirrors_the_cli_and_takes_rows(tmp_path: Path, file_set: Path):
    answers = [{"id": "a1", "answer": "A director approves invoices above 5000 yuan [fin-001].",
                "retrieved": ["fin-001", "fin-002"]},
               {"id": "a2", "answer": "The allowance is 900 yuan per night [fin-002].", "retrieved": ["fin-002"]}]
    path = tmp_path / "ans.jsonl"
    path.write_text("".join(json.dumps(a) + "\n" for a in answers))
    res = CliRunner().invoke(cli, ["score", "--answers", str(path), "--eval-set", f"{file_set}@v1", "--name", "sys",
                                   "--output", str(tmp_path / "cli.json"), "--no-mlflow"])
    assert res.exit_code == 0, res.output
    api = evalkit.score(answers=path, eval_set=f"{file_set}@v1", name="sys", output=tmp_path / "api.json",
                        mlflow=False)
    assert api.summary.loc["sys"].drop("seconds").to_dict() == \
        evalkit.load_results(tmp_path / "cli.json").summary.loc["sys"].drop("seconds").to_dict()
    texts = {d["id"]: d["text"] for d in DOCS}  # without an eval set, the evidence comes as texts
    own = [{"question": q["question"], "answer": a["answer"], "contexts": [texts[d] for d in a["retrieved"]]}
           for a, q in zip(answers, ROWS)]
    rows = evalkit.score(answers=own, name="sys", output=tmp_path / "rows.json", mlflow=False,
                         cache_root=tmp_path / "c")
    again = evalkit.score(answers=pd.DataFrame(own), name="sys", output=tmp_path / "rows2.json", mlflow=False,
                          cache_root=tmp_path / "c")
    assert rows.eval_set.kind == "answers_file" and rows.eval_set.sha256 == again.eval_set.sha256
    # a1's only claim repeats the question (not checkable); a2's "900 yuan" is not in its evidence
    assert rows.summary.loc["sys", "hallucination_rate"] == api.summary.loc["sys", "hallucination_rate"] == 1.0
    assert rows.summary.loc["sys", "n_no_checkable_claims"] == 1
