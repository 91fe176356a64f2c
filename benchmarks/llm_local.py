"""Speed of the ``local`` LLM backend (SmolLM2-135M-Instruct Q4_1 via xllamacpp) on this machine.

    python benchmarks/llm_local.py [--threads 1] [--runs 3] [--max-tokens 64]

Measures, with llama.cpp's own timings (median of ``--runs``), prompt processing and
generation in tokens/s for a short question and for a RAG-sized prompt (~700 tokens of
evidence), then the wall time of one end-to-end ``LLMClient.chat`` (cache off) and of
the same call answered from the cache. Thread counts are fixed by ``--threads``
(MODELS.md: on 2 cores, 1 thread generates fastest). Prints one JSON object.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

from evalkit.llm import LLMClient, LLMSpec
from evalkit.llm.local import _load, default_gguf_path

SHORT = [{"role": "user", "content": "Why is the sky blue? Answer in two sentences."}]
EVIDENCE = " ".join(f"[doc-{i}] Policy {i}: employees may claim {i * 3} days of leave after {i} years of service."
                    for i in range(25))
RAG = [{"role": "system", "content": "Answer only from the evidence and cite ids like [doc-1]."},
       {"role": "user", "content": f"Evidence:\n{EVIDENCE}\n\nQuestion: how many days after 7 years?"}]


def timings(server, messages: list[dict], max_tokens: int, runs: int) -> dict[str, float]:
    pp, tg, n_prompt = [], [], 0
    for _ in range(runs):
        out = server.handle_chat_completions({"messages": messages, "max_tokens": max_tokens, "temperature": 0,
                                              "seed": 0, "cache_prompt": False, "ignore_eos": True})
        t = out["timings"]
        pp.append(t["prompt_per_second"])
        tg.append(t["predicted_per_second"])
        n_prompt = out["usage"]["prompt_tokens"]
    return {"prompt_tokens": n_prompt, "prompt_tok_s": round(statistics.median(pp), 1),
            "generated_tokens": max_tokens, "generate_tok_s": round(statistics.median(tg), 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1, help="llama.cpp threads (generation and prompt)")
    ap.add_argument("--runs", type=int, default=3, help="repetitions per measurement (median reported)")
    ap.add_argument("--max-tokens", type=int, default=64, help="tokens generated per run")
    args = ap.parse_args()

    t0 = time.perf_counter()
    model = _load(default_gguf_path(), 4096, args.threads)
    load_s = time.perf_counter() - t0
    model.server.handle_chat_completions({"messages": SHORT, "max_tokens": 4})  # warm-up
    result = {"model": default_gguf_path().name, "threads": args.threads, "load_s": round(load_s, 2),
              "short": timings(model.server, SHORT, args.max_tokens, args.runs),
              "rag": timings(model.server, RAG, args.max_tokens, args.runs)}
    with tempfile.TemporaryDirectory() as root:
        client = LLMClient(LLMSpec(backend="local", threads=args.threads, max_tokens=32), root)
        t0 = time.perf_counter()
        client.chat(SHORT[0]["content"])
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        hit = client.chat(SHORT[0]["content"])
        warm = time.perf_counter() - t0
        client.close()
    result["client_chat_32_tokens_s"] = round(cold, 3)
    result["client_cache_hit_ms"] = round(warm * 1000, 2)
    assert hit.cache_hit
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
