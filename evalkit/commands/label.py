"""``evalkit label``: draw a sample of a variant's judged answers for a person to label."""
from __future__ import annotations

from pathlib import Path

import click

from evalkit.analysis.label_page import render_label_page
from evalkit.analysis.label_sample import STRATA
from evalkit.analysis.labels import (
    draw_sample,
    label_line,
    load_label_files,
    passage_texts,
    prior_error_shares,
    write_labels,
)
from evalkit.analysis.runs import load_run


@click.command("label")
@click.argument("run_ref", metavar="RUN")
@click.option("--variant", required=True, help="The variant whose answers are labelled.")
@click.option("--n", "n", type=click.IntRange(1, 100_000), default=100, show_default=True,
              help="Answers to draw (all of them when the variant has fewer).")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The JSONL file to label; the HTML page goes beside it (same stem, .html). Required unless "
                   "--to mlflow.")
@click.option("--to", "to", type=click.Choice(["file", "mlflow"]), default="file", show_default=True,
              help="file: label in the HTML page; mlflow: tag the sampled queries' MLflow traces for review "
                   "(tag evalkit.review = requested), where people add a HUMAN feedback 'hallucinated' (yes/no); "
                   "read it back with `evalkit score --labels mlflow:EXPERIMENT`.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random sample.")
@click.option("--strata", type=click.Choice(list(STRATA)), default="verdict", show_default=True,
              help="Strata of the sample: the judge's verdict class (unsupported / unverified / supported; more "
                   "labels where the judge is unsure, Neyman allocation), the question type (proportional), or none.")
@click.option("--prior-labels", "prior_labels", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Earlier labels of this variant (repeatable): with --strata verdict, how often the judge was wrong "
                   "in each verdict class sets the allocation (default: a prior of 0.5 / 0.5 / 0.1).")
@click.option("--tracking-uri", default=None,
              help="MLflow store: when RUN is an MLflow run id, and where --to mlflow tags traces (default: the "
                   "store the run was logged to).")
def label(run_ref: str, variant: str, n: int, out: Path | None, seed: int, strata: str, tracking_uri: str | None,
          to: str = "file", prior_labels: tuple[str, ...] = ()) -> None:
    """Write a stratified random sample of a variant's judged answers to label (JSONL + HTML).

    By default the strata are the judge's verdict classes and the answers with an
    unsupported or unverified claim get more than their share of labels (Neyman
    allocation, at least 2 per stratum); the corrected estimates weigh each stratum by its
    share of the answers, so the over-sampling does not bias them.

    Each line holds the question, the answer, the evidence passages (ids and text), the
    judge's claim verdicts, and empty fields to fill: claims[i].supported and
    hallucinated. Open the HTML page in any browser (offline), label, "Save labels";
    then pass the file to `evalkit run|compare|gate --labels FILE` for judge-corrected
    estimates with confidence intervals.

    With --to mlflow the sampled answers' traces are tagged for review instead (the run
    must have been logged to MLflow with its traces); people label them in the MLflow UI
    or with mlflow.log_feedback(source=HUMAN), and `evalkit score --labels
    mlflow:EXPERIMENT` reads their feedback with the sample's strata.

    \b
    Examples:
      evalkit label results/demo_kb.json --variant rag_extractive --n 100 --out labels.jsonl
      evalkit label results/mine.json --variant mine --n 50 --to mlflow
    """
    if out is None and to == "file":
        raise click.UsageError("give --out FILE (the file to label), or --to mlflow")
    if prior_labels and not STRATA[strata].neyman:
        raise click.BadParameter(f"earlier labels set the allocation of --strata verdict only, not '{strata}'",
                                 param_hint=["--prior-labels"])
    run = load_run(run_ref, tracking_uri)
    run.variant(variant)
    results = run.results(variant)
    shares = prior_error_shares(results, load_label_files(prior_labels), variant) if prior_labels else None
    sample = draw_sample(results, n, seed=seed, strata=strata, error_share=shares)
    by = {s["stratum"]: (s["stratum_labelled"], s["stratum_size"]) for _, s in sample}
    strata_line = "strata (labelled / answers): " + ", ".join(f"{k} {a}/{b}" for k, (a, b) in sorted(by.items()))
    if STRATA[strata].neyman:
        used = {s["stratum"]: s["error_share"] for _, s in sample}
        source = "earlier labels and the prior" if prior_labels else "the prior; --prior-labels to use earlier labels"
        strata_line += (f"\njudge error share assumed per stratum ({source}): "
                        + ", ".join(f"{k} {v:.2f}" for k, v in sorted(used.items())))
    if to == "mlflow":
        from evalkit.analysis.review import REQUESTED, REVIEW_TAG, request_review

        ids = request_review(run, variant, sample, tracking_uri)
        click.echo(f"tagged {len(ids)} traces for review ({REVIEW_TAG} = {REQUESTED}) in "
                   f"{tracking_uri or run.tracking_uri}\n{strata_line}\nin the MLflow UI: Traces tab, filter "
                   f"tags.`{REVIEW_TAG}` = '{REQUESTED}'; add a feedback 'hallucinated' (yes/no) to each; then "
                   f"`evalkit score ... --labels mlflow:EXPERIMENT`")
    if out is None:  # --to mlflow without --out (--to file without it is refused above)
        return
    texts = passage_texts(run, variant)
    lines = [label_line(r, s, variant, run.label, texts) for r, s in sample]
    write_labels(lines, out)
    page = out.with_suffix(".html")
    page.write_text(render_label_page(lines, file_name=out.name, title=f"Label {variant} ({run.label}): "
                                      f"{len(lines)} answers"), encoding="utf-8")
    click.echo(f"wrote {len(lines)} answers to label: {out}\nlabel them in a browser: {page}")
    if to == "file":
        click.echo(strata_line)
