"""Shared helpers of the SciFact-based benchmarks (``scifact``, ``sweep_cost``, ``cold_warm``, ``overhead``).

Not a benchmark itself. It provides:

- ``Work``: counts the model and index work done inside a ``with`` block: embedder
  calls and texts sent to the model (by role: query / passage), BM25 searches, faiss
  searches, graph node executions and how many of them were reused from another
  variant (``graph.memo``), and the ``WorkMemo`` hit / miss counts of ``run_eval``.
  The counters wrap evalkit's own classes, so they see exactly what the runner does.
- ``copy_cache``: a scratch copy of an evalkit cache, optionally with the cached query
  (or all) embeddings removed, so "cold" can mean exactly one thing.
- ``scifact_subset``: a deterministic SciFact subset (the gold documents of the first N
  test queries, topped up with other abstracts in corpus order) written as BEIR files
  outside the repository and imported with ``import_beir``.
"""
from __future__ import annotations

import gzip
import shutil
import sqlite3
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA_DIR = REPO.parent / "shared" / "datasets" / "scifact"
FILES = {"corpus": "corpus.derived.jsonl", "queries": "topics.beir-v1.0.0-scifact.test.tsv.gz",
         "qrels": "qrels.beir-v1.0.0-scifact.test.txt"}
MASTER_CACHE = Path("/tmp/evalkit-scifact/cache")


def _quiet_env(threads: int) -> None:
    import os

    for key, value in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MLFLOW_DISABLE_TELEMETRY": "true",
                       "TOKENIZERS_PARALLELISM": "false", "RAGAS_DO_NOT_TRACK": "true",
                       "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}.items():
        os.environ.setdefault(key, value)


def peak_rss_mb() -> float:
    """This process's peak RSS in MB since it started its program (``VmHWM``): unlike ``ru_maxrss``, not raised
    to the RSS of the process that started it (exec keeps the larger mark). ``ru_maxrss`` where there is no /proc."""
    import resource

    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024.0
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def current_rss_mb() -> float:
    """This process's resident set now, in MB (``VmRSS``; 0.0 where there is no /proc)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:")) / 1024.0
    except (OSError, StopIteration):
        return 0.0


def write_peak_rss(path: str) -> None:
    """Write :func:`peak_rss_mb` to ``path`` (registered with ``atexit`` by a process whose peak is measured)."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"{peak_rss_mb():.1f}")


def _fix_threads(threads: int) -> None:
    import faiss
    import torch

    torch.set_num_threads(threads)
    faiss.omp_set_num_threads(threads)


def _inside_repo(path: Path) -> bool:
    try:
        path.resolve().relative_to(REPO)
        return True
    except ValueError:
        return False


def scifact_missing(data_dir: Path = DATA_DIR) -> list[str]:
    return [n for n in FILES.values() if not (data_dir / n).is_file()]


def skip_message(name: str, data_dir: Path, missing: list[str]) -> str:
    return (f"{name} skipped: {data_dir} lacks {', '.join(missing)} (see the scifact SOURCE.md of the shared "
            "datasets; the data is not shipped with evalkit)")


class Work:
    """Counters of model / index / graph work; use ``with Work.counting() as w``."""

    def __init__(self) -> None:
        self.c: Counter[str] = Counter()
        self.memos: list[Any] = []

    def __getitem__(self, key: str) -> int:
        return self.c[key]

    def memo_hits(self) -> int:
        return sum(m.hits for m in self.memos)

    def memo_misses(self) -> int:
        return sum(m.misses for m in self.memos)

    @classmethod
    @contextmanager
    def counting(cls):
        from evalkit.graph.graph import Graph
        from evalkit.graph.memo import WorkMemo
        from evalkit.index.bm25 import BM25Index
        from evalkit.index.dense import DenseIndex
        from evalkit.models import embedders
        from evalkit.run import runner

        w = cls()
        saved: list[tuple[Any, str, Any]] = []

        def patch(owner: Any, name: str, new: Any) -> None:
            saved.append((owner, name, owner.__dict__[name]))
            setattr(owner, name, new)

        def encoder(orig: Any, role: str) -> Any:
            def wrapped(self: Any, texts: list[str]) -> Any:
                if texts:
                    w.c[f"model_calls_{role}"] += 1
                    w.c[f"encoded_{role}"] += len(texts)
                return orig(self, texts)
            return wrapped

        for klass in (embedders.SentenceTransformerEmbedder, embedders.E5Embedder):
            for role, name in (("query", "encode_queries"), ("passage", "encode_passages")):
                patch(klass, name, encoder(klass.__dict__[name], role))

        bm25_search = BM25Index.search

        def bm25(self: Any, query: str, k: int) -> Any:
            w.c["bm25_searches"] += 1
            return bm25_search(self, query, k)

        patch(BM25Index, "search", bm25)
        dense_search = DenseIndex.search

        def dense(self: Any, vecs: Any, k: int, model: str) -> Any:
            w.c["faiss_searches"] += 1
            w.c["faiss_query_vectors"] += len(vecs)
            return dense_search(self, vecs, k, model)

        patch(DenseIndex, "search", dense)
        graph_run = Graph.run

        def run(self: Any, initial: Any) -> Any:
            out = graph_run(self, initial)
            for ev in out.trace:
                w.c["node_reused" if ev.reused else "node_executed"] += 1
            return out

        patch(Graph, "run", run)

        class CountingMemo(WorkMemo):
            def __init__(self) -> None:
                super().__init__()
                w.memos.append(self)

        saved.append((runner, "WorkMemo", runner.WorkMemo))
        runner.WorkMemo = CountingMemo
        try:
            yield w
        finally:
            for owner, name, value in reversed(saved):
                setattr(owner, name, value)


