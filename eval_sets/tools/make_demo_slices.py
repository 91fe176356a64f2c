"""Derive the bundled demo slices that need no new labels from demo_kb (run from the repo root).

- ``eval_sets/demo_routes.jsonl``: every demo_kb question with a ``gold_route`` given by its
  hand-assigned type (ROUTE_OF_TYPE: the retrieval path router.yaml's routes are meant for).
- ``eval_sets/corpora/demo_tenants.jsonl`` + ``eval_sets/demo_tenants.jsonl``: two tenants.
  Tenant ``lanxing`` owns demo_kb's documents, except the security and admin documents
  (``sec-``, ``adm-``), which are shared (no tenant). Tenant ``haixin``, a second company on the
  same knowledge-base product, owns a copy of the finance and HR documents (``hx-fin-001``...)
  with the company's name replaced. The questions are demo_kb's answerable questions whose gold
  documents are all finance, HR, security or admin documents, asked once for each tenant, with
  that tenant's documents (or the shared ones) as gold.

The slices are written, not frozen: ``evalkit evalset freeze`` them (see eval_sets/README.md).
"""
from __future__ import annotations

import json
from pathlib import Path

ROUTE_OF_TYPE = {"exact_term": "keyword", "multi_hop": "graph", "colloquial": "vector", "single": "hybrid",
                 "comparison": "hybrid", "unanswerable": "hybrid"}
OWNED_BY_BOTH = ("fin-", "hr-")
SHARED = ("sec-", "adm-")
RENAME = [("澜星科技有限公司", "海心科技有限公司"), ("澜星科技", "海心科技"), ("澜星", "海心"),
          ("Lanxing Technology", "Haixin Technology"), ("Lanxing", "Haixin"), ("lanxing", "haixin")]


def rename(text: str) -> str:
    for old, new in RENAME:
        text = text.replace(old, new)
    return text


def main(root: Path = Path(".")) -> None:
    es = root / "eval_sets"
    docs = [json.loads(line) for line in (es / "corpora" / "demo_kb.jsonl").read_text(encoding="utf-8").splitlines()]
    questions = [json.loads(line) for line in (es / "demo_kb.jsonl").read_text(encoding="utf-8").splitlines()]

    routes = [{**q, "gold_route": ROUTE_OF_TYPE[q["type"]]} for q in questions]
    (es / "demo_routes.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in routes),
                                          encoding="utf-8")

    corpus = []
    for d in docs:
        meta = dict(d.get("metadata") or {})
        if not d["id"].startswith(SHARED):
            meta["tenant"] = "lanxing"
        corpus.append({**d, "metadata": meta})
    for d in docs:
        if d["id"].startswith(OWNED_BY_BOTH):
            corpus.append({"id": f"hx-{d['id']}", "title": rename(d["title"]), "text": rename(d["text"]),
                           "metadata": {**(d.get("metadata") or {}), "tenant": "haixin"}})
    (es / "corpora" / "demo_tenants.jsonl").write_text(
        "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in corpus), encoding="utf-8")

    out = []
    for tenant in ("lanxing", "haixin"):
        for q in questions:
            gold = q["relevant_doc_ids"]
            if not gold or not all(g.startswith(OWNED_BY_BOTH + SHARED) for g in gold):
                continue
            mine = [g if g.startswith(SHARED) or tenant == "lanxing" else f"hx-{g}" for g in gold]
            text = q["question"] if tenant == "lanxing" else rename(q["question"])
            ref = q.get("reference_answer")
            out.append({**q, "id": f"{tenant}-{q['id']}", "question": text, "relevant_doc_ids": mine,
                        **({"reference_answer": rename(ref) if tenant == "haixin" else ref} if ref else {}),
                        "tags": [*q.get("tags", []), "tenancy"], "tenant": tenant})
    (es / "demo_tenants.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in out),
                                           encoding="utf-8")
    print(f"demo_routes: {len(routes)} questions; demo_tenants: {len(corpus)} documents, {len(out)} questions")


if __name__ == "__main__":
    main()
