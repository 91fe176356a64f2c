#!/usr/bin/env python
"""GraphRAG (offline ``fast`` entity graph) against the hybrid baseline, on the demo and on HotpotQA.

    python benchmarks/graphrag.py                       # demo + HotpotQA (when present)
    python benchmarks/graphrag.py --dataset demo --markdown

What it does:

1. **demo**: the bundled ``eval_sets/demo_kb.jsonl`` with the shipped configs
   ``hybrid_rrf``, ``graphrag_local``, ``graphrag_global`` and ``agent_scheduler``, plus
   two ablations built from ``graphrag_local.yaml``: the graph channel alone
   (``graph_local_only``) and the fused variant without the alias table
   (``graphrag_local_noalias``). All 120 questions run; the tables show all answerable
   questions and the ``multi_hop`` and ``comparison`` subsets.
2. **hotpotqa**: ``../shared/datasets/hotpotqa_100/`` (100 HotpotQA train questions over a
   pooled corpus of 994 passages; see its ``SOURCE.md``). Imported at run time into
   ``--work-dir`` (outside the repository): document = title + sentences joined, gold =
   the 2 supporting titles, type bridge -> ``multi_hop``, comparison -> ``comparison``.
   Absent: skipped with a message. Variants (one passage per document, English
   tokenizer): ``hybrid_rrf``, ``graph_local_only``, ``graphrag_local``,
   ``graphrag_global`` and ``agent_scheduler``; the graph marks each document's title as
   an entity (``title_as_entity``: the title is the subject of a Wikipedia paragraph).
3. Prints recall@20, hit@5, recall@5 and mrr@10 per variant and subset, the index cost
   (graph build time, nodes/edges and quality statistics, communities) and the per-query
   wins and losses of each graph variant against ``hybrid_rrf``.

Everything runs through ``evalkit.run.runner.run_eval`` (no MLflow). Caches go to
``WORK_DIR/cache`` unless ``--cache-dir`` or ``$EVALKIT_CACHE`` says otherwise.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import sys
from pathlib import Path
from typing import Any

from evalkit.importers.hotpotqa import FILES as HOTPOT_FILES

REPO = Path(__file__).resolve().parents[1]
HOTPOT_DIR = REPO.parent / "shared" / "datasets" / "hotpotqa_100"
METRICS = ("recall@20", "hit@5", "recall@5", "mrr@10")
SUBSETS = ("all", "multi_hop", "comparison")
BASELINE = "hybrid_rrf"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", action="append", choices=("demo", "hotpotqa"),
                   help="Run only this dataset (repeatable). Default: both.")
    p.add_argument("--data-dir", type=Path, default=HOTPOT_DIR, help=f"HotpotQA folder (default: {HOTPOT_DIR}).")
    p.add_argument("--work-dir", type=Path, default=Path("/tmp/evalkit-graphrag"),
                   help="Scratch folder (outside the repository) for imports, results and caches.")
    p.add_argument("--cache-dir", type=Path, default=None,
                   help="evalkit cache (default: $EVALKIT_CACHE or WORK_DIR/cache).")
    p.add_argument("--examples", type=int, default=4, help="Wins/losses listed per variant (default 4).")
    p.add_argument("--markdown", action="store_true", help="Print Markdown tables (for reports/).")
    p.add_argument("--no-progress", action="store_true", help="Hide the progress bars.")
    return p.parse_args(argv)


def _load(name: str) -> dict[str, Any]:
    from evalkit.graph import load_graph_config

    return copy.deepcopy(load_graph_config(REPO / "graph_configs" / f"{name}.yaml").to_dict())


def demo_configs() -> list[Any]:
    from evalkit.graph import config_from_dict

    local = _load("graphrag_local")
    only = copy.deepcopy(local)
    only["name"], only["nodes"] = "graph_local_only", {"graph": only["nodes"]["graph"]}
    only["nodes"]["graph"]["params"].pop("fuse_with")
    only["edges"] = {"start": "graph", "graph": "end"}
    noalias = copy.deepcopy(local)
    noalias["name"] = "graphrag_local_noalias"
    noalias["nodes"]["graph"]["params"]["graph"]["aliases"] = {}
    names = ("hybrid_rrf", "graphrag_local", "graphrag_global", "agent_scheduler")
    return [config_from_dict(_load(n)) for n in names] + [config_from_dict(only), config_from_dict(noalias)]


def hotpot_configs() -> list[Any]:
    """The demo's variants adapted to HotpotQA: one passage per document, English, titles as entities."""
    from evalkit.graph import config_from_dict

    chunking = {"method": "document", "prepend_title": True}
    graph = {"mode": "fast", "sentence_weight": 1.0, "chunk_weight": 0.3, "title_as_entity": True}
    out = []
    for name in ("hybrid_rrf", "graphrag_local", "graphrag_global", "agent_scheduler"):
        d = _load(name)
        d["chunking"] = chunking
        for node in d["nodes"].values():
            p = node["params"]
            if "bm25" in p:
                p["bm25"]["tokenizer"] = "en"
            if node["type"] == "agent_scheduler":
                p["graph"]["graph"] = dict(graph)
            elif node["type"] in ("graph_local", "graph_global"):
                p["graph"] = dict(graph)
        out.append(d)
    only = copy.deepcopy(out[1])
    only["name"], only["nodes"] = "graph_local_only", {"graph": only["nodes"]["graph"]}
    only["nodes"]["graph"]["params"].pop("fuse_with")
    only["edges"] = {"start": "graph", "graph": "end"}
    out.insert(1, only)
    return [config_from_dict(d) for d in out]


