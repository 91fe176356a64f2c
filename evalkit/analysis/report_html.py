"""Rendering a run report: one self-contained HTML file and its Markdown twin.

The HTML has no external assets: figures are base64 PNG ``data:`` URIs, the style and
one small script are inline, and a Content-Security-Policy forbids every other load.
The script runs on ``load`` and writes ``<p id="render-check" data-images="N"
data-loaded="M">`` (images present / decoded with a non-zero size): a headless browser
can prove the page rendered. Worst queries link to anchors (``#trace-<variant>-<n>``)
whose sections show that query's trace. The Markdown twin holds the same tables (no
images, traces summarised as one line per query).
"""
from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from typing import Any

from evalkit.analysis.report_data import LABELS, VariantReport
from evalkit.analysis.tables import is_nan
from evalkit.redact import redact

CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
h2{border-bottom:2px solid #ddd;padding-bottom:3px;margin-top:2em}pre{background:#f7f7f7;padding:8px;
overflow-x:auto;font-size:12px;max-height:400px}.note{color:#666;font-size:13px}img{max-width:100%}
details{margin:.3em 0}section.trace{border-left:3px solid #bbb;padding-left:10px;margin:1em 0}"""
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"
CHECK_SCRIPT = """window.addEventListener('load',function(){var imgs=document.images,ok=0;
for(var i=0;i<imgs.length;i++){if(imgs[i].complete&&imgs[i].naturalWidth>0&&imgs[i].naturalHeight>0)ok++;}
var p=document.createElement('p');p.id='render-check';p.className='note';p.setAttribute('data-images',imgs.length);
p.setAttribute('data-loaded',ok);p.textContent='rendered: '+ok+' of '+imgs.length+' images';
document.body.appendChild(p);});"""
WROTE_CHARS = 4000


def _e(x: Any) -> str:
    """Text as HTML: secrets masked (:func:`evalkit.redact.redact`), then escaped. Every text cell goes here."""
    return html.escape(redact(str(x)), quote=True)


def _num(x: float | None, digits: int = 4) -> str:
    return "n/a" if is_nan(x) else f"{x:.{digits}f}"


def _ci(m: dict[str, float]) -> str:
    return f"{m['mean']:.4f} [{m['low']:.4f}, {m['high']:.4f}]"


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def anchor(variant: str, index: int) -> str:
    """The HTML id of the trace section of a variant's ``index``-th worst query."""
    return f"trace-{_safe(variant)}-{index}"


def _columns(reports: Sequence[VariantReport]) -> list[str]:
    cols: list[str] = []
    for v in reports:
        cols += [m for m in v.metrics if m not in cols]
    return cols


def summary_rows(reports: Sequence[VariantReport]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the summary table: each metric as ``mean [low, high]``."""
    cols = _columns(reports)
    header = ["variant", *cols, "queries", "failed"]
    rows = [[v.name, *[_ci(v.metrics[c]) if c in v.metrics else "-" for c in cols], str(v.n_queries),
             str(v.n_failed)] for v in reports]
    return header, rows


def funnel_rows(reports: Sequence[VariantReport]) -> tuple[list[str], list[list[str]]]:
    header = ["stage (answerable queries)", *[v.name for v in reports]]
    stages = [s["stage"] for s in reports[0].funnel] if reports else []
    rows = []
    for i, stage in enumerate(stages):
        cells = [stage]
        for v in reports:
            s = v.funnel[i]
            cells.append(f"n/a ({s['note']})" if s["count"] is None else f"{s['count']}/{v.n_answerable} "
                         f"({s['share']:.1%})")
        rows.append(cells)
    return header, rows


def label_rows(reports: Sequence[VariantReport]) -> tuple[list[str], list[list[str]]]:
    used = [lab for lab in LABELS if any(lab in v.label_counts for v in reports)]
    return ["failure label", *[v.name for v in reports]], [[lab, *[str(v.label_counts.get(lab, 0)) for v in reports]]
                                                          for lab in used]


def per_query_label_rows(reports: Sequence[VariantReport]) -> tuple[list[str], list[list[str]]]:
    """One row per query (eval-set order of the first variant), the label each variant got."""
    ids = list(dict.fromkeys(q for v in reports for q in v.labels))
    return ["query", *[v.name for v in reports]], [[q, *[v.labels.get(q, "-") for v in reports]] for q in ids]


def latency_rows(reports: Sequence[VariantReport]) -> tuple[list[str], list[list[str]]]:
    rows = []
    for v in reports:
        for node, lat in v.latency.items():
            rows.append([v.name, node, f"{lat['p50']:.2f}", f"{lat['p95']:.2f}", str(lat["n"])])
    return ["variant", "node", "p50 ms", "p95 ms", "calls"], rows


def usage_rows(reports: Sequence[VariantReport]) -> tuple[list[str], list[list[str]]]:
    keys = ("calls", "cache_hits", "tokens_in", "tokens_out", "latency_ms")
    rows = [[v.name, purpose, *[f"{u.get(k, 0):g}" for k in keys]] for v in reports for purpose, u in v.usage.items()]
    return ["variant", "purpose", *keys], rows


def _html_table(header: list[str], rows: list[list[str]], tid: str = "", raw_cols: Sequence[int] = ()) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = []
    for r in rows:
        cells = []
        for i, c in enumerate(r):
            cls = ' class="num"' if i and c[:1].isdigit() else ""
            cells.append(f"<td{cls}>{c if i in raw_cols else _e(c)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    idattr = f' id="{tid}"' if tid else ""
    return f"<table{idattr}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    def esc(cell: str) -> str:
        return redact(str(cell)).replace("|", "\\|").replace("\n", " ")

    return "\n".join(["| " + " | ".join(esc(h) for h in header) + " |", "|" + "---|" * len(header),
                      *["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]])


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'


def _worst_rows(v: VariantReport, link: bool) -> list[list[str]]:
    rows = []
    for i, w in enumerate(v.worst):
        qid = f'<a href="#{anchor(v.name, i)}">{_e(w["query_id"])}</a>' if link else w["query_id"]
        value = w["metrics"].get(v.primary) if v.primary else None
        rows.append([qid, w["question"], w["label"], _num(value),
                     ", ".join(w["gold"]), ", ".join(w["top5"])])
    return rows


def _trace_html(v: VariantReport, i: int, w: dict[str, Any]) -> str:
    t = v.traces.get(w["query_id"], {})
    rows = []
    for e in t.get("trace", []):
        wrote = json.dumps(e.get("wrote"), ensure_ascii=False, indent=1)
        if len(wrote) > WROTE_CHARS:
            wrote = wrote[:WROTE_CHARS] + f"\n... ({len(wrote)} chars)"
        err = e.get("error")
        rows.append([str(e.get("step")), _e(e.get("node")), _e(e.get("type")), f"{float(e.get('duration_ms') or 0):.2f}",
                     _e(f"{e.get('edge')} ({e.get('edge_reason')})"), _e(json.dumps(err)) if err else "",
                     f"<details><summary>{_e(', '.join(e.get('wrote') or {}))}</summary><pre>{_e(wrote)}</pre></details>"])
    table = _html_table(["step", "node", "type", "ms", "next", "error", "wrote"], rows, raw_cols=range(7))
    return (f'<section class="trace" id="{anchor(v.name, i)}"><h4>{_e(v.name)} / {_e(w["query_id"])}: '
            f'{_e(w["label"])}</h4><p>{_e(w["question"])}</p><p class="note">outcome {_e(t.get("outcome"))}; gold '
            f'{_e(", ".join(w["gold"]))}; final top 5 {_e(", ".join(w["top5"]))}</p>{table}</section>')


def render_html(title: str, meta: list[str], reports: Sequence[VariantReport], figures: dict[str, bytes]) -> str:
    """The self-contained HTML report."""
    parts = [f"<h1>{_e(title)}</h1>", *[f'<p class="note">{_e(m)}</p>' for m in meta],
             "<h2>Summary</h2>", ('<p class="note">mean [95% bootstrap CI] per variant; retrieval metrics over '
                                  "answerable queries; abstain rates over answerable / unanswerable queries; other "
                                  "metrics over the queries they are defined on</p>"),
             _html_table(*summary_rows(reports), tid="summary")]
    if "metrics.png" in figures:
        parts.append(_img(figures["metrics.png"], "metric means with confidence intervals"))
    parts += ["<h2>Funnel</h2>",
              '<p class="note">answerable queries; each stage keeps the queries that passed the ones before</p>',
              _html_table(*funnel_rows(reports), tid="funnel"), "<h2>Failure labels</h2>",
              f'<p class="note">first label that applies, in this order: {_e(", ".join(LABELS))}</p>',
              _html_table(*label_rows(reports), tid="labels"),
              "<details><summary>the label of every query</summary>",
              _html_table(*per_query_label_rows(reports), tid="query-labels"), "</details>"]
    hist = [(v, figures[f"scores-{v.name}.png"]) for v in reports if f"scores-{v.name}.png" in figures]
    if hist:
        parts.append("<h2>Rerank scores</h2>")
        for v, png in hist:
            guard = f"; guard threshold {v.guard_threshold:.4f}" if v.guard_threshold is not None else ""
            parts += [f'<p class="note">{_e(v.name)}: reranker {_e(v.reranker)}{_e(guard)}</p>',
                      _img(png, f"top-1 rerank scores of {v.name}")]
    parts += ["<h2>Latency and cost</h2>", _html_table(*latency_rows(reports), tid="latency")]
    uh, ur = usage_rows(reports)
    no_usage = '<p class="note">LLM usage: n/a (no LLM calls recorded in this run)</p>'
    parts.append(_html_table(uh, ur, tid="usage") if ur else no_usage)
    parts.append("<h2>Worst queries</h2>")
    for v in reports:
        parts += [f"<h3>{_e(v.name)}</h3>",
                  f'<p class="note">answerable queries, lowest {_e(v.primary)} first; click an id for its trace</p>',
                  _html_table(["query", "question", "label", v.primary or "metric", "gold", "final top 5"],
                              _worst_rows(v, True), tid=f"worst-{_safe(v.name)}", raw_cols=(0,))]
    parts.append("<h2>Traces of the worst queries</h2>")
    for v in reports:
        parts += [_trace_html(v, i, w) for i, w in enumerate(v.worst)]
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}"><title>{_e(title)}</title>'
            f"<style>{CSS}</style></head><body>\n" + "\n".join(parts) + f"\n<script>{CHECK_SCRIPT}</script>"
            "\n</body></html>\n")


def render_markdown(title: str, meta: list[str], reports: Sequence[VariantReport]) -> str:
    """The Markdown twin: the same tables, traces as one line per worst query, no images."""
    out = [f"# {title}", "", *[f"- {m}" for m in meta], "",
           "## Summary", "", "mean [95% bootstrap CI]; retrieval metrics over answerable queries.", "",
           _md_table(*summary_rows(reports)), "", "## Funnel", "", _md_table(*funnel_rows(reports)), "",
           "## Failure labels", "", _md_table(*label_rows(reports)), "",
           "<details><summary>the label of every query</summary>", "", _md_table(*per_query_label_rows(reports)),
           "", "</details>", "",
           "## Latency and cost", "", _md_table(*latency_rows(reports)), ""]
    uh, ur = usage_rows(reports)
    out += [_md_table(uh, ur) if ur else "LLM usage: n/a (no LLM calls recorded in this run).", ""]
    scored = [v for v in reports if v.reranker]
    if scored:
        out += ["## Rerankers", "", *[f"- {v.name}: {v.reranker}" + (f", guard threshold {v.guard_threshold:.4f}"
                                                                     if v.guard_threshold is not None else "")
                                      for v in scored], "", "Score histograms: see the HTML report.", ""]
    out += ["## Worst queries", ""]
    for v in reports:
        out += [f"### {v.name}", "", _md_table(["query", "question", "label", v.primary or "metric", "gold",
                                                "final top 5"], _worst_rows(v, False)), ""]
        for w in v.worst:
            steps = v.traces.get(w["query_id"], {}).get("trace", [])
            path = " -> ".join(f"{e.get('node')} {float(e.get('duration_ms') or 0):.1f} ms" for e in steps)
            out.append(f"- `{w['query_id']}` trace: {path or '(empty)'}")
        out.append("")
    return redact("\n".join(out).rstrip() + "\n")
