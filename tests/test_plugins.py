"""One plugin module named in EVALKIT_PLUGINS extends every registry alike: a metric, an LLM backend,
a judge and an importer (with its `evalkit import` verb), and code asks capabilities, not names."""
from __future__ import annotations

import textwrap

import pytest
from click.testing import CliRunner

PLUGIN = '''
import click

from evalkit.importers.registry import register_importer
from evalkit.judges import register_judge
from evalkit.llm.registry import register_backend
from evalkit.metrics.catalog import NamedMetric, register_metrics

register_metrics("other", NamedMetric("harmony_score", "higher", "score", "a plugin's metric"),
                 NamedMetric("plain_rate", "lower", "share", "another", per_query="plain"), source=__name__)


@register_backend("echo_plugin", model=False, description="echoes", limitation="only echoes the question")
def _echo(spec, cache_root):
    raise AssertionError("not built in these tests")


@register_judge("judge_plugin", calls_model=True)
def _judge(cache_root=None, **options):
    from evalkit.judges.base import JudgeResult
    return type("J", (), {"identity": "judge_plugin", "judge": lambda self, q, a, e: JudgeResult()})()


@register_importer("myformat", summary="a plugin's format", command=__name__ + ":myformat")
def import_myformat(source, name):
    return f"{source}->{name}"


@click.command("myformat")
@click.argument("source")
def myformat(source):
    """Import my in-house QA dump."""
    click.echo(import_myformat(source, "x"))
'''


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plugin")
    (folder / "evalkit_test_plugin.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.syspath_prepend(str(folder))
    mp.setenv("EVALKIT_PLUGINS", "evalkit_test_plugin")
    yield
    mp.undo()
    from evalkit.importers.registry import IMPORTERS
    from evalkit.judges.base import JUDGE_INFO, JUDGES
    from evalkit.llm.registry import BACKENDS
    from evalkit.metrics.catalog import NAMED

    for registry, key in ((NAMED, "harmony_score"), (NAMED, "plain_rate"), (BACKENDS, "echo_plugin"),
                          (JUDGES, "judge_plugin"), (JUDGE_INFO, "judge_plugin"), (IMPORTERS, "myformat")):
        registry.pop(key, None)


def test_plugin_metric_direction_is_read_not_guessed(plugin):
    from evalkit.analysis.direction import higher_is_better, per_query_hint

    # "harm" in the name made the old rule call it lower-is-better; the registry says higher
    assert higher_is_better("harmony_score") and not higher_is_better("plain_rate")
    assert "use 'plain'" in per_query_hint("plain_rate") and "evalkit_test_plugin.py" in per_query_hint("plain_rate")


def test_plugin_backend_is_a_valid_spec_and_its_capability_is_asked(plugin):
    from evalkit.judges.base import JudgeSetupError
    from evalkit.judges.llm import _spec
    from evalkit.llm import LLMSpec
    from evalkit.llm.registry import is_model, model_backends

    spec = LLMSpec(backend="echo_plugin")
    assert not is_model("echo_plugin") and model_backends() == ["openai", "local"]
    with pytest.raises(JudgeSetupError, match="needs a model backend \\('openai' or 'local'\\): the 'echo_plugin' "
                                              "backend only echoes the question"):
        _spec(spec, "llm")
    with pytest.raises(ValueError, match="unknown LLM backend 'echo_plugn': one of 'openai', 'local', 'extractive' "
                                         "or 'echo_plugin'; did you mean 'echo_plugin'"):
        LLMSpec(backend="echo_plugn")


def test_plugin_judge_builds_and_reports_its_model_calls(plugin):
    from evalkit.judges import calls_model, make_judge, takes_model_folder

    assert make_judge("judge_plugin").identity == "judge_plugin"
    assert calls_model("judge_plugin") and calls_model("offline+judge_plugin") and not calls_model("offline")
    assert takes_model_folder("offline+nli") and not takes_model_folder("judge_plugin")


def test_plugin_importer_is_an_import_verb(plugin):
    from evalkit.cli import cli

    res = CliRunner().invoke(cli, ["import", "--help"], prog_name="evalkit")
    assert res.exit_code == 0 and "myformat" in res.output and "Import my in-house QA dump." in res.output
    res = CliRunner().invoke(cli, ["import", "myformat", "dump.json"], prog_name="evalkit")
    assert res.exit_code == 0 and res.output == "dump.json->x\n"


def test_builtin_registries_without_plugins():
    from evalkit.importers.registry import importers
    from evalkit.judges import JUDGE_INFO, judges
    from evalkit.llm.registry import backends

    assert {"beir", "dataset", "ragas", "hotpotqa"} <= set(importers())
    assert [n for n, i in importers().items() if i.command and n in ("beir", "dataset", "ragas")] == [
        "beir", "dataset", "ragas"]
    assert {"offline", "llm", "nli", "ragas"} <= set(judges())
    assert [n for n in ("offline", "llm", "nli", "ragas") if JUDGE_INFO[n].calls_model] == ["llm", "ragas"]
    assert [n for n, b in backends().items() if n in ("openai", "local", "extractive") and not b.model] == ["extractive"]


def test_a_plugin_that_cannot_be_imported_is_named(monkeypatch):
    from evalkit.errors import EvalkitError
    from evalkit.plugins import load_plugins

    monkeypatch.setenv("EVALKIT_PLUGINS", " no_such_evalkit_plugin ,")
    with pytest.raises(EvalkitError, match="EVALKIT_PLUGINS names 'no_such_evalkit_plugin'"):
        load_plugins()