def copy_cache(src: Path, dst: Path, drop_roles: tuple[str, ...] = ()) -> Path:
    """Copy the evalkit cache ``src`` to ``dst`` (replacing it); delete cached vectors of ``drop_roles``."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    db = dst / "embeddings.sqlite"
    if drop_roles and db.exists():
        con = sqlite3.connect(str(db))
        con.execute(f"DELETE FROM emb WHERE role IN ({','.join('?' * len(drop_roles))})", drop_roles)
        con.commit()
        con.close()
    return dst


def cached_vectors(cache: Path) -> dict[str, int]:
    """Rows of the embedding cache by role."""
    db = cache / "embeddings.sqlite"
    if not db.exists():
        return {}
    con = sqlite3.connect(str(db))
    rows = dict(con.execute("SELECT role, COUNT(*) FROM emb GROUP BY role").fetchall())
    con.close()
    return rows


def scifact_subset(data_dir: Path, out_dir: Path, n_queries: int, n_docs: int) -> Path:
    """BEIR files for the first ``n_queries`` test queries (file order) and ``n_docs`` abstracts.

    The abstracts are every gold document of those queries, then the other abstracts in
    corpus order until ``n_docs``. Written to ``out_dir`` (outside the repository).
    """
    import json

    qrels_lines = (data_dir / FILES["qrels"]).read_text().splitlines()
    with gzip.open(data_dir / FILES["queries"], "rt", encoding="utf-8") as fh:
        topics = [ln for ln in fh.read().splitlines() if ln.strip()]
    qids = [ln.split("\t", 1)[0] for ln in topics]
    gold_q = {ln.split()[0] for ln in qrels_lines if ln.strip()}
    keep_q = [q for q in qids if q in gold_q][:n_queries]
    keep_set = set(keep_q)
    gold_docs = {ln.split()[2] for ln in qrels_lines if ln.strip() and ln.split()[0] in keep_set}
    docs = [json.loads(ln) for ln in (data_dir / FILES["corpus"]).read_text(encoding="utf-8").splitlines() if ln]
    id_key = "_id" if "_id" in docs[0] else "id"
    chosen = [d for d in docs if str(d[id_key]) in gold_docs]
    for d in docs:
        if len(chosen) >= n_docs:
            break
        if str(d[id_key]) not in gold_docs:
            chosen.append(d)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / FILES["corpus"]).write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in chosen),
                                           encoding="utf-8")
    with gzip.open(out_dir / FILES["queries"], "wt", encoding="utf-8") as fh:
        fh.write("".join(ln + "\n" for ln in topics if ln.split("\t", 1)[0] in keep_set))
    (out_dir / FILES["qrels"]).write_text("".join(ln + "\n" for ln in qrels_lines
                                                  if ln.strip() and ln.split()[0] in keep_set))
    return out_dir


def import_set(files_dir: Path, name: str, work_dir: Path, description: str) -> Any:
    """Import BEIR files with ``import_beir`` into ``work_dir/eval_sets`` and load the eval set."""
    from evalkit.evalsets import load_eval_set
    from evalkit.importers import BeirFiles, import_beir

    files = BeirFiles(**{kind: files_dir / fname for kind, fname in FILES.items()})
    result = import_beir(files, name, work_dir / "eval_sets", lang="en", force=True, description=description)
    return load_eval_set(f"{result.eval_set_path}@v1")


def hybrid_config(name: str, fusion: dict[str, Any], dense_weight: float = 1.0, bm25_weight: float = 1.0) -> Any:
    """``benchmarks/configs/scifact_hybrid_rrf.yaml`` with another name, fusion and channel weights."""
    from evalkit.graph.config import config_from_dict, read_config_yaml

    path = REPO / "benchmarks" / "configs" / "scifact_hybrid_rrf.yaml"
    data, _ = read_config_yaml(path)
    params = data["nodes"]["retrieve"]["params"]
    params["fusion"] = dict(fusion)
    params["dense"]["weight"] = dense_weight
    params["bm25"]["weight"] = bm25_weight
    data["name"] = name
    return config_from_dict(data, source=str(path))


def summary_numbers(summary: Any) -> dict[str, dict[str, float]]:
    """Every variant's metrics, unrounded (for exact comparisons)."""
    return {name: dict(v.metrics) for name, v in summary.variants.items()}


def table(header: list[str], rows: list[list[str]], markdown: bool) -> str:
    """A Markdown table, or an aligned plain-text one (first column left, the rest right)."""
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    return "\n".join([line(header), line(["-" * w for w in widths]), *[line(r) for r in rows]])
