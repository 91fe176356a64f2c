"""evalkit gate: non-inferiority verdicts and every refusal, each with its own exit code."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.analysis.gate import DECLINED_MARGIN
from evalkit.cli import cli
from evalkit.evalsets import append, freeze, load_eval_set

from .conftest import QUESTIONS, qr, write_eval_set, write_run


def _results(questions, hit: dict[str, float] | None = None, failed: tuple[str, ...] = (),
             hallucinated: float | None = None) -> list:
    """One result per question: hit@5 1 unless overridden; answerable queries only get retrieval metrics."""
    out = []
    for qid, question, gold, _ in questions:
        m = {"hit@5": (hit or {}).get(qid, 1.0), "ndcg@10": 0.8} if gold else {}
        if hallucinated is not None:
            m["hallucinated"] = hallucinated
        err = {"node": "retrieve", "type": "RuntimeError", "message": "boom"} if qid in failed else None
        out.append(qr(qid, gold, m, question=question, error=err))
    return out


@pytest.fixture
def es(tmp_path: Path) -> dict:
    path = write_eval_set(tmp_path / "sets")
    return {"path": path, "sha": load_eval_set(str(path)).sha256}


def _run(folder: Path, name: str, results: list, es: dict, **kw) -> Path:
    return write_run(folder, name, {"v": results}, path=str(es["path"]), sha=es["sha"], **kw)


def _gate(base: Path, cand: Path, *args: str):
    return CliRunner().invoke(cli, ["gate", "--baseline", str(base), "--candidate", str(cand), "--resamples", "2000",
                                    *args])


def test_identical_runs_pass(tmp_path: Path, es):
    base = _run(tmp_path, "base", _results(QUESTIONS), es)
    cand = _run(tmp_path, "cand", _results(QUESTIONS), es)
    res = _gate(base, cand, "--metric", "hit@5", "--max-drop", "0.02", "--metric", "ndcg@10", "--max-drop", "0.02",
                "--json", str(tmp_path / "g.json"))
    assert res.exit_code == 0, res.output
    assert "PASS: the candidate is non-inferior on every metric" in res.output
    assert "re-verified" in res.output                           # the eval set file was checked
    data = json.loads((tmp_path / "g.json").read_text())
    assert data["passed"] and [c["metric"] for c in data["checks"]] == ["hit@5", "ndcg@10"]
    assert data["checks"][0]["n"] == 12                          # answerable queries only


def test_a_real_drop_fails_with_a_table(tmp_path: Path, es):
    base = _run(tmp_path, "base", _results(QUESTIONS), es)
    cand = _run(tmp_path, "cand", _results(QUESTIONS, hit={"q01": 0.0, "q02": 0.0, "q03": 0.0}), es)
    res = _gate(base, cand, "--metric", "hit@5", "--max-drop", "0.02")
    assert res.exit_code == 1, res.output
    assert "FAIL" in res.output and "hit@5" in res.output and "worse" in res.output
    # mean drop 3/12 = 0.25; the lower 95% bound is near -0.5, so a margin of 0.6 tolerates it
    assert _gate(base, cand, "--metric", "hit@5", "--max-drop", "0.6").exit_code == 0


def test_lower_is_better_metrics_are_mirrored(tmp_path: Path, es):
    base = _run(tmp_path, "base", _results(QUESTIONS, hallucinated=0.0), es)
    worse = _run(tmp_path, "worse", _results(QUESTIONS, hallucinated=1.0), es)
    better = _run(tmp_path, "better", _results(QUESTIONS, hallucinated=0.0), es)
    res = _gate(base, worse, "--metric", "hallucinated", "--max-drop", "0.05")
    assert res.exit_code == 1 and "hallucinated (lower=better)" in res.output
    assert _gate(worse, better, "--metric", "hallucinated", "--max-drop", "0.0").exit_code == 0


def test_the_unverified_share_can_be_bounded(tmp_path: Path, es):
    """A candidate whose answers the judge can no longer verify (unverified 1 on every answer) fails a gate on
    the per-query `unverified` (lower is better), whatever its hallucination rate; the same share passes."""
    def with_unverified(value: float) -> list:
        results = _results(QUESTIONS, hallucinated=0.0)
        for r in results:
            r.metrics["unverified"] = value
        return results
    base = _run(tmp_path, "base", with_unverified(0.0), es)
    worse = _run(tmp_path, "worse", with_unverified(1.0), es)
    res = _gate(base, worse, "--metric", "unverified", "--max-drop", "0.05")
    assert res.exit_code == 1 and "unverified (lower=better)" in res.output
    assert _gate(base, base, "--metric", "unverified", "--max-drop", "0.05").exit_code == 0


def test_exit_3_different_eval_sets(tmp_path: Path, es):
    base = _run(tmp_path, "base", _results(QUESTIONS), es)
    other = write_run(tmp_path, "other", {"v": _results(QUESTIONS)}, es_name="other_set")
    res = _gate(base, other, "--metric", "hit@5", "--max-drop", "0.02")
    assert res.exit_code == 3 and "different eval sets" in res.output


def test_exit_4_tampered_eval_set(tmp_path: Path, es):
    base = _run(tmp_path, "base", _results(QUESTIONS), es)
    cand = _run(tmp_path, "cand", _results(QUESTIONS), es)
    lines = es["path"].read_text().splitlines(keepends=True)
    es["path"].write_text("".join([lines[0].replace("invoice", "receipt"), *lines[1:]]))
    res = _gate(base, cand, "--metric", "hit@5", "--max-drop", "0.02")
    assert res.exit_code == 4 and "fails verification" in res.output and "line 1 changed" in res.output


def test_one_eval_set_file_is_read_once_for_both_runs(tmp_path: Path, es, monkeypatch):
    """A baseline and a candidate of the same set: the file is read and hashed once, both notes still say so."""
    import evalkit.analysis.gate as gate_module

    calls = []

    def counted(spec, **kw):
        calls.append(spec)
        return load_eval_set(spec, **kw)

    monkeypatch.setattr(gate_module, "load_eval_set", counted)
    base = _run(tmp_path, "base", _results(QUESTIONS), es)
    cand = _run(tmp_path, "cand", _results(QUESTIONS), es)
    res = _gate(base, cand, "--metric", "hit@5", "--max-drop", "0.02")
    assert res.exit_code == 0, res.output
    assert len(calls) == 1
    assert res.output.count("re-verified (sha256") == 2


def test_exit_4_runs_that_disagree(tmp_path: Path, es):
    base = _run(tmp_path, "base", _results(QUESTIONS), es)
    forged = write_run(tmp_path, "forged", {"v": _results(QUESTIONS)}, sha="0" * 64)
    assert _gate(base, forged, "--metric", "hit@5", "--max-drop", "0.02").exit_code == 4
    edited = [(q, "an edited question?" if q == "q05" else text, g, t) for q, text, g, t in QUESTIONS]
    cand = write_run(tmp_path, "edited", {"v": _results(edited)}, sha=es["sha"])
    res = _gate(base, cand, "--metric", "hit@5", "--max-drop", "0.02")
    assert res.exit_code == 4 and "'q05' has a different question" in res.output


def test_exit_5_failed_queries(tmp_path: Path, es):
    base = _run(tmp_path, "base", _results(QUESTIONS), es)
    cand = _run(tmp_path, "cand", _results(QUESTIONS, failed=("q02",)), es)
    res = _gate(base, cand, "--metric", "hit@5", "--max-drop", "0.5")
    assert res.exit_code == 5 and "failed on 1 of 16 queries" in res.output
    assert _gate(base, cand, "--metric", "hit@5", "--max-drop", "0.5", "--max-failed-share", "0.1").exit_code == 0


def test_versions_of_one_set_compare_shared_queries(tmp_path: Path):
    path = write_eval_set(tmp_path / "sets")
    v1 = load_eval_set(str(path))
    extra = tmp_path / "more.jsonl"
    extra.write_text(json.dumps({"id": "q17", "question": "How many Ethernet ports?", "relevant_doc_ids":
                                 ["prod-001"], "type": "single", "lang": "en"}) + "\n")
    append(path, extra)
    freeze(path)
    v2 = load_eval_set(f"{path}@v2")
    more = [*QUESTIONS, ("q17", "How many Ethernet ports?", ["prod-001"], "single")]
    base = write_run(tmp_path, "base", {"v": _results(QUESTIONS)}, path=str(path), sha=v1.sha256)
    cand = write_run(tmp_path, "cand", {"v": _results(more)}, path=str(path), sha=v2.sha256, version=2)
    res = _gate(base, cand, "--metric", "hit@5", "--max-drop", "0.02")  # q17 would go ungated: refused
    assert res.exit_code == 3 and "v1 (16 queries) and the candidate v2 (17 queries)" in res.output
    assert "--shared-queries" in res.output
    res = _gate(cand, base, "--metric", "hit@5", "--max-drop", "0.02")  # a candidate that skipped q17 likewise
    assert res.exit_code == 3, res.output
    res = _gate(base, cand, "--metric", "hit@5", "--max-drop", "0.02", "--shared-queries")
    assert res.exit_code == 0, res.output
    assert "v1 vs v2" in res.output and "comparing the 16 shared queries only (baseline 16, candidate 17)" in res.output


def test_exit_7_records_short_of_the_summary(tmp_path: Path, es):
    """A finished run re-run to the same --output and killed: the old summary beside a half-written file."""
    base = _run(tmp_path, "base", _results(QUESTIONS), es)
    cand = _run(tmp_path, "cand", _results(QUESTIONS), es)
    records = tmp_path / "cand" / "v" / "per_query.jsonl"
    records.write_text("".join(records.read_text().splitlines(keepends=True)[:5]))
    res = _gate(base, cand, "--metric", "hit@5", "--max-drop", "0.02")
    assert res.exit_code == 7 and "has 5 per-query records but its summary has 16 queries" in res.output
    es["path"].rename(es["path"].with_suffix(".gone"))  # without the set file to re-verify: still refused
    assert _gate(base, cand, "--metric", "hit@5", "--max-drop", "0.02").exit_code == 7
    assert _gate(cand, base, "--metric", "hit@5", "--max-drop", "0.02").exit_code == 7  # a short baseline too


def test_exit_7_interrupted_runs(tmp_path: Path, es):
    base = _run(tmp_path, "base", _results(QUESTIONS), es)
    # killed before any summary: the folder has the invocation and a partial per_query.jsonl
    (tmp_path / "killed" / "v").mkdir(parents=True)
    (tmp_path / "killed" / "invocation.json").write_text("{}")
    (tmp_path / "killed" / "v" / "run.json").write_text("{}")
    (tmp_path / "killed" / "v" / "per_query.jsonl").write_text(json.dumps(_results(QUESTIONS)[0].to_dict()) + "\n")
    for ref in (tmp_path / "killed.json", tmp_path / "killed"):
        res = _gate(base, ref, "--metric", "hit@5", "--max-drop", "0.02")
        assert res.exit_code == 7 and "interrupted before it wrote its summary" in res.output, res.output
        assert "v: 1 queries written" in res.output and "--resume" in res.output
    # killed while the variant ran: the summary says running, the variant pending
    cand = _run(tmp_path, "cand", _results(QUESTIONS), es)
    data = json.loads(cand.read_text())
    data.update(status="running", pending=["v"], partial=True)
    data["variants"] = {}
    cand.write_text(json.dumps(data))
    for extra in ((), ("--variant", "v")):
        res = _gate(base, cand, "--metric", "hit@5", "--max-drop", "0.02", *extra)
        assert res.exit_code == 7 and "variant 'v' did not finish: the run is running" in res.output, res.output


def test_exit_6_a_candidate_that_answered_nothing(tmp_path: Path, es):
    """Perfect retrieval, every answer refused: a gate on hit@5 alone must not pass it."""
    def answering(refuse: bool) -> list:
        out = _results(QUESTIONS)
        for r in out:
            r.generation = {"answer": "I can't help with that." if refuse else "Yes [fin-001].",
                            "abstention": {"abstained": refuse, "reason": "refusal" if refuse else "answer"}}
            r.metrics["answered"] = 0.0 if refuse else 1.0
        return out
    base = _run(tmp_path, "base", answering(False), es)
    cand = _run(tmp_path, "cand", answering(True), es)
    res = _gate(base, cand, "--metric", "hit@5", "--max-drop", "0.02")
    assert res.exit_code == 6 and "answered none of the 16 shared queries" in res.output
    assert "refusal 16" in res.output and "the baseline answered 16" in res.output
    assert _gate(base, base, "--metric", "hit@5", "--max-drop", "0.02").exit_code == 0


def test_exit_8_a_candidate_that_cites_passages_it_was_not_shown(tmp_path: Path, es):
    """The LLM lying: claims that read as faithful, cited to ids the retriever never returned. A gate on
    hit@5 and faithfulness alone passed it; the baseline's own invalid citations set the bar."""
    def citing(invented: set[str]) -> list:
        out = _results(QUESTIONS)
        for r in out:
            bad = ["doc-404"] if r.query_id in invented else []
            r.generation = {"answer": "Yes [fin-001].", "abstention": {"abstained": False, "reason": "answer"},
                            "invalid_citations": bad, "citations": ["fin-001", *bad]}
            r.metrics.update(answered=1.0, faithfulness=1.0)
        return out
    base = _run(tmp_path, "base", citing({"q01"}), es)
    cand = _run(tmp_path, "cand", citing({"q01", "q02", "q03"}), es)
    args = ("--metric", "hit@5", "--max-drop", "0.02", "--metric", "faithfulness", "--max-drop", "0.02")
    res = _gate(base, cand, *args)
    assert res.exit_code == 8, res.output
    assert "cited passages it was not shown on 3 of 16 queries" in res.output and "doc-404" in res.output
    assert "the baseline on 1 (6.2%)" in res.output
    assert _gate(base, cand, *args, "--max-invalid-citation-share", "0.15").exit_code == 0  # allowed explicitly
    assert _gate(cand, base, *args).exit_code == 0  # fewer invented citations than the baseline: not refused
    assert _gate(base, base, *args).exit_code == 0


