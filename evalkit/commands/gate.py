"""``evalkit gate``: non-inferiority of a candidate run against a baseline, for CI."""
from __future__ import annotations

import json
from pathlib import Path

import click

from evalkit.analysis.gate import format_gate, run_gate
from evalkit.analysis.runs import check_finished, load_run
from evalkit.commands.options import layout, records_held, render_checked, table_options
from evalkit.errors import EvalkitError
from evalkit.recordview import ANALYSIS


@click.command("gate")
@click.option("--baseline", "baseline_ref", required=True, metavar="RUN",
              help="The baseline run: summary JSON, results folder, or MLflow run id.")
@click.option("--candidate", "candidate_ref", required=True, metavar="RUN", help="The candidate run (same forms).")
@click.option("--metric", "metrics", multiple=True, required=True, metavar="NAME",
              help="A metric that must not get worse (repeatable), e.g. hit@5, faithfulness.")
@click.option("--max-drop", "max_drops", multiple=True, required=True, type=click.FloatRange(0, None),
              metavar="X", help="Allowed drop for each --metric, in order (one value applies to all).")
@click.option("--variant", default=None, help="Variant name, the same in both runs.")
@click.option("--baseline-variant", default=None, help="Variant of the baseline run (with --candidate-variant).")
@click.option("--candidate-variant", default=None, help="Variant of the candidate run (with --baseline-variant).")
@click.option("--max-failed-share", type=click.FloatRange(0, 1), default=0.0, show_default=True,
              help="Refuse (exit 5) when a larger share of the candidate's queries failed.")
@click.option("--max-degraded-share", type=click.FloatRange(0, 1), default=0.0, show_default=True,
              help="Refuse (exit 6) when the candidate's share of degraded queries (an LLM call failed after "
                   "retries, whatever the graph did next) exceeds the baseline's by more than this.")
@click.option("--max-invalid-citation-share", type=click.FloatRange(0, 1), default=0.0, show_default=True,
              help="Refuse (exit 8) when the candidate's share of queries whose answer cites a passage it was not "
                   "shown (an id never retrieved) exceeds the baseline's by more than this.")
@click.option("--max-declined-increase", type=click.FloatRange(0, 1), default=0.05, show_default=True,
              help="When answer metrics are gated, also test the share of answerable questions the candidate "
                   "declined: FAIL when it may exceed the baseline's by more than this (answer metrics are "
                   "computed on answered questions, so declining the hard ones would improve them).")
@click.option("--shared-queries", is_flag=True,
              help="Gate runs of two versions of one append-only eval set on the queries both versions have "
                   "(refused otherwise, exit 3: the other queries would go ungated).")
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Two-sided level of the bootstrap interval whose lower bound is tested.")
@click.option("--resamples", type=click.IntRange(100, 1_000_000), default=10_000, show_default=True,
              help="Paired bootstrap resamples.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the result as JSON to this file.")
@click.option("--tracking-uri", default=None, help="MLflow store, when a RUN is an MLflow run id.")
@click.option("--labels", "labels", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Human labels from `evalkit label` (repeatable): when both runs have labels, hallucinated and "
                   "faithfulness are gated on judge-corrected (PPI++) estimates.")
