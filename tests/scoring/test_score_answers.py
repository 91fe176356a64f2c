"""``evalkit score --answers``: answers produced elsewhere, judged and scored as ``evalkit run`` scores its own.

Same-code check: a graph whose ``generate`` node gets scripted replies from a real HTTP
server (planted wrong numbers, an invalid citation, a refusal) is run; its answers and
evidence are written out as an answers file and re-scored: every per-query metric must be
equal. Hand counts check the aggregates. Hostile input: bad lines (file:line:field),
unknown ids (listed), repeats, edited questions, missing answers (failed, gated).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import LocatedError
from evalkit.evalsets import load_eval_set
from evalkit.graph import config_from_dict
from evalkit.index.chunking import chunk_corpus, with_defaults
from evalkit.index.corpus import load_corpus
from evalkit.run.runner import RunOptions, run_eval
from evalkit.scoring import score_answers, write_scored


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _graph(base_url: str) -> dict:
    llm = {"backend": "openai", "model": "scripted", "base_url": base_url, "cache": "off", "max_retries": 0}
    return {"name": "gen", "nodes": {
        "retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "en"}}},
        "generate": {"type": "generate", "params": {"llm": llm, "evidence_from": "retrieved", "evidence_k": 2}}},
        "edges": {"start": "retrieve", "retrieve": "generate", "generate": "end"}}


def _answers_of(rows: list[dict], tmp_path: Path) -> list[dict]:
    """A run's answers as an answers file holds them: answer, retrieved documents and the passages shown."""
    passages = chunk_corpus(load_corpus(tmp_path / "corpora" / "tiny.jsonl"), with_defaults(None))
    return [{"id": r["query_id"], "answer": r["generation"]["answer"],
             "retrieved": [d["doc_id"] for d in r["retrieved"]],
             "contexts": [{"doc_id": doc, "text": passages.text(pid)} for pid, doc, _ in r["generation"]["evidence"]]}
            for r in rows]


def test_answers_of_a_graph_run_rescore_to_the_same_metrics(tmp_path: Path, scripted_server, make_eval_set,
                                                            per_query, metrics):
    out, rows, _, scored = _run_then_score(
        tmp_path, scripted_server, make_eval_set, per_query, metrics,
        "text:Invoices above 5000 need director approval [doc-a].",
        "text:Error E-4013 means the battery controller failed [doc-d] [doc-zz].",
        "text:The hotel allowance is 900 per night [doc-b].",
        "text:The knowledge base does not contain this information.",
        "text:Parents get ten days of leave [doc-f].", "text:spare", "text:spare")
    assert [r.query_id for r in scored.results] == [r["query_id"] for r in rows]
    for ours, theirs in zip(rows, scored.results, strict=True):
        assert ours["generation"]["used_documents"] == theirs.generation["used_documents"]
        assert ours["generation"]["judgement"]["claims"] == theirs.generation["judgement"]["claims"] \
            if ours["generation"]["judgement"] else theirs.generation["judgement"] is None
    flat = [r["metrics"] for r in rows]  # the comparison has teeth: every kind of answer is in there
    assert {m.get("faithfulness") for m in flat} >= {0.0, 1.0}
    assert any(m["citations_invalid"] for m in flat) and any(m["abstained"] for m in flat)
    graph_summary = json.loads(out.read_text())["variants"]["gen"]["metrics"]
    scored_summary = write_scored(scored, RunOptions(output=tmp_path / "s.json", mlflow=False))
    assert scored_summary.variants["gen_scored"].metrics == graph_summary


ERROR_TEXTS = ('{"error":{"message":"Rate limit reached for gpt-4o on requests per min (RPM): Limit 500, Used 500, '
               'Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}',
               "Sorry, I am unable to answer at this time due to high demand. Please try again later.",
               "upstream connect error or disconnect/reset before headers. reset reason: connection failure")