def test_a_candidate_that_declines_its_hard_questions_fails_the_automatic_coverage_check(tmp_path: Path, es):
    """hallucinated is undefined on a declined answerable question: a candidate that declines the three it
    would hallucinate on, and two more, scores 0 hallucinations against the baseline's 3 of 12 and passed a
    gate on hallucinated alone. With answer metrics gated, the gate adds the declined share and fails it."""
    def answering(declined: set[str], wrong: set[str]) -> list:
        out = _results(QUESTIONS)
        for r, (qid, _, gold, _) in zip(out, QUESTIONS):
            refuse = qid in declined or not gold
            r.generation = {"answer": "Not in the documents." if refuse else "Yes [fin-001].",
                            "abstention": {"abstained": refuse, "reason": "refusal" if refuse else "answer"}}
            r.metrics.update(answered=float(not refuse), abstained=float(refuse))
            r.metrics["hallucinated"] = (None if refuse else float(qid in wrong)) if gold else float(not refuse)
            r.metrics["faithfulness"] = None if refuse else float(qid not in wrong)
        return out
    base = _run(tmp_path, "base", answering(set(), {"q01", "q02", "q03"}), es)
    cand = _run(tmp_path, "cand", answering({"q01", "q02", "q03", "q04", "q05"}, set()), es)
    args = ("--metric", "hallucinated", "--max-drop", "0.01", "--json", str(tmp_path / "g.json"))
    res = _gate(base, cand, *args)
    assert res.exit_code == 1, res.output
    assert "declined (answerable) (lower=better) [auto]" in res.output and "added because answer metrics" in res.output
    checks = {c["metric"]: c for c in json.loads((tmp_path / "g.json").read_text())["checks"]}
    assert checks["hallucinated"]["passed"]  # alone it passes: its 3 wrong answers are not paired, they were declined
    declined = checks["declined (answerable)"]
    assert not declined["passed"] and declined["n"] == 12  # the answerable queries
    assert declined["baseline"] == 0.0 and declined["candidate"] == pytest.approx(5 / 12)
    assert declined["diff"] == pytest.approx(5 / 12) and declined["max_drop"] == DECLINED_MARGIN == 0.05
    assert _gate(base, cand, *args, "--max-declined-increase", "0.9").exit_code == 0  # accepted explicitly
    wrong = checks["hallucinated (per answerable)"]  # declining counts as not hallucinating: the candidate is better
    assert wrong["passed"] and wrong["n"] == 12 and wrong["baseline"] == 3 / 12 and wrong["candidate"] == 0.0
    # the other way round the candidate declines less: coverage passes, and its 3 wrong answers fall on the
    # questions the baseline declined, which the hallucinated row cannot pair: the per-answerable row sees them
    back = _gate(cand, base, *args)
    assert back.exit_code == 1, back.output
    checks = {c["metric"]: c for c in json.loads((tmp_path / "g.json").read_text())["checks"]}
    assert checks["hallucinated"]["passed"] and checks["declined (answerable)"]["passed"]
    wrong = checks["hallucinated (per answerable)"]
    assert not wrong["passed"] and wrong["baseline"] == 0.0 and wrong["candidate"] == pytest.approx(3 / 12)
    retrieval = _gate(base, cand, "--metric", "hit@5", "--max-drop", "0.02")
    assert retrieval.exit_code == 0 and "declined" not in retrieval.output  # answer metrics not gated: not added
    same = _gate(base, base, *args)
    assert same.exit_code == 0 and "[auto]" in same.output
    only_faithful = _gate(base, cand, "--metric", "faithfulness", "--max-drop", "1.0", "--json",
                          str(tmp_path / "g2.json"))
    names = [c["metric"] for c in json.loads((tmp_path / "g2.json").read_text())["checks"]]
    assert only_faithful.exit_code == 1 and names == ["faithfulness", "declined (answerable)"]  # another answer
    # metric brings the coverage row; the per-answerable row comes only with hallucinated


