"""The ``evalkit`` command line: one command per verb, loaded lazily.

Each command lives in ``evalkit/commands/<name>.py`` and is imported only when it is
invoked, so ``evalkit --help`` stays fast (no torch, mlflow or faiss at start-up).
Commands are thin: they parse options and call the library.
"""
from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from evalkit import __version__
from evalkit.errors import EvalkitError
from evalkit.redact import redact

COMMANDS = {
    "demo": ("evalkit.commands.demo", "demo", "Run every bundled graph config on the bundled demo eval set."),
    "run": ("evalkit.commands.run", "run", "Run graph variants on an eval set; write results and MLflow runs."),
    "evalset": ("evalkit.commands.evalset", "evalset", "Validate, freeze, append to, summarise, generate and review eval sets."),
    "graph": ("evalkit.commands.graph", "graph", "Check a graph config, or print it as the loader sees it."),
    "score": ("evalkit.commands.score", "score", "Score rankings or answers your own pipeline produced (TREC, JSONL, ragas)."),
    "import": ("evalkit.commands.importers", "import_", "Turn external data (BEIR, HF datasets, parquet/JSONL, ragas) into a corpus + eval set; "
               "PDF/Word/HTML/Markdown folders into a corpus."),
    "calibrate": ("evalkit.commands.calibrate", "calibrate", "Recommend a guard threshold from rerank scores."),
    "compare": ("evalkit.commands.compare", "compare", "Paired per-query comparison: is a difference real?"),
    "gate": ("evalkit.commands.gate", "gate", "CI gate: exit 0 when a candidate is non-inferior."),
    "report": ("evalkit.commands.report", "report", "Write a self-contained HTML + Markdown run report."),
    "label": ("evalkit.commands.label", "label", "Draw a sample of judged answers to label (JSONL + HTML page)."),
    "export": ("evalkit.commands.export", "export", "Export a run as parquet/CSV (per query) or TREC run + qrels."),
    "cache": ("evalkit.commands.cache", "cache", "List, verify and clear the cache (indexes, embeddings, LLM answers)."),
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attr, _ = COMMANDS[cmd_name]
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_) for name, (_, _, help_) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name = args[0] if args else ""
        if name and name not in COMMANDS and not name.startswith("-"):
            from evalkit.errors import did_you_mean

            ctx.fail(f"no such command '{name}'{did_you_mean(name, COMMANDS)}")
        return super().resolve_command(ctx, args)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evalkit")
def cli() -> None:
    """Evaluate and compare variants of a RAG pipeline built as a module graph.

    \b
    Typical session:
      evalkit demo                                   # bundled data, no keys, no network
      evalkit graph check graph_configs/hybrid_rrf.yaml
      evalkit run --eval-set eval_sets/demo_kb.jsonl@v1 \\
                  --graph-config graph_configs/bm25.yaml \\
                  --graph-config graph_configs/hybrid_rrf.yaml \\
                  --output results/demo_kb.json
      evalkit evalset validate eval_sets/demo_kb.jsonl

    Every run writes a summary JSON, one per_query.jsonl per variant (with the full
    per-node trace) and MLflow runs (a local sqlite store unless --tracking-uri).
    """


class RedactingStream:
    """A text stream that masks secrets (:func:`evalkit.redact.redact`) in everything written to it.

    ``main`` puts one in front of stdout and stderr, so whatever the CLI prints (tables,
    warnings, progress bars, log records, error messages, tracebacks) passes the one
    masking function on its way to the console or a CI log.
    """

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(redact(text) if isinstance(text, str) else text)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding...
        return getattr(self._stream, name)


def main() -> None:
    """Console-script entry point: user errors print one clear line and exit 2.

    Everything printed goes through :class:`RedactingStream` (secrets masked).
    """
    if not isinstance(sys.stdout, RedactingStream):
        sys.stdout, sys.stderr = RedactingStream(sys.stdout), RedactingStream(sys.stderr)
    try:
        rv = cli.main(standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(1)
    except EvalkitError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
