#!/usr/bin/env python
"""A deploy gate at production scale (issue 34): 8 variants over a bilingual corpus, MLflow on, then
compare, gate and report; per-stage wall and CPU, peak RSS, MLflow's share, and the same run on Ray.

    python benchmarks/deploy_gate_scale.py                                   # 100k passages x 10k queries
    nice -n 10 python benchmarks/deploy_gate_scale.py --passages 10000 --queries 1000
    python benchmarks/deploy_gate_scale.py --passages 300 --queries 30 --variants bm25,rag_bm25_extractive --no-ray

What it does:

1. Generates (seeded, ``deploy_gate_data.bilingual_corpus``) ``--passages`` passages, 70%
   English and 30% Chinese, with words drawn from one Zipf-Mandelbrot law over a large
   vocabulary so that the vocabulary grows as Heaps' law says (the fitted beta is printed),
   and ``--queries`` 6-word queries with their gold document, as a frozen eval set.
2. Warm-up, outside the timed run (the issue's targets are warm): MiniLM encodes every passage
   and query into the embedding cache ``WORK_DIR/cache`` on every core (skipped when warm);
   then (``--warm-run``, the default) the variants that generate run once on a 2-worker Ray
   cluster, MLflow off, so that the extractive generator's e5 vectors of the passages it
   quotes are cached (which passages those are is only known by running retrieval). The
   output says how many texts each step encoded, and how many the timed run still had to
   encode (the agentic variant's rewritten queries, and anything the warm run did not meet).
3. Timed, in a process of its own (so that its peak RSS is its own, not the setup's):
   ``run_eval`` of the 8 variants (``deploy_gate_data.variants``, written as YAML files in
   WORK_DIR/configs and read back as a user's are) with MLflow on (a sqlite store in WORK_DIR,
   the default trace policy), the offline judge for the two generating variants; the
   per-query loop runs on one thread.
4. Timed: ``evalkit compare``, ``gate`` (hybrid_rrf against bm25 on hit@5 and ndcg@10) and
   ``report`` on the run, each in its own process as a user types them (wall from the
   start of the process, CPU and peak RSS of that process).
5. The same 8 variants on a local 2-worker Ray cluster (``--executor ray``; MLflow off, so
   the figure is the query work), and a check that every per-query record is identical to
   the local run's once clock readings, the memo's ``reused`` flag and LLM cache hits are
   set aside (``deploy_gate_data.comparable`` says why).

Per-stage figures come from timers wrapped around evalkit's own functions in the timed run's
process (nested rows are inside the row above them); CPU is that process's (``process_time``)
plus, for MLflow, its background logging process (``RUSAGE_CHILDREN``).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from deploy_gate_data import (
    bilingual_corpus,
    heaps_fit,
    record_differences,
    variants,
    write_set,
)
from scale_common import _fix_threads, _quiet_env, cached_vectors, current_rss_mb, peak_rss_mb, table

METRICS = ("recall@20", "hit@5", "mrr@10", "ndcg@10", "recall@100")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--passages", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=10_000)
    p.add_argument("--variants", default=None, help="Comma-separated subset of the 8 variants (default: all).")
    p.add_argument("--threads", type=int, default=1, help="torch / faiss threads (default: 1).")
    p.add_argument("--no-ray", action="store_true", help="Skip the Ray run and the record check.")
    p.add_argument("--no-mlflow", action="store_true", help="MLflow off in the timed local run.")
    p.add_argument("--no-warm-run", dest="warm_run", action="store_false",
                   help="Skip the untimed Ray run of the generating variants (the timed run then encodes the "
                        "generator's e5 vectors itself, cold).")
    p.add_argument("--seed", type=int, default=34)
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/evalkit-deploy-gate"))
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--phase", default=None, help=argparse.SUPPRESS)  # the timed run's own process
    p.add_argument("--set-path", type=Path, default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


class Stages:
    """Wall and CPU seconds spent inside wrapped functions (this process only), by stage label."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._saved: list[tuple[Any, str, Any]] = []
        self._active: set[str] = set()
        self.encoded: dict[tuple[str, str], int] = defaultdict(int)
        self.memory: list[tuple[str, float, float]] = []  # (variant's config, RSS MB, peak so far MB) at its summary
        self.logger_cpu: dict[str, float] = {}  # the MLflow worker's CPU seconds per step (InvocationLogger.cpu)
        self.mlflow_waited = 0.0  # BackgroundLogger.waited_s: close() until the worker said "closed"

    def wrap(self, owner: Any, name: str, label: str) -> None:
        orig = getattr(owner, name)
        self._saved.append((owner, name, orig))
        self.wall[label] += 0.0  # rows print in wrapping order
        stages = self

        def timed(*a: Any, **k: Any) -> Any:
            if label in stages._active:  # re-entrant (a wrapped function calling itself): count the outer call
                return orig(*a, **k)
            stages._active.add(label)
            w, c = time.perf_counter(), time.process_time()
            try:
                return orig(*a, **k)
            finally:
                stages.wall[label] += time.perf_counter() - w
                stages.cpu[label] += time.process_time() - c
                stages.calls[label] += 1
                stages._active.discard(label)

        setattr(owner, name, timed)

    def restore(self) -> None:
        for owner, name, orig in reversed(self._saved):
            setattr(owner, name, orig)
        self._saved.clear()


