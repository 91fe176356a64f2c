"""Both sqlite caches shared by several processes at once (Ray workers share the cache folder).

Each process is a real ``python`` that writes its own entries into the same files while
the others do, reading each back; the parent then reads every entry of every process.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from evalkit.llm.base import ChatRequest, Message
from evalkit.llm.cache import LLMCache
from evalkit.models.cache import EmbeddingCache

PROCS, N = 3, 150
WORKER = textwrap.dedent("""
    import sys, time
    import numpy as np
    from evalkit.llm.base import ChatRequest, ChatResponse, Message
    from evalkit.llm.cache import LLMCache
    from evalkit.models.cache import EmbeddingCache
    folder, i, n, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    while time.time() < start:
        time.sleep(0.001)
    llm, emb, wrong = LLMCache(folder + "/llm.sqlite"), EmbeddingCache(folder + "/emb.sqlite"), 0
    for k in range(n):
        r = ChatRequest((Message("user", f"p{i} q{k}"),))
        llm.put("id", r, ChatResponse(text=f"a{i}-{k}", tokens_out=k, finish_reason="stop"))
        wrong += llm.get("id", r).text != f"a{i}-{k}"
        emb.put_many("m", "passage", {f"p{i}-{k}": np.full(8, i * 1000 + k, dtype=np.float32)})
    print(wrong)
""")


def test_processes_write_one_cache_folder_at_once(tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    import time

    start = time.time() + 4.0  # every process past its imports before the first write
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path), str(i), str(N), str(start)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for i in range(PROCS)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    assert [out.strip() for out, _ in outs] == ["0"] * PROCS  # each read back what it wrote, while others wrote

    llm, emb = LLMCache(tmp_path / "llm.sqlite", "replay-only"), EmbeddingCache(tmp_path / "emb.sqlite")
    assert llm.count() == PROCS * N
    for i in range(PROCS):
        for k in range(N):
            hit = llm.get("id", ChatRequest((Message("user", f"p{i} q{k}"),)))
            assert (hit.text, hit.tokens_out, hit.finish_reason) == (f"a{i}-{k}", k, "stop")
        keys = [f"p{i}-{k}" for k in range(N)]
        got = emb.get_many("m", "passage", keys)
        assert all(np.array_equal(got[f"p{i}-{k}"], np.full(8, i * 1000 + k, dtype=np.float32)) for k in range(N))
