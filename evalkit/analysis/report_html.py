"""Rendering a run report with jinja2: one self-contained HTML file and its Markdown twin.

The pages are the templates in ``evalkit/analysis/templates/`` (``report.html.j2`` with
``macros.html.j2``, and ``report.md.j2``); this module turns the computed report
(:mod:`evalkit.analysis.report_data`, :mod:`evalkit.analysis.report_queries`) into the
tables and values they show. Every value is escaped by the template (autoescape); no HTML is built here.

The HTML has no external assets: figures are base64 PNG ``data:`` URIs, the style and
one small script are inline, and a Content-Security-Policy forbids every other load.
The script runs on ``load`` and writes ``<p id="render-check" data-images="N"
data-loaded="M">`` (images present / decoded with a non-zero size): a headless browser
can prove the page rendered. Chinese text carries ``lang="zh"`` and is set in a CJK font
stack (:data:`CSS`). Worst queries link to anchors (``#trace-<variant>-<n>``) whose
sections show the query's drill-down and trace.
"""
from __future__ import annotations

import base64
import functools
import json
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from evalkit.analysis import concerns
from evalkit.analysis.report_data import LABELS, VariantReport
from evalkit.analysis.tables import is_nan
from evalkit.metrics.routing import confusion_rows
from evalkit.recordview import as_parsed
from evalkit.redact import redact, secret_env_values

TEMPLATES = Path(__file__).parent / "templates"
CJK_FONTS = ('"Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Hiragino Sans GB", "Microsoft YaHei", '
             '"WenQuanYi Micro Hei", "Noto Sans SC"')
LATIN_FONTS = '-apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Liberation Sans", "Noto Sans", "DejaVu Sans"'
CSS = f"""body{{font-family:{LATIN_FONTS},{CJK_FONTS},sans-serif;
margin:1.2em auto;max-width:1200px;padding:0 16px;color:#222;line-height:1.4}}
:lang(zh){{font-family:{CJK_FONTS},{LATIN_FONTS},sans-serif}}
table{{border-collapse:collapse;margin:.4em 0 1.2em}}td,th{{border:1px solid #ccc;padding:3px 7px;font-size:13px;
vertical-align:top}}th{{background:#f3f3f3;text-align:left}}td.num{{text-align:right;font-variant-numeric:tabular-nums;
white-space:nowrap}}td.num small{{color:#666}}h2{{border-bottom:2px solid #ddd;padding-bottom:3px;margin-top:1.8em}}
pre{{background:#f7f7f7;padding:8px;overflow-x:auto;font-size:12px;max-height:400px}}.note{{color:#666;font-size:13px}}
.warn{{color:#8a5a00}}.bad{{color:#b00020}}img{{max-width:100%;height:auto}}img.chart{{display:block;margin:.5em 0}}
details{{margin:.25em 0}}summary{{cursor:pointer}}section.trace{{border-top:1px solid #ddd;margin:1em 0}}
.sw{{display:inline-block;width:.8em;height:.8em;border-radius:2px;margin-right:.35em;vertical-align:-.05em}}
.scroll{{overflow-x:auto}}.side{{display:grid;grid-template-columns:1fr 1fr;gap:12px}}
.query{{border-left:4px solid #999;padding:2px 10px;font-size:14px;min-width:0}}.query p{{margin:.3em 0}}
.answer,.ptext{{white-space:pre-wrap;background:#f7f7f7;padding:6px 8px;border-radius:3px;font-size:13px}}
.gold{{background:#e3f4e1;color:#1b5e20;font-size:11px;padding:0 4px;border-radius:3px}}.goldrow{{font-weight:600}}
ol.ranking{{margin:.2em 0 .4em 1.4em;padding:0;font-size:13px}}.v-supported{{color:#1b5e20}}
.v-unsupported{{color:#b00020;font-weight:600}}.v-not_checkable{{color:#666}}details.pair{{border:1px solid #e3e3e3;
padding:4px 8px;border-radius:4px}}details.passage{{font-size:13px}}nav.toc a{{margin-right:1em;font-size:13px}}
table.findings th{{background:#fafafa;font-weight:normal;color:#555;width:30%}}
.query table{{width:100%;table-layout:fixed}}.query td,.query th{{overflow-wrap:anywhere}}"""
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"
CHECK_SCRIPT = """window.addEventListener('load',function(){var imgs=document.images,ok=0;
for(var i=0;i<imgs.length;i++){if(imgs[i].complete&&imgs[i].naturalWidth>0&&imgs[i].naturalHeight>0)ok++;}
var p=document.createElement('p');p.id='render-check';p.className='note';p.setAttribute('data-images',imgs.length);
p.setAttribute('data-loaded',ok);p.textContent='rendered: '+ok+' of '+imgs.length+' images';
document.body.appendChild(p);});"""
WROTE_CHARS = 4000
HEADLINE = {"retrieval": 4, "answers": 3}
"""How many metrics of each concern the summary table shows (the rest is behind a details element)."""
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")


