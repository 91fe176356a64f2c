#!/usr/bin/env python
"""BM25 growth from 100k to 1M passages: evalkit against tantivy, a search engine with block-max WAND.

    pip install tantivy==0.27.0          # optional; not an evalkit dependency
    python benchmarks/bm25_reference.py --sizes 100000,1000000

Why: issue 14 asks BM25 query time to grow at most 3x from 100k to 1M passages of the synthetic
corpus of ``benchmarks/scaling.py``. That corpus draws every passage from one fixed 30,000-word
vocabulary, so each term's document frequency grows with the corpus. This script measures how
a mature engine with dynamic pruning (tantivy: Rust, block-max WAND over one segment) grows on
the same tokens, beside evalkit, so the target can be judged against what exact top-k costs.

What it does, per size, in one process: reads ``scaling.py``'s token cache (``--work-dir``;
tokenises first when absent), indexes the same terms in tantivy (whitespace tokenizer, one
segment, one thread) and in evalkit (``build_or_load_bm25``; k1 1.2 and b 0.75, tantivy's fixed
values, Lucene IDF as both use), runs the same queries one per call ``--repeats`` times and
reports the median pass, and the mean overlap of the two engines' top 100 (tantivy stores
passage lengths in one lossy byte, so its scores differ slightly from exact ones).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="100000,1000000", help="Corpus sizes (default: 100000,1000000).")
    p.add_argument("--queries", type=int, default=100, help="Queries per size (default: 100).")
    p.add_argument("--repeats", type=int, default=5, help="Timed passes; the median is reported (default: 5).")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/evalkit-scaling"),
                   help="scaling.py's work dir: its token cache is reused (default: /tmp/evalkit-scaling).")
    return p.parse_args(argv)


def _median_pass(fn: Any, repeats: int) -> tuple[Any, float]:
    times, out = [], None
    for _ in range(max(1, repeats)):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return out, float(np.median(times))


def measure(n: int, args: argparse.Namespace) -> dict[str, Any]:
    """Both engines at one size: build seconds, median ms per query, and the top-100 overlap."""
    import tantivy
    from scaling import tokens

    from evalkit.index import bm25

    texts, queries, tok, key, _ = tokens(n, args)
    tok_key = {**key, "tokenizer": tok.identity, "n": n, "format": bm25.FORMAT}
    vocab, flat, offsets = bm25._tokens(texts, tok, tok_key, args.work_dir / "tokens")
    del texts
    ids = [f"c{i}" for i in range(n)]
    out: dict[str, Any] = {"n": n}

    cache = args.work_dir / f"reference-evalkit-{n}"
    shutil.rmtree(cache, ignore_errors=True)
    shutil.copytree(args.work_dir / "tokens", cache)
    t = time.perf_counter()
    index = bm25.build_or_load_bm25([], ids, tok, key, cache, k1=1.2, b=0.75)
    out["evalkit_build_s"] = time.perf_counter() - t
    index.search(queries[0], 100)
    mine, s = _median_pass(lambda: [index.search(q, 100) for q in queries], args.repeats)
    out["evalkit_ms"] = 1000 * s / len(queries)
    shutil.rmtree(cache, ignore_errors=True)

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", stored=False, tokenizer_name="whitespace", index_option="freq")
    builder.add_unsigned_field("pos", stored=True)
    schema = builder.build()
    folder = args.work_dir / f"reference-tantivy-{n}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    engine = tantivy.Index(schema, path=str(folder))
    t = time.perf_counter()
    writer = engine.writer(heap_size=3_000_000_000, num_threads=1)
    for i, (a, b) in enumerate(zip(offsets[:-1].tolist(), offsets[1:].tolist())):
        writer.add_document(tantivy.Document(body=" ".join(vocab[j] for j in flat[a:b].tolist()), pos=i))
    writer.commit()
    writer.wait_merging_threads()
    out["tantivy_build_s"] = time.perf_counter() - t
    engine.reload()
    searcher = engine.searcher()
    out["tantivy_segments"] = searcher.num_segments
    compiled = [tantivy.Query.boolean_query([(tantivy.Occur.Should, tantivy.Query.term_query(schema, "body", term))
                                             for term in tok(q)]) for q in queries]
    # count=False: tantivy prunes (block-max WAND) only when it need not count every match
    searcher.search(compiled[0], 100, count=False)
    theirs, s = _median_pass(lambda: [searcher.search(q, 100, count=False).hits for q in compiled], args.repeats)
    out["tantivy_ms"] = 1000 * s / len(queries)
    overlap = []
    for hits, found in zip(theirs, mine):
        got = {f"c{searcher.doc(addr)['pos'][0]}" for _, addr in hits}
        overlap.append(len(got & {pid for pid, _ in found}) / max(1, len(found)))
    out["top100_overlap"] = float(np.mean(overlap))
    shutil.rmtree(folder, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import tantivy  # noqa: F401
    except ModuleNotFoundError:
        print("bm25_reference.py needs tantivy, which evalkit does not depend on: pip install tantivy==0.27.0",
              file=sys.stderr)
        return 2
    args.work_dir.mkdir(parents=True, exist_ok=True)
    rows = [measure(int(n), args) for n in args.sizes.split(",")]
    print(f"BM25 reference (synthetic, seed {args.seed}; {args.queries} queries, top 100, one query per call, "
          f"1 thread; median of {args.repeats} passes; k1 1.2, b 0.75)\n")
    print("| passages | evalkit x prev | tantivy x prev | evalkit ms/query | tantivy ms/query | tantivy / evalkit "
          "| top-100 overlap | build s evalkit / tantivy |")
    print("|---|---|---|---|---|---|---|---|")
    prev = None
    for r in rows:
        grow = (f"{r['evalkit_ms'] / prev['evalkit_ms']:.1f}x", f"{r['tantivy_ms'] / prev['tantivy_ms']:.1f}x") \
            if prev else ("-", "-")
        print(f"| {r['n']:,} | {grow[0]} | {grow[1]} | {r['evalkit_ms']:.2f} | {r['tantivy_ms']:.2f} | "
              f"{r['tantivy_ms'] / r['evalkit_ms']:.1f}x | {r['top100_overlap']:.3f} | "
              f"{r['evalkit_build_s']:.1f} / {r['tantivy_build_s']:.1f} |")
        prev = r
    print("\n" + json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
