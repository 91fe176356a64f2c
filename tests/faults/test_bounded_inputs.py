"""Every input bounded and every failure named: lone surrogates, YAML alias bombs, an unpinned eval set with
unfrozen lines, an empty --output.

Before (issue 33): a question holding "\\ud800" passed `evalset validate` and `freeze`, then `evalkit run`
died with a UnicodeEncodeError traceback in run/store.py and left an empty per_query.jsonl; a 9x9 YAML
alias bomb made `graph check` and `run` grow past 1 GB without end (a recursive alias: a RecursionError
traceback); `run --eval-set kb.jsonl` silently ignored appended, unfrozen lines; `--output ''` gave a
traceback.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from faultkit import N_QUESTIONS, SET, cli, jsonl, one_line_error, question

from evalkit.evalsets import freeze, load_eval_set

SURROGATE = question(N_QUESTIONS) | {"question": "bad \ud800 text"}


def escaped(rows: list[dict]) -> str:
    """JSON lines with every non-ASCII character as a \\u escape: how a lone surrogate reaches a file."""
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_a_lone_surrogate_is_refused_at_validate_freeze_and_append(ws: Path):
    path = ws / "sets" / "kb.jsonl"
    clean = path.read_bytes()
    path.write_text(path.read_text() + escaped([SURROGATE]))
    assert "\\ud800" in path.read_text()  # as a user's file holds it: a JSON escape
    where = f"sets/kb.jsonl:{N_QUESTIONS + 1}: question: holds a lone surrogate '\\ud800' at character 5"
    for args in (("validate", "sets/kb.jsonl"), ("freeze", "sets/kb.jsonl")):
        msg = one_line_error(cli(ws, "evalset", *args), 1)
        assert where in msg and "remove it, or write the character itself" in msg
    path.write_bytes(clean)
    (ws / "new.jsonl").write_text(escaped([question(N_QUESTIONS) | {"history": [{"role": "user",
                                                                               "content": "x \udfff"}]}]))
    msg = one_line_error(cli(ws, "evalset", "append", "sets/kb.jsonl", "new.jsonl"), 1)
    assert "new.jsonl:1: history[0].content: holds a lone surrogate '\\udfff' at character 3" in msg
    assert path.read_bytes() == clean  # nothing appended


def test_a_set_frozen_with_a_lone_surrogate_is_refused_at_load(ws: Path, monkeypatch: pytest.MonkeyPatch):
    path = ws / "sets" / "kb.jsonl"
    path.write_text(path.read_text() + escaped([SURROGATE]))
    monkeypatch.setattr("evalkit.evalsets.evalset.unencodable", lambda value, where="": None, raising=False)
    freeze(path)  # as an older evalkit froze it: v2 holds the bad line
    msg = one_line_error(cli(ws, "run", "--eval-set", "sets/kb.jsonl@v2", "--graph-config", "bm25.yaml",
                             "--output", "out/kb.json", "--no-mlflow", "--no-progress"), 2)
    assert f"sets/kb.jsonl:{N_QUESTIONS + 1}: question: holds a lone surrogate '\\ud800'" in msg
    assert not (ws / "out").exists()  # refused before anything was written


BOMB = "".join(f"{b}: &{b} [{', '.join(['*' + a] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi"))
CONFIG = ("name: bomb\nchunking: {method: document}\nnodes:\n  retrieve: {type: retrieve, params: {bm25: {}}}\n"
          "edges: {start: retrieve, retrieve: end}\n")


@pytest.mark.parametrize("case", ["bomb", "recursive"])
def test_yaml_alias_bombs_are_refused_at_once(ws: Path, case: str):
    text = f"a: &a [{', '.join(['x'] * 9)}]\n{BOMB}" if case == "bomb" else "x: &a [1, *a]\n"
    (ws / "bomb.yaml").write_text(text + CONFIG)
    check = cli(ws, "graph", "check", "bomb.yaml", timeout=20)  # before: > 1 GB after 20 s, growing
    msg = one_line_error(check, 1)
    run = cli(ws, "run", "--eval-set", SET, "--graph-config", "bomb.yaml", "--output", "out/kb.json",
              "--no-mlflow", "--no-progress", timeout=20)
    assert one_line_error(run, 2).endswith(msg.removeprefix("Error: "))  # the same words from both commands
    what = "expands to more than 100,000 nodes" if case == "bomb" else "an alias refers to a node that contains it"
    assert msg.startswith("Error: bomb.yaml:") and what in msg
    assert "YAML aliases (*name) are limited to 1,000 uses and 100,000 nodes" in msg


def test_a_config_with_a_few_aliases_still_loads(ws: Path):
    (ws / "anchors.yaml").write_text("name: anchors\nchunking: {method: document}\nnodes:\n  retrieve: {type: "
                                     "retrieve, params: {bm25: {<<: &b {tokenizer: en}, k1: 1.2}}}\n"
                                     "edges: {start: retrieve, retrieve: end}\nsweep: {nodes.retrieve.params.bm25: "
                                     "[*b, {<<: *b, k1: 0.9}]}\n")
    check = cli(ws, "graph", "check", "anchors.yaml")
    assert check.returncode == 0, check.stderr


def test_an_unpinned_eval_set_says_which_unfrozen_lines_it_ignores(ws: Path):
    path = ws / "sets" / "kb.jsonl"
    path.write_text(path.read_text() + jsonl([question(N_QUESTIONS), question(N_QUESTIONS + 1)]))
    done = cli(ws, "run", "--eval-set", "sets/kb.jsonl", "--graph-config", "bm25.yaml", "--output", "out/kb.json",
               "--no-mlflow", "--no-progress")
    assert done.returncode == 0, done.stderr[-2000:]
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1, done.stderr
    assert warnings[0].startswith(f"warning: {path}: ignoring lines {N_QUESTIONS + 1}-{N_QUESTIONS + 2} "
                                  f"(ids q{N_QUESTIONS}, q{N_QUESTIONS + 1}): not frozen yet, so this uses v1 "
                                  f"({N_QUESTIONS} lines); freeze them with `evalkit evalset freeze {path}`")
    assert json.loads((ws / "out" / "kb.json").read_text())["eval_set"]["n_queries"] == N_QUESTIONS
    assert load_eval_set(f"{path}@v1").warnings == []  # pinned: the user chose v1, nothing to say


@pytest.mark.parametrize("command", ["run", "score", "demo"])
def test_an_empty_output_is_a_usage_error(ws: Path, command: str):
    args = {"run": ("run", "--eval-set", SET, "--graph-config", "bm25.yaml", "--no-mlflow"),
            "score": ("score", "--eval-set", SET, "--run", "mine.trec", "--name", "x", "--no-mlflow"),
            "demo": ("demo",)}[command]
    (ws / "mine.trec").write_text("".join(f"q{n} Q0 d{n} 1 1.0 mine\n" for n in range(N_QUESTIONS)))
    proc = cli(ws, *args, "--output", "")
    msg = one_line_error(proc, 2)
    assert msg == ("Error: Invalid value for '--output': needs a file name (it is empty or ends in a folder): give "
                   "the summary JSON to write, e.g. --output results/run.json (per-query records then go to "
                   "results/run/)")
    assert sorted(p.name for p in ws.iterdir()) == ["bm25.yaml", "bm25b.yaml", "held.yaml", "mine.trec", "sets"]