@dataclass(frozen=True)
class Cell:
    """A table cell with more than text (the template escapes every field).

    ``sub``: a second, smaller line (a confidence interval); ``href``: the text links there;
    ``pre``: the text is the summary of a details element holding ``pre`` preformatted;
    ``cls``: CSS class; ``color``: a variant's colour swatch before the text.
    """

    text: str
    sub: str | None = None
    href: str | None = None
    pre: str | None = None
    cls: str = ""
    color: str | None = None


@dataclass
class Table:
    """Header and rows for a template; a cell is a string (escaped by the template) or a :class:`Cell`."""

    header: list[str]
    rows: list[list[Any]]
    title: str = ""


def _num(x: float | None, digits: int = 4) -> str:
    return "n/a" if is_nan(x) else f"{x:.{digits}f}"


def _value(x: Any) -> str:
    """A per-query value: whole numbers without decimals (counts, flags), others with 4."""
    if isinstance(x, float) and x.is_integer():
        return f"{x:g}"
    return _num(x) if isinstance(x, (int, float)) else str(x)


def _lang(text: str | None) -> str:
    """``zh`` when the text has CJK characters, else ``en`` (for ``lang=`` and the CJK font stack)."""
    return "zh" if text and _CJK.search(text) else "en"


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def anchor(variant: str, index: int) -> str:
    """The HTML id of the detail section of a variant's ``index``-th worst query."""
    return f"trace-{_safe(variant)}-{index}"


def _md(cell: Any) -> str:
    text = (cell.text + (f" {cell.sub}" if cell.sub else "")) if isinstance(cell, Cell) else str(cell)
    return text.replace("|", "\\|").replace("\n", " ")


def _masker(secrets: Sequence[str]) -> Any:
    """The finalizer of one page: every value a template prints, with secrets masked (``evalkit.redact``);
    images are left whole. ``secrets``: the secret environment values, read once per page; read per
    printed value they were 7 s of a 10,000-query report (52,000 walks of the environment)."""
    from markupsafe import Markup

    @functools.lru_cache(maxsize=1)
    def masked(value: Any) -> Any:
        if isinstance(value, str) and not value.startswith("data:image/"):
            return Markup(redact(str(value), secrets)) if isinstance(value, Markup) else redact(value, secrets)
        return value

    return masked


def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                             autoescape=jinja2.select_autoescape(enabled_extensions=("html", "html.j2"),
                                                                 default_for_string=False),
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             finalize=_masker(secret_env_values()))
    env.filters.update(num=_num, lang=_lang, md=_md, value=_value)
    env.tests["cell"] = lambda x: isinstance(x, Cell)
    return env


def _variant_cell(name: str, colors: dict[str, str]) -> Cell:
    return Cell(name, cls="variant", color=colors.get(name))


def _ci_cell(m: dict[str, float] | None) -> Cell | str:
    if m is None:
        return "-"
    return Cell(f"{m['mean']:.4f}", sub=f"[{m['low']:.4f}, {m['high']:.4f}]", cls="num")


def _metrics(reports: Sequence[VariantReport]) -> list[str]:
    return concerns.ordered(list(dict.fromkeys(m for v in reports for m in v.metrics)))


def headline_metrics(reports: Sequence[VariantReport]) -> list[str]:
    """The summary table's metrics: the first :data:`HEADLINE` of each concern that the run has."""
    names = _metrics(reports)
    out = []
    for c, n in HEADLINE.items():
        out += [m for m in names if concerns.concern(m) == c and not concerns.is_count(m)][:n]
    return out


