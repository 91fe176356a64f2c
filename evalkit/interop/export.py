"""A finished run in other tools' formats: TREC run + qrels files, and a per-query table.

    from evalkit.interop import export_trec, to_dataframe
    export_trec("results/demo_kb.json", "results/demo_kb.trec")   # qrels.txt + <variant>.<stage>.run
    df = to_dataframe("results/demo_kb.json")                      # one row per variant x query

TREC files (``trec_eval``, ``pytrec_eval``, ranx ``Run.from_file(kind="trec")``):

* ``<variant>.retrieval.run`` / ``<variant>.final.run``: ``qid Q0 docid rank score runname``,
  one line per ranked document of the retrieval-stage and the final (after rerank;
  the same as retrieval without a reranker) ranking, the document-level rankings
  evalkit's metrics read. A query with an empty ranking has no lines.
* ``qrels.txt``: ``qid 0 docid grade`` for every gold document of every answerable query
  (grade 1 unless the eval set is graded; unanswerable queries are left out: trec_eval,
  like evalkit, cannot score them).

Scores: trec_eval re-sorts a run by score and breaks ties by document id (descending),
so tied pipeline scores would be re-ordered. ``scores="rank"`` writes ``n - position``
(n = length of the ranking): strictly decreasing, so any tool sees evalkit's exact order
and re-scores to the same numbers. ``scores="native"`` writes the pipeline's own scores
(6 decimals): trec_eval then re-sorts ties, which is what a run made with ``--ties trec``
scored. The default is the one that reproduces the run: ``rank``, or ``native`` for a
``--ties trec`` run (pass ``trec_eval -l N`` for a run's ``--relevance-level N``).

Caveats when comparing with trec_eval: evalkit's ``mrr@k`` is ``recip_rank`` on the run
cut to k; queries with an empty ranking are 0 in evalkit but missing in trec_eval
unless ``-c`` (pytrec_eval: add them as empty runs, or count them as 0 yourself).
"""
from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.analysis.pairing import guard_tripped, has_guard
from evalkit.analysis.runs import LoadedRun, load_run
from evalkit.errors import EvalkitError
from evalkit.records import QueryResult

if TYPE_CHECKING:
    import pandas as pd

    from evalkit.analysis.runs import LoadedRun

STAGES = ("retrieval", "final")
SCORE_MODES = ("rank", "native")
FORMATS = ("parquet", "csv", "trec", "ragas")
LIST_COLUMNS = ("gold_doc_ids", "cited_docs", "evidence_passages", "path")
_SPACE = re.compile(r"\s")


def _load(run: str | Path | LoadedRun, tracking_uri: str | None = None) -> LoadedRun:
    return run if isinstance(run, LoadedRun) else load_run(run, tracking_uri)


def _variants(run: LoadedRun, variants: Sequence[str] | None) -> list[str]:
    names = list(variants) if variants else run.variant_names
    for n in names:
        run.variant(n)  # unknown name: error with did-you-mean
    return names


def _trec_id(value: str, what: str, source: str) -> str:
    if not value or _SPACE.search(value):
        raise EvalkitError(f"{source}: {what} {value!r} is empty or contains whitespace, which the TREC format "
                           "cannot hold (columns are whitespace-separated); rename it in the eval set or corpus")
    return value


# ---------------------------------------------------------------------------- TREC


def trec_run_lines(rows: Sequence[dict[str, Any]], stage: str, run_name: str, scores: str = "rank",
                   source: str = "run") -> list[str]:
    """TREC run lines of one variant's per-query records (``per_query.jsonl`` objects) at ``stage``."""
    if stage not in STAGES:
        raise EvalkitError(f"unknown stage '{stage}'; choose one of {', '.join(STAGES)}")
    if scores not in SCORE_MODES:
        raise EvalkitError(f"unknown score mode '{scores}'; choose one of {', '.join(SCORE_MODES)}")
    tag = _SPACE.sub("_", run_name)
    out = []
    for row in rows:
        qid = _trec_id(str(row["query_id"]), "query id", source)
        ranking = row.get("retrieved" if stage == "retrieval" else "reranked") or []
        n = len(ranking)
        for i, d in enumerate(ranking):
            doc = _trec_id(str(d["doc_id"]), "document id", f"{source}: query {qid}")
            score = str(n - i) if scores == "rank" else f"{float(d.get('score') or 0.0):.6f}"
            out.append(f"{qid} Q0 {doc} {i + 1} {score} {tag}")
    return out


