"""The built wheel runs its demo outside any clone.

Before: ``pip install`` then ``evalkit demo`` said ``error: .../site-packages/eval_sets/demo_kb.jsonl:
no such eval set file`` (the wheel carried neither the eval sets nor the configs).

The test builds the wheel from a copy of this checkout (no build isolation: nothing is
downloaded), installs it with ``--no-deps`` into a fresh virtualenv whose only view of
the dependencies is a ``.pth`` line naming the tested venv's site-packages (appended after
the venv's own, so the wheel's ``evalkit`` is the one imported, never the clone), and runs
the commands a user types from a folder outside the clone.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _checkout_copy(dest: Path) -> Path:
    """The files of this checkout (tracked and new, not ignored) copied to ``dest``: the build writes nothing here."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, names):
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    return dest


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("wheel")
    src = _checkout_copy(tmp / "src")
    build = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                  ".", "-w", str(tmp / "dist")], src, dict(os.environ))
    assert build.returncode == 0, build.stderr
    [wheel] = (tmp / "dist").glob("evalkit_ragraph-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "_tested_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    inst = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
                 str(wheel)], tmp, dict(os.environ))
    assert inst.returncode == 0, inst.stderr
    work = tmp / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(EVALKIT_CACHE=str(tmp / "cache"), NO_COLOR="1")
    return {"wheel": wheel, "bin": venv / "bin", "work": work, "env": env, "tmp": tmp}  # type: ignore[dict-item]


def test_the_wheel_carries_the_demo_data_once(installed):
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    data = sorted(n.split("evalkit/_bundled/", 1)[1] for n in names if n.startswith("evalkit/_bundled/"))
    tracked = subprocess.run(["git", "ls-files", "eval_sets", "graph_configs"], cwd=REPO, capture_output=True,
                             text=True, check=True).stdout.split()
    assert data == sorted(t for t in tracked if not t.endswith(".py"))
    assert "eval_sets/demo_kb.jsonl" in data and "graph_configs/bm25.yaml" in data
    assert not (REPO / "evalkit" / "_bundled").exists()  # one copy in the repository


def test_the_installed_evalkit_is_the_wheel(installed):
    out = _run([str(installed["bin"] / "python"), "-c", "import evalkit; print(evalkit.__file__)"], installed["work"],
               installed["env"])
    assert out.returncode == 0 and str(installed["tmp"] / "venv") in out.stdout, out


def test_demo_help_and_a_demo_run_outside_the_clone(installed):
    evalkit, work, env = str(installed["bin"] / "evalkit"), installed["work"], installed["env"]
    helped = _run([evalkit, "demo", "--help"], work, env)
    assert helped.returncode == 0 and "--copy-files DIR" in helped.stdout
    ran = _run([evalkit, "demo", "--config", "bm25", "--no-progress", "--output", "results/demo.json"], work, env)
    assert ran.returncode == 0, ran.stderr
    assert "no such eval set file" not in ran.stderr and "Traceback" not in ran.stderr
    wheel_metrics = json.loads((work / "results" / "demo.json").read_text())["variants"]["bm25"]["metrics"]
    # the same command from the clone: the same numbers
    clone = _run([sys.executable, "-c", "from evalkit.cli import main; main()", "run", "--eval-set",
                  str(REPO / "eval_sets" / "demo_kb.jsonl@v1"), "--graph-config", str(REPO / "graph_configs" / "bm25.yaml"),
                  "--output", str(installed["tmp"] / "clone" / "demo.json"), "--no-progress", "--no-mlflow"],
                 REPO, {**env, "PYTHONPATH": str(REPO)})
    assert clone.returncode == 0, clone.stderr
    clone_metrics = json.loads((installed["tmp"] / "clone" / "demo.json").read_text())["variants"]["bm25"]["metrics"]
    assert wheel_metrics == clone_metrics


def test_readme_commands_after_copying_the_files(installed):
    evalkit, env = str(installed["bin"] / "evalkit"), installed["env"]
    mine = installed["work"] / "mine"
    copied = _run([evalkit, "demo", "--copy-files", str(mine)], installed["work"], env)
    assert copied.returncode == 0 and (mine / "eval_sets" / "demo_kb.jsonl").is_file(), copied.stderr
    for args in (["graph", "check", "graph_configs/hybrid_rrf.yaml"],
                 ["evalset", "validate", "eval_sets/demo_kb.jsonl"],
                 ["run", "--eval-set", "eval_sets/demo_kb.jsonl@v1", "--graph-config", "graph_configs/bm25.yaml",
                  "--output", "results/demo_kb.json", "--no-progress", "--no-mlflow"],
                 ["cache", "list"]):
        res = _run([evalkit, *args], mine, env)
        assert res.returncode == 0, (args, res.stdout, res.stderr)
    again = _run([evalkit, "demo", "--copy-files", str(mine)], installed["work"], env)
    assert again.returncode == 1 and "already exists" in again.stderr
