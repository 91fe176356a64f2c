"""The table of reports/mechanisms.md: each mechanism variant next to the baseline its config names.

Reads finished runs (summary JSON files written by ``evalkit run``), never re-runs anything:

    python benchmarks/mechanisms_table.py results/mechanisms.json [results/scheduler_llm.json ...]

For every variant whose config comment says ``Baseline: graph_configs/X.yaml`` (the bundled
configs under ``graph_configs/mechanisms/`` do) and whose baseline is in one of the runs, it
prints the baseline row then the variant row with differences: recall@20 and hit@5
(answerable questions), answer F1, faithfulness, citation precision and the refusal rates
(generating variants), and the cost: pipeline seconds per query (the mean of the per-query
sum of node durations, which sharing does not change), the variant's wall seconds in its run
(with sharing, a variant that reuses another's searches is cheaper here), and model calls
(LLM calls by purpose; the extractive generator is no model and is left out).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
METRICS = [("recall@20", "recall@20"), ("hit@5", "hit@5"), ("answer_f1", "F1"), ("faithfulness", "faithful"),
           ("citation_precision", "cite.prec"), ("abstention_rate", "declined(ans)"),
           ("correct_abstention_rate", "declined(unans)")]


def baseline_name(config_path: str) -> str | None:
    """The baseline variant a config's comment names, or None."""
    path = Path(config_path)
    if not path.exists():
        return None
    m = re.search(r"[Bb]aseline(?: for [^:]+)?: (?:graph_configs/)?(?:[\w]+/)?(\w+)\.yaml",
                  path.read_text(encoding="utf-8"))
    return m.group(1) if m else None


def model_calls(usage: dict) -> int:
    """LLM calls to a model (purpose generate with the extractive backend is not a model call)."""
    return int(sum(u.get("calls", 0) for p, u in usage.items() if p not in ("generate", "judge")))


def row(name: str, v: dict, base: dict | None) -> str:
    cells = [name]
    for key, _ in METRICS:
        x = v["metrics"].get(key)
        if x is None:
            cells.append("-")
            continue
        b = base["metrics"].get(key) if base else None
        diff = f" ({x - b:+.4f})" if b is not None and base is not v and abs(x - b) > 5e-5 else ""
        cells.append(f"{x:.4f}{diff}")
    latency = v.get("timing", {}).get("latency_ms_mean")
    cells += [f"{latency / 1000:.3f}" if latency is not None else "-", f"{v.get('seconds', 0):.1f}",
              str(model_calls(v.get("usage", {})))]
    return "| " + " | ".join(cells) + " |"


def main(paths: list[str]) -> None:
    variants: dict[str, dict] = {}
    for p in paths:
        variants.update(json.loads(Path(p).read_text(encoding="utf-8"))["variants"])
    header = ["variant", *(label for _, label in METRICS), "s/query", "wall s", "model calls"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, v in variants.items():
        base = baseline_name(v.get("config_path") or "")
        if base is None or base not in variants:
            continue
        print(row(f"{base} (baseline)", variants[base], variants[base]))
        print(row(f"**{name}**", v, variants[base]))


if __name__ == "__main__":
    main(sys.argv[1:] or ["results/mechanisms.json"])
