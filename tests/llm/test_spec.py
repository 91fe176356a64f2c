"""LLMSpec: `cache: off` as YAML reads it, a pasted key refused without echo, identity without credentials."""
from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from evalkit.errors import ConfigError
from evalkit.graph.sweep import load_variants
from evalkit.llm.base import LLMSpec

PASTED = "sk-PASTEDkey1234567890abcdefgh"


@pytest.mark.parametrize("text, mode", [("off", "off"), ("'off'", "off"), ("false", "off"), ("on", "read-write"),
                                        ("read-write", "read-write"), ("replay-only", "replay-only")])
def test_cache_off_unquoted_is_accepted(tmp_path: Path, text, mode):
    path = tmp_path / "llm.yaml"
    path.write_text(f"backend: extractive\ncache: {text}\n", encoding="utf-8")
    assert LLMSpec.from_yaml(path).cache == mode


def test_cache_off_in_a_graph_config(tmp_path: Path):
    path = tmp_path / "g.yaml"
    path.write_text("nodes:\n  retrieve: {type: retrieve, params: {bm25: {}}}\n"
                    "  generate: {type: generate, params: {evidence_from: retrieved, llm: {backend: extractive, "
                    "cache: off}}}\nedges: {start: retrieve, retrieve: generate, generate: end}\n", encoding="utf-8")
    assert load_variants(path)[0].nodes["generate"]["params"]["llm"]["cache"] is False  # as written...
    from evalkit.graph import node_types

    params = node_types()["generate"].Params(**load_variants(path)[0].nodes["generate"]["params"])
    assert params.llm.cache == "off"  # ...and as the node reads it


def test_a_bad_cache_value_names_file_line_field(tmp_path: Path):
    path = tmp_path / "llm.yaml"
    path.write_text("backend: extractive\ncache: offf\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"llm.yaml:2: cache: Input should be 'off', 'read-write' or 'replay-only'"):
        LLMSpec.from_yaml(path)


def test_a_pasted_key_is_refused_without_echo(tmp_path: Path):
    with pytest.raises(ValidationError) as info:
        LLMSpec(backend="openai", model="m", api_key_env=PASTED)
    assert PASTED not in str(info.value) and "looks like a key" in str(info.value)
    path = tmp_path / "llm.yaml"
    path.write_text(f"backend: openai\nmodel: m\napi_key_env: {PASTED}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as located:
        LLMSpec.from_yaml(path)
    assert str(located.value).startswith(f"{path}:3: api_key_env:") and PASTED not in str(located.value)
    g = tmp_path / "g.yaml"
    g.write_text("nodes:\n  retrieve: {type: retrieve, params: {bm25: {}}}\n  generate: {type: generate, params: "
                 f"{{evidence_from: retrieved, llm: {{backend: openai, model: m, api_key_env: {PASTED}}}}}}}\n"
                 "edges: {start: retrieve, retrieve: generate, generate: end}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as in_graph:
        load_variants(g)
    assert "nodes.generate.params.llm.api_key_env" in str(in_graph.value) and PASTED not in str(in_graph.value)
    assert LLMSpec(api_key_env="OPENAI_API_KEY").api_key_env == "OPENAI_API_KEY"


def test_identity_masks_credentials_in_base_url():
    spec = LLMSpec(backend="openai", model="m", base_url=f"http://user:{PASTED}@h:8000/v1?api_key=QK123456789&x=1")
    assert PASTED not in spec.identity() and "QK123456789" not in spec.identity()
    assert "h:8000/v1" in spec.identity() and "x=1" in spec.identity()
    plain = LLMSpec(backend="openai", model="m", base_url="http://h:8000/v1")
    assert plain.identity() == "backend=openai|model=m|base_url=http://h:8000/v1"  # unchanged: caches stay valid
