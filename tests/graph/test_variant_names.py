"""Variant names name folders under --output: only safe identifiers load, refused with file:line."""
from __future__ import annotations

from pathlib import Path

import pytest

from evalkit.errors import ConfigError, EvalkitError
from evalkit.graph import config_from_dict
from evalkit.graph.sweep import load_variants

BODY = "nodes:\n  retrieve: {type: retrieve, params: {bm25: {top_k: 5}}}\nedges: {start: retrieve, retrieve: end}\n"


@pytest.mark.parametrize("name", ["../../x", "/tmp/abs", "a/b", "..", ".", "a b", "résumé", "x\\y", "q?", ""])
def test_unsafe_names_are_refused_at_load_with_the_line(tmp_path: Path, name):
    path = tmp_path / "v.yaml"
    path.write_text(f"description: d\nname: {name!r}\n" + BODY, encoding="utf-8")
    if name == "":  # empty means "use the file name"
        assert load_variants(path)[0].name == "v"
        return
    with pytest.raises(ConfigError) as info:
        load_variants(path)
    assert str(info.value).startswith(f"{path}:2: name: variant name")
    assert "safe identifier" in str(info.value)


@pytest.mark.parametrize("name", ["bm25", "hybrid_rrf-v2", "a.b.c", "X9", "..x"])
def test_safe_names_load(name):
    assert config_from_dict({"name": name, "nodes": {"r": {"type": "retrieve", "params": {"bm25": {}}}},
                             "edges": {"start": "r", "r": "end"}}).name == name


def test_a_file_stem_is_slugged_not_refused(tmp_path: Path):
    path = tmp_path / "my config (2).yaml"
    path.write_text(BODY, encoding="utf-8")
    assert load_variants(path)[0].name == "my_config_2"


def test_a_sweep_of_an_unsafe_base_name_is_refused(tmp_path: Path):
    path = tmp_path / "s.yaml"
    path.write_text("name: ../up\n" + BODY + "sweep:\n  retrieve.bm25.top_k: [5, 10]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="safe identifier"):
        load_variants(path)


def test_the_runner_refuses_a_hand_built_unsafe_name(tmp_path: Path):
    from evalkit.graph.config import GraphConfig
    from evalkit.run.runner import RunOptions, run_eval

    config = GraphConfig(name="../escape", nodes={"r": {"type": "retrieve", "params": {}}},
                         edges={"start": "r", "r": "end"})
    with pytest.raises(EvalkitError, match="not a safe identifier"):
        run_eval(None, [config], RunOptions(output=tmp_path / "out.json", mlflow=False))  # type: ignore[arg-type]
    assert not (tmp_path / "escape").exists()
