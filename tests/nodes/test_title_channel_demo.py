"""The title channel on the whole demo (graph_configs/mechanisms/bm25_title.yaml against its baseline
graph_configs/bm25.yaml; BM25 only, no model): it fires on the questions that name a document's title, its
ranking is in the trace, and the figures docs and reports quote are recomputed here from the per-query
records (printed with pytest -s)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.graph import load_graph_config

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> dict[str, list[dict]]:
    from evalkit.evalsets import load_eval_set
    from evalkit.run.runner import RunOptions, run_eval

    out = tmp_path_factory.mktemp("title") / "results" / "t.json"
    configs = [load_graph_config(REPO / "graph_configs" / "bm25.yaml"),
               load_graph_config(REPO / "graph_configs" / "mechanisms" / "bm25_title.yaml")]
    run_eval(load_eval_set(str(REPO / "eval_sets" / "demo_kb.jsonl") + "@v1"), configs,
             RunOptions(output=out, progress=False, mlflow=False), echo=lambda m: None)
    return {c.name: [json.loads(x) for x in (out.parent / "t" / c.name / "per_query.jsonl")
                     .read_text(encoding="utf-8").splitlines()] for c in configs}


def _recall(record: dict, k: int) -> float:
    """Share of the gold documents among the first k distinct documents of the ranking (metrics.retrieval)."""
    gold = set(record["gold_doc_ids"])
    top = list(dict.fromkeys(h["doc_id"] for h in record["retrieved"]))[:k]
    return len(gold & set(top)) / len(gold)


def _mrr(record: dict, k: int) -> float:
    """1 / rank of the first gold document among the first k distinct documents (0 when none)."""
    top = list(dict.fromkeys(h["doc_id"] for h in record["retrieved"]))[:k]
    return next((1 / (i + 1) for i, d in enumerate(top) if d in record["gold_doc_ids"]), 0.0)


@pytest.mark.integration
def test_the_title_channel_fires_on_the_demo_and_is_traced(records):
    titled = records["bm25_title"]
    title_hits = [r["trace"][0]["wrote"]["channel_hits"]["title"] for r in titled]
    assert all("title" not in r["trace"][0]["wrote"]["channel_hits"] for r in records["bm25"])
    fired = sum(1 for h in title_hits if h)
    gold_first = sum(1 for r, h in zip(titled, title_hits) if h and h[0][1] in r["gold_doc_ids"])
    answerable = [i for i, r in enumerate(titled) if r["gold_doc_ids"]]
    recall = {name: sum(_recall(rs[i], 20) for i in answerable) / len(answerable) for name, rs in records.items()}
    for name, rs in records.items():  # the runner's recall@20 is the one recomputed here
        assert recall[name] == pytest.approx(sum(rs[i]["metrics"]["recall@20"] for i in answerable) / len(answerable))
    mrr = {name: sum(_mrr(rs[i], 10) for i in answerable) / len(answerable) for name, rs in records.items()}
    for name, rs in records.items():
        assert mrr[name] == pytest.approx(sum(rs[i]["metrics"]["mrr@10"] for i in answerable) / len(answerable))
    print(f"mrr@10 bm25 {mrr['bm25']:.4f} -> bm25_title {mrr['bm25_title']:.4f}")
    print(f"\ntitle channel: hits on {fired} of {len(titled)} questions; its first document is gold on {gold_first}; "
          f"recall@20 bm25 {recall['bm25']:.4f} -> bm25_title {recall['bm25_title']:.4f}")
    assert fired >= len(titled) // 2 and gold_first >= 20
    assert recall["bm25_title"] > recall["bm25"]
