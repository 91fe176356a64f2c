"""evalkit report: funnel, failure labels, latency/usage, self-contained HTML, Markdown twin, MLflow."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.analysis.report_data import variant_report
from evalkit.analysis.run_report import build_report, default_paths
from evalkit.analysis.runs import load_run
from evalkit.cli import cli
from evalkit.records import QueryResult

from .conftest import qr, write_run

MODEL = "bi-encoder:test-model@1"


def _trace(guard: bool | None, ms: float = 2.0) -> list[dict]:
    ev = [{"step": 0, "node": "retrieve", "type": "retrieve", "started_at": 0.0, "duration_ms": ms, "wrote": {},
           "edge": "rerank", "edge_reason": "default", "error": None},
          {"step": 1, "node": "rerank", "type": "rerank", "started_at": 0.0, "duration_ms": 2 * ms,
           "wrote": {"rerank_model": MODEL}, "edge": "guard", "edge_reason": "default", "error": None}]
    if guard is not None:
        ev.append({"step": 2, "node": "guard", "type": "guard", "started_at": 0.0, "duration_ms": 0.1,
                   "wrote": {"guard_triggered": guard, "guard_threshold": 0.5}, "edge": "end",
                   "edge_reason": "default", "error": None})
    return ev


def _gen(answered: bool, abstained: bool = False, cited: bool = True) -> dict:
    return {"answer": "an answer [g]" if answered else "no reliable evidence", "answered": answered,
            "abstained": abstained, "used_documents": ["g"] if cited and answered else [], "citations": []}


def _rich() -> list:
    """One query per failure label (comments: label; stages reached of the funnel)."""
    far = [f"n{i}" for i in range(25)]
    rows = [
        qr("q_fail", ["g"], {"hit@5": 0.0}, error={"node": "retrieve", "type": "E", "message": "x"}),  # failed
        qr("q_rmiss", ["g"], {"hit@5": 0.0}, retrieved=far + ["g"], top1=0.6, trace=_trace(False)),   # retrieval miss
        qr("q_rdrop", ["g"], {"hit@5": 0.0}, retrieved=["a", "b", "g"], reranked=["a", "b", "c", "d", "e", "g"],
           top1=0.7, trace=_trace(False)),                                                           # rerank drop
        qr("q_guard", ["g"], {"hit@5": 1.0}, retrieved=["g"], top1=0.4, trace=_trace(True)),          # guard abstained
        qr("q_genab", ["g"], {"hit@5": 1.0}, retrieved=["g"], top1=0.8, trace=_trace(False)),         # generator abstained
        qr("q_unsup", ["g"], {"hit@5": 1.0, "hallucinated": 1.0, "faithfulness": 0.5, "answer_f1": 0.9},
           retrieved=["g"], top1=0.8, trace=_trace(False)),                                          # unsupported claim
        qr("q_wrong", ["g"], {"hit@5": 1.0, "hallucinated": 0.0, "faithfulness": 1.0, "answer_f1": 0.1},
           retrieved=["g"], top1=0.9, trace=_trace(False)),                                          # wrong answer
        qr("q_ok", ["g"], {"hit@5": 1.0, "hallucinated": 0.0, "faithfulness": 1.0, "answer_f1": 0.9},
           retrieved=["g"], top1=0.9, trace=_trace(False)),                                          # ok
        qr("u_abst", [], retrieved=["a"], top1=0.3, trace=_trace(True)),                              # abstained (correct)
        qr("u_ans", [], {"hallucinated": 1.0}, retrieved=["a"], top1=0.7, trace=_trace(False)),       # answered unanswerable
    ]
    gens = {"q_genab": _gen(False, abstained=True), "q_unsup": _gen(True), "q_wrong": _gen(True),
            "q_ok": _gen(True), "u_abst": _gen(False, abstained=True), "u_ans": _gen(True), "q_guard": _gen(False, True),
            "q_rdrop": _gen(True), "q_rmiss": _gen(True)}
    for r in rows:
        r.generation = gens.get(r.query_id)
        r.usage = {"generate": {"calls": 1, "tokens_in": 100, "tokens_out": 20, "latency_ms": 50.0}}
    return rows


def _plain() -> list:
    """No rerank, no guard, no generation: only retrieval."""
    return [qr(f"p{i}", ["g"], {"hit@5": float(i % 2)}, retrieved=["g"] if i % 2 else ["x"]) for i in range(6)]


@pytest.fixture
def rich_run(tmp_path: Path) -> Path:
    return write_run(tmp_path, "rich", {"rich": _rich(), "plain": _plain()})


def test_failure_labels_funnel_latency_usage(rich_run: Path):
    v = variant_report(load_run(rich_run), "rich", n_resamples=200)
    assert v.labels == {"q_fail": "failed", "q_rmiss": "retrieval miss", "q_rdrop": "rerank drop",
                        "q_guard": "guard abstained", "q_genab": "generator abstained", "q_unsup": "unsupported claim",
                        "q_wrong": "wrong answer", "q_ok": "ok", "u_abst": "abstained (correct)",
                        "u_ans": "answered unanswerable"}
    assert [(s["stage"], s["count"]) for s in v.funnel] == [
        ("gold in retrieval top 20", 6), ("gold in final top 5", 5), ("passed guard", 4),
        ("answered with citations", 3), ("supported", 2)]
    assert v.n_answerable == 8 and v.reranker == MODEL and v.guard_threshold == 0.5
    assert v.latency["rerank"]["p50"] == 4.0 and v.latency["total"]["p95"] == pytest.approx(6.1)
    assert v.usage == {"generate": {"calls": 10, "tokens_in": 1000, "tokens_out": 200, "latency_ms": 500.0}}
    assert v.worst[0]["query_id"] == "q_fail"                   # hit@5 0, and 'failed' sorts first
    assert v.metrics["abstain_rate_answerable"]["mean"] == pytest.approx(1 / 8)
    plain = variant_report(load_run(rich_run), "plain", n_resamples=200)
    assert [s["count"] for s in plain.funnel] == [3, 3, None, None, None]
    assert plain.funnel[2]["note"] == "no guard node" and "no generation" in plain.funnel[3]["note"]
    assert plain.labels["p0"] == "retrieval miss" and plain.scores == {}


def test_html_is_self_contained_and_links_resolve(rich_run: Path):
    rep = build_report(load_run(rich_run), n_resamples=200)
    html = rep.html
    assert set(rep.figures) == {"metrics.png", "scores-rich.png"}
    assert html.count('<img alt=') == 2 and html.count('src="data:image/png;base64,') == 2
    assert not re.search(r'(src|href)="(?!data:|#)', html)        # nothing but data: URIs and anchors
    assert "http://" not in html and "https://" not in html
    links = set(re.findall(r'href="#([^"]+)"', html))
    ids = set(re.findall(r' id="([^"]+)"', html))
    assert links and links <= ids                                 # every worst query links to its trace
    assert '<table id="summary">' in html and ">rich</td>" in html and ">plain</td>" in html
    assert "n/a (no generation in this run)" in html and MODEL in html
    assert "Content-Security-Policy" in html
    every = re.search(r'<table id="query-labels">.*?</table>', html, re.DOTALL).group(0)
    assert every.count("<tr>") == 1 + 10 + 6 and "<td>answered unanswerable</td><td>-</td>" in every
    md = rep.markdown
    assert md.startswith("# evalkit report: rich") and "| variant |" in md and "| variant | failed | retrieval miss |" in md
    assert "- `q_fail` trace:" in md and "data:image" not in md


def test_cli_writes_both_files_next_to_the_summary(rich_run: Path):
    res = CliRunner().invoke(cli, ["report", str(rich_run), "--resamples", "200"])
    assert res.exit_code == 0, res.output
    html, md = default_paths(load_run(rich_run))
    assert html == rich_run.with_name("rich.report.html") and html.is_file() and md.is_file()
    assert "rich: funnel 6 -> 5 -> 4 -> 3 -> 2 (of 8 answerable)" in res.output
    assert "no MLflow parent run" in res.output


def test_cli_on_a_real_run(tiny, tmp_path: Path):
    out = tmp_path / "r.html"
    res = CliRunner().invoke(cli, ["report", str(tiny["run"]), "--html", str(out), "--markdown",
                                   str(tmp_path / "r.md"), "--no-mlflow"])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert all(f">{v}</td>" in text for v in ("bm25", "bm25_plain", "hybrid_weighted"))
    assert "retrieve" in (tmp_path / "r.md").read_text()


def test_report_logged_to_the_parent_run(tmp_path: Path, mlflow_store):
    from mlflow import MlflowClient

    mlflow_store(tmp_path)
    path = write_run(tmp_path, "ml", {"plain": _plain()}, log_mlflow=True)
    run = load_run(path)
    res = CliRunner().invoke(cli, ["report", str(path), "--resamples", "200"])
    assert res.exit_code == 0, res.output
    parent = run.mlflow_parent()
    assert f"logged the report to parent run {parent}" in res.output
    names = {Path(a.path).name for a in MlflowClient(run.tracking_uri).list_artifacts(parent, "report")}
    assert names == {"report.html", "report.md"}


def test_the_llm_grade_decides_correct_and_its_failure_flag_does_not():
    from evalkit.analysis.report_data import failure_label

    gen = {"answered": True, "abstained": False, "used_documents": ["d1"]}
    def label(**metrics):
        r = qr("q", ["d1"], {"hallucinated": 0.0, "faithfulness": 1.0, **metrics}, retrieved=["d1"])
        r.generation = gen
        return failure_label(r, {}, reranks=False)

    assert label(answer_correctness=0.0, answer_f1=0.9) == "wrong answer"   # the grade wins over F1
    assert label(answer_correctness=1.0, answer_f1=0.0) == "ok"
    # a failed grade (correctness_failed = 1) is not a grade: fall back to token F1
    assert label(answer_correctness=None, correctness_failed=1.0, answer_f1=0.9) == "ok"
    assert label(answer_correctness=None, correctness_failed=1.0, answer_f1=0.0) == "wrong answer"


def _answered(qid: str, gold: list[str], ndcg: float, top: list[str], answer: str, claims: list[dict],
              **extra) -> QueryResult:
    r = qr(qid, gold, {"ndcg@10": ndcg, "hit@5": float(bool(set(gold) & set(top[:5])))}, retrieved=top)
    r.generation = {"answer": answer, "answered": True, "abstained": False, "citations": [top[0]],
                    "used_documents": [top[0]], "invalid_citations": ["[9]"],
                    "evidence": [[f"{d}#0", d, 0.9 - 0.1 * i] for i, d in enumerate(top[:2])],
                    "judgement": {"claims": claims, "error": None}, **extra}
    return r


def test_pair_view_and_drill_down_from_the_records(tmp_path: Path):
    """Hand-made pair: B wins q1 (ndcg 0.5 -> 1), loses q2, changes q3's answer only, q4 identical."""
    from evalkit.analysis.report_queries import load_sources, pair_view

    sup = {"claim": "保修期为两年。", "verdict": "supported", "reason": "stated in d1", "evidence_id": "d1"}
    bad = {"claim": "The fee is 5 yuan.", "verdict": "unsupported", "reason": "5 not in the evidence",
           "evidence_id": None}
    a = [_answered("q1", ["d1"], 0.5, ["d2", "d1"], "答案 [d2]", [sup]),
         _answered("q2", ["d1"], 1.0, ["d1", "d2"], "a [d1]", [sup]),
         _answered("q3", ["d1"], 1.0, ["d1", "d2"], "old answer [d1]", [bad]),
         _answered("q4", ["d1"], 1.0, ["d1", "d2"], "same [d1]", [sup])]
    b = [_answered("q1", ["d1"], 1.0, ["d1", "d2"], "答案 [d1]", [sup],
                   abstention={"rule": "refusal", "pattern": "抱歉"}),       # a field this report does not know
         _answered("q2", ["d1"], 0.0, ["d3", "d4"], "a [d3]", [sup]),
         _answered("q3", ["d1"], 1.0, ["d1", "d2"], "new answer [d1]", [bad]),
         _answered("q4", ["d1"], 1.0, ["d1", "d2"], "same [d1]", [sup])]
    path = write_run(tmp_path, "pair", {"A": a, "B": b})
    run = load_run(path)
    labels = {n: variant_report(run, n, n_resamples=100).labels for n in ("A", "B")}
    view = pair_view(run, "A", "B", "ndcg@10", labels, load_sources(run))
    assert [x.query_id for x, _, _ in view.won] == ["q1"] and [x.query_id for x, _, _ in view.lost] == ["q2"]
    assert [x.query_id for x, _, _ in view.changed] == ["q3"]
    assert view.counts == {"won": 1, "lost": 1, "changed": 1, "same": 1, "queries": 4}
    x, y, delta = view.won[0]
    assert delta == 0.5 and [d["doc_id"] for d in x.ranking] == ["d2", "d1"] and y.ranking[0]["gold"]
    assert [p.id for p in y.claims[0].passages] == ["d1#0"]            # the passage that decided the claim
    assert y.claims[0].passages[0].text is None                         # no corpus recorded: ids only
    assert ("abstention", '{"rule": "refusal", "pattern": "抱歉"}') in y.findings
    assert ("invalid citations", "[9]") in y.findings
    rep = build_report(run, n_resamples=100, pairs=[("A", "B")])
    assert "passage texts not shown: the run recorded no corpus path" in rep.html
    assert 'id="pair-A-B"' in rep.html and "抱歉" in rep.html and 'lang="zh"' in rep.html
    assert "- won: `q1` (0.5000 → 1.0000)" in rep.markdown and "- lost: `q2` (1.0000 → 0.0000)" in rep.markdown
    res = CliRunner().invoke(cli, ["report", str(path), "--pair", "A,C", "--no-mlflow"])
    assert res.exit_code != 0 and "no variant 'C'; valid choices: A, B" in str(res.exception)


