"""The "From Python" example of docs/byo.md (linked from the README) runs as written on the bundled demo.

The block is extracted from docs/byo.md (so an edit to the page is what gets tested) and
executed in a scratch folder holding copies of ``eval_sets/`` and ``graph_configs/``, so
nothing is written into the repository. Its numbers are then checked against the CLI.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from click.testing import CliRunner

from evalkit.cli import cli

REPO = Path(__file__).resolve().parents[1]


def readme_python_block() -> str:
    text = (REPO / "docs" / "byo.md").read_text(encoding="utf-8")
    section = text.split("## From Python", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, "the From Python section should hold one python block"
    return blocks[0]


def test_readme_from_python_block_runs_as_written(tmp_path: Path, monkeypatch):
    for folder in ("eval_sets", "graph_configs"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(readme_python_block(), "docs/byo.md:From Python", "exec"), namespace)  # noqa: S102
    results, mine, misses = namespace["results"], namespace["mine"], namespace["misses"]
    assert list(results.summary.index) == ["bm25", "bm25_okapi"]
    assert (tmp_path / "results" / "notebook.report.html").is_file()
    assert len(namespace["df"]) == 240 and misses["query_id"].str.startswith("q").all()
    # the notebook numbers are the CLI's: the bundled bm25 config through `evalkit run`
    res = CliRunner().invoke(cli, ["run", "--eval-set", "eval_sets/demo_kb.jsonl@v1", "--graph-config",
                                   "graph_configs/bm25.yaml", "--output", "results/cli.json", "--no-mlflow",
                                   "--no-progress"])
    assert res.exit_code == 0, res.output
    cli_metrics = json.loads((tmp_path / "results" / "cli.json").read_text())["variants"]["bm25"]["metrics"]
    assert results.summary.loc["bm25", "ndcg@10"] == cli_metrics["ndcg@10"]
    assert mine.eval_set.name.startswith("my_questions-") and mine.eval_set.n_queries == 2
    assert list(mine.to_pandas()["hit@5"]) == [1.0, 1.0]
