"""The one YAML reader: duplicate keys are errors naming both lines; data and line map as before."""
from __future__ import annotations

from pathlib import Path

import pytest

from evalkit.errors import ConfigError
from evalkit.graph.sweep import load_variants
from evalkit.yamlio import YamlError, parse_yaml, read_yaml

TWO_RETRIEVE = """\
name: dup
nodes:
  retrieve: {type: retrieve, params: {bm25: {top_k: 10}}}
  rerank: {type: rerank}
  retrieve: {type: retrieve, params: {dense: {embedder: e5}}}
edges: {start: retrieve, retrieve: end}
"""


def test_two_nodes_of_one_name_are_refused_with_both_lines(tmp_path: Path):
    path = tmp_path / "dup.yaml"
    path.write_text(TWO_RETRIEVE, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_variants(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}:5: nodes.retrieve:")
    assert "on lines 3 and 5" in msg


@pytest.mark.parametrize("text, where, lines", [
    ("a: 1\nb: 2\na: 3\n", "a", (1, 3)),
    ("x:\n  y: 1\n  z: 2\n  y: 3\n", "x.y", (2, 4)),
    ("cases: {true: a, True: b}\n", "cases.True", (1, 1)),  # both are the boolean true
    ("l:\n  - {k: 1, k: 2}\n", "l[0].k", (2, 2)),  # list items by index
])
def test_duplicates_anywhere(text, where, lines):
    with pytest.raises(YamlError) as info:
        parse_yaml(text, "f.yaml")
    assert info.value.where == where
    assert f"on lines {lines[0]} and {lines[1]}" in str(info.value)


def test_merge_key_may_override_and_lines_are_mapped():
    data, lines = parse_yaml("base: &b {top_k: 5, k: 1}\nnode:\n  <<: *b\n  top_k: 9\n")
    assert data["node"] == {"top_k": 9, "k": 1}
    assert lines == {"base": 1, "base.top_k": 1, "base.k": 1, "node": 2, "node.top_k": 4, "node.k": 1}


def test_safe_and_located_errors(tmp_path: Path):
    with pytest.raises(YamlError) as info:
        parse_yaml("a: !!python/object/apply:os.system ['echo hi']\n", "evil.yaml")
    assert str(info.value).startswith("evil.yaml:1: not valid YAML")
    with pytest.raises(YamlError, match=r"bad.yaml:2: not valid YAML"):
        parse_yaml("a: 1\n b: [\n", "bad.yaml")
    with pytest.raises(YamlError, match="cannot read YAML file"):
        read_yaml(tmp_path / "missing.yaml")
    (tmp_path / "latin1.yaml").write_bytes(b"a: caf\xe9\n")
    with pytest.raises(YamlError, match="not UTF-8"):
        read_yaml(tmp_path / "latin1.yaml")
    assert parse_yaml("") == (None, {})


def _repo_yaml_files() -> list[Path]:
    root = Path(__file__).resolve().parents[1]
    return sorted(p for d in ("graph_configs", "benchmarks", "eval_sets", "tests", "evalkit", "docs")
                  for p in (root / d).rglob("*.y*ml") if p.suffix in (".yaml", ".yml"))


def test_libyaml_loader_reads_every_file_as_the_python_one(monkeypatch):
    # parse_yaml uses libyaml's CSafeLoader when PyYAML has it: the same data and the same line of
    # every key path as yaml.SafeLoader, on every YAML file of the repository and on edge cases
    from evalkit import yamlio

    if yamlio._FAST is None:
        pytest.skip("PyYAML was built without libyaml: only the pure-Python loader runs")
    files = _repo_yaml_files()
    texts = [p.read_text(encoding="utf-8") for p in files]
    texts += ["a: 1\r\nb: [1, 2]\r\n", "x: y\u2028z: w\n", "k: !!binary aGVsbG8=\n", "d: 2026-12-01\n",
              "m: &a {p: 1}\nn: {<<: *a, q: 2}\n", "s: '中文 配置'\nt: >\n  folded\n  text\n", "", "# only\n",
              "- 1\n- [a, {b: c}]\n", "yes: no\noff: on\n", "f: .inf\ng: -.NaN\nh: 0x1F\n"]
    assert len(files) > 20
    fast = [yamlio.parse_yaml(t) for t in texts]
    monkeypatch.setattr(yamlio, "_FAST", None)
    slow = [yamlio.parse_yaml(t) for t in texts]
    for (fd, fl), (sd, sl), text in zip(fast, slow, texts):
        assert fl == sl, text[:80]
        assert repr(fd) == repr(sd), text[:80]  # repr: NaN != NaN, but reads the same


@pytest.mark.parametrize("text", ["a: [1, 2\nb: 3\n", "a: b: c\n", "a:\n  - 1\n - 2\n", "k: 'open\n", "\t- x\n",
                                  "x: \u2028y\n",
                                  "a: 1\na: 2\n"])
def test_errors_read_the_same_with_either_loader(text, monkeypatch):
    from evalkit import yamlio

    with pytest.raises(YamlError) as fast:
        parse_yaml(text, "cfg.yaml")
    monkeypatch.setattr(yamlio, "_FAST", None)
    with pytest.raises(YamlError) as slow:
        parse_yaml(text, "cfg.yaml")
    assert str(fast.value) == str(slow.value)


def _levels(n_levels: int, width: int) -> str:
    """n levels of aliases, each a list of ``width`` aliases of the level below (level 0: ``width`` scalars)."""
    out = f"l0: &l0 [{', '.join(['x'] * width)}]\n"
    return out + "".join(f"l{i}: &l{i} [{', '.join(['*l' + str(i - 1)] * width)}]\n" for i in range(1, n_levels))


def _expanded(value) -> int:
    """Nodes of ``value`` with every alias written out (containers and scalars), counted by brute force."""
    if isinstance(value, dict):
        return 1 + sum(1 + _expanded(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_expanded(v) for v in value)
    return 1


def test_aliases_are_bounded_in_uses_and_expanded_size():
    from evalkit.yamlio import MAX_ALIASES, MAX_EXPANDED_NODES

    small = _levels(3, 9)  # 9 + 81 + 729 scalars once expanded: fine, and read as before
    data, _ = parse_yaml(small)
    assert data == {"l0": ["x"] * 9, "l1": [["x"] * 9] * 9, "l2": [[["x"] * 9] * 9] * 9}
    assert _expanded(data) < MAX_EXPANDED_NODES
    uses = "a: &a 1\nl: [" + ", ".join(["*a"] * MAX_ALIASES) + "]\n"
    assert parse_yaml(uses)[0]["l"] == [1] * MAX_ALIASES
    with pytest.raises(YamlError) as info:
        parse_yaml(uses.replace("l: [", "l: [*a, "), "u.yaml")
    assert str(info.value).startswith(f"u.yaml:2: more than {MAX_ALIASES:,} alias uses; ")
    with pytest.raises(YamlError) as info:  # 9 levels of 9: 387 million values; refused at once
        parse_yaml(_levels(9, 9), "bomb.yaml")
    assert f"expands to more than {MAX_EXPANDED_NODES:,} nodes (an alias bomb?)" in str(info.value)
    assert str(info.value).startswith("bomb.yaml:")
    with pytest.raises(YamlError) as info:
        parse_yaml("x: &a [1, *a]\n", "r.yaml")
    assert str(info.value).startswith("r.yaml:1: an alias refers to a node that contains it (a recursive alias)")
