"""``evalkit demo`` scores the bundled SmolLM2 answers (eval_sets/demo_llm_answers.jsonl) with
``evalkit score``'s code and prints the judge-corrected hallucination rate from the bundled labels.

Each printed number is recomputed here from the files: the per-query metrics equal what ``evalkit
score --answers ... --unanswered skip`` writes; the halluc cell is the share of hallucinated
answers in the per-query records; the judge-corrected line's estimate is the labels' own share
(every answer of the judge's population is labelled, so PPI++ reduces to the labelled mean), its
precision and recall are a hand count of the judge's flags against the labels, and its interval is
the one stored in the summary (the PPI arithmetic is recomputed in tests/analysis).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.analysis.labels import read_header, read_labels
from evalkit.cli import cli

REPO = Path(__file__).resolve().parents[2]
ANSWERS = REPO / "eval_sets" / "demo_llm_answers.jsonl"
LABELS = REPO / "eval_sets" / "demo_llm_labels.jsonl"
NAME = "smollm2_answers"
LINE = re.compile(r"^judge-corrected (\d\.\d\d) \[(-?\d\.\d\d), (\d\.\d\d)\] from (\d+) labels "
                  r"\(judge agreement: precision (\d\.\d\d), recall (\d\.\d\d)\)$", re.M)


def _rows(summary: Path, variant: str) -> dict[str, dict]:
    path = summary.with_suffix("") / variant / "per_query.jsonl"
    return {r["query_id"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


@pytest.fixture(scope="module")
def demo_and_score(tmp_path_factory) -> tuple[Path, str, Path]:
    """(the demo's scored-answers summary, demo stdout, `evalkit score` summary), each made once."""
    tmp = tmp_path_factory.mktemp("demo_llm")
    runner = CliRunner()
    demo = runner.invoke(cli, ["demo", "--config", NAME, "--no-progress", "--output", str(tmp / "demo" / "kb.json"),
                               "--wide"])
    assert demo.exit_code == 0, demo.output
    scored = runner.invoke(cli, ["score", "--answers", str(ANSWERS), "--eval-set",
                                 str(REPO / "eval_sets" / "demo_kb.jsonl") + "@v1", "--name", NAME, "--unanswered",
                                 "skip", "--output", str(tmp / "score" / "kb.json"), "--no-mlflow"])
    assert scored.exit_code == 0, scored.output
    return tmp / "demo" / "kb_llm.json", demo.stdout, tmp / "score" / "kb.json"


def test_the_demo_scores_the_answers_exactly_as_evalkit_score_does(demo_and_score):
    demo, _, score = demo_and_score
    mine, theirs = _rows(demo, NAME), _rows(score, NAME)
    answered = [json.loads(x)["id"] for x in ANSWERS.read_text(encoding="utf-8").splitlines() if x.strip()]
    assert sorted(mine) == sorted(answered) and len(mine) == 40  # the 80 questions it lacks are left out, not failed
    for qid, row in mine.items():
        assert row["metrics"] == theirs[qid]["metrics"], qid
        assert row["outcome"] == theirs[qid]["outcome"] != "failed", qid


def test_the_halluc_cell_is_the_share_of_hallucinated_answers(demo_and_score):
    demo, out, _ = demo_and_score
    flags = [r["metrics"]["hallucinated"] for r in _rows(demo, NAME).values()
             if r["metrics"].get("hallucinated") is not None]
    rate = sum(flags) / len(flags)
    assert 0 < rate < 1  # a real small model: some answers hallucinate, not all
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["variant", "faithful", "halluc"])
    row = next(line.split() for line in lines[header:] if line.split()[:1] == [NAME])
    assert row[lines[header].split().index("halluc")] == f"{rate:.4f}"


def test_the_judge_corrected_line_recomputed_from_the_labels(demo_and_score):
    demo, out, _ = demo_and_score
    found = LINE.findall(out)
    assert len(found) == 1, out
    est, low, high, n, precision, recall = found[0]
    rows = _rows(demo, NAME)
    pairs = [(lab.hallucinated, bool(rows[lab.query_id]["metrics"]["hallucinated"])) for lab in read_labels(LABELS)
             if rows[lab.query_id]["metrics"].get("hallucinated") is not None and lab.hallucinated is not None]
    population = [r for r in rows.values() if r["metrics"].get("hallucinated") is not None
                  and r["metrics"].get("faithfulness") is not None]
    # every answer of the judge's population is labelled: 24 since the learned abstention stage reads q024 as the
    # refusal it mostly is ("The answer is no. ... The answer is not possible to answer based on the given information.")
    assert len(pairs) == len(population) == int(n) == 24
    assert est == f"{sum(y for y, _ in pairs) / len(pairs):.2f}"
    tp = sum(y and f for y, f in pairs)
    assert precision == f"{tp / sum(f for _, f in pairs):.2f}" and recall == f"{tp / sum(y for y, _ in pairs):.2f}"
    stored = json.loads(demo.read_text(encoding="utf-8"))["variants"][NAME]["corrected"]["estimates"]
    e = stored["hallucination_rate"]
    assert (low, high) == (f"{e['ci_low']:.2f}", f"{e['ci_high']:.2f}") and e["ci_low"] < e["estimate"] < e["ci_high"]


def test_the_label_file_says_who_labelled_and_was_not_the_judge():
    header = read_header(LABELS)
    assert header["labelled_by"].startswith("labelled by reading") and "never by the judge" in header["labelled_by"]
    labels = read_labels(LABELS)
    assert len(labels) >= 30 and all(lab.hallucinated is not None for lab in labels)


def test_a_header_line_is_skipped_and_a_file_without_one_has_none(tmp_path):
    body = LABELS.read_text(encoding="utf-8").splitlines()[1:]
    bare = tmp_path / "bare.jsonl"
    bare.write_text("\n".join(body) + "\n", encoding="utf-8")
    assert read_header(bare) == {} and read_labels(bare) == read_labels(LABELS)


def test_score_rejects_unanswered_with_a_run_file(tmp_path):
    run = tmp_path / "r.trec"
    run.write_text("q001 Q0 fin-001 1 1.0 x\n", encoding="utf-8")
    res = CliRunner().invoke(cli, ["score", "--run", str(run), "--eval-set", str(REPO / "eval_sets" / "demo_kb.jsonl"),
                                   "--name", "x", "--output", str(tmp_path / "o.json"), "--unanswered", "skip"])
    assert res.exit_code == 2 and "--unanswered" in res.output
