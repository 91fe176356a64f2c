"""`evalkit label`, the labelling page, and `--labels` on run, compare and gate, end to end on a tiny run."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.evalsets import freeze

DOCS = [("fin-001", "差旅住宿", "一线城市每晚住宿不超过 750 元。二线城市每晚不超过 550 元。三线城市每晚不超过 400 元。"),
        ("fin-002", "报销时限", "差旅费须在出差结束后 30 天内提交报销。逾期须部门负责人审批。"),
        ("hr-001", "Parental leave", "Fathers get 15 calendar days of paternity leave. Mothers get 158 days."),
        ("it-001", "Laptop refresh", "Laptops are replaced after 48 months of service.")]
QUESTIONS = [("q1", "一线城市住宿标准？", ["fin-001"], "single", "zh"), ("q2", "二线城市住宿标准？", ["fin-001"], "single", "zh"),
             ("q3", "报销时限？", ["fin-002"], "single", "zh"), ("q4", "How long is paternity leave?", ["hr-001"], "single", "en"),
             ("q5", "When are laptops replaced?", ["it-001"], "single", "en"),
             ("q6", "How long is maternity leave?", ["hr-001"], "colloquial", "en")]
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


def _variant(name: str, k: int) -> dict:
    return {"name": name, "chunking": {"method": "document"},
            "nodes": {"retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "auto", "top_k": 3}}},
                      "generate": {"type": "generate", "params": {"llm": {"backend": "extractive"},
                                                                  "evidence_from": "retrieved", "evidence_k": k}}},
            "edges": {"start": "retrieve", "retrieve": "generate", "generate": "end"}}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    import yaml

    tmp = tmp_path_factory.mktemp("labels")
    (tmp / "corpora").mkdir()
    corpus = tmp / "corpora" / "kb.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}, ensure_ascii=False) + "\n"
                              for i, t, x in DOCS), encoding="utf-8")
    path = tmp / "kb.jsonl"
    path.write_text("".join(json.dumps({"id": i, "question": q, "relevant_doc_ids": g, "type": t, "lang": lang},
                                       ensure_ascii=False) + "\n" for i, q, g, t, lang in QUESTIONS), encoding="utf-8")
    freeze(path, corpus=str(corpus))
    args = ["run", "--eval-set", str(path), "--output", str(tmp / "out.json"), "--no-mlflow", "--no-progress"]
    for name, k in (("a", 1), ("b", 2)):
        cfg = tmp / f"{name}.yaml"
        cfg.write_text(yaml.safe_dump(_variant(name, k), allow_unicode=True), encoding="utf-8")
        args += ["--graph-config", str(cfg)]
    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return tmp / "out.json"


def _label(run: Path, variant: str, out: Path, n: int = 4) -> list[dict]:
    res = CliRunner().invoke(cli, ["label", str(run), "--variant", variant, "--n", str(n), "--out", str(out)],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]


def _fill(lines: list[dict], path: Path) -> None:
    """A person's labels: every claim supported, except q1's first, which is wrong."""
    for x in lines:
        for c in x["claims"]:
            c["supported"] = True
        if x["query_id"] == "q1" and x["claims"]:
            x["claims"][0]["supported"] = False
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")


def test_label_writes_the_sample_with_evidence_and_empty_fields(run: Path, tmp_path: Path):
    lines = _label(run, "a", tmp_path / "a.jsonl")
    assert len(lines) == 4 and len({x["query_id"] for x in lines}) == 4
    x = lines[0]
    assert x["hallucinated"] is None and all(c["supported"] is None for c in x["claims"])
    assert x["evidence"] and x["evidence"][0]["text"] and x["judge"]["claims"]
    assert x["sample"]["strata_by"] == "verdict" and x["sample"]["population"] == 6  # the default rule
    for y in lines:  # each answer's stratum is its verdict class, read here from the judge's claims
        verdicts = [c["verdict"] for c in y["judge"]["claims"]]
        cls = "unsupported" if "unsupported" in verdicts else "unverified" if "unverified" in verdicts else "supported"
        assert y["sample"]["stratum"] == cls and y["sample"]["seed"] == 0 and "error_share" in y["sample"]
    assert (tmp_path / "a.html").is_file()
    # seeded: the same command draws the same sample
    assert [y["query_id"] for y in _label(run, "a", tmp_path / "again.jsonl")] == [y["query_id"] for y in lines]


def test_labels_on_run_compare_and_gate(run: Path, tmp_path: Path):
    la, lb = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _fill(_label(run, "a", la), la)
    _fill(_label(run, "b", lb), lb)
    # run: resuming the finished run re-runs nothing and adds the corrected figures to the summary
    res = CliRunner().invoke(cli, ["run", "--resume", str(run), "--labels", str(la), "--labels", str(lb),
                                   "--no-progress"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "judge-corrected estimates" in res.output and "faithfulness" in res.output
    summary = json.loads(run.read_text(encoding="utf-8"))
    corrected = summary["variants"]["a"]["corrected"]
    assert corrected["n_labels"] == 4 and set(corrected["estimates"]) == {"hallucination_rate", "faithfulness"}
    assert corrected["agreement"]["n"] == 4
    # compare: the hallucinated and faithfulness rows use the corrected estimates
    res = CliRunner().invoke(cli, ["compare", str(run), "--variants", "a,b", "--labels", str(la), "--labels",
                                   str(lb), "--resamples", "200", "--no-fusion"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert re.search(r"faithfulness \[PPI\]", res.output) and "PPI++" in res.output
    # gate: the same run as baseline and candidate, labelled once: corrected rows (4 labels: a wide interval)
    res = CliRunner().invoke(cli, ["gate", "--baseline", str(run), "--candidate", str(run), "--variant", "a",
                                   "--metric", "faithfulness", "--max-drop", "1.0", "--labels", str(la),
                                   "--resamples", "200"], catch_exceptions=False)
    assert "faithfulness [PPI]" in res.output and res.exit_code == 0, res.output


def test_a_bad_label_file_is_a_clear_error(run: Path, tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query_id": "q1"}\n', encoding="utf-8")
    res = CliRunner().invoke(cli, ["compare", str(run), "--variants", "a,b", "--labels", str(bad), "--no-fusion",
                                   "--resamples", "200"])
    assert res.exit_code != 0 and "bad.jsonl:1: variant: missing" in str(res.exception or res.output)


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (Debian: apt-get install -y chromium)")
def test_the_labelling_page_renders_offline_and_holds_the_file(run: Path, tmp_path: Path):
    lines = _label(run, "a", tmp_path / "a.jsonl")
    page = tmp_path / "a.html"
    assert "http://" not in page.read_text(encoding="utf-8").replace("http://x", "")  # no external asset
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--no-first-run", "--disable-extensions", f"--user-data-dir={tmp_path / 'profile'}",
           "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND", "--virtual-time-budget=5000",
           "--dump-dom", page.as_uri() + "#fresh"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert f'data-ready="{len(lines)}"' in dom
    assert dom.count('class="item') == len(lines) and "0 / 4 labelled" in dom
    export = re.search(r'<textarea id="export"[^>]*>(.*?)</textarea>', dom, re.DOTALL).group(1)
    import html

    saved = [json.loads(x) for x in html.unescape(export).splitlines() if x.strip()]
    assert saved == lines  # the page would save exactly the label file (nothing labelled yet)


def test_label_a_run_scored_from_an_answers_file(tmp_path: Path):
    """Before: `evalkit label` on an `evalkit score --answers` run without an eval set stopped with "the
    corpus of this run was not found": the passages are the answers file's own contexts. With an eval
    set, a context given by document id showed an empty text (not a passage id of the chunked corpus)."""
    answers = tmp_path / "answers.jsonl"
    rows = [{"id": "a1", "question": "K7 有多重？", "answer": "K7 重 48 克（文档2）。", "lang": "zh",
             "contexts": [{"doc_id": "k7-bat", "text": "The K7 headset offers up to 9 hours of battery life."},
                          {"doc_id": "k7-weight", "text": "The K7 weighs 48 grams."}]},
            {"id": "a2", "question": "How long does the K7 battery last?", "answer": "About 9 hours [1].",
             "contexts": ["The K7 headset offers up to 9 hours of battery life."]}]
    answers.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    runner = CliRunner()
    out = tmp_path / "scored.json"
    res = runner.invoke(cli, ["score", "--answers", str(answers), "--name", "mine", "--output", str(out),
                              "--no-mlflow"])
    assert res.exit_code == 0, res.output
    labels = tmp_path / "labels.jsonl"
    res = runner.invoke(cli, ["label", str(out), "--variant", "mine", "--n", "5", "--out", str(labels)])
    assert res.exit_code == 0, res.output
    lines = {json.loads(x)["query_id"]: json.loads(x) for x in labels.read_text(encoding="utf-8").splitlines()}
    texts = {q: [(e["doc_id"], e["text"]) for e in line["evidence"]] for q, line in lines.items()}
    assert texts["a1"] == [("k7-bat", rows[0]["contexts"][0]["text"]), ("k7-weight", "The K7 weighs 48 grams.")]
    assert [t for _, t in texts["a2"]] == [rows[1]["contexts"][0]]  # a plain text context (ctx-<sha> id)


def test_label_an_answers_file_scored_against_an_eval_set_shows_the_documents(run: Path, tmp_path: Path):
    """Before: answers that rank documents (``retrieved`` ids) were shown with empty evidence texts: a
    document id is not a passage id of the chunked corpus."""
    answers = tmp_path / "ranked.jsonl"
    answers.write_text(json.dumps({"id": "q1", "answer": "每晚不超过 750 元 [fin-001]。", "retrieved": ["fin-001"]}) + "\n"
                       + json.dumps({"id": "q5", "answer": "After 48 months [it-001].", "retrieved": ["it-001", "hr-001"]})
                       + "\n", encoding="utf-8")
    out = tmp_path / "ranked.json"
    res = CliRunner().invoke(cli, ["score", "--answers", str(answers), "--eval-set", str(run.parent / "kb.jsonl"),
                                   "--name", "ranked", "--output", str(out), "--no-mlflow"])
    assert res.exit_code == 0, res.output
    lines = {x["query_id"]: x for x in _label(out, "ranked", tmp_path / "l.jsonl")}
    text = {i: x for i, _, x in DOCS}
    assert {q: [(e["doc_id"], e["text"]) for e in x["evidence"]] for q, x in lines.items() if q in ("q1", "q5")} == {
        "q1": [("fin-001", text["fin-001"])], "q5": [("it-001", text["it-001"]), ("hr-001", text["hr-001"])]}


def test_score_takes_labels_and_corrects_a_self_contained_answers_file(tmp_path: Path):
    """Issue 13 names --labels on score too; before, `evalkit score` had no --labels, and a file without
    gold labels (every row answerable) got no corrected hallucination rate: its rows have no gold ids.
    Recomputed by hand: 4 answers, the judge flags one; the person says a2 is hallucinated too. Every
    answer is labelled, so the corrected rate is the labelled rate, 2/4, with a zero-width interval."""
    answers = tmp_path / "answers.jsonl"
    ctx = [{"doc_id": "k7", "text": "The K7 weighs 48 grams and its battery lasts 9 hours."}]
    rows = [("a1", "How heavy is the K7?", "The K7 weighs 48 grams."),
            ("a2", "How long does the battery last?", "The battery lasts 9 hours."),
            ("a3", "How heavy is the K7?", "The K7 weighs 52 grams."),
            ("a4", "How long does the battery last?", "It lasts 9 hours on a charge.")]
    answers.write_text("".join(json.dumps({"id": i, "question": q, "answer": a, "contexts": ctx}) + "\n"
                               for i, q, a in rows), encoding="utf-8")
    out = tmp_path / "mine.json"
    runner = CliRunner()
    base = ["score", "--answers", str(answers), "--name", "mine", "--output", str(out), "--no-mlflow"]
    assert runner.invoke(cli, base).exit_code == 0
    lines = _label(out, "mine", tmp_path / "labels.jsonl", n=4)
    judged = {x["query_id"]: x["judge"]["hallucinated"] for x in lines}
    assert judged == {"a1": 0.0, "a2": 0.0, "a3": 1.0, "a4": 0.0}, judged
    for x in lines:
        x["hallucinated"] = x["query_id"] in ("a2", "a3")
    (tmp_path / "filled.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    res = runner.invoke(cli, base + ["--labels", str(tmp_path / "filled.jsonl")])
    assert res.exit_code == 0, res.output
    corrected = json.loads(out.read_text(encoding="utf-8"))["variants"]["mine"]["corrected"]
    est = corrected["estimates"]["hallucination_rate"]
    assert est["estimate"] == pytest.approx(0.5) and corrected["raw"]["hallucination_rate"] == pytest.approx(0.25)
    assert "hallucination_rate" in res.output and "corrected" in res.output


def test_label_learns_the_allocation_from_earlier_labels(run: Path, tmp_path: Path):
    first = tmp_path / "first.jsonl"
    lines = _label(run, "a", first)
    _fill(lines, first)  # q1 hallucinated, the rest not
    res = CliRunner().invoke(cli, ["label", str(run), "--variant", "a", "--n", "4", "--seed", "1", "--out",
                                   str(tmp_path / "second.jsonl"), "--prior-labels", str(first)],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "judge error share assumed per stratum (earlier labels and the prior)" in res.output
    # (errors + 2 * prior) / (labels + 2) per verdict class, an error being a label that contradicts the class
    prior = {"unsupported": 0.5, "unverified": 0.5, "supported": 0.1}
    seen: dict[str, list[bool]] = {}
    for x in lines:
        verdicts = [c["verdict"] for c in x["judge"]["claims"]]
        cls = "unsupported" if "unsupported" in verdicts else "unverified" if "unverified" in verdicts else "supported"
        hall = x["query_id"] == "q1" and bool(x["claims"])
        seen.setdefault(cls, []).append(hall != (cls == "unsupported"))
    for x in (json.loads(y) for y in (tmp_path / "second.jsonl").read_text(encoding="utf-8").splitlines()):
        errs = seen.get(x["sample"]["stratum"], [])
        expected = (sum(errs) + 2 * prior[x["sample"]["stratum"]]) / (len(errs) + 2)
        assert x["sample"]["error_share"] == pytest.approx(expected, abs=1e-6)
