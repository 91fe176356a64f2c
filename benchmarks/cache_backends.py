"""evalkit's two sqlite caches against the same caches on ``diskcache``, side by side.

Measures, for the LLM answer cache (``evalkit.llm.cache.LLMCache``) and the embedding
cache (``evalkit.models.cache.EmbeddingCache``), each against a ``diskcache.Cache`` doing
the same job (same keys, values as JSON text / raw float32 bytes, no eviction), and
against themselves with sqlite's default ``synchronous=FULL`` (what they used before):

- put and get speed from one thread (LLM: one answer per call; embeddings: batches of 500,
  as the embedders use it);
- 4 threads sharing one cache object, each writing and reading back its own entries;
- 4 processes (spawned, like Ray workers) writing into the same folder at once, then one
  reader checking every entry; errors ("database is locked", timeouts) are counted.

Every phase checks what it read back; a wrong or missing value is reported, not timed.

    PYTHONPATH=$PWD python benchmarks/cache_backends.py [--n 2000] [--vectors 5000]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

DIM = 384
PROCS, THREADS = 4, 4


# ---------------------------------------------------------------- the two LLM caches, one interface


def requests(n: int, tag: str = "") -> list:
    from evalkit.llm.base import ChatRequest, Message

    return [ChatRequest((Message("system", "Answer briefly."), Message("user", f"question {tag}{i} " + "x" * 200)))
            for i in range(n)]


def answer(r) -> str:
    return "answer to " + r.messages[-1].content[:20]


class SqliteLLM:
    def __init__(self, folder: Path):
        from evalkit.llm.cache import LLMCache

        self.c = LLMCache(folder / "llm.sqlite")

    def put(self, r) -> None:
        from evalkit.llm.base import ChatResponse

        self.c.put("bench", r, ChatResponse(text=answer(r), tokens_in=10, tokens_out=5, finish_reason="stop"))

    def get(self, r) -> str | None:
        hit = self.c.get("bench", r)
        return None if hit is None else hit.text


class DiskLLM:
    def __init__(self, folder: Path):
        import diskcache

        self.c = diskcache.Cache(str(folder / "llm.diskcache"), eviction_policy="none", size_limit=2 ** 40)

    def put(self, r) -> None:
        from evalkit.llm.cache import request_key

        value = json.dumps({"text": answer(r), "tokens_in": 10, "tokens_out": 5, "finish_reason": "stop"})
        self.c.set(request_key("bench", r), value)

    def get(self, r) -> str | None:
        from evalkit.llm.cache import request_key

        v = self.c.get(request_key("bench", r))
        return None if v is None else json.loads(v)["text"]


class SqliteEmb:
    def __init__(self, folder: Path):
        from evalkit.models.cache import EmbeddingCache

        self.c = EmbeddingCache(folder / "emb.sqlite")

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        self.c.put_many("model", "passage", items)

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        return self.c.get_many("model", "passage", keys)


class DiskEmb:
    def __init__(self, folder: Path):
        import diskcache

        self.c = diskcache.Cache(str(folder / "emb.diskcache"), eviction_policy="none", size_limit=2 ** 40)

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        with self.c.transact():  # one transaction per batch, as the sqlite cache does
            for k, v in items.items():
                self.c.set(f"model|passage|{k}", np.asarray(v, dtype=np.float32).tobytes())

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        out = {}
        for k in keys:
            v = self.c.get(f"model|passage|{k}")
            if v is not None:
                out[k] = np.frombuffer(v, dtype=np.float32)
        return out


class SqliteLLMFull(SqliteLLM):
    """evalkit's cache as it was before: sqlite's default synchronous=FULL (an fsync per put)."""

    def __init__(self, folder: Path):
        super().__init__(folder)
        self.c._connect().run(lambda db: db.execute("PRAGMA synchronous=FULL"))


class SqliteEmbFull(SqliteEmb):
    def __init__(self, folder: Path):
        super().__init__(folder)
        self.c._db.run(lambda db: db.execute("PRAGMA synchronous=FULL"))


LLM = {"sqlite (evalkit)": SqliteLLM, "sqlite FULL (before)": SqliteLLMFull, "diskcache": DiskLLM}
EMB = {"sqlite (evalkit)": SqliteEmb, "sqlite FULL (before)": SqliteEmbFull, "diskcache": DiskEmb}


# ---------------------------------------------------------------- phases


def llm_single(kind: str, folder: Path, n: int) -> dict[str, float]:
    cache, rs = LLM[kind](folder), requests(n)
    t0 = time.perf_counter()
    for r in rs:
        cache.put(r)
    t1 = time.perf_counter()
    wrong = sum(cache.get(r) != answer(r) for r in rs)
    t2 = time.perf_counter()
    misses = sum(cache.get(r) is not None for r in requests(n, "miss"))
    t3 = time.perf_counter()
    return {"put/s": n / (t1 - t0), "hit/s": n / (t2 - t1), "miss/s": n / (t3 - t2), "wrong": wrong + misses}


def llm_threads(kind: str, folder: Path, n: int) -> dict[str, float]:
    cache, wrong = LLM[kind](folder), []
    parts = [requests(n // THREADS, f"t{i}-") for i in range(THREADS)]

    def work(part: list) -> None:
        for r in part:
            cache.put(r)
            if cache.get(r) != answer(r):
                wrong.append(r)

    threads = [threading.Thread(target=work, args=(p,)) for p in parts]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"put+get/s": n / (time.perf_counter() - t0), "wrong": len(wrong)}


def _proc_worker(kind: str, folder: str, i: int, n: int, start: float) -> tuple[int, int, float]:
    """One process: put then read back its own ``n`` answers; (wrong, errors, time it finished)."""
    while time.time() < start:  # all processes begin together
        time.sleep(0.001)
    cache, wrong, errors = LLM[kind](Path(folder)), 0, 0
    for r in requests(n, f"p{i}-"):
        try:
            cache.put(r)
            wrong += cache.get(r) != answer(r)
        except Exception:  # noqa: BLE001 - counted: "database is locked", timeouts
            errors += 1
    return wrong, errors, time.time()


def llm_processes(kind: str, folder: Path, n: int) -> dict[str, float]:
    per = n // PROCS
    ctx = mp.get_context("spawn")
    with ctx.Pool(PROCS) as pool:
        start = time.time() + 5.0  # past the workers' start-up (imports)
        out = pool.starmap(_proc_worker, [(kind, str(folder), i, per, start) for i in range(PROCS)])
    wall = max(end for _, _, end in out) - start
    cache = LLM[kind](folder)
    missing = sum(cache.get(r) != answer(r) for i in range(PROCS) for r in requests(per, f"p{i}-"))
    return {"wall_s": wall, "wrong": sum(o[0] for o in out) + missing, "errors": sum(o[1] for o in out)}


def emb_single(kind: str, folder: Path, n: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    items = {f"k{i}": rng.standard_normal(DIM).astype(np.float32) for i in range(n)}
    keys = list(items)
    cache = EMB[kind](folder)
    t0 = time.perf_counter()
    for i in range(0, n, 500):
        cache.put_many({k: items[k] for k in keys[i:i + 500]})
    t1 = time.perf_counter()
    got: dict[str, np.ndarray] = {}
    for i in range(0, n, 500):
        got.update(cache.get_many(keys[i:i + 500]))
    t2 = time.perf_counter()
    wrong = sum(not np.array_equal(got.get(k), v) for k, v in items.items())
    return {"put vec/s": n / (t1 - t0), "get vec/s": n / (t2 - t1), "wrong": wrong}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="LLM answers per phase")
    ap.add_argument("--vectors", type=int, default=5000, help="embedding vectors")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in LLM:
            base = Path(tmp) / kind.split()[0] / kind.split()[-1].strip("()")
            r = {"single": llm_single(kind, base / "a", args.n), "threads": llm_threads(kind, base / "b", args.n),
                 "procs": llm_processes(kind, base / "c", args.n), "emb": emb_single(kind, base / "d", args.vectors)}
            rows.append((kind, r))
    print(f"LLM answers: {args.n} per phase; {THREADS} threads; {PROCS} spawned processes on one folder; "
          f"embeddings: {args.vectors} x {DIM} float32 in batches of 500")
    head = ["cache", "put/s", "hit/s", "miss/s", f"{THREADS} threads put+get/s", f"{PROCS} procs wall s",
            "proc errors", "emb put vec/s", "emb get vec/s", "wrong"]
    print(" | ".join(head))
    for kind, r in rows:
        wrong = r["single"]["wrong"] + r["threads"]["wrong"] + r["procs"]["wrong"] + r["emb"]["wrong"]
        print(" | ".join([kind, f"{r['single']['put/s']:.0f}", f"{r['single']['hit/s']:.0f}",
                          f"{r['single']['miss/s']:.0f}", f"{r['threads']['put+get/s']:.0f}",
                          f"{r['procs']['wall_s']:.2f}", str(r["procs"]["errors"]), f"{r['emb']['put vec/s']:.0f}",
                          f"{r['emb']['get vec/s']:.0f}", str(wrong)]))
    a, ra = rows[0]
    for b, rb in rows[1:]:
        print(f"ratios {b} / {a}: put {rb['single']['put/s'] / ra['single']['put/s']:.2f}x, "
              f"hit {rb['single']['hit/s'] / ra['single']['hit/s']:.2f}x, "
              f"threads {rb['threads']['put+get/s'] / ra['threads']['put+get/s']:.2f}x, "
              f"procs wall {rb['procs']['wall_s'] / ra['procs']['wall_s']:.2f}x, "
              f"emb put {rb['emb']['put vec/s'] / ra['emb']['put vec/s']:.2f}x, "
              f"emb get {rb['emb']['get vec/s'] / ra['emb']['get vec/s']:.2f}x")

if __name__ == "__main__":
    main()