def test_error_replies_degrade_a_run_and_a_scored_file_alike(tmp_path: Path, scripted_server, make_eval_set,
                                                             per_query, metrics):
    """The same replies, from a graph's generator and from an answers file: the same queries are degraded
    (error_reply), the same metrics come out, per query and per variant (q5, q6 retrieve nothing: no LLM call)."""
    out, rows, _, scored = _run_then_score(
        tmp_path, scripted_server, make_eval_set, per_query, metrics,
        f"text:{ERROR_TEXTS[0]}", "text:Error E-4012 means the battery controller failed [doc-d].",
        f"text:{ERROR_TEXTS[1]}", f"text:{ERROR_TEXTS[2]}", "text:spare", "text:spare")
    sick = [r["query_id"] for r in rows if r["generation"]["answer"] in ERROR_TEXTS]
    assert len(sick) == 3 and all([d["cause"] for d in r["degraded"]] == ["error_reply"]
                                  for r in rows if r["query_id"] in sick)
    for ours, theirs in zip(rows, scored.results, strict=True):
        assert theirs.generation["abstention"]["reason"] == ours["generation"]["abstention"]["reason"]
    graph_summary = json.loads(out.read_text())["variants"]["gen"]["metrics"]
    assert graph_summary["degraded.error_reply"] == 3.0
    scored_summary = write_scored(scored, RunOptions(output=tmp_path / "s.json", mlflow=False))
    assert scored_summary.variants["gen_scored"].metrics == graph_summary
    res = CliRunner().invoke(cli, ["gate", "--baseline", str(out), "--candidate", str(tmp_path / "s.json"),
                                   "--baseline-variant", "gen", "--candidate-variant", "gen_scored",
                                   "--metric", "hit@5", "--max-drop", "0.5"])
    assert res.exit_code == 0, res.output  # degraded alike: no more than the baseline


def test_an_error_reply_overrides_the_files_abstained_flag_unless_the_eval_set_keeps_it(tmp_path: Path,
                                                                                          tiny_es: Path):
    rows = [{"id": "q1", "answer": ERROR_TEXTS[1], "abstained": True, "retrieved": ["doc-a"]},  # an outage, flagged
            {"id": "q4", "answer": "No relevant information.", "abstained": True, "retrieved": []},  # a real refusal
            {"id": "q5", "answer": "Service Unavailable", "retrieved": []}]
    by = {r.query_id: r for r in score_answers(_write(tmp_path / "a.jsonl", rows), "mine", eval_set=f"{tiny_es}@v1",
                                               metrics=("hit@5",)).results}
    assert [d["cause"] for d in by["q1"].degraded] == ["error_reply"] and "abstained" not in by["q1"].metrics
    assert by["q4"].metrics["abstained"] == 1.0 and not by["q4"].degraded
    assert [d["cause"] for d in by["q5"].degraded] == ["error_reply"]
    # the eval set's not_patterns: this domain's "Service Unavailable" is an answer (a product status, say)
    tiny_es.with_name("tiny.abstention.yaml").write_text('not_patterns: ["^Service Unavailable$"]\n', encoding="utf-8")
    by = {r.query_id: r for r in score_answers(_write(tmp_path / "a.jsonl", rows), "mine", eval_set=f"{tiny_es}@v1",
                                               metrics=("hit@5",)).results}
    assert not by["q5"].degraded and by["q5"].metrics["answered"] == 1.0
    assert by["q5"].generation["abstention"]["reason"] == "user_not_pattern"
    assert [d["cause"] for d in by["q1"].degraded] == ["error_reply"]


