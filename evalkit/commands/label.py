"""``evalkit label``: draw a sample of a variant's judged answers for a person to label."""
from __future__ import annotations

from pathlib import Path

import click


@click.command("label")
@click.argument("run_ref", metavar="RUN")
@click.option("--variant", required=True, help="The variant whose answers are labelled.")
@click.option("--n", "n", type=click.IntRange(1, 100_000), default=100, show_default=True,
              help="Answers to draw (all of them when the variant has fewer).")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The JSONL file to label; the HTML page goes beside it (same stem, .html).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random sample.")
@click.option("--strata", type=click.Choice(["type", "none"]), default="type", show_default=True,
              help="Stratify the sample by question type, or draw from all answers at once.")
@click.option("--tracking-uri", default=None, help="MLflow store, when RUN is an MLflow run id.")
def label(run_ref: str, variant: str, n: int, out: Path, seed: int, strata: str, tracking_uri: str | None) -> None:
    """Write a stratified random sample of a variant's judged answers to label (JSONL + HTML).

    Each line holds the question, the answer, the evidence passages (ids and text), the
    judge's claim verdicts, and empty fields to fill: claims[i].supported and
    hallucinated. Open the HTML page in any browser (offline), label, "Save labels";
    then pass the file to `evalkit run|compare|gate --labels FILE` for judge-corrected
    estimates with confidence intervals.

    \b
    Example:
      evalkit label results/demo_kb.json --variant rag_extractive --n 100 --out labels.jsonl
    """
    from evalkit.analysis.label_page import render_label_page
    from evalkit.analysis.labels import (
        draw_sample,
        label_line,
        passage_texts,
        write_labels,
    )
    from evalkit.analysis.runs import load_run

    run = load_run(run_ref, tracking_uri)
    run.variant(variant)
    sample = draw_sample(run.results(variant), n, seed=seed, strata=strata)
    texts = passage_texts(run, variant)
    lines = [label_line(r, s, variant, run.label, texts) for r, s in sample]
    write_labels(lines, out)
    page = out.with_suffix(".html")
    page.write_text(render_label_page(lines, file_name=out.name, title=f"Label {variant} ({run.label}): "
                                      f"{len(lines)} answers"), encoding="utf-8")
    by = {}
    for _, s in sample:
        by[s["stratum"]] = (s["stratum_labelled"], s["stratum_size"])
    click.echo(f"wrote {len(lines)} answers to label: {out}\nlabel them in a browser: {page}")
    click.echo("strata (labelled / answers): " + ", ".join(f"{k} {a}/{b}" for k, (a, b) in sorted(by.items())))
