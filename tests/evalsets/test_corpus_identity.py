"""The corpus content is frozen with each version: a changed corpus is refused, naming the documents."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import EvalSetError
from evalkit.evalsets import check, freeze, load_eval_set, read_manifest

REPO = Path(__file__).resolve().parents[2]
DOCS = [{"id": f"d{i}", "title": f"doc {i}", "text": f"text of document {i}"} for i in range(1, 13)]
RECORDS = [{"id": "q1", "question": "What is in doc 1?", "relevant_doc_ids": ["d1"], "type": "single", "lang": "en"},
           {"id": "q2", "question": "And doc 2?", "relevant_doc_ids": ["d2"], "type": "single", "lang": "en"}]


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "eval_sets" / "corpora").mkdir(parents=True)
    (tmp_path / "eval_sets" / "corpora" / "kb.jsonl").write_text(jsonl(DOCS), encoding="utf-8")
    (tmp_path / "eval_sets" / "kb.jsonl").write_text(jsonl(RECORDS), encoding="utf-8")
    freeze("eval_sets/kb.jsonl", corpus="eval_sets/corpora/kb.jsonl")
    return tmp_path


def edit_corpus(ws: Path, change: dict[str, str | None], add: list[dict] = ()) -> None:
    """Set the text of documents (None removes them) and append new ones."""
    docs = [{**d, "text": change.get(d["id"], d["text"])} for d in DOCS if change.get(d["id"], "") is not None]
    (ws / "eval_sets" / "corpora" / "kb.jsonl").write_text(jsonl([*docs, *add]), encoding="utf-8")


def test_an_edited_corpus_is_refused_naming_the_documents(ws: Path):
    edit_corpus(ws, {"d1": "rewritten", "d2": "rewritten too", "d5": None}, add=[{"id": "new", "text": "x"}])
    for load in (lambda: check("eval_sets/kb.jsonl"), lambda: load_eval_set("eval_sets/kb.jsonl@v1")):
        with pytest.raises(EvalSetError) as info:
            load()
        msg = str(info.value)
        assert "corpus eval_sets/corpora/kb.jsonl changed since v1 was frozen" in msg
        assert "2 changed (d1, d2), 1 added (new), 1 removed (d5)" in msg
        assert msg.endswith("freeze a new version that records it: evalkit evalset freeze eval_sets/kb.jsonl")
    assert load_eval_set("eval_sets/kb.jsonl@v1", check_corpus=False).version == 1  # the gate's re-verification


def test_reformatting_the_corpus_is_not_a_change(ws: Path):
    docs = [{"text": d["text"], "title": d["title"], "id": d["id"]} for d in reversed(DOCS)]  # key and line order
    (ws / "eval_sets" / "corpora" / "kb.jsonl").write_text("".join(json.dumps(d, indent=None, separators=(", ", ":"))
                                                                   + "\n\n" for d in docs), encoding="utf-8")
    assert check("eval_sets/kb.jsonl").warnings == []
    assert load_eval_set("eval_sets/kb.jsonl@v1").warnings == []


def test_many_changes_are_summarised(ws: Path):
    edit_corpus(ws, {d["id"]: "edited" for d in DOCS})
    with pytest.raises(EvalSetError, match=r"12 changed \(d1, d10, d11, d12, d2 and 7 more\)"):
        check("eval_sets/kb.jsonl")


def test_freezing_the_changed_corpus_makes_a_new_version(ws: Path):
    edit_corpus(ws, {"d3": "better text"})
    entry = freeze("eval_sets/kb.jsonl")  # no new lines: a new version of the same lines over the new corpus
    assert entry["version"] == 2 and entry["lines"] == 2
    assert load_eval_set("eval_sets/kb.jsonl@v2").sha256 == load_eval_set("eval_sets/kb.jsonl@v2").sha256
    with pytest.raises(EvalSetError, match=r"changed since v1 was frozen: 1 changed \(d3\)"):
        load_eval_set("eval_sets/kb.jsonl@v1")  # v1 still means the corpus it was labelled on
    with pytest.raises(EvalSetError, match="nothing to freeze.*corpus is unchanged"):
        freeze("eval_sets/kb.jsonl")
    edit_corpus(ws, {})  # back to the v1 corpus: v1 loads again, from its own kept fingerprints
    assert load_eval_set("eval_sets/kb.jsonl@v1").version == 1


def test_missing_fingerprints_still_refuse_without_names(ws: Path):
    for p in (ws / "eval_sets").glob("kb.corpus-*.json"):
        p.unlink()
    edit_corpus(ws, {"d1": "x"})
    with pytest.raises(EvalSetError, match="fingerprints of the frozen corpus are missing"):
        check("eval_sets/kb.jsonl")


def test_an_old_manifest_loads_with_a_warning_and_freeze_adds_the_hash(ws: Path):
    mpath = ws / "eval_sets" / "kb.manifest.json"
    data = json.loads(mpath.read_text())
    del data["versions"][0]["corpus_content_sha256"]  # as evalkit wrote manifests before this
    mpath.write_text(json.dumps(data, indent=2))
    es = load_eval_set("eval_sets/kb.jsonl@v1")
    assert len(es.warnings) == 1
    assert "v1 was frozen without a corpus hash" in es.warnings[0]
    assert "`evalkit evalset freeze eval_sets/kb.jsonl` (a new version v2 of the same lines)" in es.warnings[0]
    assert check("eval_sets/kb.jsonl").warnings == es.warnings
    assert freeze("eval_sets/kb.jsonl")["version"] == 2
    assert load_eval_set("eval_sets/kb.jsonl").warnings == []
    assert read_manifest(ws / "eval_sets" / "kb.jsonl").versions[1]["lines"] == 2


def test_a_manifest_repeating_lines_without_a_new_corpus_is_refused(ws: Path):
    mpath = ws / "eval_sets" / "kb.manifest.json"
    data = json.loads(mpath.read_text())
    data["versions"].append({**data["versions"][0], "version": 2})
    mpath.write_text(json.dumps(data))
    with pytest.raises(EvalSetError, match=r"versions\[1\]: expected .*lines > 2 \(or = 2 with a new "):
        load_eval_set("eval_sets/kb.jsonl")


def test_validate_and_run_on_the_command_line(ws: Path):
    edit_corpus(ws, {"d2": "now says something else"})
    result = CliRunner().invoke(cli, ["evalset", "validate", "eval_sets/kb.jsonl"])
    assert result.exit_code == 1 and "1 changed (d2)" in result.output and "OK" not in result.output
    config = ws / "bm25.yaml"
    config.write_text("nodes:\n  retrieve: {type: retrieve, params: {bm25: {}}}\nedges: {start: retrieve, "
                      "retrieve: end}\n")
    proc = subprocess.run([sys.executable, "-m", "evalkit.cli", "run", "--eval-set", "eval_sets/kb.jsonl@v1",
                           "--graph-config", str(config), "--output", "out/kb.json", "--no-mlflow"],
                          cwd=ws, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2 and "1 changed (d2)" in proc.stderr and "Traceback" not in proc.stderr
    assert not (ws / "out" / "kb.json").exists()


def test_the_bundled_demo_records_its_corpus():
    es = load_eval_set(REPO / "eval_sets" / "demo_kb.jsonl")
    assert es.warnings == [] and es.version == 1