def test_an_empty_answer_degrades_a_run_and_a_scored_file_alike(tmp_path: Path, scripted_server, make_eval_set,
                                                                 per_query, metrics):
    """An LLM's empty reply degrades a run's query (empty_answer); the same answer in a file did count as a
    correct abstention, flattering the unanswerable questions. Empty and whitespace-only alike; a refusal
    sentence is still an abstention (q5, q6 retrieve nothing: no LLM call)."""
    out, rows, answers, scored = _run_then_score(
        tmp_path, scripted_server, make_eval_set, per_query, metrics,
        "text:", "text:Error E-4012 means the battery controller failed [doc-d].", "text: \n\t ",
        "text:The knowledge base does not contain this information.", "text:spare", "text:spare")
    empty = [r["query_id"] for r in rows if r["retrieved"] and not r["generation"]["answer"].strip()]
    assert len(empty) == 2 and all([d["cause"] for d in r["degraded"]] == ["empty_answer"]
                                   for r in rows if r["query_id"] in empty)
    by = {r.query_id: r for r in scored.results}
    assert [by[q].outcome for q in empty] == [r["outcome"] for r in rows if r["query_id"] in empty]
    refusal = next(r["query_id"] for r in rows if r["generation"]["answer"].startswith("The knowledge base"))
    assert by[refusal].metrics["abstained"] == 1.0 and not by[refusal].degraded
    lines = sorted(n for n, a in enumerate(answers, 1) if a["id"] in empty)
    assert scored.warnings == [w for w in scored.warnings if "answers.jsonl" in w and "empty_answer" in w]
    assert len(scored.warnings) == 1 and f"(line {', '.join(map(str, lines))})" in scored.warnings[0]
    graph_summary = json.loads(out.read_text())["variants"]["gen"]["metrics"]
    assert graph_summary["degraded.empty_answer"] == 2.0
    assert write_scored(scored, RunOptions(output=tmp_path / "s.json", mlflow=False)).variants[
        "gen_scored"].metrics == graph_summary


def test_an_empty_answer_in_a_file_is_degraded_unless_the_file_flags_it_as_a_refusal(tmp_path: Path, tiny_es: Path):
    rows = [{"id": "q5", "answer": "", "retrieved": []},                          # unanswerable: no free abstention
            {"id": "q4", "answer": "   \n", "retrieved": ["doc-c"]},
            {"id": "q1", "answer": "", "abstained": False, "retrieved": ["doc-a"]},  # "answered" nothing: degraded
            {"id": "q2", "answer": "", "abstained": True, "retrieved": []},         # the system's own flag: a refusal
            {"id": "q3", "answer": "I couldn't find this in the documents.", "retrieved": ["doc-b"]}]
    path = _write(tmp_path / "mine.jsonl", rows)
    scored = score_answers(path, "mine", eval_set=f"{tiny_es}@v1", metrics=("hit@5",))
    by = {r.query_id: r for r in scored.results}
    for q in ("q5", "q4", "q1"):
        assert [d["cause"] for d in by[q].degraded] == ["empty_answer"], q
        assert "abstained" not in by[q].metrics and by[q].metrics["degraded"] == 1.0, q
    assert by["q2"].metrics["abstained"] == 1.0 and not by["q2"].degraded
    assert by["q3"].metrics["abstained"] == 1.0 and not by["q3"].degraded
    v = write_scored(scored, RunOptions(output=tmp_path / "s.json", mlflow=False)).variants["mine"]
    assert v.metrics["degraded.empty_answer"] == 3.0 and v.metrics["n_abstained"] == 2.0
    res = CliRunner().invoke(cli, ["score", "--answers", str(path), "--eval-set", f"{tiny_es}@v1", "--name", "mine",
                                   "--output", str(tmp_path / "c.json"), "--no-mlflow", "--metric", "hit@5"])
    assert res.exit_code == 0, res.output
    assert f"warning: {path}: 3 answer(s) are empty or whitespace only (line 1, 2, 3)" in res.output


@pytest.fixture
def tiny_es(tmp_path: Path, make_eval_set) -> Path:
    return make_eval_set(tmp_path / "es")


