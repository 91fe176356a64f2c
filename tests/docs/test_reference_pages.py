"""The generated reference pages are current: docs/commands.md (every --help) and docs/metrics.md
(every registered metric family with its definition). Regenerate a stale page with
``python -m evalkit.commands.reference docs/commands.md`` / ``python -m evalkit.metrics.reference docs/metrics.md``."""
from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from evalkit.cli import COMMANDS, cli
from evalkit.commands import reference as commands_ref
from evalkit.metrics import reference as metrics_ref
from evalkit.metrics.registry import REGISTRY

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_commands_page_is_current():
    page = (DOCS / "commands.md").read_text(encoding="utf-8")
    assert commands_ref.render_page(page) == page, \
        "docs/commands.md is stale: run python -m evalkit.commands.reference docs/commands.md"


def test_commands_page_has_every_command_and_subcommand():
    page = (DOCS / "commands.md").read_text(encoding="utf-8")
    sections = re.findall(r"^### `(evalkit[a-z_ -]*)`$", page, flags=re.MULTILINE)
    expected = ["evalkit"]
    for name in COMMANDS:
        expected.append(f"evalkit {name}")
        cmd = cli.get_command(click.Context(cli), name)
        if isinstance(cmd, click.Group):
            expected += [f"evalkit {name} {sub}" for sub in cmd.list_commands(click.Context(cmd))]
    assert sections == expected


def test_command_help_on_the_page_is_what_the_cli_prints():
    """The page's `evalkit run` section equals `evalkit run --help` at the page's width."""
    helps = dict(commands_ref.command_help())
    res = CliRunner().invoke(cli, ["run", "--help"], prog_name="evalkit", terminal_width=commands_ref.WIDTH)
    assert res.exit_code == 0
    assert helps["evalkit run"].rstrip() == res.output.rstrip()
    page = (DOCS / "commands.md").read_text(encoding="utf-8")
    assert "```text\n" + res.output.rstrip() + "\n```" in page


def test_metrics_page_is_current_and_lists_every_family():
    page = (DOCS / "metrics.md").read_text(encoding="utf-8")
    assert metrics_ref.render_page(page) == page, \
        "docs/metrics.md is stale: run python -m evalkit.metrics.reference docs/metrics.md"
    block = page.split("<!-- generated: metrics -->", 1)[1].split("<!-- end generated -->", 1)[0]
    rows = re.findall(r"^\| `([a-z]+)@k` \|", block, flags=re.MULTILINE)
    assert rows == sorted(REGISTRY)


def test_metric_rows_by_hand():
    """A docstring becomes a row: definition, convention, equivalences; math left out; reST made Markdown."""
    doc = ("Hit@k: 1 if ``x`` is in the top ``k``.\n\n.. math:: a = b\n\nConvention: see :func:`hit`; "
           "|R| counts.\n\nEquals trec_eval ``success_k``.")
    assert metrics_ref._paragraphs(doc) == ["Hit@k: 1 if ``x`` is in the top ``k``.",
                                            "Convention: see :func:`hit`; |R| counts.",
                                            "Equals trec_eval ``success_k``."]
    assert metrics_ref._cell("see :func:`hit`; |R| and ``k``") == "see `hit`; \\|R\\| and `k`"


def test_render_page_refuses_a_page_without_the_markers():
    with pytest.raises(ValueError, match="generated: commands"):
        commands_ref.render_page("# Commands\n")
    with pytest.raises(ValueError, match="generated: metrics"):
        metrics_ref.render_page("# Metrics\n")


def test_metrics_page_lists_every_named_metric_with_its_direction():
    """Every metric of the named-metric registry has a row in docs/metrics.md saying which way is better."""
    from evalkit.metrics.catalog import all_metrics

    page = (DOCS / "metrics.md").read_text(encoding="utf-8")
    block = page.split("<!-- generated: named-metrics -->", 1)[1].split("<!-- end generated -->", 1)[0]
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([^`]+)` \| ([a-z ()]+) \|", block, flags=re.MULTILINE)}
    expected = {m.name: {"none": "none (describes)"}.get(m.direction, m.direction) for m in all_metrics(plugins=False)}
    assert rows == expected
    assert rows["hallucination_rate"] == "lower" and rows["faithfulness"] == "higher"