def test_a_metric_only_one_run_has_says_why(tmp_path: Path, es):
    base = _run(tmp_path, "base", _results(QUESTIONS, hallucinated=0.0), es)
    cand = _run(tmp_path, "cand", _results(QUESTIONS), es)
    res = _gate(base, cand, "--metric", "hallucinated", "--max-drop", "0.02")
    assert res.exit_code == 2 and "'hallucinated' has no per-query value in cand:v" in res.output


def test_usage_errors_exit_2_and_help_lists_exit_codes(tmp_path: Path, es):
    base = _run(tmp_path, "base", _results(QUESTIONS), es)
    res = _gate(base, base, "--metric", "hit@6", "--max-drop", "0.02")
    assert res.exit_code == 2 and "did you mean 'hit@5'" in res.output
    res = _gate(base, base, "--metric", "hallucination_rate", "--max-drop", "0.02")
    assert res.exit_code == 2 and "variant-level rate" in res.output and "use 'hallucinated'" in res.output
    res = _gate(base, base, "--metric", "hit@5", "--max-drop", "0.02", "--variant", "nope")
    assert res.exit_code == 2 and "no variant 'nope'" in res.output
    res = _gate(base, base, "--metric", "hit@5", "--metric", "ndcg@10", "--max-drop", "0.1", "--max-drop", "0.1",
                "--max-drop", "0.1")
    assert res.exit_code == 2 and "one --max-drop per --metric" in res.output
    help_ = CliRunner().invoke(cli, ["gate", "--help"]).output
    for code in ("0  the candidate is non-inferior", "3  the runs used different eval sets", "4  tampered",
                 "5  too many failed queries", "7  a run did not finish"):
        assert code in help_
