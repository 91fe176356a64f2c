"""Reading a finished run back: from its summary JSON, its results folder, or MLflow.

A run is referred to on the command line as

* ``results/NAME.json``: the summary ``evalkit run --output`` wrote;
* ``results/NAME/`` (or ``results/NAME``): its results folder; the summary beside it
  (``results/NAME.json``) is read;
* an MLflow run id (32 hex characters) with ``--tracking-uri``: a parent run (every
  child variant) or one child run (that variant). ``per_query.jsonl`` and
  ``config.yaml`` are downloaded from the run's artifacts; the eval set identity comes
  from the parent's ``evalset.*`` tags.

Nothing is re-run: analysis reads the records the runner wrote (DESIGN.md). The raw
JSON lines are kept next to the parsed ``QueryResult`` objects so fields added later
(LLM usage, answers) reach the reports even before ``QueryResult`` knows them. What is kept of
each record is the run's ``view`` (:mod:`evalkit.recordview`): whole records by default;
``compare``, ``gate`` and ``report`` keep rankings only to the depth their views read.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.analysis.pairing import metric_names, per_query_values
from evalkit.errors import EvalkitError, did_you_mean
from evalkit.graph.config import config_from_dict
from evalkit.graph.sweep import load_variants
from evalkit.machine import environment_from_tags
from evalkit.metrics import Scoring
from evalkit.records import EvalSetRef, QueryResult, RunSummary, VariantSummary
from evalkit.recordview import WHOLE, RecordView
from evalkit.runstore import gc_paused, read_results, result_from_row
from evalkit.viewfile import read_kept_rows

RUN_ID = re.compile(r"[0-9a-f]{32}")


class IncompleteRunError(EvalkitError):
    """A run (or one of its variants) did not finish: interrupted, or its records no longer match its summary."""

    exit_code = 7


def check_finished(run: LoadedRun, name: str) -> None:
    """Refuse a variant that did not finish in ``run`` (still pending, or the run was cut short before it).

    Raises:
        IncompleteRunError: naming the run, its status and how to finish it.
    """
    s = run.summary
    if name in s.variants and name not in s.pending:
        return
    if name in s.pending or (s.partial and name not in s.variants):
        how = f" ({s.interrupted})" if s.interrupted else ""
        raise IncompleteRunError(f"{run.source}: variant '{name}' did not finish: the run is {s.status}{how}, "
                                 f"pending: {', '.join(s.pending) or 'none'}; finish it with `evalkit run --resume "
                                 f"{run.summary_path or run.source}` before comparing or gating it")


def check_records(run: LoadedRun, name: str) -> None:
    """Refuse a variant whose ``per_query.jsonl`` does not hold one record per query of its summary and eval set.

    A run killed after an earlier, finished run to the same ``--output`` leaves the old summary
    beside a half-written ``per_query.jsonl``; a partial or hand-edited file must not be
    paired on "shared queries" as if nothing were missing.

    Raises:
        IncompleteRunError: the counts (or a repeated query id) and how to fix it.
    """
    rows = run.rows(name)
    seen = Counter(str(r.get("query_id")) for r in rows)
    dupes = sorted(q for q, n in seen.items() if n > 1)
    if dupes:
        raise IncompleteRunError(f"{run.source}: variant '{name}': per_query.jsonl holds query "
                                 f"{', '.join(dupes[:5])} more than once; re-run it")
    expected = [(n, what) for n, what in ((run.variant(name).n_queries, "its summary"),
                                          (run.summary.eval_set.n_queries, f"eval set {run.summary.eval_set.name} "
                                           f"v{run.summary.eval_set.version}")) if n]
    for n, what in expected:
        if len(rows) != n:
            raise IncompleteRunError(f"{run.source}: variant '{name}' has {len(rows)} per-query records but {what} "
                                     f"has {n} queries: the run was interrupted (or re-run and killed) after its "
                                     f"summary was written, or its files were edited; finish it with `evalkit run "
                                     f"--resume {run.summary_path or run.source}`, or run it again")


@dataclass
class LoadedRun:
    """A finished run: its summary, where it came from, and lazily loaded per-query records."""

    source: str
    label: str
    summary: RunSummary
    summary_path: Path | None = None
    folder: Path | None = None
    tracking_uri: str | None = None
    warnings: list[str] = field(default_factory=list)
    view: RecordView = WHOLE  # what is kept of each per-query record (evalkit.recordview)
    _rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict, repr=False)
    _lines: dict[str, list[int]] = field(default_factory=dict, repr=False)  # the file line of each row
    _results: dict[str, list[QueryResult]] = field(default_factory=dict, repr=False)
    _config_text: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def variant_names(self) -> list[str]:
        return list(self.summary.variants)

    def variant(self, name: str) -> VariantSummary:
        """The summary of variant ``name``; an unknown name raises with the choices."""
        if name not in self.summary.variants:
            raise EvalkitError(f"{self.source}: no variant '{name}'{did_you_mean(name, self.summary.variants)}")
        return self.summary.variants[name]

    def per_query_path(self, name: str) -> Path | None:
        return None if self.folder is None else self.folder / name / "per_query.jsonl"

    def rows(self, name: str) -> list[dict[str, Any]]:
        """The raw JSON objects of ``per_query.jsonl`` (eval-set order), as much of each as :attr:`view` keeps."""
        self.variant(name)
        if name not in self._rows:
            path = self.per_query_path(name)
            if path is None or not path.is_file():
                raise EvalkitError(f"{self.source}: per-query records of variant '{name}' not found"
                                   f"{f' at {path}' if path else ''}; analysis needs per_query.jsonl")
            # a torn line: file:line and the fix, no traceback; a kept view from its view file when it matches
            numbered = read_kept_rows(path, self.view, self.summary_path)
            self._rows[name] = [row for _, row in numbered]
            self._lines[name] = [n for n, _ in numbered]
        return self._rows[name]

    def results(self, name: str) -> list[QueryResult]:
        """The per-query records of variant ``name`` as ``QueryResult`` objects (legacy names renamed).

        Built once per variant and shared by every caller (``compare`` alone asked four times per
        variant: the tests, fusion, tools and routes): read them, do not change them. The list is a
        new one each call, so sorting or filtering it in place is safe.
        """
        if name not in self._results:
            rows = self.rows(name)
            path, lines = self.per_query_path(name) or Path(name), self._lines.get(name) or range(1, len(rows) + 1)
            with gc_paused(hold=True):  # a QueryResult per row, kept to the end like the rows
                out = [result_from_row(path, n, r, self.summary_path) for n, r in zip(lines, rows, strict=True)]
            for r in out:
                r.metrics = legacy_metrics(r.metrics)
            self._results[name] = out
        return list(self._results[name])

    def config(self, name: str) -> Any:
        """The variant's ``GraphConfig`` as it ran, or ``None`` (with a warning) when unavailable.

        From the MLflow artifact ``config.yaml``, from ``config_path`` in the summary, or (a
        config given in memory to ``evalkit.evaluate``) from ``<variant>/config.yaml`` beside
        its per-query records;
        a file whose hash differs from the recorded ``config_sha256`` is still returned,
        with a warning (it changed since the run).
        """
        v = self.variant(name)
        local = None if self.folder is None else self.folder / name / "config.yaml"
        if name not in self._config_text and (not v.config_path or not Path(v.config_path).is_file()) \
                and local is not None and local.is_file():  # a config given in memory (evalkit.evaluate)
            self._config_text[name] = local.read_text(encoding="utf-8")
        try:
            if name in self._config_text:
                from evalkit.errors import ConfigError
                from evalkit.yamlio import parse_yaml

                source = f"{self.source}:{name}/config.yaml"
                data, lines = parse_yaml(self._config_text[name], source, error=ConfigError)
                return config_from_dict(data, source=source, lines=lines)
            if not v.config_path or not Path(v.config_path).is_file():
                self.warnings.append(f"variant '{name}': graph config {v.config_path or '(not recorded)'} not found")
                return None
            config = {c.name: c for c in load_variants(v.config_path)}.get(name)
            if config is None:
                self.warnings.append(f"variant '{name}': {v.config_path} no longer defines it")
                return None
        except EvalkitError as exc:
            self.warnings.append(f"variant '{name}': graph config unusable: {exc}")
            return None
        if v.config_sha256 and config.sha256() != v.config_sha256:
            self.warnings.append(f"variant '{name}': {v.config_path} changed since the run (config sha256 "
                                 f"{config.sha256()[:12]} != recorded {v.config_sha256[:12]})")
        return config

    def mlflow_parent(self) -> str | None:
        return self.summary.mlflow.get("parent_run_id")

    def output_stem(self) -> Path:
        """Where derived files go by default: ``results/NAME`` for ``results/NAME.json``."""
        if self.summary_path is not None:
            return self.summary_path.with_suffix("")
        return Path.cwd() / self.label


LEGACY = {"citation_precision": "cited_gold_precision"}
"""Metric names of older runs -> today's, when a run has the old name but not the new one (before issue
13, ``citation_precision`` meant "cited documents that are gold"; it now means ALCE citation precision)."""


def legacy_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    """``metrics`` with legacy names renamed (see :data:`LEGACY`); a new-style dict is returned unchanged."""
    if not any(old in metrics and new not in metrics for old, new in LEGACY.items()) or "citation_recall" in metrics:
        return metrics
    return {LEGACY.get(k, k) if LEGACY.get(k, k) not in metrics else k: v for k, v in metrics.items()}


def summary_from_dict(data: dict[str, Any], source: str = "<dict>") -> RunSummary:
    """Rebuild a ``RunSummary`` from the JSON ``evalkit run --output`` wrote."""
    try:
        es = data["eval_set"]
        ref = EvalSetRef(**{k: es[k] for k in EvalSetRef.__dataclass_fields__ if k in es})
        variants = {}
        for name, v in data["variants"].items():
            known = {k: v[k] for k in VariantSummary.__dataclass_fields__ if k in v}
            vs = VariantSummary(**known)
            vs.metrics = legacy_metrics(vs.metrics)
            vs.by_type = {t: legacy_metrics(m) for t, m in vs.by_type.items()}
            variants[name] = vs
    except (KeyError, TypeError) as exc:
        raise EvalkitError(f"{source}: not an evalkit run summary (missing {exc}); pass the --output file of "
                           "`evalkit run`") from exc

    return RunSummary(eval_set=ref, variants=variants, mlflow=data.get("mlflow") or {},
                      git_commit=data.get("git_commit"), sharing=data.get("sharing") or {},
                      scoring=Scoring.from_dict(data.get("scoring")).to_dict(),
                      status=data.get("status", "complete"), pending=list(data.get("pending") or []),
                      interrupted=data.get("interrupted"), environment=data.get("environment") or {})


def summary_metrics(results: list[QueryResult]) -> dict[str, float]:
    """Mean of every graded metric over the queries it is defined on (as ``evalkit compare`` pairs them)."""
    out = {}
    for m in metric_names(results):
        values = per_query_values(results, m)
        if values:
            out[m] = sum(values[q] for q in sorted(values)) / len(values)
    return out


def load_run(spec: str | Path, tracking_uri: str | None = None, view: RecordView = WHOLE) -> LoadedRun:
    """Load a finished run from a summary JSON, a results folder, or an MLflow run id.

    ``view``: what it keeps of each per-query record it reads (``evalkit.recordview.ANALYSIS``
    for ``compare``, ``gate`` and ``report``; whole records by default).
    """
    text = str(spec)
    path = Path(text)
    if path.suffix == ".json" and path.is_file():
        return _from_summary(path, text, view)
    if path.is_dir() or (not path.suffix and path.with_suffix(".json").is_file()):
        summary = path.with_suffix(".json") if path.name else path.parent.with_suffix(".json")
        if not summary.is_file():
            _refuse_unfinished(path, summary, text)
            raise EvalkitError(f"{text}: results folder without its summary {summary}; pass the --output JSON")
        return _from_summary(summary, text, view)
    if path.suffix == ".json" and not path.exists():
        _refuse_unfinished(path.with_suffix(""), path, text)
    if RUN_ID.fullmatch(text):
        uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
        if not uri:
            raise EvalkitError(f"'{text}' looks like an MLflow run id: add --tracking-uri (e.g. "
                               "sqlite:///results/mlflow.db) to say which store holds it")
        return _from_mlflow(text, uri, view)
    raise EvalkitError(f"'{text}' is not a run: pass a summary JSON (results/NAME.json), its results folder "
                       "(results/NAME/) or an MLflow run id with --tracking-uri")


def _refuse_unfinished(folder: Path, summary: Path, text: str) -> None:
    """``IncompleteRunError`` when ``folder`` holds the records of a run killed before any summary was written."""
    started = folder.is_dir() and ((folder / "invocation.json").is_file() or any(folder.glob("*/run.json")))
    if started:
        counts = ", ".join(f"{p.parent.name}: {sum(1 for _ in p.open(encoding='utf-8'))} queries written"
                           for p in sorted(folder.glob("*/per_query.jsonl")))
        raise IncompleteRunError(f"{text}: the run in {folder}/ was interrupted before it wrote its summary "
                                 f"{summary} ({counts or 'no query written'}); finish it with `evalkit run --resume "
                                 f"{summary}`")


def _from_summary(path: Path, source: str, view: RecordView = WHOLE) -> LoadedRun:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise EvalkitError(f"{path}: cannot read run summary ({exc})") from exc
    summary = summary_from_dict(data, str(path))
    return LoadedRun(source=source, label=path.stem, summary=summary, summary_path=path.resolve(),
                     folder=path.resolve().with_suffix(""), tracking_uri=summary.mlflow.get("tracking_uri"), view=view)


def _from_mlflow(run_id: str, uri: str, view: RecordView = WHOLE) -> LoadedRun:
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    client = MlflowClient(tracking_uri=uri)
    try:
        run = client.get_run(run_id)
    except MlflowException as exc:
        raise EvalkitError(f"MLflow run {run_id} not found in {uri}: {exc.message}") from exc
    parent_id = run.data.tags.get("mlflow.parentRunId")
    if parent_id:
        parent, children = client.get_run(parent_id), [run]
    else:
        parent = run
        children = client.search_runs([run.info.experiment_id], f"tags.mlflow.parentRunId = '{run_id}'",
                                      max_results=1000, order_by=["attributes.start_time ASC"])
        if not children:
            raise EvalkitError(f"MLflow run {run_id} has no variant (child) runs; is it an evalkit invocation?")
    tags = parent.data.tags
    if "evalset.name" not in tags:
        raise EvalkitError(f"MLflow run {parent.info.run_id} has no evalset.* tags; not an evalkit run")
    folder = Path(tempfile.mkdtemp(prefix=f"evalkit-run-{run_id[:8]}-"))
    variants: dict[str, VariantSummary] = {}
    config_text: dict[str, str] = {}
    n_queries = 0
    for child in children:
        name = child.data.tags.get("evalkit.variant") or child.info.run_name
        dst = folder / name
        dst.mkdir(parents=True, exist_ok=True)
        client.download_artifacts(child.info.run_id, "per_query.jsonl", str(dst))
        try:
            local = client.download_artifacts(child.info.run_id, "config.yaml", str(dst))
            config_text[name] = Path(local).read_text(encoding="utf-8")
        except (MlflowException, OSError):
            pass
        results = read_results(dst / "per_query.jsonl")
        metrics, excluded = summary_metrics(results), sum(not r.gold_doc_ids for r in results)
        n_queries = max(n_queries, len(results))
        variants[name] = VariantSummary(metrics=metrics, n_failed=sum(r.error is not None for r in results),
                                        n_queries=len(results), n_excluded=excluded,
                                        mlflow_run_id=child.info.run_id,
                                        config_sha256=child.data.tags.get("config.sha256"),
                                        config_path=child.data.tags.get("config.path"))
    ref = EvalSetRef(name=tags["evalset.name"], version=int(tags.get("evalset.version", 0)),
                     sha256=tags.get("evalset.sha256", ""), n_queries=n_queries,
                     corpus_sha256=tags.get("evalset.corpus_sha256", ""))

    scoring = Scoring.from_dict({k.split(".", 1)[1]: v for k, v in tags.items() if k.startswith("scoring.")})
    summary = RunSummary(eval_set=ref, variants=variants,
                         git_commit=tags.get("mlflow.source.git.commit") or tags.get("git.commit"),
                         mlflow={"tracking_uri": uri, "parent_run_id": parent.info.run_id,
                                 "experiment_id": parent.info.experiment_id}, scoring=scoring.to_dict(),
                         environment=environment_from_tags(tags))
    return LoadedRun(source=run_id, label=f"mlflow-{run_id[:8]}", summary=summary, folder=folder,
                     tracking_uri=uri, view=view, _config_text=config_text)