def import_hotpot(data_dir: Path, work_dir: Path) -> Path:
    """HotpotQA-100 imported into ``work_dir/hotpotqa`` (see ``evalkit.importers.hotpotqa``)."""
    from evalkit.importers.hotpotqa import import_hotpotqa

    return import_hotpotqa(data_dir, work_dir / "hotpotqa")


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _table(header: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        return "\n".join(["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|",
                          *["| " + " | ".join(r) + " |" for r in rows]])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [header, ["-" * w for w in widths], *rows]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in lines)


def metrics_table(summary: Any, markdown: bool) -> str:
    header = ["variant"] + [f"{s} {m}" for s in SUBSETS for m in ("R@20", "Hit@5", "R@5")] + ["ms/q"]
    rows = []
    for name, v in summary.variants.items():
        cells = [name]
        for s in SUBSETS:
            m = v.metrics if s == "all" else v.by_type.get(s, {})
            cells += [_fmt(m.get("recall@20")), _fmt(m.get("hit@5")), _fmt(m.get("recall@5"))]
        rows.append(cells + [f"{v.timing.get('latency_ms_mean', 0):.0f}"])
    return _table(header, rows, markdown)


def cost_table(summary: Any, markdown: bool) -> str:
    """Index cost: variant build time, graph statistics read from the index folders' meta.json."""
    header = ["variant", "build s", "graph nodes", "edges", "isolated", "mean deg", "largest comp",
              "extract s", "LLM calls", "communities"]
    rows = []
    for name, v in summary.variants.items():
        graph, comms = {}, {}
        for meta in v.index.values():
            path = Path(str(meta.get("path", "")))
            if path.name.startswith("graph-") and (path / "meta.json").exists():
                graph = json.loads((path / "meta.json").read_text(encoding="utf-8")).get("stats", {})
            elif path.name.startswith("communities-") and path.exists():
                comms = json.loads(path.read_text(encoding="utf-8"))["meta"]
        if not graph:
            rows.append([name, f"{v.timing.get('build_s', 0):.1f}"] + ["-"] * 8)
            continue
        c = comms.get("stats", {})
        ctext = f"{c['communities']} ({comms['algorithm']}, Q={c['modularity']})" if c else "-"
        rows.append([name, f"{v.timing.get('build_s', 0):.1f}", str(graph["nodes"]), str(graph["edges"]),
                     f"{graph['isolated_share']:.3f}", f"{graph['mean_degree']:.1f}",
                     f"{graph['largest_component_share']:.3f}", f"{graph['extraction_s']:.1f}",
                     str(graph["llm_calls"]), ctext])
    return _table(header, rows, markdown)


