"""Labels from people where they already look: MLflow traces tagged for review, their human feedback read back.

What it is for: ``evalkit label RUN --variant V --to mlflow`` draws the stratified sample of
:func:`evalkit.analysis.labels.draw_sample` and tags each sampled query's trace (the trace
evalkit logged for it: :func:`evalkit.track.traces.mlflow_trace_id`) with:

    evalkit.review               requested
    evalkit.label.variant        V
    evalkit.label.run            the run's label (its summary file stem)
    evalkit.label.query_id       the query id
    evalkit.label.answer_sha     the identity of the labelled answer (question + answer)
    evalkit.label.stratum        its stratum, and .stratum_size, .seed, .strata_by

so a person finds them in the UI (Traces tab, filter ``tags.`evalkit.review` = 'requested'``)
and adds a feedback assessment with source HUMAN: ``hallucinated`` (yes / no, true / false)
and, if they like, ``faithfulness`` (the share of claims supported, 0 to 1); in code,
``mlflow.log_feedback(trace_id=..., name="hallucinated", value="yes",
source=AssessmentSource("HUMAN", "alice"))``.

``evalkit score --labels mlflow:EXPERIMENT`` (:func:`read_review_labels`) reads every trace
of the experiment tagged for review and turns its latest valid human feedback into a
:class:`~evalkit.analysis.labels.Label`, the record the corrected estimates use
(:func:`evalkit.analysis.labels.corrected_estimates`, PPI with the sample's strata). A trace
without human feedback is an unlabelled line; feedback from the judge or code
(``evalkit``'s own assessments) is never read as a person's.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalkit.analysis.labels import Label, answer_sha
from evalkit.errors import EvalkitError
from evalkit.track.traces import mlflow_trace_id

REVIEW_TAG = "evalkit.review"
REQUESTED = "requested"
PREFIX = "evalkit.label."
LABEL_SOURCE = "mlflow:"
YES = {"yes", "true", "1", "y", "是"}
NO = {"no", "false", "0", "n", "否"}


def review_tags(variant: str, run_label: str, query_id: str, answer_sha: str, sample: dict[str, Any]) -> dict[str, str]:
    """The tags that mark one sampled trace for review (module docstring)."""
    return {REVIEW_TAG: REQUESTED, PREFIX + "variant": variant, PREFIX + "run": run_label,
            PREFIX + "query_id": query_id, PREFIX + "answer_sha": answer_sha,
            **{PREFIX + k: str(sample[k]) for k in ("stratum", "stratum_size", "seed", "strata_by") if k in sample}}


def request_review(run: Any, variant: str, sample: Sequence[tuple[Any, dict[str, Any]]],
                   tracking_uri: str | None = None) -> list[str]:
    """Tag the trace of every sampled query for review; return the trace ids."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    uri = tracking_uri or run.tracking_uri
    run_id = run.variant(variant).mlflow_run_id
    if not uri or not run_id:
        raise EvalkitError(f"{run.source}: variant '{variant}' was not logged to MLflow (run without --no-mlflow, "
                           "or pass --tracking-uri), so it has no traces to tag for review")
    client = MlflowClient(tracking_uri=uri)
    ids = []
    for r, s in sample:
        trace_id = mlflow_trace_id(run_id, r.query_id)
        tags = review_tags(variant, run.label, r.query_id, answer_sha(r.question, (r.generation or {}).get("answer", "")),
                           s)
        try:
            for key, value in tags.items():
                client.set_trace_tag(trace_id, key, value)
        except MlflowException as exc:
            raise EvalkitError(f"{uri}: cannot tag the trace of query '{r.query_id}' ({trace_id}): {exc.message}; "
                               "was the run logged with --no-traces?") from exc
        ids.append(trace_id)
    return ids


def parse_source(spec: str) -> str | None:
    """The experiment of a ``--labels mlflow:EXPERIMENT`` value, else None (a label file)."""
    if not spec.startswith(LABEL_SOURCE):
        return None
    name = spec[len(LABEL_SOURCE):].strip()
    if not name:
        raise EvalkitError(f"--labels {spec!r}: name the experiment, e.g. --labels mlflow:evalkit")
    return name


def read_review_labels(experiment: str, tracking_uri: str) -> list[Any]:
    """Every trace of ``experiment`` tagged for review, as a label (module docstring)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None and experiment.isdigit():
        exp = client.get_experiment(experiment)
    if exp is None:
        raise EvalkitError(f"--labels mlflow:{experiment}: no such experiment in {tracking_uri}")
    out, token = [], None
    while True:
        page = client.search_traces(locations=[exp.experiment_id], filter_string=f"tags.`{REVIEW_TAG}` = '{REQUESTED}'",
                                    max_results=500, page_token=token, include_spans=False)
        out += [trace_label(t.info, tracking_uri) for t in page]
        token = page.token
        if not token:
            break
    if not out:
        raise EvalkitError(f"--labels mlflow:{experiment}: no trace is tagged for review in {tracking_uri}; tag a "
                           "sample first with `evalkit label RUN --variant V --to mlflow`")
    return out


def trace_label(info: Any, where: str = "") -> Any:
    """One reviewed trace's :class:`~evalkit.analysis.labels.Label`: its tags and its latest human feedback."""
    tags = info.tags or {}
    missing = [k for k in ("variant", "query_id", "answer_sha") if PREFIX + k not in tags]
    if missing:
        raise EvalkitError(f"{where}: trace {info.trace_id} is tagged {REVIEW_TAG} but lacks {PREFIX}{missing[0]}; "
                           "tag traces with `evalkit label --to mlflow`")
    human = _human_feedback(info)
    hallucinated = _yes_no(human.get("hallucinated"), info.trace_id)
    faithfulness = _share(human.get("faithfulness"), info.trace_id)
    return Label(query_id=tags[PREFIX + "query_id"], variant=tags[PREFIX + "variant"],
                 answer_sha=tags[PREFIX + "answer_sha"], stratum=tags.get(PREFIX + "stratum", "all"),
                 hallucinated=hallucinated, faithfulness=faithfulness, run=tags.get(PREFIX + "run", ""),
                 strata_by=tags.get(PREFIX + "strata_by", ""))


def _human_feedback(info: Any) -> dict[str, Any]:
    """``{name: value}`` of the latest valid HUMAN feedback of each name on a trace."""
    latest: dict[str, tuple[int, Any]] = {}
    for a in info.assessments or []:
        source = getattr(getattr(a, "source", None), "source_type", None)
        if str(source).upper() != "HUMAN" or getattr(a, "valid", True) is False or a.feedback is None:
            continue
        when = a.create_time_ms or 0
        if a.name not in latest or when >= latest[a.name][0]:
            latest[a.name] = (when, a.feedback.value)
    return {k: v for k, (_, v) in latest.items()}


def _yes_no(value: Any, trace_id: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in YES:
        return True
    if text in NO:
        return False
    raise EvalkitError(f"trace {trace_id}: human feedback 'hallucinated' is {value!r}; give yes or no")


def _share(value: Any, trace_id: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise EvalkitError(f"trace {trace_id}: human feedback 'faithfulness' is {value!r}; give a share from 0 to 1")
    return float(value)
