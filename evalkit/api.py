"""The notebook path: ``evalkit.evaluate`` and ``evalkit.score``, the CLI's ``run`` and ``score`` as functions.

    import evalkit
    results = evalkit.evaluate("eval_sets/demo_kb.jsonl@v1", ["graph_configs/bm25.yaml"], mlflow=False)
    results.summary

Both call exactly what the commands call (``run_eval``; ``evalkit.scoring``) and write the
same files, then return :class:`evalkit.results.Results` over them. Options mirror the
command-line flags (``output``, ``mlflow``, ``tracking_uri``, ``workers``, ``executor``,
``metrics``, ``share_work``, ``judge``...). An eval set may be a path with ``@vN``, a loaded
``EvalSet``, or rows in memory (a list of dicts or a DataFrame, with ``corpus=``), which are
frozen by content into the cache first (:mod:`evalkit.evalsets.inline`). Graph configs may
be paths (sweeps expand), dicts as a YAML file would hold them, or loaded ``GraphConfig``s;
a config given in memory is also written to ``<output stem>/<variant>/config.yaml``, so
``compare`` and ``report`` can read it back.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from evalkit.cachestore import default_cache_root
from evalkit.commands.options import env_quiet
from evalkit.errors import EvalkitError
from evalkit.evalsets import EvalSet, load_eval_set
from evalkit.evalsets.inline import _records, freeze_inline
from evalkit.graph import GraphConfig, config_from_dict, expand_sweep, load_variants
from evalkit.llm.base import LLMSpec
from evalkit.metrics import DEFAULT_METRICS, Scoring
from evalkit.results import Results, load_results
from evalkit.run.runner import RunOptions, run_eval
from evalkit.scoring import score_answers, score_run, write_scored

__all__ = ["evaluate", "load_results", "score"]

ConfigLike = str | Path | dict[str, Any] | Any


def _cache_root(cache_root: str | Path | None) -> Path:
    return Path(cache_root) if cache_root is not None else default_cache_root()


def _eval_set(eval_set: Any, corpus: Any, name: str, lang: str, cache_root: Path) -> Any:
    if isinstance(eval_set, EvalSet):
        return eval_set
    if isinstance(eval_set, (str, Path)):
        if corpus is not None:
            raise EvalkitError("corpus= goes with an eval set given as rows; a frozen eval set names its own corpus")
        return load_eval_set(eval_set)
    return freeze_inline(eval_set, corpus, cache_root, name=name, lang=lang)


def _configs(graph_configs: ConfigLike | Sequence[ConfigLike]) -> tuple[list[Any], set[str]]:
    """Loaded configs, and the names of those given in memory (no file to point back to)."""
    items = graph_configs if isinstance(graph_configs, (list, tuple)) else [graph_configs]
    out, in_memory = [], set()
    for item in items:
        if isinstance(item, GraphConfig):
            loaded = [item]
        elif isinstance(item, dict):
            loaded = [config_from_dict(cfg, source="<dict>") for _, cfg in expand_sweep(item)] if "sweep" in item \
                else [config_from_dict(item, source="<dict>")]
        elif isinstance(item, (str, Path)):
            out += load_variants(item)
            continue
        else:
            raise EvalkitError(f"graph_configs: got a {type(item).__name__}; give a config file path, a config "
                               "dict or a GraphConfig (or a list of them)")
        out += loaded
        in_memory |= {c.name for c in loaded if not Path(c.source).is_file()}
    return out, in_memory


def _judge_options(judge_llm: Any, judge_model: Any = None) -> dict[str, Any]:
    """Judge options from ``judge_llm`` (an LLM spec) and ``judge_model`` (the nli judge's folder or options)."""
    out: dict[str, Any] = {}
    if isinstance(judge_model, dict):
        out.update(judge_model)
    elif judge_model is not None:
        from evalkit.judges.nli import options_from_path

        out.update(options_from_path(judge_model))
    if judge_llm is None:
        return out

    if isinstance(judge_llm, LLMSpec):
        return {**out, "llm": judge_llm}
    if isinstance(judge_llm, dict):
        return {**out, "llm": LLMSpec(**judge_llm)}

    return {**out, "llm": LLMSpec(**(yaml.safe_load(Path(judge_llm).read_text(encoding="utf-8")) or {}))}


def evaluate(eval_set: Any, graph_configs: ConfigLike | Sequence[ConfigLike], *, output: str | Path | None = None,
             mlflow: bool = True, tracking_uri: str | None = None, experiment: str = "evalkit", workers: int = 1,
             executor: str = "local", ray_address: str | None = None, metrics: Sequence[str] | None = None,
             share_work: bool = True, judge: str = "offline", judge_llm: Any = None, traces: bool = True,
             trace_limit: int | None = None, progress: bool = True, resume: bool = False,
             corpus: Any = None, name: str = "inline", lang: str = "auto",
             cache_root: str | Path | None = None, judge_model: Any = None) -> Results:
    """Run graph variants on an eval set, as ``evalkit run`` does, and return the :class:`Results`.

    Args:
        eval_set: ``"eval_sets/NAME.jsonl@vN"``, a loaded ``EvalSet``, or rows (list of dicts /
            DataFrame) with ``corpus`` (a corpus JSONL path, or rows with ``id`` and ``text``);
            rows are frozen by content under ``<cache>/evalsets/NAME-<sha12>/`` (``name``, ``lang``:
            the eval set name and the language of rows without ``lang``; ``auto``: by script).
        graph_configs: one or several of: a YAML path, a config dict, a ``GraphConfig``.
        output: the summary JSON (default ``results/<eval set name>.json``); per-query records go
            to ``<output stem>/<variant>/per_query.jsonl``.
        mlflow, tracking_uri, experiment, traces, trace_limit: MLflow logging, as the CLI flags.
        workers, executor, ray_address, share_work, resume, progress: how to run, as the CLI flags.
        metrics: retrieval metric names (default ``recall@20, hit@5, mrr@10, ndcg@10``).
        judge, judge_llm: judge of generated answers; ``judge_llm`` an ``LLMSpec``, a dict or a YAML path.
        judge_model: for ``judge="nli"``: a local model folder, a YAML file of nli judge options, or the
            options as a dict (``{"model": FOLDER, "entailment_threshold": 0.7}``; docs/judges.md).
    """
    env_quiet()
    root = _cache_root(cache_root)
    es = _eval_set(eval_set, corpus, name, lang, root)
    configs, in_memory = _configs(graph_configs)
    out = Path(output) if output is not None else Path("results") / f"{es.name}.json"
    options = RunOptions(output=out, workers=workers, resume=resume, metrics=tuple(metrics or DEFAULT_METRICS),
                         tracking_uri=tracking_uri, experiment=experiment, mlflow=mlflow, progress=progress,
                         cache_root=Path(cache_root) if cache_root is not None else None, share_work=share_work,
                         traces=traces, trace_limit=trace_limit, judge=judge,
                         judge_options=_judge_options(judge_llm, judge_model), executor=executor,
                         ray_address=ray_address, source_name="evalkit.evaluate")
    run_eval(es, configs, options, echo=lambda m: print(m))
    for config in configs:  # configs born in memory: keep what ran beside its records
        if config.name in in_memory:
            (out.with_suffix("") / config.name / "config.yaml").write_text(config.to_yaml(), encoding="utf-8")
    return load_results(out)


def _answers_file(answers: Any, cache_root: Path) -> Path:
    """A path as given; rows in memory written to ``<cache>/answers/<sha12>.jsonl`` (their content is their identity)."""
    if isinstance(answers, (str, Path)):
        return Path(answers)

    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in _records(answers))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    path = cache_root / "answers" / f"{digest[:12]}.jsonl"
    if not path.is_file() or path.read_bytes() != text.encode("utf-8"):  # absent, or damaged: written whole
        from evalkit.cachestore import write_file

        write_file(path, text.encode("utf-8"))
    return path