def trec_qrels_lines(rows: Sequence[dict[str, Any]], source: str = "run") -> list[str]:
    """``qid 0 docid grade`` for each gold document of each answerable query, in record order.

    The grade is the record's ``gold_relevance`` (graded eval sets), else 1.
    """
    return [f"{_trec_id(str(r['query_id']), 'query id', source)} 0 "
            f"{_trec_id(str(d), 'document id', source)} {int((r.get('gold_relevance') or {}).get(d, 1))}"
            for r in rows for d in (r.get("gold_doc_ids") or [])]


def export_trec(run: str | Path | LoadedRun, out_dir: str | Path, variants: Sequence[str] | None = None,
                scores: str | None = None, tracking_uri: str | None = None) -> list[Path]:
    """Write ``qrels.txt`` and ``<variant>.<stage>.run`` for every variant and stage; return the paths.

    The qrels come from the gold ids in the per-query records (the eval set version the
    run used); every variant must agree on them.
    """
    loaded = _load(run, tracking_uri)
    names = _variants(loaded, variants)
    if scores is None:  # what the run scored: its pipeline order (rank scores), or trec_eval's (native scores)
        from evalkit.metrics import Scoring

        scores = "native" if Scoring.from_dict(loaded.summary.scoring).ties == "trec" else "rank"
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    gold: dict[str, list[str]] = {}
    qrels_rows: list[dict[str, Any]] = []
    written: list[Path] = []
    for name in names:
        rows = loaded.rows(name)
        for r in rows:
            g = list(r.get("gold_doc_ids") or [])
            if r["query_id"] not in gold:
                gold[r["query_id"]] = g
                qrels_rows.append(r)
            elif gold[r["query_id"]] != g:
                raise EvalkitError(f"{loaded.source}: variants disagree on the gold documents of query "
                                   f"'{r['query_id']}' ({gold[r['query_id']]} vs {g} in '{name}'); were they run "
                                   "on the same eval set version?")
        for stage in STAGES:
            path = out / f"{name}.{stage}.run"
            _write_lines(path, trec_run_lines(rows, stage, f"{name}.{stage}", scores, loaded.source))
            written.append(path)
    qrels = out / "qrels.txt"
    _write_lines(qrels, trec_qrels_lines(qrels_rows, loaded.source))
    return [qrels, *written]


def _write_lines(path: Path, lines: list[str]) -> None:
    from evalkit.fileio import write_atomic

    write_atomic(path, "".join(line + "\n" for line in lines), hint="choose another --output folder")


# ---------------------------------------------------------------------------- table


def _error_text(error: dict[str, Any] | None) -> str | None:
    if not error:
        return None
    return f"{error.get('type', 'Error')}: {error.get('message', '')}"


FIXED_COLUMNS: tuple[str, ...] = (
    "variant", "query_id", "question", "type", "lang", "gold_doc_ids", "n_gold", "outcome", "error", "error_node",
    "rerank_top1", "guard_stopped", "answer", "cited_docs", "evidence_passages", "judge_error", "n_retrieved",
    "n_final", "top_doc", "path", "n_steps", "latency_ms", "mlflow_run_id")
"""The columns every table starts with, in order (each documented in docs/export.md); metrics follow."""
METRIC_PREFIX = "metric:"
"""Prefix of a metric column whose name would repeat a fixed column (none does today)."""


def metric_column(name: str) -> str:
    """The column of per-query metric ``name``: its printed name, unless a fixed column has it."""
    return METRIC_PREFIX + name if name in FIXED_COLUMNS else name


def _metric_names(loaded: LoadedRun, names: Sequence[str]) -> list[str]:
    """Per-query metric names: those of the variants' summaries first (in that order), then the rest as seen.

    Only names some query carries: a variant-level rate such as ``hallucination_rate``
    has no per-query value and no column (its per-query source, ``hallucinated``, has one).
    """
    seen: list[str] = []
    for name in names:
        for r in loaded.rows(name):
            seen += [m for m in (r.get("metrics") or {}) if m not in seen]
    summary_order = [m for name in names for m in loaded.variant(name).metrics]
    first = [m for m in dict.fromkeys(summary_order) if m in seen]
    return first + [m for m in seen if m not in first]


