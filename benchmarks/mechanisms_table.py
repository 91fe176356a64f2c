"""The table of reports/mechanisms.md: each mechanism variant next to the baseline it is measured against.

Reads finished runs (summary JSON files written by ``evalkit run``), never re-runs anything:

    python benchmarks/mechanisms_table.py results/mechanisms.json [results/scheduler_llm.json ...]
    python benchmarks/mechanisms_table.py run.json --baseline filter_recent=hybrid_rrf --pairs

A variant's baseline is, in this order: ``--baseline VARIANT=BASE``; the variant its config's
comment names (``Baseline: graph_configs/X.yaml``, as the bundled configs under
``graph_configs/mechanisms/`` do); else none (the row is printed without differences).
Variants are printed in the order of the runs, each baseline once, before its first variant.

Columns: recall@20 (retrieval stage), hit@5 and mrr@10 (final ranking), over answerable
questions; for generating variants faithfulness, hallucination rate, answer F1, citation
precision (ALCE: citations that support their claim), cited-gold precision and the refusal rates (declined answerable / declined unanswerable);
``tenant_leak_rate`` and ``route_accuracy`` where the eval set defines them; then the cost:
ms/query (the mean of the per-query sum of node durations; a step reused from another
variant counts the time it took there, so sharing does not change it), the variant's wall
seconds in its run (with sharing, a variant that reuses another's searches is cheaper here),
and model calls / tokens (LLM calls to a model by purpose, cache hits counted; the
extractive generator and the judge are no model calls here and are left out). A metric
differing from the baseline's by more than 0.00005 shows the difference in parentheses.
``--pairs`` prints the ``variant,baseline`` pairs, one per line (for ``evalkit compare``).
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
METRICS = [("recall@20", "recall@20"), ("hit@5", "hit@5"), ("mrr@10", "mrr@10"), ("faithfulness", "faithful"),
           ("hallucination_rate", "halluc"), ("answer_f1", "F1"), ("citation_precision", "cite.prec"),
           ("cited_gold_precision", "cite.gold"),
           ("abstention_rate", "declined(ans)"), ("correct_abstention_rate", "declined(unans)"),
           ("tenant_leak_rate", "tenant leak"), ("route_accuracy", "route acc")]
NOT_MODEL = ("generate", "judge")  # purposes that are no model call in these runs (extractive generator, offline judge)


def baseline_name(config_path: str) -> str | None:
    """The baseline variant a config's comment names, or None."""
    path = Path(config_path)
    if not path.is_absolute() and not path.exists():
        path = REPO / path
    if not path.exists():
        return None
    m = re.search(r"[Bb]aseline(?: for [^:]+)?: (?:graph_configs/)?(?:[\w]+/)?(\w+)\.yaml",
                  path.read_text(encoding="utf-8"))
    return m.group(1) if m else None


def model_cost(usage: dict[str, Any]) -> str:
    """'calls / tokens' of the LLM calls to a model (all purposes but the extractive generator and judge)."""
    used = [u for p, u in usage.items() if p not in NOT_MODEL]
    calls = int(sum(u.get("calls", 0) for u in used))
    tokens = int(sum(u.get("tokens_in", 0) + u.get("tokens_out", 0) for u in used))
    hits = int(sum(u.get("cache_hits", 0) for u in used))
    return f"{calls} / {tokens:,}" + (f" ({hits} cached)" if hits else "")


def cells(v: dict[str, Any], base: dict[str, Any] | None) -> list[str]:
    out = []
    for key, _ in METRICS:
        x = v["metrics"].get(key)
        if x is None:
            out.append("–")
            continue
        b = base["metrics"].get(key) if base is not None and base is not v else None
        diff = f" ({x - b:+.4f})" if b is not None and abs(x - b) > 5e-5 else ""
        out.append(f"{x:.4f}{diff}")
    latency = (v.get("timing") or {}).get("latency_ms_mean")
    out += [f"{latency:.0f}" if latency is not None else "–", f"{v.get('seconds', 0):.1f}",
            model_cost(v.get("usage") or {})]
    return out


def table(variants: dict[str, dict[str, Any]], overrides: dict[str, str]) -> tuple[list[str], list[tuple[str, str]]]:
    """The Markdown table's lines and the (variant, baseline) pairs it holds."""
    header = ["variant", "baseline", *(label for _, label in METRICS), "ms/query", "wall s", "model calls / tokens"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    pairs: list[tuple[str, str]] = []
    printed: set[str] = set()
    for name, v in variants.items():
        if name in printed:
            continue
        base = overrides.get(name) or baseline_name(v.get("config_path") or "")
        if base is not None and base not in variants:
            base = None
        if base is not None and base not in printed:
            lines.append("| " + " | ".join([base, "–", *cells(variants[base], None)]) + " |")
            printed.add(base)
        lines.append("| " + " | ".join([f"**{name}**" if base else name, base or "–",
                                        *cells(v, variants[base] if base else None)]) + " |")
        printed.add(name)
        if base:
            pairs.append((name, base))
    return lines, pairs


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="*", default=["results/mechanisms.json"], help="Summary JSON files of evalkit run.")
    p.add_argument("--baseline", action="append", default=[], metavar="VARIANT=BASE",
                   help="Baseline of a variant whose config names none (repeatable).")
    p.add_argument("--pairs", action="store_true", help="Also print the variant,baseline pairs.")
    args = p.parse_args(argv)
    variants: dict[str, dict[str, Any]] = {}
    for path in args.runs:
        variants.update(json.loads(Path(path).read_text(encoding="utf-8"))["variants"])
    overrides = dict(item.split("=", 1) for item in args.baseline)
    lines, pairs = table(variants, overrides)
    print("\n".join(lines))
    if args.pairs:
        print()
        print("\n".join(f"{a},{b}" for a, b in pairs))


if __name__ == "__main__":
    main()
