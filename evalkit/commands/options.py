"""Options and output shared by several commands: ``--wide`` / ``--columns`` (tables),
``--relevance-level`` / ``--ties`` (how rankings are scored), the judge's ``--judge`` help and
``--escalate``, the exit policy when the judge failed on every answer, the offline environment,
and the tables and MLflow hint ``run``, ``demo`` and ``score`` print. Light to import: ``evalkit
score --run`` takes these without loading the runner, its graphs or its judges."""
from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from evalkit.analysis.report import by_type_table, comparison_table
from evalkit.analysis.tables import DEFAULT_WIDTH, ColumnsError, Layout, output_width, parse_columns, wrap
from evalkit.runstore import long_lived_frozen


def records_held(f: Callable[..., Any]) -> Callable[..., Any]:
    """Run an analysis verb inside :func:`evalkit.runstore.long_lived_frozen`: the per-query records it
    reads stay out of the garbage collector's walks until it ends, and are put back then."""
    @functools.wraps(f)
    def held(*args: Any, **kwargs: Any) -> Any:
        with long_lived_frozen():
            return f(*args, **kwargs)

    return held


def table_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--wide`` and ``--columns`` (passed to the command as ``wide`` and ``columns``)."""
    f = click.option("--columns", "columns", default=None, metavar="NAME,...",
                     help="Show only these table columns (metric names such as hit@5,faithfulness, or printed "
                          "headers), beside the row labels.")(f)
    return click.option("--wide", is_flag=True,
                        help=f"Print every column, however wide (default: fit the terminal, or {DEFAULT_WIDTH} "
                             "characters when stdout is not a terminal).")(f)


def layout(wide: bool, columns: str | None) -> Layout:
    """The :class:`Layout` of the tables: the terminal's width, ``--wide``, ``--columns``."""
    return Layout(width=output_width(sys.stdout), wide=wide, columns=parse_columns(columns))


def render_checked(render: Callable[[Layout], str], lay: Layout) -> str:
    """``render(lay)``; an unknown ``--columns`` name is a usage error (exit 2) naming the choices."""
    try:
        return render(lay)
    except ColumnsError as exc:
        raise click.BadParameter(str(exc), param_hint="--columns") from exc


def scoring_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--relevance-level`` and ``--ties`` (passed as ``relevance_level`` and ``ties``; None when not given)."""
    f = click.option("--ties", type=click.Choice(["pipeline", "trec"]), default=None,
                     help="Order the rankings are scored in: the pipeline's own, or trec_eval's (by score, equal "
                          "scores by document id descending). [default: pipeline]")(f)
    return click.option("--relevance-level", type=click.IntRange(1), default=None,
                        help="Grade from which a document counts as relevant for recall, hit, precision and MRR "
                             "(trec_eval -l; nDCG always uses the grades as gains). [default: 1]")(f)


JUDGE_HELP = ("Judge of the answers: offline (no model), llm or ragas (need --judge-llm), nli (needs --judge-model), "
              "or a cascade: offline+llm or offline+nli, where the model decides only the claims the offline judge "
              "leaves unverified (docs/judges.md).")
ESCALATE_HELP = ("With a cascade judge (offline+llm, offline+nli): the offline verdicts the model decides again, "
                 "comma-separated: unverified (default), or unverified,unsupported to have it review "
                 "hallucination calls too.")


def judge_options_for(judge: str, escalate: str | None) -> dict[str, Any]:
    """The cascade's ``escalate`` option for ``make_judge`` (refused, exit 2, for a single judge)."""
    if not escalate:
        return {}
    if "+" not in judge:
        raise click.UsageError(f"--escalate applies to a cascade judge such as offline+llm, not '{judge}'")
    return {"escalate": escalate}


def judge_failed_everywhere(summary: Any) -> str | None:
    """What to say when the judge failed on every answer it was given in some variant (the LLM down or
    replying garbage): the figures would describe nothing, so the command exits non-zero; None otherwise."""
    bad = []
    for name, v in summary.variants.items():
        failed, answered = v.metrics.get("n_judge_failed") or 0, v.metrics.get("n_answered") or 0
        if failed and failed >= answered:
            bad.append(f"{name} ({int(failed)} of {int(answered)} answers)")
    if not bad:
        return None
    return ("the judge failed on every answer of " + ", ".join(bad) + ": no answer figure of it means "
            "anything; see 'judgement.error' in per_query.jsonl, fix the judge's model (or use --judge offline) "
            "and run again")


def output_file(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """Callback of ``--output``: a value naming no file (``--output ''``, ``.``, ``/``) is a usage error (exit 2)."""
    if value is not None and not Path(value).name:
        raise click.BadParameter("needs a file name (it is empty or ends in a folder): give the summary JSON to "
                                 "write, e.g. --output results/run.json (per-query records then go to results/run/)")
    return value


def env_quiet() -> None:
    """Offline, quiet defaults for every command that loads models or MLflow."""
    for key, value in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MLFLOW_DISABLE_TELEMETRY": "true",
                       "TOKENIZERS_PARALLELISM": "false", "RAGAS_DO_NOT_TRACK": "true"}.items():
        os.environ.setdefault(key, value)


def absolute_spec(spec: str) -> str:
    """``path@vN`` with the path made absolute when it names a file (so a resume works from anywhere)."""
    path, sep, version = spec.partition("@")
    return str(Path(path).resolve()) + sep + version if Path(path).is_file() else spec


def mlflow_hint(summary: Any, layout: Layout) -> str:
    """What to open in the MLflow UI: the run's one-line hint, wrapped to the tables' width (not with --wide).

    The command with the store's path stays whole on the first line (a path cannot be cut);
    the URL and the explanation follow, indented.
    """
    hint = summary.mlflow.get("hint") or f"MLflow: {summary.mlflow.get('ui_command')}"
    if layout.wide or len(hint) <= layout.width:
        return hint
    head, sep, rest = hint.partition(", then open ")
    if not sep:
        return wrap(hint, layout.width)
    return head + ",\n" + wrap("  then open " + rest, layout.width, "  ")


def summary_tables(summary: Any, layout: Layout) -> str:
    """The run's (or a scored file's) tables and its hit@5-by-type table; an unknown ``--columns`` name warns (the run is done)."""
    try:
        text = comparison_table(summary, layout)
    except ColumnsError as exc:
        click.echo(f"warning: --columns: {exc}; printing the default tables", err=True)
        layout = Layout(width=layout.width, wide=layout.wide)
        text = comparison_table(summary, layout)
    per_type = by_type_table(summary, "hit@5", layout)
    return text + ("\n\n" + per_type if per_type else "")
