"""Leiden communities: the ``leiden`` extra (leidenalg + igraph). With it, ``algorithm: leiden`` runs
(seeded, cached, recorded); without it, config validation and ``evalkit graph check`` refuse the config
with the install command before any index is built. "Without it" is made real by putting ``None`` in
``sys.modules`` for leidenalg (Python's own way to make an import fail)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import ConfigError
from evalkit.extras import EXTRAS, MissingExtraError
from evalkit.graph import build_graph, config_from_dict, initial_state
from evalkit.index.communities import CommunitySpec, detect_communities, leiden_available
from evalkit.index.entity_graph import GraphSpec

INSTALL = "pip install 'evalkit-ragraph[leiden]'"
LEIDEN_CONFIG = ("name: g\nnodes:\n  g:\n    type: graph_global\n    params:\n"
                 "      communities: {algorithm: leiden, min_size: 2}\nedges: {start: g, g: end}\n")


@pytest.fixture
def no_leiden(monkeypatch):
    monkeypatch.setitem(sys.modules, "leidenalg", None)
    assert not leiden_available()


def test_the_extra_is_declared():
    assert EXTRAS["leiden"] == ("leidenalg", "igraph")


def test_without_leidenalg_the_config_is_refused_at_load_time_with_the_install_command(no_leiden):
    with pytest.raises(ConfigError) as err:
        config_from_dict({"name": "g", "nodes": {"g": {"type": "graph_global", "params": {
            "communities": {"algorithm": "leiden"}}}}, "edges": {"start": "g", "g": "end"}})
    assert err.value.where == "nodes.g.params.communities.algorithm"
    assert INSTALL in err.value.message and "use algorithm: louvain" in err.value.message
    with pytest.raises(ConfigError, match="evalkit-ragraph\\[leiden\\]"):  # the scheduler's graph_global tool too
        config_from_dict({"name": "s", "nodes": {"s": {"type": "agent_scheduler", "params": {
            "graph_global": {"communities": {"algorithm": "leiden"}}}}}, "edges": {"start": "s", "s": "end"}})
    assert CommunitySpec(algorithm="auto").algorithm == "auto"  # auto falls back to Louvain: accepted


def test_graph_check_refuses_leiden_without_the_extra(no_leiden, tmp_path: Path):
    path = tmp_path / "leiden.yaml"
    path.write_text(LEIDEN_CONFIG, encoding="utf-8")
    result = CliRunner().invoke(cli, ["graph", "check", str(path)])
    assert result.exit_code == 1, result.output
    assert "nodes.g.params.communities.algorithm" in result.output and INSTALL in result.output
    assert "Traceback" not in result.output


def test_a_spec_that_slipped_through_fails_with_the_same_message(no_leiden, view):
    spec = CommunitySpec.model_construct(**{**CommunitySpec().model_dump(), "algorithm": "leiden"})
    with pytest.raises(MissingExtraError, match="evalkit-ragraph\\[leiden\\]"):
        detect_communities(view.graph_index(GraphSpec()), spec)


needs_leiden = pytest.mark.skipif(not leiden_available(), reason="the leiden extra is not installed "
                                  "(setup.sh installs it)")


@needs_leiden
def test_graph_check_accepts_leiden_with_the_extra(tmp_path: Path):
    path = tmp_path / "leiden.yaml"
    path.write_text(LEIDEN_CONFIG, encoding="utf-8")
    result = CliRunner().invoke(cli, ["graph", "check", str(path)])
    assert result.exit_code == 0 and result.output.startswith("ok"), result.output


@needs_leiden
def test_leiden_communities_are_seeded_and_recorded(view):
    g = view.graph_index(GraphSpec())
    spec = CommunitySpec(algorithm="leiden", min_size=1)
    first = detect_communities(g, spec, seed=3)
    assert first.meta["algorithm"] == "leiden" and first.meta["seed"] == 3
    assert {n for c in first.items for n in c.centrality} == set(g.graph.nodes)  # a partition of every node
    g.folder = None  # no cache: compute again
    again = detect_communities(g, spec, seed=3)
    assert sorted(sorted(c.centrality) for c in again.items) == sorted(sorted(c.centrality) for c in first.items)
    assert detect_communities(g, CommunitySpec(algorithm="auto", min_size=1), seed=3).meta["algorithm"] == "leiden"


@needs_leiden
def test_graph_global_runs_with_leiden(view):
    params = {"communities": {"algorithm": "leiden", "min_size": 2}, "top_communities": 2}
    cfg = config_from_dict({"name": "t", "chunking": {"method": "document"},
                            "nodes": {"g": {"type": "graph_global", "params": params}}, "edges": {"start": "g", "g": "end"}})
    outcome = build_graph(cfg, view).run(initial_state("q1", "Which company makes the chip used in the ZX-100?", "en"))
    assert outcome.error is None, outcome.error
    assert outcome.state["retrieved"] and outcome.state["graph_communities"]
