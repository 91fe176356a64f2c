"""``evalkit evalset`` commands, through click's CliRunner and the real ``cli`` group."""
from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.commands.evalset import evalset

# corpus: d1, d2; eval set: one single-doc question and one unanswerable question
DOCS = [{"id": "d1", "title": "one", "text": "first"}, {"id": "d2", "title": "two", "text": "second"}]
RECORDS = [
    {"id": "q1", "question": "What is first?", "relevant_doc_ids": ["d1"], "type": "single", "lang": "en"},
    {"id": "q2", "question": "谁是第三?", "relevant_doc_ids": [], "type": "unanswerable", "lang": "zh", "tags": ["x"]},
]


def jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory holding eval_sets/kb.jsonl (unfrozen) and eval_sets/corpora/kb.jsonl."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "eval_sets" / "corpora").mkdir(parents=True)
    (tmp_path / "eval_sets" / "corpora" / "kb.jsonl").write_text(jsonl(DOCS), encoding="utf-8")
    (tmp_path / "eval_sets" / "kb.jsonl").write_text(jsonl(RECORDS), encoding="utf-8")
    return tmp_path


def run(*args: str):
    return CliRunner().invoke(cli, ["evalset", *args])


def test_freeze_then_validate(ws: Path) -> None:
    result = run("freeze", "kb", "--corpus", "eval_sets/corpora/kb.jsonl", "--description", "tiny")
    assert result.exit_code == 0, result.output
    assert "Froze eval_sets/kb.jsonl v1: 2 lines, sha256 " in result.output
    sha = json.loads((ws / "eval_sets" / "kb.manifest.json").read_text())["versions"][0]["sha256"]
    result = run("validate", "eval_sets/kb.jsonl")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"OK eval_sets/kb.jsonl: v1, 2 lines, sha256 {sha}"


def test_first_freeze_without_corpus_fails_in_one_line(ws: Path) -> None:
    result = run("freeze", "kb")
    assert result.exit_code == 1
    assert result.output.startswith("Error: eval_sets/kb.jsonl: the first freeze needs the corpus")
    assert len(result.output.strip().splitlines()) == 1


def test_validate_reports_tampering_with_exit_1(ws: Path) -> None:
    assert run("freeze", "kb", "--corpus", "eval_sets/corpora/kb.jsonl").exit_code == 0
    path = ws / "eval_sets" / "kb.jsonl"
    path.write_text(path.read_text(encoding="utf-8").replace("What is first?", "What is 1st?"), encoding="utf-8")
    result = run("validate", "kb")
    assert result.exit_code == 1
    assert "line 1 changed since version 1 was frozen" in result.output
    assert "Traceback" not in result.output


def test_validate_unfrozen_set_warns(ws: Path) -> None:
    result = run("validate", "kb")
    assert result.exit_code == 0
    assert "OK eval_sets/kb.jsonl: 2 lines, not frozen yet" in result.output
    assert "warning: not frozen yet" in result.output


def test_append_then_freeze(ws: Path) -> None:
    assert run("freeze", "kb", "--corpus", "eval_sets/corpora/kb.jsonl").exit_code == 0
    (ws / "more.jsonl").write_text(jsonl([{"id": "q3", "question": "What is second?", "relevant_doc_ids": ["d2"],
                                           "type": "single", "lang": "en"}]), encoding="utf-8")
    result = run("append", "kb", "more.jsonl")
    assert result.exit_code == 0, result.output
    assert "Appended 1 record(s) to eval_sets/kb.jsonl" in result.output
    result = run("validate", "kb")
    assert result.exit_code == 0 and "(+1 unfrozen)" in result.output
    result = run("freeze", "kb")
    assert result.exit_code == 0 and "v2: 3 lines" in result.output


def test_append_bad_record_appends_nothing(ws: Path) -> None:
    assert run("freeze", "kb", "--corpus", "eval_sets/corpora/kb.jsonl").exit_code == 0
    before = (ws / "eval_sets" / "kb.jsonl").read_bytes()
    (ws / "more.jsonl").write_text(jsonl([{"id": "q3", "question": "Q", "relevant_doc_ids": "d2",
                                           "type": "single", "lang": "en"}]), encoding="utf-8")
    result = run("append", "kb", "more.jsonl")
    assert result.exit_code == 1
    assert 'Error: more.jsonl:1: relevant_doc_ids: expected a list of document ids, got "d2"' in result.output
    assert (ws / "eval_sets" / "kb.jsonl").read_bytes() == before


def test_stats_table_and_json(ws: Path) -> None:
    assert run("freeze", "kb", "--corpus", "eval_sets/corpora/kb.jsonl").exit_code == 0
    table = run("stats", "kb")
    assert table.exit_code == 0, table.output
    assert "records: 2  answerable: 1  unanswerable: 1" in table.output
    assert "unanswerable      1" in table.output and "v1" in table.output
    as_json = run("stats", "kb@v1", "--json")
    data = json.loads(as_json.output)
    assert data["by_lang"] == {"en": 1, "zh": 1} and data["version"] == 1 and data["by_tag"] == {"x": 1}


def test_missing_eval_set_is_one_clear_line(ws: Path) -> None:
    result = run("stats", "kbb")
    assert result.exit_code == 1
    assert result.output.strip() == "Error: eval_sets/kbb.jsonl: no such eval set file; did you mean 'kb'?"


def test_every_option_has_help_and_every_command_a_docstring() -> None:
    assert evalset.help
    for name, command in evalset.commands.items():
        assert command.help and len(command.help) > 40, name
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, f"{name} {param.name}"
    assert run("--help").exit_code == 0
