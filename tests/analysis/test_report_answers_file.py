"""The report of answers scored without an eval set (``evalkit score --answers FILE``).

Such a run names no eval set version and no corpus: its questions, contexts and
reference answers are in the answers file. The report used to try to load the file as
eval set ``@v0`` (a note "bad version '@v0'"), showed no reference answer and no passage
text, and listed no worst queries at all (it took only queries with gold documents), so
the hallucinated answer could not be seen.
"""
from __future__ import annotations

import json
from pathlib import Path

from evalkit.analysis.run_report import build_report
from evalkit.analysis.runs import load_run
from evalkit.run.runner import RunOptions
from evalkit.scoring import score_answers, write_scored

ROWS = [{"id": "x1", "question": "发票审批要求是什么？", "answer": "电子发票超过五千元需要总监审批。",
         "contexts": ["电子发票超过五千元需要总监审批。"], "reference_answer": "超过五千元需总监审批"},
        {"id": "x2", "question": "Who approves invoices?", "answer": "The CFO approves all invoices.",
         "contexts": ["Electronic invoices above 5000 need director approval."],
         "reference_answer": "A director approves invoices above 5000."}]


def _scored(tmp_path: Path) -> tuple[Path, Path]:
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS), encoding="utf-8")
    out = tmp_path / "res" / "mine.json"
    write_scored(score_answers(answers, "mine", cache_root=tmp_path / "cache"),
                 RunOptions(output=out, mlflow=False, progress=False), echo=lambda m: None)
    return answers, out


def test_drill_down_shows_references_and_context_texts(tmp_path: Path):
    _, out = _scored(tmp_path)
    report = build_report(load_run(out), n_resamples=200)
    assert not any("@v0" in n or "not shown" in n for n in report.notes), report.notes
    v = report.variants[0]
    assert v.primary == "faithfulness"
    assert [w["query_id"] for w in v.worst] == ["x2", "x1"]  # the unfaithful answer first
    assert "A director approves invoices above 5000." in report.html
    assert "超过五千元需总监审批" in report.html
    assert "Electronic invoices above 5000 need director approval." in report.html  # the context, on demand


def test_an_edited_answers_file_is_named_not_trusted(tmp_path: Path):
    answers, out = _scored(tmp_path)
    answers.write_text(answers.read_text(encoding="utf-8").replace("director", "manager"), encoding="utf-8")
    report = build_report(load_run(out), n_resamples=200)
    assert any("changed since the run" in n for n in report.notes), report.notes
    assert "Electronic invoices above 5000 need manager approval." not in report.html
