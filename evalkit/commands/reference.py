"""The command reference page, written from the CLI itself: every command's ``--help``.

``docs/commands.md`` holds one block per command (``evalkit``, ``evalkit run``,
``evalkit import dataset``...) between ``<!-- generated: commands -->`` and
``<!-- end generated -->``; :func:`render_page` rewrites that block from the click
commands, and a test (``tests/docs/test_reference_pages.py``) fails when the page is stale,
so the page says exactly what ``--help`` says. The help is rendered at a fixed width
(:data:`WIDTH`) so the page does not depend on the terminal that regenerated it.

Regenerate with ``python -m evalkit.commands.reference docs/commands.md``.
"""
from __future__ import annotations

import click

from evalkit.cli import cli
from evalkit.docgen import replace_block, rewrite_pages

WIDTH = 100  # help text width on the page (click wraps to the terminal otherwise)


def _context(cmd: click.Command, name: str, parent: click.Context | None) -> click.Context:
    """The context ``cmd`` gets when invoked (its ``context_settings``: ``-h``), at the page's width."""
    settings = {**cmd.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
    return click.Context(cmd, info_name=name, parent=parent, **settings)


def _walk(cmd: click.Command, ctx: click.Context) -> list[tuple[str, click.Context]]:
    """``(full command name, context)`` for ``cmd`` and every subcommand below it, in listing order."""
    out = [(ctx.command_path, ctx)]
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                out += _walk(sub, _context(sub, name, ctx))
    return out


def command_help() -> list[tuple[str, str]]:
    """``(command path, its --help text)`` for ``evalkit`` and every command and subcommand."""
    return [(path, ctx.command.get_help(ctx)) for path, ctx in _walk(cli, _context(cli, "evalkit", None))]


def _anchor(path: str) -> str:
    return path.replace(" ", "-")


def commands_markdown() -> str:
    """The generated block: a contents line, then one section per command with its help in a text block."""
    helps = command_help()
    lines = ["Commands: " + " · ".join(f"[`{p}`](#{_anchor(p)})" for p, _ in helps), ""]
    for path, text in helps:
        lines += [f"### `{path}`", "", "```text", text.rstrip(), "```", ""]
    return "\n".join(lines)


def render_page(text: str) -> str:
    """``text`` with its ``<!-- generated: commands -->`` block rewritten (commands_markdown)."""
    return replace_block(text, "commands", commands_markdown())


if __name__ == "__main__":  # python -m evalkit.commands.reference docs/commands.md  (rewrites the block)
    import sys

    rewrite_pages(sys.argv[1:], render_page)
