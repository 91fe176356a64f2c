"""``evalkit import dataset|ragas``: datasets folders, parquet and JSONL in; corpus + frozen eval set out.

Fixtures are built in tmp_path (``datasets.Dataset.from_dict(...).save_to_disk``; no downloads):

  passages  p1..p4 (columns pid, passage, heading, source -> metadata)
  questions r1 -> [p1]          single
            r2 -> [p2, p3]      two gold passages
            r3 -> []            no gold: skipped (or kept as unanswerable)
            r4 -> "p4"          a single id instead of a list: accepted

  ragas     row 1: reference [A], retrieved [A, B]         A appears twice: one document
            row 2: reference [B, C] (multi_hop synthesizer), retrieved [" B "]  (same text as B)
            row 3: no reference contexts, retrieved [C]     skipped (its contexts still join the corpus)
            -> 3 documents A, B, C; 4 repeated contexts deduplicated
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import EvalkitError
from evalkit.evalsets import load_eval_set
from evalkit.importers import ImportFormatError
from evalkit.interop.importers import EVAL_FIELDS, context_id, import_dataset, import_ragas, parse_mapping, read_rows

PASSAGES = {"pid": ["p1", "p2", "p3", "p4"], "passage": ["Aspirin lowers fever.", "Statins lower cholesterol.",
                                                           "Diet lowers cholesterol.", "Vitamin D and bones."],
            "heading": ["Aspirin", "Statins", "Diet", None], "source": ["wiki", "wiki", "pubmed", "wiki"]}
QUESTIONS = {"qid": ["r1", "r2", "r3", "r4"],
             "query": ["Does aspirin lower fever?", "What lowers cholesterol?", "Is coffee healthy?",
                       "What helps bones?"],
             "positive_ids": [["p1"], ["p2", "p3"], [], ["p4"]],
             "answer": ["Yes.", "Statins and diet.", None, "Vitamin D."]}
MAP = ["id=qid", "question=query", "relevant_doc_ids=positive_ids", "reference_answer=answer"]
CORPUS_MAP = ["id=pid", "text=passage", "title=heading"]

A, B, C = "Aspirin lowers fever.", "Statins lower cholesterol.", "Diet lowers cholesterol."
RAGAS = {"user_input": ["Does aspirin help?", "What lowers cholesterol?", "Unknown?"],
         "reference_contexts": [[A], [B, C], []], "retrieved_contexts": [[A, B], [f" {B} "], [C]],
         "reference": ["Yes.", "Statins and diet.", None], "response": ["yes", "statins", "no idea"],
         "synthesizer_name": ["single_hop_specific_query_synthesizer", "multi_hop_abstract_query_synthesizer",
                              "single_hop_specific_query_synthesizer"]}


def save_hf(folder: Path, data: dict) -> Path:
    import datasets

    datasets.Dataset.from_dict(data).save_to_disk(str(folder))
    return folder


def corpus_parquet(tmp: Path) -> Path:
    path = tmp / "passages.parquet"
    pd.DataFrame(PASSAGES).to_parquet(path)
    return path


def _import(tmp: Path, source: Path, **kw):
    kw.setdefault("mapping", parse_mapping(MAP, EVAL_FIELDS))
    kw.setdefault("corpus_mapping", parse_mapping(CORPUS_MAP, ("id", "title", "text"), "--corpus-map"))
    kw.setdefault("corpus", corpus_parquet(tmp))
    return import_dataset(source, "qa", tmp / "eval_sets", **kw)


def test_hf_dataset_with_mapping_round_trips(tmp_path: Path):
    result = _import(tmp_path, save_hf(tmp_path / "hf", QUESTIONS))
    es = load_eval_set(str(result.eval_set_path))          # frozen v1, gold ids checked against the corpus
    assert es.version == 1 and [r.id for r in es.records] == ["r1", "r2", "r4"]
    r2 = es.records[1]
    assert r2.question == "What lowers cholesterol?" and r2.relevant_doc_ids == ("p2", "p3")
    assert r2.type == "single" and r2.lang == "en" and r2.reference_answer == "Statins and diet."
    assert r2.tags == ("dataset", "qa")
    docs = {d.id: d for d in es.corpus.documents}
    assert docs["p3"].text == "Diet lowers cholesterol." and docs["p3"].title == "Diet"
    assert docs["p3"].metadata == {"source": "pubmed"} and docs["p4"].title == ""
    assert result.n_rows == 4 and result.n_records == 3 and result.n_no_gold == 1
    assert result.columns["question"] == "query" and "skipped   1 rows" in "\n".join(result.lines())


def test_keep_unanswerable_and_default_ids(tmp_path: Path):
    data = {k: v for k, v in QUESTIONS.items() if k != "qid"}
    result = _import(tmp_path, save_hf(tmp_path / "hf", data), keep_unanswerable=True,
                     mapping=parse_mapping(MAP[1:], EVAL_FIELDS))
    es = load_eval_set(str(result.eval_set_path))
    assert [r.id for r in es.records] == ["qa-q00001", "qa-q00002", "qa-q00003", "qa-q00004"]
    assert es.records[2].type == "unanswerable" and es.records[2].relevant_doc_ids == ()


def test_jsonl_and_parquet_sources_and_splits(tmp_path: Path):
    import datasets

    rows = [dict(zip(QUESTIONS, values, strict=True)) for values in zip(*QUESTIONS.values(), strict=True)]
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    first = _import(tmp_path, jsonl)
    parquet = tmp_path / "q.parquet"
    pd.DataFrame(QUESTIONS).to_parquet(parquet)
    second = _import(tmp_path, parquet, force=True)
    assert first.version["sha256"] == second.version["sha256"]   # same records, whatever the container
    dd = datasets.DatasetDict({"train": datasets.Dataset.from_dict(QUESTIONS),
                               "test": datasets.Dataset.from_dict(QUESTIONS)})
    dd.save_to_disk(str(tmp_path / "dd"))
    third = _import(tmp_path, tmp_path / "dd", split="test", force=True)
    assert third.version["sha256"] == first.version["sha256"]
    with pytest.raises(ImportFormatError, match="choose one with --split"):
        read_rows(tmp_path / "dd")
    with pytest.raises(ImportFormatError, match="did you mean 'test'"):
        read_rows(tmp_path / "dd", split="tset")
    label, got, columns = read_rows(tmp_path / "dd", split="train")
    assert label.endswith("dd[train]") and got[0][0] == 1 and "query" in columns


def test_hf_corpus_and_single_id_gold(tmp_path: Path):
    data = dict(QUESTIONS, positive_ids=["p1", "p2", "p3", "p4"])   # one id per row, not a list
    result = _import(tmp_path, save_hf(tmp_path / "hf", data), corpus=save_hf(tmp_path / "corpus", PASSAGES))
    es = load_eval_set(str(result.eval_set_path))
    assert [r.relevant_doc_ids for r in es.records] == [("p1",), ("p2",), ("p3",), ("p4",)]


# ---------------------------------------------------------------- errors


def test_mapping_errors():
    with pytest.raises(EvalkitError, match="did you mean 'question'"):
        parse_mapping(["questoin=query"], EVAL_FIELDS)
    with pytest.raises(EvalkitError, match="FIELD=COLUMN"):
        parse_mapping(["question"], EVAL_FIELDS)
    with pytest.raises(EvalkitError, match="mapped twice"):
        parse_mapping(["question=a", "question=b"], EVAL_FIELDS)


def test_located_errors(tmp_path: Path):
    hf = save_hf(tmp_path / "hf", QUESTIONS)
    with pytest.raises(ImportFormatError, match="no column 'querry'; did you mean 'query'"):
        _import(tmp_path, hf, mapping={"question": "querry", "relevant_doc_ids": "positive_ids"})
    with pytest.raises(ImportFormatError, match=r"no column 'relevant_doc_ids' \(columns: qid, query"):
        _import(tmp_path, hf, mapping={"question": "query"})
    bad = save_hf(tmp_path / "bad", dict(QUESTIONS, positive_ids=[["p1"], ["p2"], [], ["p9"]]))
    with pytest.raises(ImportFormatError) as info:
        _import(tmp_path, bad)
    err = info.value
    assert err.line == 4 and err.where == "relevant_doc_ids (column 'positive_ids')" and "'p9'" in str(err)
    wrong_type = save_hf(tmp_path / "wt", dict(QUESTIONS, kind=["single", "multihop", "single", "single"]))
    with pytest.raises(ImportFormatError) as info:
        _import(tmp_path, wrong_type, mapping=parse_mapping([*MAP, "type=kind"], EVAL_FIELDS))
    assert info.value.line == 2 and info.value.where == "type (column 'kind')" and "multi_hop" in str(info.value)
    dupes = tmp_path / "dupes.jsonl"
    dupes.write_text('{"pid": "p1", "passage": "a", "heading": null}\n{"pid": "p1", "passage": "b", "heading": "B"}\n')
    with pytest.raises(ImportFormatError, match=r"dupes.jsonl:2: id \(column 'pid'\): duplicate document id 'p1'"):
        _import(tmp_path, hf, corpus=dupes)
    with pytest.raises(ImportFormatError, match="unknown file type"):
        read_rows(_touch(tmp_path / "x.txt"))


def _touch(path: Path) -> Path:
    path.write_text("x")
    return path


def test_existing_output_needs_force(tmp_path: Path):
    hf = save_hf(tmp_path / "hf", QUESTIONS)
    _import(tmp_path, hf)
    with pytest.raises(EvalkitError, match="already exists"):
        _import(tmp_path, hf)
    assert _import(tmp_path, hf, force=True).version["version"] == 1


# ---------------------------------------------------------------- ragas


def test_ragas_contexts_become_a_deduplicated_corpus(tmp_path: Path):
    result = import_ragas(save_hf(tmp_path / "ragas", RAGAS), "rg", tmp_path / "eval_sets")
    es = load_eval_set(str(result.eval_set_path))
    assert [d.id for d in es.corpus.documents] == [context_id(A), context_id(B), context_id(C)]
    assert context_id(f"  {B}\n") == context_id(B) and context_id(B).startswith("ctx-") and len(context_id(B)) == 20
    q1, q2 = es.records
    assert q1.relevant_doc_ids == (context_id(A),) and q1.type == "single" and q1.reference_answer == "Yes."
    assert q2.relevant_doc_ids == (context_id(B), context_id(C)) and q2.type == "multi_hop"
    assert q1.id == "rg-q00001" and q1.tags == ("ragas", "rg")
    assert es.corpus.by_id[context_id(A)].metadata == {"ragas_field": "reference_contexts", "first_row": 1}
    assert result.n_duplicate_contexts == 4 and result.n_no_gold == 1
    assert result.n_responses == 2 and result.n_responses_ignored == 1  # the third row has no gold: not imported


def test_ragas_responses_are_kept_as_an_answers_file_that_scores(tmp_path: Path):
    """``response`` is a system's output: not eval data, but not dropped either (issue 12).

    It is written beside the eval set as an ``evalkit score --answers`` file of the kept
    records, and the printed command scores it. The third row has no gold document, so it
    is not in the eval set: scoring the original ragas file against the imported set (the
    command printed before) failed on it.
    """
    import json

    from click.testing import CliRunner

    from evalkit.cli import cli

    src = tmp_path / "ragas.jsonl"
    rows = [{"user_input": "发票审批要求是什么？", "retrieved_contexts": ["电子发票超过五千元需要总监审批。", B],
             "reference_contexts": ["电子发票超过五千元需要总监审批。"], "reference": "超过五千元需总监审批",
             "response": "电子发票超过五千元需要总监审批。"},
            {"user_input": "What lowers cholesterol?", "retrieved_contexts": [A, B], "reference_contexts": [B],
             "reference": "Statins.", "response": "Statins raise cholesterol by 40 percent."},
            {"user_input": "Unknown?", "retrieved_contexts": [C], "reference_contexts": [], "response": "no idea"}]
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    runner = CliRunner()
    res = runner.invoke(cli, ["import", "ragas", str(src), "--name", "rg", "--out-dir", str(tmp_path / "es"),
                              "--lang", "zh"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    answers = tmp_path / "es" / "rg.responses.jsonl"
    assert [json.loads(x) for x in answers.read_text(encoding="utf-8").splitlines()] == [
        {"id": "rg-q00001", "question": rows[0]["user_input"], "answer": rows[0]["response"],
         "contexts": rows[0]["retrieved_contexts"]},
        {"id": "rg-q00002", "question": rows[1]["user_input"], "answer": rows[1]["response"],
         "contexts": rows[1]["retrieved_contexts"]}]
    command = f"--answers {answers} --eval-set {tmp_path / 'es' / 'rg.jsonl'}@v1"
    assert command in res.output and "ignored   1 'response'" in res.output
    out = tmp_path / "scored.json"
    res = runner.invoke(cli, ["score", *command.split(), "--name", "sys", "--output", str(out), "--no-mlflow"],
                        catch_exceptions=False)
    assert res.exit_code == 0, res.output
    scored = [json.loads(x) for x in (tmp_path / "scored" / "sys" / "per_query.jsonl").read_text().splitlines()]
    # hand count: q1 gold ranked 1st, q2 gold (B) ranked 2nd; q1 answered from its context, q2 not
    assert [r["metrics"]["mrr@10"] for r in scored] == [1.0, 0.5]
    assert [r["metrics"]["hallucinated"] for r in scored] == [0.0, 1.0]
    # a re-import without responses leaves no answers file from before
    src.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "response"}, ensure_ascii=False) + "\n"
                           for r in rows), encoding="utf-8")
    res = runner.invoke(cli, ["import", "ragas", str(src), "--name", "rg", "--out-dir", str(tmp_path / "es"),
                              "--force"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert not answers.exists() and "kept as an answers file" not in res.output


def test_ragas_mapping_and_errors(tmp_path: Path):
    renamed = {("question" if k == "user_input" else k): v for k, v in RAGAS.items()}
    src = save_hf(tmp_path / "renamed", renamed)
    with pytest.raises(ImportFormatError, match="no column 'user_input'"):
        import_ragas(src, "rg", tmp_path / "out")
    result = import_ragas(src, "rg", tmp_path / "out", mapping={"user_input": "question"}, include_retrieved=False,
                          keep_unanswerable=True)
    assert result.n_documents == 3 and result.n_records == 3 and result.n_unanswerable_kept == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"user_input": "q", "reference_contexts": "not a list"}\n')
    with pytest.raises(ImportFormatError, match="bad.jsonl:1: reference_contexts: expected a list of context strings"):
        import_ragas(bad, "rg2", tmp_path / "out")


def test_ragas_evaluation_dataset_round_trip(tmp_path: Path, monkeypatch):
    """Files written by ragas itself (EvaluationDataset.to_jsonl / to_hf_dataset) import to the same eval set."""
    monkeypatch.setenv("RAGAS_DO_NOT_TRACK", "true")
    ragas = pytest.importorskip("ragas")
    samples = [{k: RAGAS[k][i] for k in ("user_input", "reference_contexts", "retrieved_contexts", "reference",
                                          "response")} for i in range(2)]
    ds = ragas.EvaluationDataset.from_list(samples)
    ds.to_jsonl(str(tmp_path / "testset.jsonl"))
    ds.to_hf_dataset().save_to_disk(str(tmp_path / "testset_hf"))
    a = import_ragas(tmp_path / "testset.jsonl", "a", tmp_path / "out")
    b = import_ragas(tmp_path / "testset_hf", "b", tmp_path / "out")
    assert a.eval_set_path.read_text().replace('"a"', '"x"').replace("a-q", "x-q") == \
        b.eval_set_path.read_text().replace('"b"', '"x"').replace("b-q", "x-q")
    assert a.corpus_path.read_text() == b.corpus_path.read_text() and a.n_records == 2


# ---------------------------------------------------------------- CLI


def test_cli_dataset_and_ragas(tmp_path: Path):
    runner = CliRunner()
    hf = save_hf(tmp_path / "hf", QUESTIONS)
    args = ["import", "dataset", str(hf), "--corpus", str(corpus_parquet(tmp_path)), "--name", "qa",
            "--out-dir", str(tmp_path / "es")]
    for m in MAP:
        args += ["--map", m]
    for m in CORPUS_MAP:
        args += ["--corpus-map", m]
    res = runner.invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert "3 records from 4 rows" in res.output and "@v1" in res.output
    res = runner.invoke(cli, [*args, "--force", "--map", "question=querry"])
    assert res.exit_code == 1 and "field 'question' mapped twice" in res.output
    res = runner.invoke(cli, [*(a.replace("question=query", "question=querry") for a in args), "--force"])
    assert res.exit_code == 1 and "no column 'querry'; did you mean 'query'" in res.output
    res = runner.invoke(cli, ["import", "ragas", str(save_hf(tmp_path / "rg", RAGAS)), "--name", "rg",
                              "--out-dir", str(tmp_path / "es")])
    assert res.exit_code == 0, res.output
    assert "deduped   4 repeated contexts" in res.output and "ignored   1 'response'" in res.output
    assert "responses 2 'response' values" in res.output and "rg.responses.jsonl" in res.output


def test_context_columns_are_imported_and_checked(tmp_path: Path):
    rows = [{"qid": "r1", "query": "What about tier-2 cities?", "positive_ids": ["p1"], "customer": "acme",
             "turns": [{"role": "user", "content": "Hotel cap in tier-1 cities?"}], "gold_route": "vector",
             "attributes": {"dept": "finance"}},
            {"qid": "r2", "query": "What lowers cholesterol?", "positive_ids": ["p2"]}]
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    mapping = parse_mapping([*MAP[:3], "tenant=customer", "history=turns"], EVAL_FIELDS)
    _import(tmp_path, jsonl, mapping=mapping)
    first, second = load_eval_set(tmp_path / "eval_sets" / "qa.jsonl").records
    assert first.tenant == "acme" and first.gold_route == "vector" and first.attributes == {"dept": "finance"}
    assert first.history == ({"role": "user", "content": "Hotel cap in tier-1 cities?"},)
    assert second.tenant is None and second.history == () and second.attributes == {}
    rows[0]["turns"] = [{"role": "bot", "content": "hi"}]
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(EvalkitError, match=r"history\[0\].role: expected one of user, assistant"):
        _import(tmp_path, jsonl, mapping=mapping, force=True)