def test_hand_counted_summary_with_failures_and_missing_answers(tmp_path: Path, tiny_es: Path):
    rows = [
        {"id": "q1", "answer": "Invoices above 5000 need director approval [doc-a].", "retrieved": ["doc-a", "doc-b"]},
        {"id": "q3", "answer": "The hotel allowance is 900 per night [doc-b] [doc-zz].",
         "contexts": ["Hotel allowance is 600 per night in tier one cities."], "retrieved": ["doc-b"]},
        {"id": "q4", "answer": "根据现有资料无法回答。", "retrieved": []},
        {"id": "q5", "answer": "The CEO earns 2 million a year.", "retrieved": ["doc-a"]},
        {"id": "q2", "error": "upstream timeout after 30 s", "retrieved": []},
    ]                                                             # q6 has no line: missing
    scored = score_answers(_write(tmp_path / "a.jsonl", rows), "mine", eval_set=f"{tiny_es}@v1",
                           metrics=("hit@5", "mrr@10"))
    by = {r.query_id: r for r in scored.results}
    assert by["q1"].metrics["faithfulness"] == 1.0 and by["q3"].metrics["faithfulness"] == 0.0
    assert by["q3"].generation["invalid_citations"] == ["doc-zz"] and by["q3"].generation["used_documents"] == ["doc-b"]
    assert by["q4"].metrics["abstained"] == 1.0 and by["q4"].outcome == "abstained"
    # answering an unanswerable question is counted under its own name (unanswerable_hallucination_rate, below);
    # the per-query "hallucinated" is the answerable-question figure, so it is undefined here
    assert by["q5"].metrics["hallucinated"] is None and by["q5"].metrics["answered"] == 1.0
    assert by["q2"].error["message"] == "upstream timeout after 30 s" and by["q2"].metrics["answered"] == 0.0
    assert by["q6"].error["type"] == "MissingOutput" and by["q6"].metrics["hit@5"] == 0.0
    assert any("1 of 6 eval-set queries have no answer" in n for n in scored.notices)
    v = write_scored(scored, RunOptions(output=tmp_path / "s.json", mlflow=False)).variants["mine"]
    assert v.n_failed == 2 and v.n_queries == 6
    m = v.metrics
    # hand counts: answerable q1 q2 q3 q4 q6, answered q1 q3 (q4 declined, q2 and q6 failed); q5 answered too
    assert m["hallucination_rate"] == 0.5                        # q3 of answered answerable q1, q3
    assert m["faithfulness"] == pytest.approx(1 / 3)             # mean over answered q1 (1), q3 (0), q5 (0)
    assert m["abstention_rate"] == pytest.approx(1 / 5)          # q4 of the 5 answerable
    assert m["unanswerable_hallucination_rate"] == 1.0           # q5
    assert m["invalid_citation_rate"] == pytest.approx(1 / 3)    # [doc-zz] of q1's 1 + q3's 2 citations
    assert m["hit@5"] == pytest.approx((1 + 0 + 1 + 0 + 0) / 5)  # q1, q3 hit; q2 q4 q6 empty rankings
    assert v.timing == {}                                         # no latency_ms in the file: none reported


def test_rows_matched_by_question_and_positions_cited(tmp_path: Path, tiny_es: Path):
    rows = [{"question": "invoice   approval above 5000", "answer": "Director approval is needed above 5000 [1].",
             "contexts": ["Electronic invoices above 5000 need director approval."]}]
    scored = score_answers(_write(tmp_path / "a.jsonl", rows), "m", eval_set=f"{tiny_es}@v1", cite_by="position")
    q1 = next(r for r in scored.results if r.query_id == "q1")
    assert q1.generation["invalid_citations"] == [] and len(q1.generation["used_documents"]) == 1
    scored = score_answers(tmp_path / "a.jsonl", "m", eval_set=f"{tiny_es}@v1")  # default: ids, then positions
    q1_default = next(r for r in scored.results if r.query_id == "q1")
    assert q1_default.generation["invalid_citations"] == [] and q1_default.generation["used_documents"] == \
        q1.generation["used_documents"]


@pytest.mark.parametrize("row, where", [
    ({"id": "q1", "answer": 42, "contexts": []}, ":1: answer: expected a string"),
    ({"id": "q1", "answer": None, "contexts": []}, ":1: answer: missing"),
    ({"id": "q1", "answer": "x"}, ":1: contexts: missing"),
    ({"id": "q1", "answer": "x", "contexts": "text"}, ":1: contexts: expected a list"),
    ({"id": "q1", "answer": "x", "contexts": [{"doc_id": "d"}]}, ":1: contexts: item 0"),
    ({"id": "q1", "answer": "x", "retrieved": [{"doc_id": "doc-a", "score": "hi"}]}, r":1: retrieved\[0\].score"),
    ({"id": "q1", "answer": "x", "contexts": [], "abstained": "yes"}, ":1: abstained: expected true or false"),
    ({"id": "q1", "answer": "x", "contexts": [], "latency_ms": -3}, ":1: latency_ms"),
    ({"id": "", "answer": "x", "contexts": []}, ":1: id: expected a non-empty string"),
    ({"id": "q1", "question": "what is E-4012", "answer": "x", "contexts": []}, ":1: question: differs from"),
    ({"id": "q1", "answer": "x", "retrieved": ["doc-zz"]}, ":1: retrieved: document 'doc-zz' is not in the corpus"),
    ({"question": "never asked", "answer": "x", "contexts": []}, ":1: question: no id, and the question matches no"),
])
def test_bad_answer_rows_name_file_line_and_field(tmp_path: Path, tiny_es: Path, row: dict, where: str):
    path = _write(tmp_path / "bad.jsonl", [row])
    with pytest.raises(LocatedError, match=where) as err:
        score_answers(path, "b", eval_set=f"{tiny_es}@v1")
    assert str(err.value).startswith(str(path))


