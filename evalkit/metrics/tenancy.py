"""Tenant isolation: ``tenant_leak_rate``, defined here and only here.

A corpus document belongs to the tenant in its metadata (``metadata.tenant``); a document
without one is shared and belongs to everybody. An eval record may name the ``tenant``
the question is asked for.

**A query leaks** when its record has a tenant T and at least one document of a tenant
other than T is in

- its **final ranking**: the document-level ``reranked`` list of ``per_query.jsonl``, all of
  it, not cut at any k (the reranker's output, or the retrieval-stage ranking when the
  variant has no reranker: the ranking ``hit@k`` reads, as the pipeline handed it on), or
- the **answer evidence**: the passages the answer was written from
  (``generation.evidence``, the generator's ``answer_evidence``), for variants that generate.

The retrieval-stage ranking of a variant that reranks is not counted (what a later stage
drops never reaches the user); a query that failed is judged on what it returned.

Per query: ``metrics["tenant_leak"]`` (1.0 leak, 0.0 none; absent for a record without a
tenant) and ``QueryResult.tenant_leaks`` (the other tenants' document ids, in rank order,
ranking first, then evidence).

Per variant: ``tenant_leak_rate`` = leaking queries / queries with a tenant (answerable and
unanswerable alike), and ``n_tenant_queries``, that denominator. Variants run on an eval
set without tenants get neither.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evalkit.metrics.catalog import NamedMetric, register_metrics
from evalkit.records import QueryResult


def document_tenants(documents: Iterable[Any]) -> dict[str, str]:
    """``{doc id: tenant}`` for every document whose metadata names a tenant."""
    out: dict[str, str] = {}
    for d in documents:
        tenant = (d.metadata or {}).get("tenant")
        if tenant is not None and tenant != "":
            out[d.id] = str(tenant)
    return out


def foreign_documents(tenant: str, ranking: Sequence[str], evidence: Sequence[str],
                      tenants: Mapping[str, str]) -> list[str]:
    """Documents of ``ranking`` then ``evidence`` (each once) whose tenant is set and is not ``tenant``."""
    out: list[str] = []
    for doc in [*ranking, *evidence]:
        owner = tenants.get(doc)
        if owner is not None and owner != tenant and doc not in out:
            out.append(doc)
    return out


def query_tenant_leaks(result: QueryResult, tenants: Mapping[str, str]) -> list[str] | None:
    """The other tenants' documents ``result`` returned (module docstring); None when it has no tenant."""
    if result.tenant is None:
        return None
    ranking = [d["doc_id"] for d in result.reranked]
    evidence = [str(e[1]) for e in (result.generation or {}).get("evidence") or []]
    return foreign_documents(result.tenant, ranking, evidence, tenants)


def aggregate_tenancy(results: Sequence[QueryResult]) -> dict[str, float]:
    """``tenant_leak_rate`` and ``n_tenant_queries`` over the results with a tenant; ``{}`` when none has one."""
    flags = [float(leak) for r in results
             if r.tenant is not None and (leak := r.metrics.get("tenant_leak")) is not None]
    if not flags:
        return {}
    return {"tenant_leak_rate": math.fsum(flags) / len(flags), "n_tenant_queries": float(len(flags))}


register_metrics(
    "other",
    NamedMetric("tenant_leak_rate", "lower", "share", "queries with a tenant that returned another tenant's "
                "document (final ranking or answer evidence) / queries with a tenant", per_query="tenant_leak"),
    NamedMetric("tenant_leak", "lower", "flag", "1 when the query returned another tenant's document (per query)",
                column=False),
    NamedMetric("n_tenant_queries", "none", "count", "queries whose record names a tenant"),
    source=__name__,
)
