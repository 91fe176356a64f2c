"""``evalkit score`` prints its tables as ``evalkit run`` does: fitted to the terminal, ``--wide``, ``--columns``.

Issue 15 asks every table to fit the terminal (120 columns when stdout is not one), with
``--wide`` for everything and ``--columns`` to choose. ``score`` used to print at a fixed
120 columns whatever the terminal, and had neither option.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli


def _answers(tmp_path: Path) -> Path:
    rows = [{"id": "q1", "question": "invoice approval above 5000", "retrieved": ["doc-a", "doc-b"],
             "answer": "Electronic invoices above 5000 need director approval [doc-a]."},
            {"id": "q5", "question": "salary of the CEO", "retrieved": [], "answer": "I don't know."}]
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _score(tmp_path: Path, es: Path, *extra: str) -> object:
    return CliRunner().invoke(cli, ["score", "--answers", str(_answers(tmp_path)), "--eval-set", f"{es}@v1",
                                    "--name", "mine", "--output", str(tmp_path / "out.json"), "--no-mlflow",
                                    *extra], catch_exceptions=False)


def _table_lines(stdout: str) -> list[str]:
    """The printed tables and their notes (the file paths after them are as long as the paths)."""
    return stdout.split("\nsummary: ")[0].splitlines()


@pytest.mark.parametrize("width", [72, 100])
def test_score_tables_fit_the_terminal(tiny, tmp_path: Path, monkeypatch, width: int):
    es, _ = tiny
    monkeypatch.setattr("evalkit.commands.options.output_width", lambda stream=None: width)
    res = _score(tmp_path, es)
    assert res.exit_code == 0, res.output
    lines = _table_lines(res.stdout)
    assert "faithful" in res.stdout and "hit@5" in res.stdout
    assert max(len(x) for x in lines) <= width, [x for x in lines if len(x) > width]
    assert "not shown to fit" in res.stdout  # the answers table is wider than 72 or 100 columns


def test_score_wide_and_columns(tiny, tmp_path: Path, monkeypatch):
    es, _ = tiny
    monkeypatch.setattr("evalkit.commands.options.output_width", lambda stream=None: 72)
    wide = _score(tmp_path, es, "--wide")
    assert wide.exit_code == 0, wide.output
    assert "not shown to fit" not in wide.stdout
    assert max(len(x) for x in _table_lines(wide.stdout)) > 72
    chosen = _score(tmp_path, es, "--columns", "hit@5")
    assert chosen.exit_code == 0, chosen.output
    table = _table_lines(chosen.stdout)
    assert any("hit@5" in x for x in table) and not any("mrr@10" in x for x in table)


@pytest.mark.parametrize("spec", [None, "backend: extractive\n"])
def test_an_llm_judge_without_a_model_is_a_clear_error(tiny, tmp_path: Path, spec: str | None):
    """``--judge llm`` without ``--judge-llm`` (or with a backend that cannot judge): one line, no traceback."""
    es, _ = tiny
    extra = ["--judge", "llm"]
    if spec is not None:
        (tmp_path / "llm.yaml").write_text(spec, encoding="utf-8")
        extra += ["--judge-llm", str(tmp_path / "llm.yaml")]
    res = CliRunner().invoke(cli, ["score", "--answers", str(_answers(tmp_path)), "--eval-set", f"{es}@v1",
                                   "--name", "mine", "--output", str(tmp_path / "out.json"), "--no-mlflow", *extra])
    assert res.exit_code == 1 and res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "needs" in res.output and "Traceback" not in res.output


def test_answers_without_rankings_print_no_empty_by_type_table(tmp_path: Path):
    rows = [{"id": "x1", "question": "Who approves invoices?", "answer": "A director approves them.",
             "contexts": ["Electronic invoices above 5000 need director approval."]}]
    path = tmp_path / "self.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = CliRunner().invoke(cli, ["score", "--answers", str(path), "--name", "mine", "--output",
                                   str(tmp_path / "out.json"), "--no-mlflow"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "answers (generating variants" in res.stdout and "by question type" not in res.stdout


@pytest.mark.parametrize("name", ["../../evil", "/tmp/abs", "a/b", "..", "my system"])
def test_a_variant_name_that_is_not_a_safe_folder_name_is_refused(tiny, tmp_path: Path, name: str):
    """``--name`` names the folder per_query.jsonl goes to: ``../../evil`` wrote outside --output."""
    es, _ = tiny
    out = tmp_path / "deep" / "er" / "out.json"
    res = CliRunner().invoke(cli, ["score", "--answers", str(_answers(tmp_path)), "--eval-set", f"{es}@v1",
                                   "--name", name, "--output", str(out), "--no-mlflow"])
    assert res.exit_code == 1 and "not a safe identifier" in res.output, res.output
    assert not list(tmp_path.rglob("per_query.jsonl")) and not Path("/tmp/abs").exists()
