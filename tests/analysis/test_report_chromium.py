"""The HTML report renders in a real browser: headless Chromium, offline, no external assets.

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