def test_unknown_repeated_and_inconsistent_rows(tmp_path: Path, tiny_es: Path):
    unknown = _write(tmp_path / "u.jsonl", [{"id": "q1", "answer": "x", "contexts": []}] +
                     [{"id": f"z{i}", "answer": "x", "contexts": []} for i in range(7)])
    with pytest.raises(LocatedError, match=r":2: id: 7 query id\(s\) are not in eval set tiny v1: 'z0' \(line 2\).*"
                                           r"\.\.\. and 2 more"):
        score_answers(unknown, "u", eval_set=f"{tiny_es}@v1")
    twice = _write(tmp_path / "t.jsonl", [{"id": "q1", "answer": "x", "contexts": []}] * 2)
    with pytest.raises(LocatedError, match=r":2: id: query 'q1' is answered twice \(first on line 1\)"):
        score_answers(twice, "t", eval_set=f"{tiny_es}@v1")
    mixed = _write(tmp_path / "m.jsonl", [{"id": "q1", "answer": "x", "retrieved": ["doc-a"]},
                                          {"id": "q2", "answer": "y", "contexts": []}])
    with pytest.raises(LocatedError, match=r":2: retrieved: missing here but given on line 1"):
        score_answers(mixed, "m", eval_set=f"{tiny_es}@v1")


def test_missing_answers_make_the_gate_refuse(tmp_path: Path, tiny_es: Path):
    full = [{"id": q, "answer": "Invoices above 5000 need director approval [doc-a].", "retrieved": ["doc-a"]}
            for q in ("q1", "q2", "q3", "q4", "q5", "q6")]
    runner = CliRunner()
    for name, rows in (("base", full), ("cand", full[:4])):
        res = runner.invoke(cli, ["score", "--answers", str(_write(tmp_path / f"{name}.jsonl", rows)), "--eval-set",
                                  f"{tiny_es}@v1", "--name", "sys", "--output", str(tmp_path / f"{name}.json"),
                                  "--no-mlflow"])
        assert res.exit_code == 0, res.output
    assert "2 of 6 eval-set queries have no answer" in res.output
    res = runner.invoke(cli, ["gate", "--baseline", str(tmp_path / "base.json"), "--candidate",
                              str(tmp_path / "cand.json"), "--metric", "hit@5", "--max-drop", "0.5"])
    assert res.exit_code == 5 and "failed on 2 of 6 queries" in res.output