def _row(name: str, r: dict[str, Any], run_id: str | None, guard: bool) -> dict[str, Any]:
    trace = r.get("trace") or []
    generation = r.get("generation") or {}
    judgement = generation.get("judgement") or {}
    final = r.get("reranked") or []
    return {
        "variant": name, "query_id": r["query_id"], "question": r.get("question"), "type": r.get("type"),
        "lang": r.get("lang"), "gold_doc_ids": list(r.get("gold_doc_ids") or []),
        "n_gold": len(r.get("gold_doc_ids") or []), "outcome": r.get("outcome"),
        "error": _error_text(r.get("error")), "error_node": (r.get("error") or {}).get("node"),
        "rerank_top1": r.get("rerank_top1"),
        "guard_stopped": guard_tripped(QueryResult.from_dict(r)) if guard else None,
        "answer": generation.get("answer") if generation else None,
        "cited_docs": list(generation.get("used_documents") or []),
        "evidence_passages": [str(e[0]) for e in generation.get("evidence") or [] if e],
        "judge_error": judgement.get("error") if isinstance(judgement, dict) else None,
        "n_retrieved": len(r.get("retrieved") or []), "n_final": len(final),
        "top_doc": final[0]["doc_id"] if final else None, "path": [str(e.get("node")) for e in trace],
        "n_steps": len(trace), "latency_ms": round(sum(float(e.get("duration_ms") or 0) for e in trace), 3),
        "mlflow_run_id": run_id}


def to_dataframe(run: str | Path | LoadedRun, variants: Sequence[str] | None = None,
                 tracking_uri: str | None = None) -> pd.DataFrame:
    """One row per variant x query of a finished run, every per-query metric a column.

    Columns: :data:`FIXED_COLUMNS`, then one float column per per-query metric, named as
    evalkit prints it (``recall@20``, ``faithfulness``, ``answered``; NaN where a query has
    no value, such as retrieval metrics of unanswerable queries). Every name is unique
    (:func:`metric_column`); docs/export.md defines each column. Rows follow the summary's
    variant order, then the eval set's order.
    """
    import pandas as pd

    loaded = _load(run, tracking_uri)
    names = _variants(loaded, variants)
    metrics = _metric_names(loaded, names)
    records: list[dict[str, Any]] = []
    for name in names:
        run_id = loaded.variant(name).mlflow_run_id
        guard = has_guard(loaded.results(name))
        for r in loaded.rows(name):
            rec = _row(name, r, run_id, guard)
            values = r.get("metrics") or {}
            for m in metrics:
                v = values.get(m)
                rec[metric_column(m)] = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) \
                    else float("nan")
            records.append(rec)
    columns = [*FIXED_COLUMNS, *[metric_column(m) for m in metrics]]
    if len(set(columns)) != len(columns):  # cannot happen (metric_column), but never write a table that lies
        raise EvalkitError(f"duplicate export columns: {sorted({c for c in columns if columns.count(c) > 1})}")
    df = pd.DataFrame.from_records(records, columns=columns)
    for col in ("rerank_top1", "latency_ms", *[metric_column(m) for m in metrics]):
        df[col] = df[col].astype("float64")
    df["guard_stopped"] = df["guard_stopped"].astype("boolean")
    return df


def write_table(df: pd.DataFrame, path: str | Path, fmt: str) -> Path:
    """Write ``df`` as parquet (list columns kept as lists) or CSV (list columns as JSON arrays)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        df.to_parquet(path, index=False)
    elif fmt == "csv":
        flat = df.copy()
        for col in LIST_COLUMNS:
            if col in flat:
                flat[col] = [json.dumps(list(v), ensure_ascii=False) for v in flat[col]]
        flat.to_csv(path, index=False)
    else:
        raise EvalkitError(f"unknown table format '{fmt}'; choose parquet or csv")
    return path


def export_run(run: str | Path, fmt: str, output: str | Path | None = None, variants: Sequence[str] | None = None,
               scores: str | None = None, tracking_uri: str | None = None) -> list[Path]:
    """``evalkit export``: write ``fmt`` (parquet, csv, trec or ragas) to ``output`` (default beside the summary)."""
    if fmt not in FORMATS:
        raise EvalkitError(f"unknown export format '{fmt}'; choose one of {', '.join(FORMATS)}")
    loaded = _load(run, tracking_uri)
    stem = loaded.output_stem()
    if fmt == "trec":
        return export_trec(loaded, output or stem.with_name(stem.name + ".trec"), variants, scores)
    if fmt == "ragas":
        from evalkit.interop.ragas_export import export_ragas

        return export_ragas(loaded, output or stem.with_name(stem.name + ".ragas"), variants)
    df = to_dataframe(loaded, variants)
    return [write_table(df, output or stem.with_name(f"{stem.name}.{fmt}"), fmt)]