@contextmanager
def stage_timers():
    """The stages of a run: index, encode, retrieve, generate, judge, write, MLflow (module docstring)."""
    from evalkit import runstore as store
    from evalkit.index import bm25, dense
    from evalkit.judges.offline import OfflineJudge
    from evalkit.models.embedders import CachedEmbedder
    from evalkit.nodes.generate import Generate
    from evalkit.nodes.retrieve import Retrieve
    from evalkit.run import query, runner, tracking

    s = Stages()
    s.wrap(runner, "build_graph", "index: build / load (graph build)")
    s.wrap(query, "run_query", "query loop (run_query)")
    s.wrap(Retrieve, "run", "  retrieve (node)")
    s.wrap(CachedEmbedder, "encode_queries", "    encode queries (cache read or model)")
    s.wrap(CachedEmbedder, "encode_passages", "  encode passages (cache read or model)")
    s.wrap(dense.DenseIndex, "search", "    faiss search")
    s.wrap(bm25.BM25Index, "search_many", "    BM25 search")
    s.wrap(Generate, "run", "  generate (extractive)")
    s.wrap(OfflineJudge, "judge", "  judge (offline)")
    s.wrap(store.VariantStore, "append", "write: per_query.jsonl appends")
    s.wrap(store.VariantStore, "finish", "write: records finish")
    s.wrap(runner, "write_json_atomic", "write: summary JSON")
    s.wrap(runner, "variant_summary", "summaries (variant_summary)")
    s.wrap(runner, "submit_variant", "MLflow: submit a variant (main process)")
    s.wrap(runner, "close_tracking", "MLflow: close (the wait for the logger, views prepared meanwhile)")
    s.wrap(tracking, "prepare_view", "  analysis views prepared in that wait (main process)")
    s.encoded = defaultdict(int)  # (model, role) -> texts the model really encoded during the block (cache misses)
    get = CachedEmbedder._get

    def counted(self: Any, texts: list[str], role: str, *a: Any, **k: Any) -> Any:
        before = self.encoded
        try:
            return get(self, texts, role, *a, **k)
        finally:
            s.encoded[(self.identity.split("@")[0], role)] += self.encoded - before

    CachedEmbedder._get = counted
    summarise = runner.variant_summary

    def held(results: Any, *a: Any, **k: Any) -> Any:  # where the memory goes: RSS while a variant's results are held
        s.memory.append((k.get("config_path") or "?", current_rss_mb(), peak_rss_mb()))
        return summarise(results, *a, **k)

    runner.variant_summary = held
    from evalkit.track.background import BackgroundLogger
    close = BackgroundLogger.close

    def closed(self: Any, *a: Any, **k: Any) -> Any:  # where the logger's CPU went, as its worker reported it
        try:
            return close(self, *a, **k)
        finally:
            s.logger_cpu = dict(self.cpu)
            s.mlflow_waited = self.waited_s

    BackgroundLogger.close = closed  # type: ignore[method-assign]
    try:
        yield s
    finally:
        CachedEmbedder._get = get
        runner.variant_summary = summarise
        BackgroundLogger.close = close  # type: ignore[method-assign]
        s.restore()


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def warm_up(eval_set: Any, cache: Path, threads: int) -> tuple[int, float]:
    """Encode every passage and query into the embedding cache on ``threads`` threads (then back to the
    timed run's); (texts encoded, seconds). 0 texts: it was warm."""
    from evalkit.models.cache import EmbeddingCache
    from evalkit.models.embedders import CachedEmbedder, ModelSpec

    emb = CachedEmbedder.lazy(ModelSpec(name="minilm"), EmbeddingCache(cache / "embeddings.sqlite"))
    _fix_threads(os.cpu_count() or 1)
    t = time.perf_counter()
    try:
        emb.encode_passages([d.text for d in eval_set.corpus.documents])
        emb.encode_queries([r.question for r in eval_set.records])
    finally:
        _fix_threads(threads)
    return emb.encoded, time.perf_counter() - t


