"""The part of ``evalkit demo`` that shows the judge on a real model's answers.

Every bundled generator is extractive (it copies evidence sentences), so on its own the demo
could only show ``halluc 0.0000``. Answers a small real model gave once are bundled with labels
a person made by reading them; here they are scored with ``evalkit score --answers``'s code
(``score_answers`` with ``unanswered="skip"``, ``write_scored``, the labels applied as ``--labels``
applies them), into ``<output stem>_llm.json``, and the answers table is printed with one
``judge-corrected ...`` line per labelled variant (the PPI++ estimate of the hallucination rate).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import click

from evalkit.analysis.label_text import corrected_line
from evalkit.analysis.labels import from_dict, load_label_files, read_header
from evalkit.analysis.report import TITLES, summary_tables
from evalkit.analysis.tables import Layout, render, wrap
from evalkit.commands.run import apply_labels
from evalkit.errors import EvalkitError
from evalkit.run.runner import RunOptions
from evalkit.scoring import score_answers, write_scored


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


def llm_output(output: Path) -> Path:
    """Where the demo writes the scored answers: ``results/demo_kb.json`` -> ``results/demo_kb_llm.json``."""
    return output.with_name(f"{output.stem}_llm.json")


def score_bundled(bundled: Sequence[BundledAnswers], eval_sets: Path, eval_set: Path, output: Path,
                  layout: Layout) -> int:
    """Score each bundled answers file as ``evalkit score --answers FILE --unanswered skip --labels LABELS``."""
    out = llm_output(output)
    echo = lambda m: click.echo(m, err=True)  # noqa: E731
    for item in bundled:
        try:
            scored = score_answers(eval_sets / item.answers, item.name, eval_set=f"{eval_set}@v1", unanswered="skip")
            options = RunOptions(output=out, progress=False, source_name="evalkit demo")
            summary = write_scored(scored, options, echo=echo)
            apply_labels(summary, out, load_label_files([eval_sets / item.labels]))
        except EvalkitError as exc:
            raise click.ClickException(str(exc)) from exc
        variant = summary.variants[item.name]
        click.echo("\n" + wrap(f"real-model answers: {item.about}; scored as `evalkit score --answers` scores them "
                                f"({variant.n_queries} of {summary.eval_set.n_queries} questions):", layout.width))
        tables = [t for t in summary_tables(summary) if t.title == TITLES["answers"]]
        click.echo(render(tables, layout))
        line = corrected_line(from_dict(variant.corrected)) if variant.corrected else None
        click.echo(line or f"no judge-corrected estimate for {item.name}: see the labels' notes in {out}")
        how = read_header(eval_sets / item.labels).get("labelled_by") or "the file does not say who labelled"
        click.echo(wrap(f"labels: {eval_sets / item.labels} ({how}; `evalkit label` draws such a sample for your "
                        "own runs)", layout.width) + f"\nsummary: {out}")
    return 0