def test_pair_view_builds_views_only_for_the_queries_it_shows(tmp_path: Path, monkeypatch):
    """Sections cut at ``limit``: won, lost and changed are what a view of every query would give (recomputed here
    from ``query_view`` of each query), and only the shown queries' two views are built."""
    import random

    from evalkit.analysis import report_queries
    from evalkit.analysis.report_queries import load_sources, pair_view, query_view

    rng = random.Random(7)
    docs = ["d1", "d2", "d3"]
    a, b = [], []
    for i in range(30):
        for side in (a, b):
            top = rng.sample(docs, 3)
            side.append(_answered(f"q{i:02d}", ["d1"], rng.choice([0.0, 0.5, 1.0]), top,
                                  rng.choice(["yes [d1]", "no [d2]"]), []))
    path = write_run(tmp_path, "pair", {"A": a, "B": b})
    run = load_run(path)
    labels = {n: variant_report(run, n, n_resamples=100).labels for n in ("A", "B")}
    src = load_sources(run)
    built = []
    monkeypatch.setattr(report_queries, "query_view", lambda *args: built.append(args[3]) or query_view(*args))
    view = pair_view(run, "A", "B", "ndcg@10", labels, src, limit=3)
    shown = [t for section in (view.won, view.lost, view.changed) for t in section]
    assert len(built) == 2 * len(shown) and 0 < len(shown) <= 9

    sections: dict[str, list] = {"won": [], "lost": [], "changed": []}   # every query's views, then cut
    for ra, rb in zip(run.rows("A"), run.rows("B")):
        x = query_view(run, "A", ra, labels["A"].get(ra["query_id"], ""), src, None)
        y = query_view(run, "B", rb, labels["B"].get(rb["query_id"], ""), src, None)
        delta = y.metrics.get("ndcg@10", rb["metrics"]["ndcg@10"]) - ra["metrics"]["ndcg@10"]
        other = [d["doc_id"] for d in x.ranking] != [d["doc_id"] for d in y.ranking] or x.answer != y.answer \
            or x.label != y.label
        kind = "won" if delta > 0 else "lost" if delta < 0 else "changed" if other else None
        if kind:
            sections[kind].append((x.query_id, delta))
    for kind, found in (("won", view.won), ("lost", view.lost), ("changed", view.changed)):
        expected = sorted(sections[kind], key=lambda t: (-abs(t[1]), t[0]))[:3]
        assert [(x.query_id, d) for x, _, d in found] == expected
    assert view.counts == {**{k: len(v) for k, v in sections.items()},
                           "same": 30 - sum(map(len, sections.values())), "queries": 30}


def test_hostile_text_is_escaped(tmp_path: Path):
    evil = '<script>alert(1)</script><img src=x onerror=alert(2)>'
    r = _answered("q1", ["d1"], 1.0, ["d1"], evil, [{"claim": evil, "verdict": "supported", "reason": evil,
                                                      "evidence_id": "d1"}])
    r.question = evil
    rep = build_report(load_run(write_run(tmp_path, "evil", {"A": [r]})), n_resamples=100)
    assert evil not in rep.html and "&lt;script&gt;alert(1)&lt;/script&gt;" in rep.html
    assert rep.html.count("<script>") == 1                              # only the report's own render check