def wins_losses(output: Path, summary: Any, examples: int, markdown: bool) -> str:
    """Per-query comparison of each variant with the baseline on recall@20 and hit@5."""
    from evalkit.runstore import read_results

    base = {r.query_id: r for r in read_results(output.with_suffix("") / BASELINE / "per_query.jsonl")}
    lines = []
    header = ["variant", "metric", "wins", "losses", "ties"]
    rows = []
    details = []
    for name in summary.variants:
        if name == BASELINE:
            continue
        mine = {r.query_id: r for r in read_results(output.with_suffix("") / name / "per_query.jsonl")}
        for metric in ("recall@20", "hit@5"):
            deltas = [(mine[q].metrics[metric] - b.metrics[metric], q) for q, b in base.items() if b.metrics]
            wins = sorted((d for d in deltas if d[0] > 0), key=lambda t: (-t[0], t[1]))
            losses = sorted((d for d in deltas if d[0] < 0), key=lambda t: (t[0], t[1]))
            rows.append([name, metric, str(len(wins)), str(len(losses)), str(len(deltas) - len(wins) - len(losses))])
            if metric == "recall@20":
                for label, group in (("win", wins[:examples]), ("loss", losses[:examples])):
                    for d, q in group:
                        r = mine[q]
                        linked = _linked(r)
                        details.append(f"- {name} {label} {q} ({r.type}, {metric} {d:+.2f}): {r.question[:90]}"
                                       + (f" | linked: {linked}" if linked else ""))
    lines.append(_table(header, rows, markdown))
    lines.append("\n".join(details))
    return "\n\n".join(lines)


def _linked(result: Any) -> str:
    for event in result.trace:
        wrote = event.get("wrote", {})
        if "graph_entities" in wrote:
            return ", ".join(f"{e['name']} ({e['how']})" for e in wrote["graph_entities"][:5]) or "(none)"
        if "scheduler_class" in wrote:
            return f"class {wrote['scheduler_class']}"
    return ""


def run(label: str, eval_spec: str, configs: list[Any], args: argparse.Namespace, cache: Path) -> str:
    from evalkit.evalsets import load_eval_set
    from evalkit.run.runner import RunOptions, run_eval

    output = args.work_dir / "results" / f"{label}.json"
    options = RunOptions(output=output, metrics=METRICS, mlflow=False, progress=not args.no_progress,
                         cache_root=cache)
    summary = run_eval(load_eval_set(eval_spec), configs, options, echo=lambda m: print(m, file=sys.stderr))
    n = {s: int(v.get("n", 0)) for s, v in next(iter(summary.variants.values())).by_type.items()}
    answerable = sum(n.values())
    return "\n\n".join([
        f"## {label}: {summary.eval_set.name} v{summary.eval_set.version} ({answerable} answerable queries; "
        f"multi_hop {n.get('multi_hop', 0)}, comparison {n.get('comparison', 0)})",
        metrics_table(summary, args.markdown),
        "Index cost (build s: the variant's build, which loads or builds its indexes; the graph is built once "
        "and cached, so later variants load it)",
        cost_table(summary, args.markdown),
        f"Per-query against {BASELINE} (answerable queries)",
        wins_losses(output, summary, args.examples, args.markdown),
    ])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        args.work_dir.resolve().relative_to(REPO)
        print(f"error: --work-dir {args.work_dir} is inside the repository; pick a folder outside", file=sys.stderr)
        return 2
    except ValueError:
        pass
    for key, value in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}.items():
        os.environ.setdefault(key, value)
    cache = args.cache_dir or Path(os.environ.get("EVALKIT_CACHE") or args.work_dir / "cache")
    datasets = args.dataset or ["demo", "hotpotqa"]
    parts = []
    if "demo" in datasets:
        parts.append(run("demo_kb", str(REPO / "eval_sets" / "demo_kb.jsonl"), demo_configs(), args, cache))
    if "hotpotqa" in datasets:
        missing = [f for f in HOTPOT_FILES if not (args.data_dir / f).is_file()]
        if missing:
            parts.append(f"HotpotQA skipped: {args.data_dir} lacks {', '.join(missing)} (see the shared datasets' "
                         "hotpotqa_100/SOURCE.md; the data is not shipped with evalkit)")
        else:
            set_path = import_hotpot(args.data_dir, args.work_dir)
            parts.append(run("hotpotqa_100", f"{set_path}@v1", hotpot_configs(), args, cache))
    print("\n\n".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
