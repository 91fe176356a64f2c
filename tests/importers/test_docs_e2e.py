"""End to end: the own_data.md block of ``evalkit import docs``, run as written on a folder the test writes.

docs/own_data.md ("From PDF, Word, HTML and Markdown files") shows: import the folder, write
three questions (Chinese and English, one per PDF, Word and HTML document), freeze them against
the imported corpus, run the bundled ``graph_configs/bm25.yaml``. This test writes the folder
(:func:`docfiles.make_folder`: the four documents plus four unreadable files), runs those
commands with the venv's Python in a scratch folder, and recomputes the printed retrieval
metrics from the per-query rankings. Then the same config with ``parent_child`` chunking and
``table: true`` runs on the same eval set: the Word table's row that answers q2 comes back
inside a table piece with its header, never cut.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from docfiles import make_folder

_spec = importlib.util.spec_from_file_location("evalkit_tests_doc_blocks",
                                               Path(__file__).parents[1] / "docs" / "doc_blocks.py")
doc_blocks = importlib.util.module_from_spec(_spec)
sys.modules.setdefault(_spec.name, doc_blocks)
_spec.loader.exec_module(doc_blocks)

REPO = doc_blocks.REPO
PAGE = REPO / "docs" / "own_data.md"
ME = "tests/importers/test_docs_e2e.py"


def page_commands() -> list[str]:
    blocks = [b for b in doc_blocks.blocks(PAGE) if b.mark == "test" and b.reason.startswith(ME)]
    assert len(blocks) == 1, f"own_data.md should hold exactly one block marked for {ME}"
    return blocks[0].commands()


def workspace(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    make_folder(ws)
    (ws / "graph_configs").mkdir()
    shutil.copy(REPO / "graph_configs" / "bm25.yaml", ws / "graph_configs" / "bm25.yaml")
    (ws / "eval_sets").mkdir()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "evalkit"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m evalkit.cli "$@"\n')
    script.chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(REPO)}
    return ws, env


def _ranked_docs(record: dict) -> list[str]:
    """Documents of a per-query record's final ranking (``reranked``: by document), in rank order."""
    return [hit["doc_id"] for hit in record["reranked"]]


def _top_passage(record: dict) -> str:
    """The passage id ranked first by the ``retrieve`` node (its trace event's ``retrieved``)."""
    event = next(e for e in record["trace"] if e["node"] == "retrieve")
    return event["wrote"]["retrieved"][0][0]


def test_the_documented_import_freeze_and_run(tmp_path):
    ws, env = workspace(tmp_path)
    commands = page_commands()
    assert commands[0] == "evalkit import docs handbook --name handbook" and commands[-1].startswith("evalkit run")
    outputs = []
    for cmd in commands:
        res = subprocess.run(["bash", "-c", cmd], cwd=ws, env=env, capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, f"`{cmd}` exited {res.returncode}\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}"
        assert "Traceback" not in res.stderr, res.stderr
        outputs.append(res.stdout)
    assert "4 documents (1 docx, 1 html, 1 markdown, 1 pdf)" in outputs[0]
    assert outputs[0].count("skipped   ") == 5  # four files named with their reason, then the count

    summary = json.loads((ws / "results" / "handbook.json").read_text(encoding="utf-8"))
    records = [json.loads(line) for line in
               (ws / "results" / "handbook" / "bm25" / "per_query.jsonl").read_text(encoding="utf-8").splitlines()]
    gold = {r["id"]: r["relevant_doc_ids"] for r in map(json.loads, (ws / "eval_sets" / "handbook_qa.jsonl")
                                                         .read_text(encoding="utf-8").splitlines())}
    assert sorted(r["query_id"] for r in records) == ["q1", "q2", "q3"]
    # recompute recall@20, hit@5 and mrr@10 from the rankings (one gold document per question)
    ranks = {r["query_id"]: _ranked_docs(r) for r in records}
    expect = {
        "recall@20": sum(gold[q][0] in docs[:20] for q, docs in ranks.items()) / 3,
        "hit@5": sum(gold[q][0] in docs[:5] for q, docs in ranks.items()) / 3,
        "mrr@10": sum(1 / (docs.index(gold[q][0]) + 1) if gold[q][0] in docs[:10] else 0
                      for q, docs in ranks.items()) / 3,
    }
    got = summary["variants"]["bm25"]["metrics"]
    for name, value in expect.items():
        assert abs(got[name] - value) < 1e-9, (name, got[name], value)
    assert expect["hit@5"] == 1.0  # each question finds its document in this four-document corpus

    # the same eval set, chunked by parent_child with tables kept whole
    from evalkit.api import evaluate

    cfg = yaml.safe_load((REPO / "graph_configs" / "bm25.yaml").read_text(encoding="utf-8"))
    cfg["name"] = "bm25_tables"
    cfg["chunking"] = {"method": "parent_child", "parent_size": 400, "child_size": 120, "child_overlap": 0,
                       "table": True}
    os.chdir(ws)
    try:
        results = evaluate("eval_sets/handbook_qa.jsonl@v1", cfg, output=ws / "results" / "tables.json",
                           mlflow=False, progress=False)
    finally:
        os.chdir(REPO)
    assert results is not None
    per_query = [json.loads(line) for line in
                 (ws / "results" / "tables" / "bm25_tables" / "per_query.jsonl").read_text(encoding="utf-8")
                 .splitlines()]
    q2 = next(r for r in per_query if r["query_id"] == "q2")
    passage = _top_passage(q2)
    assert passage.startswith("lodging.docx#p"), passage
    from evalkit.index.chunking import chunk_corpus, with_defaults
    from evalkit.index.corpus import load_corpus

    passages = chunk_corpus(load_corpus(ws / "eval_sets" / "corpora" / "handbook.jsonl"), with_defaults(cfg["chunking"]))
    chunk = passages.parents.get(passage) or next(u for u in passages.units if u.id == passage)
    lines = chunk.text.split("\n")
    assert lines[:2] == ["| 城市 | 住宿标准（元/晚） |", "| --- | --- |"] and "| 成都 | 450 |" in lines
    assert all(line.startswith("| ") for line in lines)  # the table alone: no prose shares its chunk

