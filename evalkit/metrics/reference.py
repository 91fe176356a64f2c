"""The metric reference table, written from the registry: every metric family and its definition.

``docs/metrics.md`` holds the table between ``<!-- generated: metrics -->`` and
``<!-- end generated -->``. Each row is one family of :data:`evalkit.metrics.registry.REGISTRY`
(the one list of metric names) with the ranking it reads by default, and its definition,
convention and equivalences taken from the docstring of the function that computes it
(:mod:`evalkit.metrics.retrieval`, where each metric is defined once). A test
(``tests/docs/test_reference_pages.py``) fails when the page is stale.

The ``<!-- generated: named-metrics -->`` block lists every metric of the named-metric registry
(:mod:`evalkit.metrics.catalog`: answer, agentic, cost, tenancy, routing, safety, guard) with
its direction, unit, console header and one-line definition.

Regenerate with ``python -m evalkit.metrics.reference docs/metrics.md``.
"""
from __future__ import annotations

import inspect
import re

from evalkit.docgen import replace_block, rewrite_pages
from evalkit.metrics.catalog import CONCERNS, all_metrics
from evalkit.metrics.registry import DEFAULT_METRICS, GRAMMAR, REGISTRY


def _paragraphs(doc: str) -> list[str]:
    """The docstring's prose paragraphs, each on one line (``.. math::`` blocks left out)."""
    paras = [" ".join(p.split()) for p in re.split(r"\n\s*\n", doc.strip())]
    return [p for p in paras if p and not p.startswith(".. math::")]


def _cell(text: str) -> str:
    """reST markup as Markdown (``x`` and :func:`x` as `x`), pipes escaped for a table cell."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", text).replace("``", "`")
    return text.replace("|", "\\|")


def metrics_markdown() -> str:
    """The generated block: the name grammar, the defaults, then one table row per metric family."""
    rows = [f"{GRAMMAR}.", "",
            "Default metrics of a run: " + ", ".join(f"`{m}`" for m in DEFAULT_METRICS) + ".", "",
            "| name | reads by default | definition | convention | equals |", "|---|---|---|---|---|"]
    for name in sorted(REGISTRY):
        fam = REGISTRY[name]
        paras = _paragraphs(inspect.getdoc(fam.fn) or fam.description)
        definition, rest = paras[0], paras[1:]
        convention = " ".join(p for p in rest if not p.startswith("Equals"))
        equals = " ".join(p for p in rest if p.startswith("Equals"))
        stage = "retrieval stage (before rerank)" if fam.default_stage == "retrieval" else "final ranking (after rerank)"
        rows.append(f"| `{name}@k` | {stage} | {_cell(definition)} | {_cell(convention)} | {_cell(equals)} |")
    return "\n".join(rows) + "\n"


TABLE_TITLES = {"retrieval": "guard (retrieval table)", "answers": "answers", "agentic": "agentic (loops)",
                "routes": "routes", "safety": "safety", "cost": "cost and health", "other": "tenancy and routing"}


def named_metrics_markdown() -> str:
    """The generated block of every registered named metric (:mod:`evalkit.metrics.catalog`), one table
    per concern: printed name, direction, unit, console header, one-line definition, defining module."""
    metrics = list(all_metrics(plugins=False))
    out: list[str] = []
    for concern in CONCERNS:
        rows = [m for m in metrics if m.concern == concern]
        if not rows:
            continue
        out += [f"**{TABLE_TITLES[concern]}**", "",
                "| name | better | unit | column | definition | defined in |", "|---|---|---|---|---|---|"]
        for m in rows:
            better = {"higher": "higher", "lower": "lower", "none": "none (describes)"}[m.direction]
            pq = f" Per query: `{m.per_query}`." if m.per_query else ""
            out.append(f"| `{m.name}` | {better} | {m.unit} | {_cell(m.header) if m.header else ''} | "
                       f"{_cell(m.definition)}.{pq} | `{m.source}` |")
        out.append("")
    return "\n".join(out)


def render_page(text: str) -> str:
    """``text`` with its ``<!-- generated: metrics -->`` and ``<!-- generated: named-metrics -->`` blocks rewritten."""
    text = replace_block(text, "metrics", metrics_markdown())
    return replace_block(text, "named-metrics", named_metrics_markdown())


if __name__ == "__main__":  # python -m evalkit.metrics.reference docs/metrics.md  (rewrites the block)
    import sys

    rewrite_pages(sys.argv[1:], render_page)