def metric_tables(reports: Sequence[VariantReport], names: Sequence[str], colors: dict[str, str],
                  title: str = "", extra: bool = False) -> Table:
    """Variants as rows, ``names`` as columns (``mean [low, high]``); ``extra`` adds queries and failed."""
    header = ["variant", *[concerns.header(m) for m in names], *(["queries", "failed"] if extra else [])]
    rows = []
    for v in reports:
        if not extra and not any(m in v.metrics for m in names):
            continue
        rows.append([_variant_cell(v.name, colors), *[_ci_cell(v.metrics.get(m)) for m in names],
                     *([str(v.n_queries), str(v.n_failed)] if extra else [])])
    return Table(header, rows, title)


def all_metric_tables(reports: Sequence[VariantReport], colors: dict[str, str]) -> list[Table]:
    """Every metric, one table per concern (behind the summary's details element)."""
    names = _metrics(reports)
    return [metric_tables(reports, [m for m in names if concerns.concern(m) == c], colors, c)
            for c in concerns.CONCERNS if any(concerns.concern(m) == c for m in names)]


def funnel_table(reports: Sequence[VariantReport], colors: dict[str, str]) -> Table:
    stages = [s["stage"] for s in reports[0].funnel] if reports else []
    rows = [[_variant_cell(v.name, colors),
             *[f"n/a ({s['note']})" if s["count"] is None else f"{s['count']}/{v.n_answerable} ({s['share']:.1%})"
               for s in v.funnel]] for v in reports]
    return Table(["variant", *stages], rows)


def label_table(reports: Sequence[VariantReport], colors: dict[str, str]) -> Table:
    used = [lab for lab in LABELS if any(lab in v.label_counts for v in reports)]
    rows = [[_variant_cell(v.name, colors), *[str(v.label_counts.get(lab, 0)) for lab in used]] for v in reports]
    return Table(["variant", *used], rows)


def query_label_table(reports: Sequence[VariantReport]) -> Table:
    """One row per query (eval-set order of the first variant), the label each variant got."""
    ids = list(dict.fromkeys(q for v in reports for q in v.labels))
    return Table(["query", *[v.name for v in reports]], [[q, *[v.labels.get(q, "-") for v in reports]] for q in ids])


def latency_table(reports: Sequence[VariantReport]) -> Table:
    rows = [[v.name, node, f"{lat['p50']:.2f}", f"{lat['p95']:.2f}", str(lat["n"])]
            for v in reports for node, lat in v.latency.items()]
    return Table(["variant", "node", "p50 ms", "p95 ms", "calls"], rows)


def usage_table(reports: Sequence[VariantReport]) -> Table:
    keys = ("calls", "cache_hits", "tokens_in", "tokens_out", "latency_ms")
    rows = [[v.name, purpose, *[f"{u.get(k, 0):g}" for k in keys]] for v in reports for purpose, u in v.usage.items()]
    return Table(["variant", "purpose", *keys], rows)


def _trace_table(trace: list[dict[str, Any]]) -> Table:
    rows = []
    for e in trace:
        wrote = json.dumps(as_parsed(e.get("wrote")), ensure_ascii=False, indent=1)
        if len(wrote) > WROTE_CHARS:
            wrote = wrote[:WROTE_CHARS] + f"\n... ({len(wrote)} chars)"
        err = e.get("error")
        keys = ", ".join(e.get("wrote") or {})
        rows.append([str(e.get("step")), str(e.get("node")), str(e.get("type")),
                     f"{float(e.get('duration_ms') or 0):.2f}", f"{e.get('edge')} ({e.get('edge_reason')})",
                     json.dumps(err) if err else "",
                     Cell(keys, pre=wrote)])
    return Table(["step", "node", "type", "ms", "next", "error", "wrote"], rows)