def generating(configs: list[Any]) -> list[Any]:
    """The variants with a ``generate`` node: the ones whose e5 vectors only a run can cache."""
    return [c for c in configs if any(n.get("type") == "generate" for n in c.nodes.values())]


def warm_run(eval_set: Any, configs: list[Any], cache: Path, work: Path) -> tuple[int, float]:
    """Run ``configs`` once on a 2-worker Ray cluster, MLflow off, to fill the embedding cache; (vectors
    added to the cache, seconds). Nothing of this run is reported but its cost."""
    before = sum(cached_vectors(cache).values())
    t = time.perf_counter()
    run(eval_set, configs, work / "warm" / "gate.json", cache, "ray", False, work)
    return sum(cached_vectors(cache).values()) - before, time.perf_counter() - t


def analysis(output: Path, work: Path, names: list[str]) -> dict[str, tuple[float, float, int, float]]:
    """``evalkit compare``, ``gate`` and ``report`` on the run, each in its own process as a user runs them:
    {command: (wall, CPU, exit code, peak RSS MB)}; what each prints goes to ``WORK/NAME.out``."""
    base = "bm25" if "bm25" in names else names[0]
    cand = "hybrid_rrf" if "hybrid_rrf" in names else names[-1]
    commands = {
        "compare": ["compare", str(output), "--json", str(work / "compare.json")],
        "gate": ["gate", "--baseline", str(output), "--candidate", str(output), "--baseline-variant", base,
                 "--candidate-variant", cand, "--metric", "hit@5", "--max-drop", "0.02", "--metric", "ndcg@10",
                 "--max-drop", "0.02", "--json", str(work / "gate.json")],
        "report": ["report", str(output), "--html", str(work / "report.html"), "--markdown", str(work / "report.md"),
                   "--no-mlflow"],
    }
    out = {}
    for name, args in commands.items():
        peak_file = work / f"{name}.peak"
        code = ("import atexit, sys; sys.path.insert(0, sys.argv.pop(1)); from scale_common import write_peak_rss; "
                "atexit.register(write_peak_rss, sys.argv.pop(1)); from evalkit.cli import main; main()")
        rc, wall, cpu = own_process(["-c", code, str(Path(__file__).resolve().parent), str(peak_file), *args],
                                    work / f"{name}.out")
        out[name] = (wall, cpu, rc, float(peak_file.read_text(encoding="utf-8")))
    return out


