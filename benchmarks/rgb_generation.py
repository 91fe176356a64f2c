#!/usr/bin/env python
"""Chinese generation + judging on real data: RGB zh_refine questions answered by evalkit's
generators and judged by the offline judge.

    python benchmarks/rgb_generation.py                      # 30 questions, extractive + local
    python benchmarks/rgb_generation.py --questions 5 --generators extractive

What it does:

1. Reads ``../shared/datasets/rgb_zh_refine/zh_refine.json`` beside the repository (RGB,
   CC BY-NC-SA 4.0: read at run time, never copied into the repository; absent -> says
   so and exits 0) and draws a seeded sample of ``--questions`` questions.
2. Evidence per question: its positive passages in file order while they fit in
   ``--evidence-chars`` characters (at least one), plus its first negative passage (a
   topical hard negative) as a distractor; ids ``rgb<id>-p<k>`` / ``rgb<id>-n0``.
3. Answers with each generator through ``LLMClient(purpose="generate")`` and the
   ``generate`` node's own prompt (``evalkit.nodes.generate``: system prompt, evidence
   rendering, citation parsing, abstention detection): ``extractive`` (no model: the
   evidence sentences closest to the question) and ``local`` (SmolLM2-135M-Instruct,
   ``--max-tokens`` tokens, ``--threads`` llama.cpp threads).
4. Judges every answer with the ``offline`` judge against the passages shown, and scores
   it with ``evalkit.metrics.answer`` (``score_answer`` / ``aggregate_answers``):
   faithfulness, hallucination rate, token F1 against the gold answer (``token_f1``; for
   a gold element with alternatives, the best-matching one), abstention rate; plus
   "gold in answer" (RGB's own accuracy: every required gold element, some accepted
   alternative, appears in the answer), and the time and tokens spent per answer.

The LLM cache is a fresh temporary folder unless ``--cache`` names one, so the times are
a first run's. Prints a Markdown table (and ``--json`` writes every number) plus a few
example answers per generator.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RGB = REPO.parent / "shared" / "datasets" / "rgb_zh_refine" / "zh_refine.json"
GENERATORS = ("extractive", "local")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rgb", type=Path, default=RGB, help=f"RGB zh_refine file (default: {RGB}).")
    p.add_argument("--questions", type=int, default=30, help="Questions to sample (default: 30).")
    p.add_argument("--seed", type=int, default=13, help="Seed of the sample (default: 13).")
    p.add_argument("--generators", default=",".join(GENERATORS),
                   help=f"Comma-separated LLM backends to generate with (default: {','.join(GENERATORS)}).")
    p.add_argument("--max-tokens", type=int, default=128, help="Answer length cap for model backends.")
    p.add_argument("--threads", type=int, default=2, help="llama.cpp threads for the local backend.")
    p.add_argument("--evidence-chars", type=int, default=1500,
                   help="Characters of positive passages per question (the local model has a 4,096-token "
                        "context and SmolLM2 spends ~1.8 tokens per Chinese character).")
    p.add_argument("--cache", type=Path, help="Cache root for LLM answers and embeddings (default: a fresh "
                                              "temporary folder).")
    p.add_argument("--examples", type=int, default=3, help="Example answers to print per generator.")
    p.add_argument("--json", type=Path, help="Also write every number and answer to this JSON file.")
    return p.parse_args(argv)


def sample_questions(path: Path, n: int, seed: int, evidence_chars: int) -> list[dict[str, Any]]:
    """A seeded sample of questions with their evidence (positives within budget + 1 negative)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if r.get("positive")]
    picked = random.Random(seed).sample(rows, min(n, len(rows)))
    out = []
    for r in picked:
        evidence: list[tuple[str, str]] = []
        used = 0
        for k, text in enumerate(r["positive"]):
            if evidence and used + len(text) > evidence_chars:
                break
            evidence.append((f"rgb{r['id']}-p{k}", text))
            used += len(text)
        gold_ids = [d for d, _ in evidence]
        if r.get("negative"):
            evidence.append((f"rgb{r['id']}-n0", r["negative"][0]))
        out.append({"id": r["id"], "question": r["query"], "answer": r["answer"], "evidence": evidence,
                    "gold_ids": gold_ids})
    return out


def _alternatives(element: Any) -> list[str]:
    return [str(a) for a in element] if isinstance(element, list) else [str(element)]


def reference_for(answer: str, gold: list[Any]) -> str:
    """The gold answer as one reference string: per required element, its alternative that
    matches ``answer`` best (token F1), joined."""
    from evalkit.metrics.answer import token_f1

    return " ".join(max(_alternatives(el), key=lambda alt: token_f1(answer, alt)) for el in gold)


def gold_in_answer(answer: str, gold: list[Any]) -> bool:
    """RGB's accuracy: every required element has an accepted alternative inside the answer."""
    from evalkit.metrics.answer import normalise_answer

    norm = normalise_answer(answer).replace(" ", "")
    return bool(gold) and all(any(normalise_answer(a).replace(" ", "") in norm for a in _alternatives(el))
                              for el in gold)