@table_options
@click.pass_context
@records_held
def gate(ctx: click.Context, baseline_ref: str, candidate_ref: str, metrics: tuple[str, ...],
         max_drops: tuple[float, ...], variant: str | None, baseline_variant: str | None,
         candidate_variant: str | None, max_failed_share: float, max_degraded_share: float,
         max_invalid_citation_share: float, max_declined_increase: float, shared_queries: bool,
         confidence: float,
         resamples: int, seed: int, json_path: Path | None, tracking_uri: str | None, wide: bool,
         columns: str | None, labels: tuple[Path, ...]) -> None:
    """Pass (exit 0) when the candidate is not worse than the baseline by more than a margin.

    For every --metric the per-query values of both runs are paired on their shared
    queries and the candidate-minus-baseline difference is bootstrapped; the metric
    passes when the lower confidence bound is above -max_drop (for lower-is-better
    metrics such as hallucination or latency the test is mirrored). Runs of two versions
    of one append-only eval set are refused, or with --shared-queries compared on the
    queries both versions have. When an answer metric is gated, the share of answerable
    questions the candidate declined is tested as well (row "declined (answerable)
    [auto]", --max-declined-increase): answer metrics are computed on answered
    questions, so declining the hard ones would improve them. With --metric
    hallucinated, "hallucinated (per answerable) [auto]" is tested too, with its
    margin: a declined question counts as not hallucinated, so wrong answers to
    questions the baseline declined are paired as well.

    \b
    Example:
      evalkit gate --baseline results/main.json --candidate results/pr.json \\
          --variant hybrid_rrf --metric hit@5 --max-drop 0.02 --metric ndcg@10 --max-drop 0.02

    \b
    Exit codes:
      0  the candidate is non-inferior on every named metric
      1  the candidate may be worse by more than a margin on some metric (table printed)
      2  usage error: bad option, unknown run, variant or metric
      3  the runs used different eval sets (name, corpus, or version without --shared-queries)
      4  tampered eval set: the set file no longer matches the hash a run recorded
         (re-verified when the file is available), or the runs disagree on a shared query
      5  too many failed queries in the candidate (--max-failed-share, default 0)
      6  the candidate is degraded on more queries than the baseline: its LLM failed after
         retries and the graph fell back (--max-degraded-share, default 0); answer metrics
         are always paired on the queries healthy in both runs; also when its LLM answered
         empty or content-filtered replies or error messages as replies (error_reply), or it
         answered none of the shared queries; also when its index was built while its LLM
         failed on more passages (graph mode: llm)
      7  a run did not finish: interrupted (no summary, or the variant still pending), or its
         per_query.jsonl does not hold one record per query of its eval set
      8  the candidate's answers cite passages they were not shown (ids never retrieved) on
         more queries than the baseline's (--max-invalid-citation-share, default 0)
    """
    if len(max_drops) not in (1, len(metrics)):
        raise click.BadParameter(f"give one --max-drop per --metric ({len(metrics)}) or one for all, "
                                 f"got {len(max_drops)}", param_hint="--max-drop")
    margins = list(zip(metrics, max_drops if len(max_drops) == len(metrics) else max_drops * len(metrics)))
    try:
        baseline = load_run(baseline_ref, tracking_uri, view=ANALYSIS)
        candidate = load_run(candidate_ref, tracking_uri, view=ANALYSIS)
        if baseline.label == candidate.label:
            baseline.label, candidate.label = "baseline", "candidate"
        a, b = _variants(baseline, candidate, variant, baseline_variant, candidate_variant)
        corrected = None
        if labels:
            from evalkit.analysis.labels import corrected_for_runs

            corrected = corrected_for_runs([("baseline", baseline, a), ("candidate", candidate, b)], labels,
                                           confidence=confidence)
        result = run_gate(baseline, candidate, a, b, margins, confidence=confidence, n_resamples=resamples,
                          seed=seed, max_failed_share=max_failed_share, max_degraded_share=max_degraded_share,
                          corrected=corrected, shared_queries=shared_queries,
                          max_invalid_citation_share=max_invalid_citation_share,
                          max_declined_increase=max_declined_increase)
    except EvalkitError as exc:
        click.echo(f"error: {exc}", err=True)
        ctx.exit(getattr(exc, "exit_code", 2))
    click.echo(render_checked(lambda lay: format_gate(result, lay), layout(wide, columns)))
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(result.to_dict(), indent=2) + "\n", encoding="utf-8")
    ctx.exit(0 if result.passed else 1)


def _variants(baseline, candidate, variant, baseline_variant, candidate_variant) -> tuple[str, str]:
    if variant and (baseline_variant or candidate_variant):
        raise EvalkitError("use --variant, or --baseline-variant with --candidate-variant, not both")
    if variant:
        a = b = variant
    elif baseline_variant or candidate_variant:
        if not (baseline_variant and candidate_variant):
            raise EvalkitError("--baseline-variant and --candidate-variant go together")
        a, b = baseline_variant, candidate_variant
    else:
        for run in (baseline, candidate):
            if run.summary.pending and not run.summary.variants:  # killed before any variant finished
                check_finished(run, run.summary.pending[0])
        common = [n for n in baseline.variant_names if n in candidate.variant_names]
        if len(baseline.variant_names) == 1 and len(candidate.variant_names) == 1:
            a, b = baseline.variant_names[0], candidate.variant_names[0]
        elif len(common) == 1:
            a = b = common[0]
        else:
            raise EvalkitError(f"name the variant: --variant NAME (shared: {', '.join(common) or 'none'}), or "
                               "--baseline-variant A --candidate-variant B")

    check_finished(baseline, a)
    check_finished(candidate, b)
    baseline.variant(a)
    candidate.variant(b)
    return a, b
