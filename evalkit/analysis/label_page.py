"""The labelling page: one self-contained HTML file to label a sample in a browser, offline.

What it is for: ``evalkit label`` writes ``labels.jsonl`` and, beside it, this page with
the same lines embedded. For each answer it shows the question, the answer, the
reference answer, the evidence passages and the judge's verdict on every claim; the
person marks each claim supported / unsupported / cannot tell, optionally the answer as
hallucinated or not (else it follows from the claims), and writes a note. "Save labels"
downloads the JSONL (the same lines with the fields filled); "Load labels" reads a
partly labelled file back; work in progress is kept in the browser's local storage. The
text box at the bottom always holds the JSONL the page would save. Plain JavaScript,
no network, no external asset.
"""
from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Sequence
from typing import Any

__all__ = ["render_label_page", "render_page"]

_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI","PingFang SC","Microsoft YaHei",sans-serif;margin:0;background:#f6f7f9;color:#1d232b}
header{position:sticky;top:0;background:#1d3557;color:#fff;padding:10px 20px;display:flex;gap:16px;align-items:center;z-index:2}
header h1{font-size:17px;margin:0;flex:1}header button,header label{font-size:14px}
main{max-width:1200px;margin:0 auto;padding:16px}
.item{background:#fff;border:1px solid #d8dde3;border-radius:8px;margin:14px 0;padding:12px 16px;display:grid;grid-template-columns:1fr 1fr;gap:16px}
.item.done{border-left:6px solid #2a9d8f}.q{font-weight:600}.meta{color:#5c6670;font-size:12px}
.answer{background:#eef4fb;padding:8px;border-radius:6px;white-space:pre-wrap}.ref{color:#3d5a40;font-size:13px}
.ev{font-size:13px;white-space:pre-wrap;max-height:320px;overflow:auto;background:#fafafa;border:1px solid #eee;padding:6px}
table{border-collapse:collapse;width:100%;font-size:13px}td{border-top:1px solid #eee;padding:4px;vertical-align:top}
.v-supported{color:#2a7d2a}.v-unsupported{color:#b3261e}.v-not_checkable{color:#777}textarea{width:100%}
"""

_SCRIPT = r"""
const DATA = JSON.parse(document.getElementById('label-data').textContent);
const KEY = 'evalkit-labels:' + DATA.id;
const esc = s => String(s ?? '').replace(/[&<>"]/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
const keyOf = x => x.query_id + '\u241f' + x.variant + '\u241f' + x.answer_sha;
function merge(lines) {
  const byKey = new Map(lines.map(x => [keyOf(x), x]));
  for (const it of DATA.lines) {
    const old = byKey.get(keyOf(it)); if (!old) continue;
    it.hallucinated = old.hallucinated ?? null; it.note = old.note || '';
    (it.claims || []).forEach((c, i) => { if (old.claims && old.claims[i]) c.supported = old.claims[i].supported ?? null; });
  }
}
function exportText() { return DATA.lines.map(x => JSON.stringify(x)).join('\n') + '\n'; }
function done(it) { return it.hallucinated !== null || (it.claims.length && it.claims.every(c => c.supported !== null)); }
function refresh() {
  const ex = document.getElementById('export'); ex.textContent = exportText(); ex.value = ex.textContent;
  const n = DATA.lines.filter(done).length;
  document.getElementById('progress').textContent = n + ' / ' + DATA.lines.length + ' labelled';
  DATA.lines.forEach((it, i) => document.getElementById('item-' + i).classList.toggle('done', done(it)));
  try { localStorage.setItem(KEY, exportText()); } catch (e) {}
}
function radio(name, value, current, label) {
  return '<label><input type="radio" name="' + name + '" value="' + value + '"' + (current === value ? ' checked' : '') +
         '> ' + label + '</label> ';
}
function render() {
  const main = document.querySelector('main'); main.innerHTML = '';
  DATA.lines.forEach((it, i) => {
    const claims = (it.judge.claims || []).map((c, k) =>
      '<tr><td>' + esc(c.claim) + '<div class="meta">' + esc(c.reason) + (c.evidence_id ? ' [' + esc(c.evidence_id) + ']' : '') +
      '</div></td><td class="v-' + esc(c.verdict) + '">' + esc(c.verdict) + '</td><td>' +
      radio('c' + i + '_' + k, 'true', String(it.claims[k].supported), 'supported') +
      radio('c' + i + '_' + k, 'false', String(it.claims[k].supported), 'unsupported') +
      radio('c' + i + '_' + k, 'null', String(it.claims[k].supported), 'cannot tell') + '</td></tr>').join('');
    const ev = (it.evidence || []).map((e, k) => '<details' + (k === 0 ? ' open' : '') + '><summary>[' + (k + 1) + '] ' +
      esc(e.id) + ' (' + esc(e.doc_id) + ')</summary><div class="ev">' + esc(e.text) + '</div></details>').join('');
    const div = document.createElement('section'); div.className = 'item'; div.id = 'item-' + i;
    div.innerHTML = '<div><div class="meta">' + esc(it.query_id) + ' · ' + esc(it.variant) + ' · stratum ' +
      esc(it.sample.stratum) + '</div><p class="q">' + esc(it.question) + '</p><div class="answer">' + esc(it.answer) +
      '</div>' + (it.reference_answer ? '<p class="ref">reference: ' + esc(it.reference_answer) + '</p>' : '') +
      '<table>' + claims + '</table><p>hallucinated (any claim unsupported)? ' +
      radio('h' + i, 'true', String(it.hallucinated), 'yes') + radio('h' + i, 'false', String(it.hallucinated), 'no') +
      radio('h' + i, 'null', String(it.hallucinated), 'from the claims') + '</p><textarea rows="2" placeholder="note" id="n' +
      i + '">' + esc(it.note) + '</textarea></div><div>' + ev + '</div>';
    main.appendChild(div);
  });
  main.addEventListener('change', ev => {
    const t = ev.target, m = /^(c|h)(\d+)(?:_(\d+))?$/.exec(t.name || ''); if (!m) return;
    const v = t.value === 'null' ? null : t.value === 'true';
    if (m[1] === 'h') DATA.lines[+m[2]].hallucinated = v; else DATA.lines[+m[2]].claims[+m[3]].supported = v;
    refresh();
  });
  main.addEventListener('input', ev => { const m = /^n(\d+)$/.exec(ev.target.id || ''); if (m) { DATA.lines[+m[1]].note = ev.target.value; refresh(); } });
}
function parse(text) { return text.split('\n').filter(l => l.trim()).map(l => JSON.parse(l)); }
document.getElementById('save').onclick = () => {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([exportText()], {type: 'application/jsonl'}));
  a.download = DATA.file; document.body.appendChild(a); a.click(); a.remove();
};
document.getElementById('load').onchange = ev => {
  const f = ev.target.files[0]; if (!f) return;
  f.text().then(t => { merge(parse(t)); render(); refresh(); });
};
try { const saved = localStorage.getItem(KEY); if (saved && !location.hash.includes('fresh')) merge(parse(saved)); } catch (e) {}
render(); refresh();
document.body.dataset.ready = String(DATA.lines.length);
"""


def render_label_page(lines: Sequence[dict[str, Any]], *, file_name: str, title: str) -> str:
    """The page for ``lines`` (label lines of :mod:`evalkit.analysis.labels`); saves as ``file_name``."""
    sample_id = json.dumps([(x["query_id"], x["variant"], x["answer_sha"]) for x in lines])

    data = {"id": hashlib.sha256(sample_id.encode()).hexdigest()[:16], "file": file_name, "lines": list(lines)}
    return render_page(data, title=title, script=_SCRIPT, save="Save labels", load="Load labels")


def render_page(data: dict[str, Any], *, title: str, script: str, save: str, load: str, style: str = "",
                accept: str = ".jsonl,.json,.txt") -> str:
    """A self-contained page: header (title, progress, a save button, a file input), ``main``, the export box.

    The page machinery shared by the labelling page and ``evalkit evalset review``: ``data``
    is embedded as JSON in ``#label-data`` (``</`` escaped so no text can close the script),
    ``script`` renders it into ``main``, keeps ``#progress`` and ``#export`` up to date and
    wires ``#save`` / ``#load``. No network, no external asset.
    """
    payload = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
    t = html.escape(title)
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{t}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{_STYLE}{style}</style></head>'
            f'<body><header><h1>{t}</h1><span id="progress"></span><button id="save">{html.escape(save)}</button>'
            f'<label>{html.escape(load)} <input type="file" id="load" accept="{html.escape(accept)}"></label></header>'
            f'<main></main><footer style="max-width:1200px;margin:0 auto;padding:16px"><p>The file this page saves:</p>'
            f'<textarea id="export" rows="8" readonly></textarea></footer>'
            f'<script type="application/json" id="label-data">{payload}</script><script>{script}</script></body></html>')