def generate_all(backend: str, questions: list[dict[str, Any]], args: argparse.Namespace,
                 cache_root: Path) -> list[dict[str, Any]]:
    """Answer every question with one backend, the ``generate`` node's prompt and parsing."""
    from evalkit.llm import LLMClient, LLMSpec, usage_scope
    from evalkit.nodes.generate import (
        SYSTEM_PROMPT,
        is_abstention,
        parse_citations,
        render_evidence,
    )

    spec = LLMSpec(backend=backend, max_tokens=args.max_tokens, threads=args.threads)
    client = LLMClient(spec, cache_root, purpose="generate")
    out = []
    for q in questions:
        shown = [(d, t, 1.0) for d, t in q["evidence"]]
        user = (f"Evidence:\n{render_evidence(shown, 600)}\n\nQuestion: {q['question']}\n"
                f"Answer (cite ids like [{shown[0][0]}]):")
        t0 = time.perf_counter()
        with usage_scope() as usage:
            try:
                answer, error = client.chat(user, system=SYSTEM_PROMPT, question=q["question"],
                                            evidence=q["evidence"]).text.strip(), None
            except Exception as e:  # noqa: BLE001 - a failed generation is counted, not fatal
                answer, error = "", f"{type(e).__name__}: {e}"
        seconds = time.perf_counter() - t0
        used, invalid = parse_citations(answer, [(d, d) for d, _ in q["evidence"]])
        u = usage.get("generate")
        out.append({"id": q["id"], "answer": answer, "error": error, "abstained": is_abstention(answer),
                    "cited": used, "invalid": invalid, "seconds": seconds, "identity": client.identity,
                    "tokens_in": u.tokens_in if u else 0, "tokens_out": u.tokens_out if u else 0})
    client.close()
    return out


def judge_and_score(questions: list[dict[str, Any]], answers: list[dict[str, Any]]) -> dict[str, Any]:
    """Offline-judge every answer and aggregate the answer metrics."""
    from evalkit.judges import make_judge
    from evalkit.metrics.answer import aggregate_answers, score_answer, token_f1

    judge = make_judge("offline")
    rows, judge_s, gold_hits, f1s = [], 0.0, [], []
    for q, a in zip(questions, answers):
        if a["error"] is not None:
            continue
        t0 = time.perf_counter()
        result = judge.judge(q["question"], a["answer"], q["evidence"]) if not a["abstained"] else None
        judge_s += time.perf_counter() - t0
        a["judgement"] = result.to_dict() if result else None
        ref = reference_for(a["answer"], q["answer"])
        m = score_answer(answerable=True, answered=not a["abstained"], abstained=a["abstained"],
                         judgement=a["judgement"], answer=a["answer"], reference=ref, cited_docs=a["cited"],
                         invalid_citations=len(a["invalid"]), gold=q["gold_ids"])
        rows.append((True, m))
        gold_hits.append(gold_in_answer(a["answer"], q["answer"]))
        f1s.append(token_f1(a["answer"], ref))
    agg = aggregate_answers(rows)
    ok = [a for a in answers if a["error"] is None]
    n = max(1, len(ok))
    agg.update({
        "n_questions": len(answers), "n_generation_failed": len(answers) - len(ok),
        "gold_in_answer": sum(gold_hits) / len(gold_hits) if gold_hits else None,
        "generate_s_per_answer": sum(a["seconds"] for a in ok) / n,
        "tokens_in_per_answer": sum(a["tokens_in"] for a in ok) / n,
        "tokens_out_per_answer": sum(a["tokens_out"] for a in ok) / n,
        "judge_ms_per_answer": 1000 * judge_s / n, "judge": judge.identity,
        "generator": answers[0]["identity"] if answers else "",
    })
    return agg


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def print_report(results: dict[str, dict[str, Any]]) -> None:
    keys = [("faithfulness", "faithfulness"), ("hallucination_rate", "hallucination rate"),
            ("claim_hallucination_rate", "unsupported claims / checkable"), ("answer_f1", "token F1 vs gold"),
            ("gold_in_answer", "gold answer in answer"), ("abstention_rate", "abstention rate"),
            ("cited_gold_precision", "cited gold precision"), ("n_no_checkable_claims", "answers with no checkable claim"),
            ("n_judge_failed", "judge failures"), ("n_generation_failed", "generation failures"),
            ("generate_s_per_answer", "generation s/answer"), ("tokens_in_per_answer", "tokens in/answer"),
            ("tokens_out_per_answer", "tokens out/answer"), ("judge_ms_per_answer", "offline judge ms/answer")]
    names = list(results)
    print("| metric | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for key, label in keys:
        print(f"| {label} | " + " | ".join(_fmt(results[n].get(key)) for n in names) + " |")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.rgb.exists():
        print(f"RGB data not found at {args.rgb}: nothing to do (see ../shared/datasets/rgb_zh_refine/SOURCE.md)")
        return 0
    questions = sample_questions(args.rgb, args.questions, args.seed, args.evidence_chars)
    cache_root = args.cache or Path(tempfile.mkdtemp(prefix="evalkit-rgb-gen-"))
    print(f"{len(questions)} RGB zh_refine questions (seed {args.seed}); evidence: positives within "
          f"{args.evidence_chars} chars + 1 hard negative; cache {cache_root}", file=sys.stderr)
    results: dict[str, dict[str, Any]] = {}
    answers: dict[str, list[dict[str, Any]]] = {}
    for backend in [g.strip() for g in args.generators.split(",") if g.strip()]:
        t0 = time.perf_counter()
        answers[backend] = generate_all(backend, questions, args, cache_root)
        results[backend] = judge_and_score(questions, answers[backend])
        print(f"{backend}: {time.perf_counter() - t0:.1f} s for {len(questions)} questions", file=sys.stderr)
    print_report(results)
    for backend, rows in answers.items():
        print(f"\nexamples, {backend} ({results[backend]['generator']}):")
        for q, a in list(zip(questions, rows))[: args.examples]:
            verdicts = [c["verdict"] for c in (a.get("judgement") or {}).get("claims", [])]
            print(f"- Q: {q['question']}  gold: {q['answer']}\n  A: {a['answer'][:200]!r}\n  offline judge: "
                  f"{verdicts or ('abstained' if a['abstained'] else a['error'])}")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "answers": answers,
                                         "questions": [q["id"] for q in questions]}, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
