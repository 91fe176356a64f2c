"""The layers of docs/concepts.md hold: import-linter's contracts (pyproject.toml, ``[tool.importlinter]``)
pass on this checkout, imports inside functions included, and they catch an import that breaks them."""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from evalkit.extras import LAZY_IMPORTS

REPO = Path(__file__).resolve().parents[1]
LINT = "from importlinter.cli import lint_imports; raise SystemExit(lint_imports(no_cache=True, no_logo=True))"
CONTRACTS = {"layers", "system-apart-from-evaluator", "judges-apart-from-system", "no-cycles"}


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter with ``root``'s pyproject.toml on the evalkit package in ``root`` (a fresh process,
    so that the package analysed is that copy)."""
    try:
        import importlinter  # noqa: F401
    except ImportError:
        pytest.fail("import-linter is not installed: run ./setup.sh (it installs the dev extra)")
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, "-c", LINT], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)


def contracts() -> list[dict]:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]


def test_the_contracts_are_the_documented_ones():
    found = {c["id"]: c for c in contracts()}
    assert set(found) == CONTRACTS
    layers = found["layers"]["layers"]
    # the system under test and the evaluator: one layer, independent siblings (neither imports the other)
    assert "evalkit.metrics | evalkit.nodes | evalkit.judges" in layers
    assert layers.index("evalkit.text") > layers.index("evalkit.metrics | evalkit.nodes | evalkit.judges")
    # every package and module of evalkit has its place (a new one must be put in a layer)
    named = {part.strip() for layer in layers for part in layer.replace(":", "|").split("|")}
    top = {f"evalkit.{p.stem if p.suffix else p.name}" for p in (REPO / "evalkit").iterdir()
           if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    assert top - named == set(), "put these in a layer of [tool.importlinter] (and docs/concepts.md)"
    assert named - top == set()
    concepts = (REPO / "docs" / "concepts.md").read_text(encoding="utf-8")
    diagram = concepts.split("## Layers", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    rows = [set(line.split("  ")[0].replace("|", " ").split()) for line in diagram.strip().splitlines()]
    documented = [{f"evalkit.{n}" for n in row} for row in rows]
    contract = [{p.strip() for p in layer.replace(":", "|").split("|")} for layer in layers]
    assert documented == contract, "docs/concepts.md's diagram and the layers contract list the same rows"


def test_this_checkout_keeps_every_contract():
    out = lint(REPO)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in out.stdout


def test_an_import_inside_a_function_from_a_node_into_the_judges_is_caught(tmp_path: Path):
    shutil.copytree(REPO / "evalkit", tmp_path / "evalkit", ignore=shutil.ignore_patterns("__pycache__", "data"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    grade = tmp_path / "evalkit" / "nodes" / "grade.py"
    grade.write_text(grade.read_text(encoding="utf-8") + "\n\ndef _peek():\n    from evalkit.judges.offline import "
                     "OfflineJudge\n\n    return OfflineJudge\n", encoding="utf-8")
    out = lint(tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Contracts: 2 kept, 2 broken." in out.stdout
    assert "evalkit.nodes.grade -> evalkit.judges.offline" in out.stdout


def test_a_cycle_between_two_lower_layers_is_caught(tmp_path: Path):
    """redact.py, the writer of records, once imported graph.memo inside a function."""
    shutil.copytree(REPO / "evalkit", tmp_path / "evalkit", ignore=shutil.ignore_patterns("__pycache__", "data"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    redact = tmp_path / "evalkit" / "redact.py"
    redact.write_text(redact.read_text(encoding="utf-8") + "\n\ndef _memo():\n    from evalkit.graph.memo import "
                      "WorkMemo\n\n    return WorkMemo\n", encoding="utf-8")
    out = lint(tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "evalkit.redact -> evalkit.graph.memo" in out.stdout
    assert "No import cycle between the packages of evalkit BROKEN" in out.stdout


OTHER_IMPORTS_IN_FUNCTIONS = 117
"""Imports inside functions of anything but :data:`evalkit.extras.LAZY_IMPORTS`, as many as remain (issue 38
counted 435; most were cycles dodged): each left is under a ``try`` or an ``if``, or its name is one a
test monkeypatches, or it would make a module import a heavy package at load. The number may only fall,
but for a deferral of a heavy evalkit module: issue 34 added 9 (the abstention rules' regular expressions,
the node registry behind pydantic and the LLM client, the offline judge's rules, and the answers, labels and
judge paths of ``evalkit score``), which ``evalkit score --run`` and every command that imports those
modules no longer load (~0.6 s a process); issue 31 added 1 (the learned abstention stage's embedder,
behind pydantic, which an eval set loading its abstention rules would otherwise import)."""


def imports_in_functions(package: Path) -> list[tuple[str, int, str]]:
    """(file, line, module) of every import statement inside a function body of ``package``."""
    found: list[tuple[str, int, str]] = []

    def visit(path: Path, node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if inside and isinstance(child, ast.Import):
                found.extend((str(path), child.lineno, a.name) for a in child.names)
            elif inside and isinstance(child, ast.ImportFrom):
                found.append((str(path), child.lineno, "." * child.level + (child.module or "")))
            visit(path, child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    for path in sorted(package.rglob("*.py")):
        visit(path, ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def test_imports_inside_functions_are_for_heavy_packages():
    found = imports_in_functions(REPO / "evalkit")
    lazy = [f for f in found if f[2].split(".")[0] in LAZY_IMPORTS]
    other = [f for f in found if f[2].split(".")[0] not in LAZY_IMPORTS]
    assert lazy, "the heavy packages are imported where they are used"
    assert len(other) <= OTHER_IMPORTS_IN_FUNCTIONS, (
        f"{len(other)} imports inside functions are not of a heavy package (evalkit.extras.LAZY_IMPORTS): "
        "put a new one at the top of its module; " + "; ".join(f"{f}:{n} {m}" for f, n, m in other[-5:]))


def test_the_import_counter_sees_an_import_inside_a_function(tmp_path: Path):
    (tmp_path / "m.py").write_text("import json\n\n\ndef f():\n    from os import path\n\n    def g():\n"
                                   "        import torch\n\n    return lambda: __import__('x')\n", encoding="utf-8")
    assert [m for _, _, m in imports_in_functions(tmp_path)] == ["os", "torch"]


def test_no_function_imports_again_a_name_its_module_imports():
    """A name imported at the top and again somewhere inside a function is local to all of that function:
    used before that inner import runs, it raises UnboundLocalError (evalkit gate did, once)."""
    twice = []
    for path in sorted((REPO / "evalkit").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {a.asname or a.name.split(".")[0] for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
               for a in n.names}
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, (ast.Import, ast.ImportFrom)):
                        twice += [f"{path.relative_to(REPO)}:{node.lineno} {a.asname or a.name.split('.')[0]}"
                                  for a in node.names if (a.asname or a.name.split(".")[0]) in top]
    assert twice == []
