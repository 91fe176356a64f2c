#!/usr/bin/env python
"""Screenshots of a run's HTML report in headless Chromium, and the figures that say whether it is legible.

    python benchmarks/report_screenshots.py results/demo_kb.json --pair rag_extractive,agentic_reflect \
        --out reports/screenshots

Builds the report (``evalkit report``, no MLflow), opens it at 1280 x 900 CSS pixels over
the DevTools pipe (tests/analysis/cdp.py) and writes ``report-summary.png`` (summary
table and the small-multiple charts) and ``report-pair.png`` (the two-variant view, its
first query open), then prints: chart natural and displayed width, summary columns,
distinct variant colours, the font family of Chinese text, and each PNG's size.
"""
from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _cdp():
    spec = importlib.util.spec_from_file_location("cdp", REPO / "tests" / "analysis" / "cdp.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", help="summary JSON of a finished run")
    p.add_argument("--pair", default=None, help="A,B for the two-variant view (default: the report's own)")
    p.add_argument("--out", default="reports/screenshots", help="folder for the PNGs")
    p.add_argument("--height", type=int, default=1450, help="height of each screenshot (CSS px)")
    args = p.parse_args()
    from click.testing import CliRunner

    from evalkit.cli import cli

    chromium = shutil.which("chromium")
    if chromium is None:
        print("chromium not installed (Debian: apt-get install -y chromium fonts-wqy-microhei)", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="evalkit-shots-"))
    html = tmp / "report.html"
    cmd = ["report", args.run, "--no-mlflow", "--html", str(html), "--markdown", str(tmp / "report.md")]
    res = CliRunner().invoke(cli, cmd + (["--pair", args.pair] if args.pair else []))
    if res.exit_code:
        print(res.output, file=sys.stderr)
        return res.exit_code
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with _cdp().Chromium(chromium, tmp / "profile") as c:
        c.open(html.as_uri(), width=1280, height=900)
        c.wait_for("!!document.getElementById('render-check')")
        chart = c.evaluate("(() => { const i = document.querySelector('img.chart'); "
                           "return [i.naturalWidth, i.naturalHeight, i.getBoundingClientRect().width]; })()")
        columns = c.evaluate("document.querySelectorAll('#summary thead th').length")
        colours = c.evaluate("new Set(Array.from(document.querySelectorAll('#summary .sw')).map(s => s.style.background))"
                             ".size")
        zh = c.evaluate("(() => { const e = document.querySelector('[lang=zh]'); "
                        "return e ? getComputedStyle(e).fontFamily : 'no Chinese text'; })()")
        pair = c.evaluate("(() => { const s = document.querySelector('h2[id^=pair-]'); return s ? s.id : ''; })()")
        shots = [c.screenshot_element("#summary-section", out / "report-summary.png", height=args.height)]
        if pair:
            shots.append(c.screenshot_element(f"#{pair}", out / "report-pair.png", height=args.height))
    print(f"chart: {chart[0]}x{chart[1]} px, displayed {chart[2]:.0f} px wide")
    print(f"summary table: {columns} columns, {colours} distinct variant colours")
    print(f"Chinese text font-family: {zh}")
    for s in shots:
        print(f"{s}: {s.stat().st_size / 1024:.0f} KB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
