"""The HTML report renders in a real browser: headless Chromium, offline, no external assets.

The first test dumps the DOM of a synthetic report (``--dump-dom``). The others build the
report of the demo slice (every bundled config, tests/conftest.py) and drive Chromium
over the DevTools pipe (``cdp.py``): chart sizes, summary columns, colours, the CJK font
stack, the two-variant view, passages on demand; screenshots go to the test's tmp folder.

Chromium loads the file with networking switched off (``--host-resolver-rules`` maps
every host to nothing, ``--proxy-server`` points nowhere) and dumps the DOM after the
page's ``load`` event. The report's inline script then has written
``<p id="render-check" data-images="N" data-loaded="M">``: M images decoded with a
non-zero natural size. Skips when Debian's ``chromium`` is not installed (setup.sh
installs it when run as root).
"""
from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli

from .conftest import write_run
from .test_report import _plain, _rich

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (Debian: apt-get install -y chromium; "
                                             "setup.sh does it when run as root)")
def test_report_renders_tables_and_images_in_headless_chromium(tmp_path: Path):
    run = write_run(tmp_path, "render", {"rich": _rich(), "plain": _plain()})
    res = CliRunner().invoke(cli, ["report", str(run), "--resamples", "200", "--no-mlflow"])
    assert res.exit_code == 0, res.output
    html = run.with_name("render.report.html")
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--no-first-run", "--disable-extensions", "--disable-sync",
           f"--user-data-dir={tmp_path / 'chromium-profile'}", "--proxy-server=127.0.0.1:9",
           "--host-resolver-rules=MAP * ~NOTFOUND", "--virtual-time-budget=5000", "--dump-dom", html.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    check = re.search(r'<p id="render-check"[^>]*data-images="(\d+)"[^>]*data-loaded="(\d+)"', dom)
    assert check, "the page's load script did not run:\n" + dom[-2000:]
    assert check.group(1) == check.group(2) == "2"                # both figures decoded, non-zero size
    summary = re.search(r'<table id="summary">.*?</table>', dom, re.DOTALL).group(0)
    assert summary.count("<tr>") == 3 and ">rich</td>" in summary and ">plain</td>" in summary
    assert re.search(r'<table id="funnel">.*?gold in final top 5', dom, re.DOTALL)
    assert 'id="trace-rich-0"' in dom


# --------------------------------------------------------------------------- the demo slice, driven over CDP