def own_process(args: list[str], log: Path) -> tuple[int, float, float]:
    """``python ARGS`` in a process of its own, its output to ``log``: (exit code, wall, CPU of that process
    alone, from ``wait4``). Its peak RSS it writes itself (:func:`scale_common.write_peak_rss`): ``ru_maxrss``
    of a process this one started counts this one's pages at the start (exec keeps the larger mark)."""
    with log.open("w", encoding="utf-8") as fh:
        w = time.perf_counter()
        proc = subprocess.Popen([sys.executable, *args], stdout=fh, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - w
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, wall, usage.ru_utime + usage.ru_stime


def run(eval_set: Any, configs: list[Any], output: Path, cache: Path, executor: str, mlflow: bool,
        work: Path) -> tuple[Any, float, float, float]:
    """``run_eval`` of the variants; (summary, wall, this process's CPU, children's CPU)."""
    from evalkit.run.runner import RunOptions, run_eval

    opts = RunOptions(output=output, progress=False, mlflow=mlflow, cache_root=cache, metrics=METRICS,
                      tracking_uri=f"sqlite:///{work / 'mlflow.db'}" if mlflow else None,
                      executor=executor, workers=2 if executor == "ray" else 1, overwrite=True)
    w, c, ch = time.perf_counter(), time.process_time(), children_cpu()
    summary = run_eval(eval_set, configs, opts, echo=lambda m: None)
    return summary, time.perf_counter() - w, time.process_time() - c, children_cpu() - ch


def config_files(folder: Path, names: list[str] | None, write: bool = False) -> list[Path]:
    """The variants' YAML files in ``folder`` (written first when ``write``), in the variants' order."""
    from evalkit.graph import config_from_dict

    paths = []
    for v in variants(names):
        path = folder / f"{v['name']}.yaml"
        if write:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(config_from_dict(v).to_yaml(), encoding="utf-8")
        paths.append(path)
    return paths


def load_configs(paths: list[Path]) -> list[Any]:
    from evalkit.graph.sweep import load_variants

    return [c for path in paths for c in load_variants(path)]


def timed_run(args: argparse.Namespace, work: Path) -> int:
    """Step 3 in this process of its own: the run, its stage timers and peak RSS, written to WORK/timed-run.json."""
    from evalkit.evalsets import load_eval_set

    eval_set = load_eval_set(f"{args.set_path}@v1")
    configs = load_configs(config_files(work / "configs", args.variants.split(",") if args.variants else None))
    rss_before = current_rss_mb()  # the eval set and the configs read, nothing built
    with stage_timers() as st:
        summary, wall, cpu, mlflow_child_cpu = run(eval_set, configs, work / "local" / "gate.json", args.work_dir /
                                                   "cache", "local", not args.no_mlflow, work)
    out = {"wall": wall, "cpu": cpu, "mlflow_child_cpu": mlflow_child_cpu, "peak_self": peak_rss_mb(), "stages": [[k, st.wall[k], st.cpu[k], st.calls[k]] for k in st.wall],
           "encoded": [[m, r, n] for (m, r), n in sorted(st.encoded.items()) if n],
           "memory": [[Path(c).stem, rss, peak] for c, rss, peak in st.memory], "rss_before": rss_before,
           "logger_cpu": st.logger_cpu, "mlflow_waited": st.mlflow_waited,
           "metrics": {n: dict(v.metrics) for n, v in summary.variants.items()}}
    (work / "timed-run.json").write_text(json.dumps(out), encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    _quiet_env(args.threads)
    os.environ.setdefault("EVALKIT_THREADS", str(args.threads))
    _fix_threads(args.threads)
    from evalkit.evalsets import load_eval_set

    work = args.work_dir / f"{args.passages}x{args.queries}-{args.seed}"
    work.mkdir(parents=True, exist_ok=True)
    if args.phase == "timed-run":
        return timed_run(args, work)
    t = time.perf_counter()
    data = bilingual_corpus(args.passages, args.queries, args.seed)
    k, beta = heaps_fit([x for x, lang in zip(data["texts"], data["langs"]) if lang == "en"])
    set_path = write_set(work / "set", data)
    del data
    gen_s = time.perf_counter() - t
    eval_set = load_eval_set(f"{set_path}@v1")
    cache = args.work_dir / "cache"  # embeddings by text: a rerun of a size is warm
    encoded, warm_s = warm_up(eval_set, cache, args.threads)
    configs = load_configs(config_files(work / "configs", args.variants.split(",") if args.variants else None,
                                        write=True))
    names = [c.name for c in configs]
    warm_configs = generating(configs) if args.warm_run else []
    warm_added, warm_run_s = warm_run(eval_set, warm_configs, cache, work) if warm_configs else (0, 0.0)
    load = os.getloadavg()
    local_out = work / "local" / "gate.json"
    phase = [*(sys.argv[1:] if argv is None else argv), "--phase", "timed-run", "--set-path", str(set_path)]
    code, proc_wall, _ = own_process([str(Path(__file__).resolve()), *phase], work / "timed-run.out")
    if code != 0:
        print((work / "timed-run.out").read_text(encoding="utf-8")[-3000:], file=sys.stderr)
        return code
    timed = json.loads((work / "timed-run.json").read_text(encoding="utf-8"))
    wall, cpu, mlflow_child_cpu = timed["wall"], timed["cpu"], timed["mlflow_child_cpu"]
    peak_setup = peak_rss_mb()
    ana = analysis(local_out, work, names)
    print(f"Deploy gate: {args.queries:,} queries x {len(configs)} variants x {args.passages:,} passages "
          f"(English {1 - 0.3:.0%} / Chinese 30%, Heaps fit on English V = {k:.1f} n^{beta:.2f}); "
          f"MLflow {'off' if args.no_mlflow else 'on (sqlite, default trace policy)'}; {args.threads} thread(s); "
          f"load average at the start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, at the end "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"setup (not timed): corpus and eval set {gen_s:.0f} s; embedding warm-up encoded {encoded:,} texts in "
          f"{warm_s:.0f} s on {os.cpu_count()} threads ({'cache was warm' if encoded == 0 else 'cold: now warm'}; "
          "MiniLM, every passage and query); "
          + (f"warm run of {', '.join(c.name for c in warm_configs)} on Ray (2 workers) {warm_run_s:.0f} s, "
             f"{warm_added:,} vectors added to the cache (the extractive generator's e5)" if warm_configs else
             "no warm run (the timed run encodes the generator's e5 vectors itself)"))
    misses = timed["encoded"]
    print("embeddings in the timed run: " + ("all read from the cache (warm)" if not misses else
          "encoded by the model (cache misses, so not warm): " + ", ".join(f"{m} {r}s {v:,}" for m, r, v in
                                                                          misses)) + "\n")
    rows = [["run_eval, 8 variants" if len(configs) == 8 else f"run_eval, {len(configs)} variants",
             f"{wall:.1f}", f"{cpu:.1f}", "100%", "", ""]]
    for label, w, c, calls in timed["stages"]:
        rows.append([label, f"{w:.1f}", f"{c:.1f}", f"{100 * w / wall:.0f}%", str(calls), ""])
    # MLflow's share: submitting variants, and close() until the worker said "closed" (its own clock: the views
    # prepared in that wait overlap it; any finished after it are the views', not MLflow's)
    waited = timed.get("mlflow_waited", 0.0)
    mlflow_wall = sum(w for label, w, _, _ in timed["stages"] if label.startswith("MLflow: submit")) + waited
    rows.append(["MLflow: close until the logger was done (its clock)", f"{waited:.1f}", "",
                 f"{100 * waited / wall:.0f}%", "", ""])
    rows.append(["MLflow: background logger process (CPU)", "", f"{mlflow_child_cpu:.1f}", "", "", ""])
    for label, c in timed.get("logger_cpu", {}).items():  # as the worker measured it; the rest: start, imports
        rows.append([f"  {label}", "", f"{c:.1f}", "", "", ""])
    rows.append(["the timed run's process, whole (start, eval set, run)", f"{proc_wall:.1f}", "", "", "",
                 f"{timed['peak_self']:.0f}"])
    for name, (w, c, code, peak) in ana.items():
        rows.append([f"analysis: evalkit {name} (exit {code}), own process", f"{w:.1f}", f"{c:.1f}", "", "",
                     f"{peak:.0f}"])
    print(table(["stage", "wall s", "CPU s", "share of run wall", "calls", "peak RSS MB"], rows, args.markdown))
    ana_wall = sum(w for w, _, _, _ in ana.values())
    per_q = 1000 * wall / (args.queries * len(configs))
    peak_job = max([timed["peak_self"], *(peak for _, _, _, peak in ana.values())])
    print(f"\npeak RSS: the timed run's process {timed['peak_self']:.0f} MB, the analysis commands' "
          + ", ".join(f"{n} {peak:.0f} MB" for n, (_, _, _, peak) in ana.items())
          + f": the deploy gate's largest {peak_job:.0f} MB (setup, in this process, not timed: {peak_setup:.0f} MB); "
          f"MLflow in the run's process {mlflow_wall:.1f} s of {wall:.1f} s wall ({100 * mlflow_wall / wall:.1f}%) "
          f"plus {mlflow_child_cpu:.1f} s CPU in its logger; compare + gate + report {ana_wall:.1f} s; "
          f"{per_q:.2f} ms per query-variant")
    print("where the run's memory goes (RSS when each variant's results are all held, at its summary; the peak "
          f"so far): eval set read {timed['rss_before']:.0f} MB; "
          + "; ".join(f"{n} {rss:.0f} MB (peak {peak:.0f})" for n, rss, peak in timed["memory"]))
    metrics = timed["metrics"]
    print("metrics: " + "; ".join(f"{n} " + ", ".join(f"{m} {metrics[n].get(m, float('nan')):.4f}"
                                                     for m in ("hit@5", "ndcg@10")) for n in names))
    for n in names:
        extra = {m: metrics[n].get(m) for m in ("faithfulness", "hallucination_rate", "abstention_rate")
                 if metrics[n].get(m) is not None}
        if extra:
            print(f"  {n}: " + ", ".join(f"{m} {v:.4f}" for m, v in extra.items()))
    if args.no_ray:
        return 0
    ray_out = work / "ray" / "gate.json"
    _, rwall, rcpu, _ = run(eval_set, configs, ray_out, cache, "ray", False, work)
    same_all = True
    print(f"\nRay (2 local workers, MLflow off): {rwall:.1f} s wall, {rcpu:.1f} s CPU in this process (the workers' "
          "is not counted: Ray's processes are not this one's children)")
    for n in names:
        count, differ = record_differences(local_out.with_suffix("") / n / "per_query.jsonl",
                                           ray_out.with_suffix("") / n / "per_query.jsonl")
        same_all &= not differ
        print(f"  {n}: {count - len(differ)} / {count} per-query records identical to the local run's"
              + (f" (differ: {', '.join(differ[:5])})" if differ else ""))
    print(f"every per-query record identical (clock readings, the memo's 'reused' flag and LLM cache hits aside): "
          f"{'yes' if same_all else 'NO'}")
    return 0 if same_all else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
