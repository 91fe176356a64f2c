"""The review page of ``evalkit evalset review``: keep, edit or drop each generated question.

Built on the labelling page's machinery (:func:`evalkit.analysis.label_page.render_page`):
one self-contained HTML file, plain JavaScript, no network. Each item shows the question
and reference answer in editable boxes, the type, language, generator and gold documents,
and the source documents' text. Editing a box selects "edit"; "Save decisions" downloads
the decisions JSON (:mod:`evalkit.evalsets.review`) holding only the items decided;
"Load decisions" reads one back; work in progress is kept in the browser's local storage.
The box at the bottom always holds the file the page would save.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from evalkit.analysis.label_page import render_page

_STYLE = """
.item textarea{font:inherit}.decision label{margin-right:12px}.d-keep{border-left:6px solid #2a9d8f}
.d-edit{border-left:6px solid #e9c46a}.d-drop{border-left:6px solid #b3261e;opacity:.75}
"""

_SCRIPT = r"""
const DATA = JSON.parse(document.getElementById('label-data').textContent);
const KEY = 'evalkit-review:' + DATA.id;
const esc = s => String(s ?? '').replace(/[&<>"]/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
function decisions() {
  return DATA.lines.filter(it => it.decision).map(it => {
    const d = {id: it.id, decision: it.decision};
    if (it.decision === 'edit') { d.question = it.edited.question; d.reference_answer = it.edited.reference_answer; }
    if (it.note) d.note = it.note;
    return d;
  });
}
function exportText() { return JSON.stringify({eval_set: DATA.eval_set, decisions: decisions()}, null, 1) + '\n'; }
function merge(saved) {
  const byId = new Map((saved.decisions || []).map(d => [d.id, d]));
  for (const it of DATA.lines) {
    const d = byId.get(it.id); if (!d) continue;
    it.decision = d.decision; it.note = d.note || '';
    if (d.decision === 'edit') { it.edited.question = d.question ?? it.question; it.edited.reference_answer = d.reference_answer ?? it.reference_answer; }
  }
}
function refresh() {
  const ex = document.getElementById('export'); ex.textContent = exportText(); ex.value = ex.textContent;
  const n = DATA.lines.filter(it => it.decision).length;
  document.getElementById('progress').textContent = n + ' / ' + DATA.lines.length + ' decided';
  DATA.lines.forEach((it, i) => { document.getElementById('item-' + i).className = 'item' + (it.decision ? ' d-' + it.decision : ''); });
  try { localStorage.setItem(KEY, exportText()); } catch (e) {}
}
function radio(i, value, current) {
  return '<label><input type="radio" name="d' + i + '" value="' + value + '"' + (current === value ? ' checked' : '') + '> ' + value + '</label>';
}
function render() {
  const main = document.querySelector('main'); main.innerHTML = '';
  DATA.lines.forEach((it, i) => {
    const ev = it.evidence.map((e, k) => '<details' + (k === 0 ? ' open' : '') + '><summary>' + esc(e.doc_id) + ' ' +
      esc(e.title) + (it.relevant_doc_ids.includes(e.doc_id) ? ' (gold)' : ' (look-alike)') + '</summary><div class="ev">' +
      esc(e.text) + '</div></details>').join('');
    const div = document.createElement('section'); div.id = 'item-' + i;
    div.innerHTML = '<div><div class="meta">' + esc(it.id) + ' · ' + esc(it.type) + ' · ' + esc(it.lang) + ' · ' +
      esc(it.generator) + ' ' + esc(it.pattern) + ' · gold: ' + esc(it.relevant_doc_ids.join(', ') || 'none') + '</div>' +
      '<p>question</p><textarea rows="3" id="q' + i + '">' + esc(it.edited.question) + '</textarea>' +
      '<p>reference answer</p><textarea rows="3" id="a' + i + '">' + esc(it.edited.reference_answer) + '</textarea>' +
      '<p class="decision">' + radio(i, 'keep', it.decision) + radio(i, 'edit', it.decision) + radio(i, 'drop', it.decision) +
      '</p><textarea rows="1" placeholder="note" id="n' + i + '">' + esc(it.note) + '</textarea></div><div>' + ev + '</div>';
    main.appendChild(div);
  });
  main.addEventListener('change', ev => { const m = /^d(\d+)$/.exec(ev.target.name || ''); if (m) { DATA.lines[+m[1]].decision = ev.target.value; refresh(); } });
  main.addEventListener('input', ev => {
    const m = /^([qan])(\d+)$/.exec(ev.target.id || ''); if (!m) return;
    const it = DATA.lines[+m[2]];
    if (m[1] === 'n') { it.note = ev.target.value; refresh(); return; }
    it.edited[m[1] === 'q' ? 'question' : 'reference_answer'] = ev.target.value;
    const changed = it.edited.question !== it.question || it.edited.reference_answer !== it.reference_answer;
    if (changed && it.decision !== 'drop') { it.decision = 'edit'; document.querySelector('input[name="d' + m[2] + '"][value="edit"]').checked = true; }
    refresh();
  });
}
document.getElementById('save').onclick = () => {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([exportText()], {type: 'application/json'}));
  a.download = DATA.file; document.body.appendChild(a); a.click(); a.remove();
};
document.getElementById('load').onchange = ev => {
  const f = ev.target.files[0]; if (!f) return;
  f.text().then(t => { merge(JSON.parse(t)); render(); refresh(); });
};
try { const saved = localStorage.getItem(KEY); if (saved && !location.hash.includes('fresh')) merge(JSON.parse(saved)); } catch (e) {}
render(); refresh();
document.body.dataset.ready = String(DATA.lines.length);
"""


def render_review_page(lines: list[dict[str, Any]], *, eval_set: str, file_name: str) -> str:
    """The review page for ``lines`` (:func:`evalkit.evalsets.review.page_lines`); saves ``file_name``."""
    ident = hashlib.sha256(json.dumps([eval_set] + [x["id"] for x in lines]).encode()).hexdigest()[:16]
    data = {"id": ident, "eval_set": eval_set, "file": file_name, "lines": lines}
    return render_page(data, title=f"Review {eval_set}: {len(lines)} generated question(s)", script=_SCRIPT,
                       save="Save decisions", load="Load decisions", style=_STYLE, accept=".json")