def _cdp():
    import importlib.util
    import sys

    name = "evalkit_tests_cdp"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("cdp.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


PAIR = ("rag_extractive", "agentic_reflect")
SCREEN_KB = 300


@pytest.fixture(scope="module")
def slice_report(demo_slice_run: Path, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("report")
    html = out / "slice.report.html"
    res = CliRunner().invoke(cli, ["report", str(demo_slice_run), "--resamples", "300", "--no-mlflow", "--html",
                                   str(html), "--markdown", str(out / "slice.report.md"), "--pair", ",".join(PAIR)])
    assert res.exit_code == 0, res.output
    return {"html": html, "run": demo_slice_run, "out": out, "output": res.output}


@pytest.mark.integration
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (Debian: apt-get install -y chromium)")
def test_demo_report_is_legible_at_1200_px(slice_report: dict, tmp_path: Path):
    """Charts at their own 1200 px, <= 10 summary columns, one colour per variant, screenshots under 300 KB."""
    with _cdp().Chromium(CHROMIUM, tmp_path / "profile") as c:
        c.open(slice_report["html"].as_uri(), width=1280, height=900)
        c.wait_for("!!document.getElementById('render-check')")
        images, loaded = c.evaluate("[document.images.length, +document.getElementById('render-check').dataset.loaded]")
        assert images == loaded and images >= 2
        chart = c.evaluate("(() => { const i = document.querySelector('img.chart'); return [i.naturalWidth, "
                           "i.getBoundingClientRect().width, i.naturalHeight]; })()")
        assert chart[0] == 1200 and chart[1] == 1200                   # shown at its own size, not squeezed
        assert chart[2] < 1400                                          # a grid of panels, not one 4540 px strip
        columns = c.evaluate("document.querySelectorAll('#summary thead th').length")
        assert columns <= 10
        colours = c.evaluate("Array.from(document.querySelectorAll('#summary .sw')).map(s => s.style.background)")
        n = len(list((Path(__file__).resolve().parents[2] / "graph_configs").glob("*.yaml")))
        assert len(colours) == n and len(set(colours)) == n             # one colour per bundled variant
        hidden = c.evaluate("(() => { const d = document.querySelector('#summary-section ~ details'); "
                            "return [d.open, d.querySelectorAll('table').length]; })()")
        assert hidden[0] is False and hidden[1] >= 3                    # every metric behind a details element
        zh = c.evaluate("getComputedStyle(document.querySelector('[lang=zh]')).fontFamily")
        assert "WenQuanYi Micro Hei" in zh and zh.index("Noto Sans CJK SC") < zh.index("Arial")
        shots = [c.screenshot_element("#summary-section", tmp_path / "summary.png", height=1450),
                 c.screenshot_element(f"#pair-{PAIR[0]}-{PAIR[1]}", tmp_path / "pair.png", height=1300)]
    for shot in shots:
        png = shot.read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) < SCREEN_KB * 1024, (shot, len(png))
        assert struct.unpack(">II", png[16:24]) in ((1280, 1450), (1280, 1300))


@pytest.mark.integration
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (Debian: apt-get install -y chromium)")
def test_pair_view_and_drill_down_show_what_decided(slice_report: dict, tmp_path: Path):
    """Won / lost / changed side by side; passage text on demand and equal to the corpus passage; reference answers."""
    from evalkit.analysis.report_data import variant_report
    from evalkit.analysis.report_queries import load_sources, pair_view
    from evalkit.analysis.runs import load_run
    from evalkit.index.chunking import chunk_corpus

    run = load_run(slice_report["run"])
    labels = {n: variant_report(run, n, n_resamples=100).labels for n in PAIR}
    src = load_sources(run)
    view = pair_view(run, *PAIR, "ndcg@10", labels, src)
    assert sum(view.counts[k] for k in ("won", "lost", "changed", "same")) == view.counts["queries"] == 12
    line = f"{PAIR[1]} vs {PAIR[0]} on ndcg@10: won {view.counts['won']}, lost {view.counts['lost']}"
    assert line in slice_report["output"]
    passages = chunk_corpus(src.corpus, dict(run.config(PAIR[0]).chunking))
    with _cdp().Chromium(CHROMIUM, tmp_path / "profile") as c:
        c.open(slice_report["html"].as_uri(), width=1280, height=900)
        sel = f"#pair-{PAIR[0]}-{PAIR[1]}"
        shown = c.evaluate(f"Array.from(document.querySelector('{sel}').parentElement.querySelectorAll("
                           "'details.pair > summary b')).map(b => b.textContent)")
        expected = [x.query_id for part in (view.won, view.lost, view.changed) for x, _, _ in part]
        assert shown == expected
        if expected:                                                   # the open one: two variants side by side
            boxes = c.evaluate("Array.from(document.querySelector('details.pair[open]').querySelectorAll('.query'))"
                               ".map(q => { const r = q.getBoundingClientRect(); return [r.left, r.top, r.width]; })")
            assert len(boxes) == 2 and boxes[0][1] == boxes[1][1] and boxes[1][0] >= boxes[0][0] + boxes[0][2]
        # a passage: closed, its text not displayed; opened, the corpus passage's text
        pid, before, after, text = c.evaluate("""(() => { const d = document.querySelector('section.trace details.passage');
            const t = d.querySelector('.ptext'); const before = t.checkVisibility(); d.open = true;
            return [d.querySelector('code').textContent, before, t.checkVisibility(), t.textContent]; })()""")
        assert before is False and after is True and text == passages.text(pid)
        claims = c.evaluate("document.querySelectorAll('section.trace table.claims tbody tr').length")
        c.screenshot_element("section.trace", tmp_path / "drill-down.png", height=1100)
    judged = 0
    for v in PAIR:
        rows = {r["query_id"]: r for r in run.rows(v)}
        worst = variant_report(run, v, n_resamples=100).worst
        judged += sum(len(((rows[w["query_id"]].get("generation") or {}).get("judgement") or {}).get("claims") or [])
                      for w in worst)
    assert claims >= judged > 0                                       # every judged claim of the worst queries has a row
    from markupsafe import escape

    html = slice_report["html"].read_text(encoding="utf-8")
    shown = [q for q in src.references if f">{q}</a>" in html]      # worst queries: their reference answer is shown
    assert shown and all("<b>reference answer:</b> <span lang=" in html and str(escape(src.references[q])) in html
                         for q in shown)