def score(*, name: str, output: str | Path, eval_set: Any = None, run: str | Path | None = None,
          retrieval_run: str | Path | None = None, run_format: str | None = None, answers: Any = None,
          answers_format: str = "auto", column_map: dict[str, str] | None = None, split: str | None = None,
          metrics: Sequence[str] | None = None, judge: str = "offline", judge_llm: Any = None, evidence_k: int = 5,
          cite_by: str = "id", lang: str = "auto", mlflow: bool = True, tracking_uri: str | None = None,
          experiment: str = "evalkit", traces: bool = True, cache_root: str | Path | None = None,
          relevance_level: int = 1, ties: str = "pipeline", judge_model: Any = None) -> Results:
    """Score outputs produced elsewhere, as ``evalkit score`` does, and return the :class:`Results`.

    Give ``run`` (a TREC or JSONL ranking file; needs ``eval_set``) or ``answers`` (a file or
    folder as the CLI takes, or rows in memory: a list of dicts or a DataFrame with the answers
    fields). ``column_map`` is the CLI's ``--map``: ``{"answer": "my_column"}``.
    ``relevance_level`` and ``ties`` are the CLI's ``--relevance-level`` and ``--ties``; ``judge_model`` its
    ``--judge-model`` (or the nli judge's options as a dict).
    """
    env_quiet()
    scoring = Scoring(relevance_level=relevance_level, ties=ties)
    if (run is None) == (answers is None):
        raise EvalkitError("give one of run= (rankings) or answers= (answers)")
    root = _cache_root(cache_root)
    es = None if eval_set is None else _eval_set(eval_set, None, "inline", lang, root)
    if run is not None:
        if es is None:
            raise EvalkitError("run= needs eval_set=: the gold documents live there")
        scored = score_run(run, es, name, run_format=run_format, retrieval_run=retrieval_run, metrics=metrics,
                           scoring=scoring)
    else:
        scored = score_answers(_answers_file(answers, root), name, eval_set=es, judge=judge,
                               judge_options=_judge_options(judge_llm, judge_model), metrics=metrics,
                               mapping=column_map,
                               answers_format=answers_format, split=split, evidence_k=evidence_k, cite_by=cite_by,
                               lang=lang, cache_root=root, scoring=scoring)
    for notice in scored.notices:
        print(f"note: {notice}")
    for warning in scored.warnings:
        print(f"warning: {warning}")
    options = RunOptions(output=Path(output), tracking_uri=tracking_uri, experiment=experiment, mlflow=mlflow,
                         traces=traces, progress=False, source_name="evalkit.score")
    write_scored(scored, options)
    return load_results(output)
