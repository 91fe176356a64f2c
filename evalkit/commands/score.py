"""``evalkit score``: score rankings or answers produced outside evalkit, written as ``evalkit run`` writes."""
from __future__ import annotations

import os
from pathlib import Path

import click

from evalkit.commands import user_errors
from evalkit.commands.options import (
    ESCALATE_HELP,
    JUDGE_HELP,
    absolute_spec,
    env_quiet,
    judge_failed_everywhere,
    judge_options_for,
    layout,
    mlflow_hint,
    output_file,
    scoring_options,
    summary_tables,
    table_options,
)
from evalkit.metrics import Scoring
from evalkit.run.options import RunOptions
from evalkit.scoring import score_run, write_scored


@click.command("score")
@click.option("--eval-set", "eval_set", metavar="PATH[@vN]", default=None,
              help="The frozen eval set the outputs answer (required with --run; optional with --answers).")
@click.option("--run", "run_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="A ranked list per query: TREC run (qid Q0 docid rank score tag) or JSONL {id, retrieved}.")
@click.option("--retrieval-run", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="The first-stage ranking, for metrics that read the retrieval stage (recall@k): e.g. "
                   "VARIANT.retrieval.run beside VARIANT.final.run. Default: the --run file.")
@click.option("--run-format", type=click.Choice(["trec", "jsonl"]), default=None,
              help="Format of --run. [default: jsonl for .jsonl/.json files, else trec]")
@click.option("--answers", "answers_file", type=click.Path(exists=True, path_type=Path), default=None,
              help="Answers: JSONL {id, question, answer, contexts | retrieved, ...}, a ragas EvaluationDataset "
                   "(JSONL, parquet or datasets folder), or a datasets folder / parquet with --map.")
@click.option("--answers-format", type=click.Choice(["auto", "evalkit", "ragas"]), default="auto", show_default=True,
              help="Column names of --answers: evalkit's, ragas's (user_input, response, retrieved_contexts, "
                   "reference), or auto (ragas when there is a user_input column).")
@click.option("--map", "maps", multiple=True, metavar="FIELD=COLUMN",
              help="Read answers FIELD from COLUMN (repeatable): id, question, answer, contexts, retrieved, "
                   "reference_answer, reference_contexts, relevant_doc_ids, type, lang, abstained, error, latency_ms.")
@click.option("--split", default=None, help="Split of an --answers datasets folder holding several.")
@click.option("--unanswered", type=click.Choice(["failed", "skip"]), default="failed", show_default=True,
              help="Eval-set queries --answers has no line for: recorded as failed queries (a miss; gate refuses "
                   "failures), or skipped, to score a partial file on the queries it answers (the note says how many).")
@click.option("--name", required=True, help="Variant name of the scored outputs (as compare, gate and report show it): letters, digits, "
                   "'_', '.' and '-', as a graph config's name.")
@click.option("--output", required=True, type=click.Path(dir_okay=False, path_type=Path), callback=output_file,
              help="Summary JSON to write; per_query.jsonl goes to <output stem>/<name>/.")
@click.option("--metric", "metrics", multiple=True, metavar="NAME",
              help="Retrieval metric (repeatable), as for evalkit run. Default: recall@20, hit@5, mrr@10, ndcg@10.")
@click.option("--judge", default="offline", show_default=True, help=JUDGE_HELP)
@click.option("--escalate", default=None, metavar="VERDICT,...", help=ESCALATE_HELP)
@click.option("--judge-llm", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="YAML LLM spec for the llm/ragas judges, e.g. {backend: openai, base_url: ..., model: ...}.")
@click.option("--judge-model", metavar="PATH", default=None,
              help="For --judge nli: a local Hugging Face model folder (NLI or fact-checking classifier; nothing "
                   "is downloaded), or a YAML file of nli judge options {model: FOLDER, entailment_threshold: ...}.")
@click.option("--evidence-k", type=click.IntRange(1), default=5, show_default=True,
              help="Without contexts, the answer is judged against the texts of this many top 'retrieved' documents.")
@click.option("--cite-by", type=click.Choice(["id", "position"]), default="id", show_default=True,
              help="How answers cite. id: [doc-id], else [1], [2] ... as the 1st, 2nd passage of the evidence; "
                   "position: only [1], [2] ... count.")
@click.option("--lang", default="auto", show_default=True,
              help="Language of rows without a lang column (without --eval-set); auto: zh, ja or ko by the "
                   "question's script, else en.")
@scoring_options
@click.option("--tracking-uri", default=None, help="MLflow tracking server (default: sqlite store beside --output).")
@click.option("--experiment", default="evalkit", show_default=True, help="MLflow experiment name.")
@click.option("--no-mlflow", is_flag=True, help="Skip MLflow logging (files are still written).")
@click.option("--no-traces", is_flag=True, help="Do not log per-query MLflow traces.")
@click.option("--labels", "labels", multiple=True, metavar="FILE|mlflow:EXPERIMENT",
              help="Human labels (repeatable): a file from `evalkit label`, or mlflow:EXPERIMENT, the human "
                   "feedback ('hallucinated': yes/no) on the traces `evalkit label --to mlflow` tagged for review. "
                   "The summary adds judge-corrected hallucination rate and faithfulness with confidence intervals, "
                   "as `evalkit run --labels` does.")
@table_options
@user_errors
def score(eval_set: str | None, run_file: Path | None, retrieval_run: Path | None, run_format: str | None,
          answers_file: Path | None, answers_format: str, maps: tuple[str, ...], split: str | None, name: str,
          output: Path, metrics: tuple[str, ...], judge: str, escalate: str | None, judge_llm: Path | None,
          evidence_k: int, cite_by: str,
          lang: str, tracking_uri: str | None, experiment: str, no_mlflow: bool, no_traces: bool, wide: bool,
          columns: str | None, labels: tuple[str, ...] = (), relevance_level: int | None = None,
          ties: str | None = None, judge_model: str | None = None, unanswered: str = "failed") -> int:
    """Score outputs your own pipeline produced, with evalkit's metrics, judges and files.

    \b
    Rankings (exactly the metric code `evalkit run` uses):
      evalkit score --eval-set eval_sets/demo_kb.jsonl@v1 --run my_system.trec \\
                    --name my_system --output results/my_system.json
    Answers (judged; retrieval metrics too when rows carry 'retrieved'):
      evalkit score --answers answers.jsonl --eval-set eval_sets/demo_kb.jsonl@v1 \\
                    --name my_rag --output results/my_rag.json
    A self-contained file (questions and contexts inside; its SHA-256 is its identity):
      evalkit score --answers ragas_dataset.jsonl --name my_rag --output results/my_rag.json

    Writes what `evalkit run` writes (summary JSON, <stem>/<name>/per_query.jsonl, MLflow
    runs), so compare, gate, report and export work on the result, also beside graph
    variants of the same eval set. Query ids the eval set lacks, repeated ids and bad
    lines are errors naming file, line and field.
    """
    env_quiet()

    label_files, label_experiments = _label_sources(labels)
    eval_set = absolute_spec(eval_set) if eval_set else None  # recorded so gate can re-verify it from anywhere
    scoring = Scoring(relevance_level=relevance_level or 1, ties=ties or "pipeline")
    if (run_file is None) == (answers_file is None):
        raise click.UsageError("give one of --run (rankings) or --answers (answers)")
    if run_file is not None:
        if eval_set is None:
            raise click.UsageError("--run needs --eval-set: the gold documents live there")
        extra = [o for o, v in (("--map", maps), ("--split", split), ("--judge-llm", judge_llm),
                                ("--judge-model", judge_model), ("--unanswered", unanswered != "failed")) if v]
        if extra:
            raise click.UsageError(f"{', '.join(extra)} apply to --answers, not --run")
        scored = score_run(run_file, eval_set, name, run_format=run_format, retrieval_run=retrieval_run,
                           metrics=metrics or None, scoring=scoring)
    else:
        if run_format or retrieval_run:
            raise click.UsageError("--run-format and --retrieval-run apply to --run, not --answers")
        # answers' readers and judges (and the run command's judge options): loaded for answers only
        from evalkit.commands.run import judge_model_options
        from evalkit.interop.importers import parse_mapping
        from evalkit.scoring import ANSWER_FIELDS, score_answers

        judge_options = judge_options_for(judge, escalate)
        if judge_llm:
            import yaml

            from evalkit.llm.base import LLMSpec

            judge_options["llm"] = LLMSpec(**(yaml.safe_load(judge_llm.read_text(encoding="utf-8")) or {}))
        judge_options.update(judge_model_options(judge, judge_model))
        scored = score_answers(answers_file, name, eval_set=eval_set, judge=judge, judge_options=judge_options,
                               metrics=metrics or None, mapping=parse_mapping(maps, ANSWER_FIELDS),
                               answers_format=answers_format, split=split, evidence_k=evidence_k, cite_by=cite_by,
                               lang=lang, scoring=scoring, unanswered=unanswered)
    for notice in scored.notices:
        click.echo(f"note: {notice}", err=True)
    for warning in scored.warnings:
        click.echo(f"warning: {warning}", err=True)
    options = RunOptions(output=output, tracking_uri=tracking_uri, experiment=experiment, mlflow=not no_mlflow,
                         traces=not no_traces, progress=False, source_name="evalkit score")
    summary = write_scored(scored, options, echo=lambda m: click.echo(m, err=True))
    if labels:
        from evalkit.analysis.labels import load_label_files
        from evalkit.analysis.review import read_review_labels
        from evalkit.commands.run import apply_labels

        found = load_label_files(label_files)
        uri = summary.mlflow.get("tracking_uri") or tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
        for exp in label_experiments:
            if not uri:
                raise click.BadParameter(f"mlflow:{exp} needs the tracking server: add --tracking-uri",
                                         param_hint="--labels")
            found += read_review_labels(exp, uri)
        apply_labels(summary, output, found)
    lay = layout(wide, columns)
    click.echo(summary_tables(summary, lay))
    click.echo(f"\nsummary: {output}\nper-query records: {output.with_suffix('')}/{name}/per_query.jsonl")
    if summary.mlflow:
        click.echo(mlflow_hint(summary, lay))
    if summary.variants[name].corrected:
        from evalkit.analysis.label_text import format_corrected
        from evalkit.analysis.labels import from_dict

        click.echo("\n" + format_corrected([from_dict(summary.variants[name].corrected)]))
    failed = summary.variants[name].n_failed
    if failed:
        click.echo(f"note: {failed} query(ies) failed or have no output; see 'error' in per_query.jsonl", err=True)
    if problem := judge_failed_everywhere(summary):
        click.echo(f"error: {problem}", err=True)
        return 1
    return 0


def _label_sources(specs: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """``--labels`` values split into label files (checked to exist) and MLflow experiments (``mlflow:NAME``)."""
    files, experiments = [], []
    for spec in specs:
        from evalkit.analysis.review import parse_source  # label reading: loaded only when --labels is given

        exp = parse_source(spec)
        if exp is not None:
            experiments.append(exp)
        elif Path(spec).is_file():
            files.append(str(Path(spec).resolve()))
        else:
            raise click.BadParameter(f"{spec!r}: no such label file (give a file from `evalkit label`, or "
                                     "mlflow:EXPERIMENT for feedback on MLflow traces)", param_hint="--labels")
    return files, experiments