def test_self_contained_files_are_their_own_eval_set(tmp_path: Path):
    rows = [{"question": "How much is the hotel allowance?", "answer": "600 per night.",
             "contexts": ["Hotel allowance is 600 per night in tier one cities."], "reference_answer": "600 per night"},
            {"question": "Who approves big invoices?", "answer": "The CFO approves invoices above 9000.",
             "contexts": ["Electronic invoices above 5000 need director approval."]}]
    a = _write(tmp_path / "a.jsonl", rows)
    b = _write(tmp_path / "b.jsonl", rows[:1] + [{**rows[1], "answer": "A director approves them."}])
    runner = CliRunner()
    for f in (a, b):
        res = runner.invoke(cli, ["score", "--answers", str(f), "--name", "sys", "--output",
                                  str(tmp_path / f"{f.stem}.json"), "--no-mlflow"])
        assert res.exit_code == 0, res.output
    ref = json.loads((tmp_path / "a.json").read_text())["eval_set"]
    import hashlib

    digest = hashlib.sha256(a.read_bytes()).hexdigest()
    assert ref == {**ref, "name": f"answers-{digest[:12]}", "sha256": digest, "version": 0, "kind": "answers_file",
                   "path": str(a.resolve())}
    m = json.loads((tmp_path / "a.json").read_text())["variants"]["sys"]["metrics"]
    assert m["hallucination_rate"] == 0.5 and m["answer_em"] == 1.0 and "hit@5" not in m
    assert "citation_precision" not in m  # no gold documents known: undefined, not 0
    # different files never pair; the same file re-scored does, and a file edited after scoring is caught
    res = runner.invoke(cli, ["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--variants",
                              "a:sys,b:sys"])
    assert res.exit_code != 0 and "different eval sets" in (res.output + str(res.exception))
    res = runner.invoke(cli, ["score", "--answers", str(a), "--name", "sys", "--output", str(tmp_path / "a2.json"),
                              "--no-mlflow"])
    gate = ["gate", "--baseline", str(tmp_path / "a.json"), "--candidate", str(tmp_path / "a2.json"), "--metric",
            "faithfulness", "--max-drop", "0.1", "--resamples", "200"]
    res = runner.invoke(cli, gate)
    assert res.exit_code == 0 and f"answers file {a.resolve()} re-verified" in res.output
    res = runner.invoke(cli, ["gate", "--baseline", str(tmp_path / "a.json"), "--candidate", str(tmp_path / "b.json"),
                              "--metric", "faithfulness", "--max-drop", "0.1"])
    assert res.exit_code == 3
    a.write_text(a.read_text() + "\n")
    assert runner.invoke(cli, gate).exit_code == 4


def test_self_contained_needs_questions_and_texts(tmp_path: Path):
    with pytest.raises(LocatedError, match=":1: question: missing: without --eval-set"):
        score_answers(_write(tmp_path / "a.jsonl", [{"id": "x", "answer": "y", "contexts": []}]), "s")
    with pytest.raises(LocatedError, match=":1: retrieved: document ids alone need --eval-set"):
        score_answers(_write(tmp_path / "b.jsonl", [{"question": "q?", "answer": "y", "retrieved": ["d1"]}]), "s")


def test_a_huge_question_in_an_answers_file_is_refused_naming_the_row(tmp_path: Path):
    # a 5 MB question (a pasted document) kept the judge busy for minutes; it is refused like an eval set's
    rows = [{"id": "ok", "question": "how long do repairs take?", "answer": "3 days.", "contexts": ["3 days."]},
            {"id": "huge", "question": "word " * 1_000_000, "answer": "y", "contexts": ["z"]}]
    path = _write(tmp_path / "big.jsonl", rows)
    with pytest.raises(LocatedError) as err:
        score_answers(path, "s")
    assert str(err.value).startswith(f"{path}:2: question: 5,000,000 characters") and "'huge'" in str(err.value)


def _run_then_score(tmp_path: Path, scripted_server, make_eval_set, per_query, metrics, *replies: str):
    """Run the graph with the LLM giving ``replies``, then score its answers from a file: (summary path, the
    run's rows, the answers, the scored file). Every query's metrics and degradation causes must agree."""
    es = make_eval_set(tmp_path)
    scripted_server.push(*replies)
    out = tmp_path / "graph.json"
    run_eval(load_eval_set(f"{es}@v1"), [config_from_dict(_graph(scripted_server.base_url))],
             RunOptions(output=out, mlflow=False, progress=False, metrics=metrics), echo=lambda m: None)
    rows = per_query(out, "gen")
    answers = _answers_of(rows, tmp_path)
    scored = score_answers(_write(tmp_path / "answers.jsonl", answers), "gen_scored", eval_set=f"{es}@v1",
                           metrics=metrics)
    for ours, theirs in zip(rows, scored.results, strict=True):
        assert ours["metrics"] == theirs.metrics, ours["query_id"]
        assert [d["cause"] for d in ours["degraded"]] == [d["cause"] for d in theirs.degraded], ours["query_id"]
    return out, rows, answers, scored