def worst_section(v: VariantReport, views: dict[str, Any]) -> dict[str, Any]:
    """The worst-queries table of one variant (ids link to the details) and each query's detail."""
    rows, details = [], []
    for i, w in enumerate(v.worst):
        value = _num(w["metrics"].get(v.primary) if v.primary else None)
        cells = [w["question"], w["label"], value, ", ".join(w["gold"]), ", ".join(w["top5"])]
        rows.append([Cell(w["query_id"], href=f"#{anchor(v.name, i)}"), *cells])
        t = v.traces.get(w["query_id"], {})
        steps = t.get("trace", [])
        details.append({"anchor": anchor(v.name, i), "view": views[w["query_id"]], "trace": _trace_table(steps),
                        "outcome": t.get("outcome"),
                        "path": " -> ".join(f"{e.get('node')} {float(e.get('duration_ms') or 0):.1f} ms"
                                            for e in steps)})
    header = ["query", "question", "label", v.primary or "metric", "gold", "final top 5"]
    return {"variant": v.name, "safe": _safe(v.name), "primary": v.primary, "table": Table(header, rows),
            "details": details}


ROUTE_NOTE = "queries with a gold route; rows: the gold route, columns: the route the first router chose"


def route_tables(reports: Sequence[VariantReport]) -> list[dict[str, Any]]:
    """The confusion table of each router variant on an eval set with gold routes (``evalkit.metrics.routing``)."""
    return [{"variant": v.name, "safe": _safe(v.name), "table": Table(*confusion_rows(v.route_confusion))}
            for v in reports if v.route_confusion]


def _png_width(png: bytes) -> int:
    return struct.unpack(">I", png[16:20])[0] if png[:8] == b"\x89PNG\r\n\x1a\n" else 0


def figure(png: bytes) -> dict[str, Any]:
    """A PNG as the template shows it: its data URI and natural width (so it is never scaled up)."""
    return {"uri": "data:image/png;base64," + base64.b64encode(png).decode("ascii"), "width": _png_width(png)}


def context(title: str, meta: list[str], reports: Sequence[VariantReport], figures: dict[str, bytes],
            colors: dict[str, str], worst_views: dict[str, dict[str, Any]], pairs: Sequence[Any],
            notes: Sequence[str] = ()) -> dict[str, Any]:
    """Everything both templates show."""
    headline = metric_tables(reports, headline_metrics(reports), colors, extra=True)
    hist = [{"variant": v.name, "reranker": v.reranker, "figure": figure(figures[f"scores-{v.name}.png"]),
             "guard": f"; guard threshold {v.guard_threshold:.4f}" if v.guard_threshold is not None else ""}
            for v in reports if f"scores-{v.name}.png" in figures]
    pair_ctx = [{"id": f"pair-{_safe(p.a)}-{_safe(p.b)}", "view": p} for p in pairs]
    routes = route_tables(reports)
    toc = [("summary-section", "summary"), ("funnel-section", "funnel"), ("labels-section", "failure labels"),
           *([("routes-section", "routes")] if routes else []),
           *[(p["id"], f"{p['view'].b} vs {p['view'].a}") for p in pair_ctx],
           *([("scores-section", "rerank scores")] if hist else []), ("cost-section", "latency and cost"),
           ("worst-section", "worst queries")]
    return {
        "title": title, "meta": meta, "notes": list(notes), "csp": CSP, "css": CSS, "script": CHECK_SCRIPT,
        "toc": toc, "colors": colors, "headline": headline, "n_metrics": len(_metrics(reports)),
        "all_metrics": all_metric_tables(reports, colors),
        "figures": {k: figure(v) for k, v in figures.items() if k == "metrics.png"},
        "funnel": funnel_table(reports, colors), "labels": label_table(reports, colors),
        "label_order": ", ".join(LABELS), "query_labels": query_label_table(reports), "pairs": pair_ctx,
        "routes": routes, "route_note": ROUTE_NOTE,
        "histograms": hist, "latency": latency_table(reports), "usage": usage_table(reports),
        "worst": [worst_section(v, worst_views.get(v.name, {})) for v in reports],
        "rerankers": [f"{v.name}: {v.reranker}" + (f", guard threshold {v.guard_threshold:.4f}"
                                                    if v.guard_threshold is not None else "")
                      for v in reports if v.reranker]}


def render_html(ctx: dict[str, Any]) -> str:
    """The self-contained HTML report."""
    return _env().get_template("report.html.j2").render(**ctx)


def render_markdown(ctx: dict[str, Any]) -> str:
    """The Markdown twin: the same tables, traces as one line per worst query, no images."""
    md = _env().get_template("report.md.j2").render(**ctx)
    return re.sub(r"\n{3,}", "\n\n", md).rstrip() + "\n"
