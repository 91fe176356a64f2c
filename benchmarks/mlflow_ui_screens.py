"""Screenshots of the MLflow UI pages the README and docs/mlflow.md tell users to click.

Starts ``mlflow ui`` on 127.0.0.1 over a results folder's ``mlflow.db`` (from ``evalkit demo``
or ``evalkit run``), finds the ``evalkit`` experiment and its newest run through the REST API,
and saves one PNG per page with headless Chromium (Debian's ``chromium`` package), so a person
can check what the docs describe against what this MLflow version shows:

    python benchmarks/mlflow_ui_screens.py --results results --out /tmp/mlflow_screens

Prints the MLflow version, each page's URL and its PNG. Needs ``chromium`` on PATH; nothing
leaves 127.0.0.1. Checked last with MLflow 3.17.2 (docs/mlflow.md, "What you see").
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

PAGES = {  # file stem -> hash route under http://127.0.0.1:PORT/#/ ({exp}, {run} filled in)
    "1_experiment_opens_on_overview": "experiments/{exp}",
    "2_evaluation_runs": "experiments/{exp}/evaluation-runs",
    "3_traces": "experiments/{exp}/traces",
    "4_model_training_runs": "experiments/{exp}/runs",
    "5_parent_run": "experiments/{exp}/runs/{run}",
}


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310 (127.0.0.1 only)
        return json.loads(resp.read())


def _wait(base: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(base + "/health", timeout=5):  # noqa: S310
                return
        except OSError:
            time.sleep(2)
    raise SystemExit(f"mlflow ui did not answer on {base} within {seconds:.0f} s")


def screenshot(chromium: str, url: str, png: Path, budget_ms: int) -> None:
    """One page rendered by headless Chromium after ``budget_ms`` of virtual time (the UI is a React app)."""
    subprocess.run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1500,950", f"--virtual-time-budget={budget_ms}", f"--screenshot={png}", url],
                   check=True, capture_output=True, timeout=180)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=Path("results"), help="folder holding mlflow.db")
    ap.add_argument("--out", type=Path, default=Path("/tmp/mlflow_screens"))
    ap.add_argument("--port", type=int, default=5077)
    ap.add_argument("--budget-ms", type=int, default=25000, help="virtual time Chromium gives each page")
    args = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    db = args.results.resolve() / "mlflow.db"
    if chromium is None or not db.is_file():
        print(f"skipped: needs chromium on PATH (apt-get install chromium) and {db} (run evalkit demo first)")
        return 0
    import mlflow

    base = f"http://127.0.0.1:{args.port}"
    server = subprocess.Popen([sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", f"sqlite:///{db}",
                               "--host", "127.0.0.1", "--port", str(args.port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait(base, 300)
        exps = _post(base + "/ajax-api/2.0/mlflow/experiments/search", {"max_results": 100})["experiments"]
        exp = next(e["experiment_id"] for e in exps if e["name"] == "evalkit")
        runs = _post(base + "/ajax-api/2.0/mlflow/runs/search",
                     {"experiment_ids": [exp], "max_results": 50, "order_by": ["attributes.start_time DESC"]})
        parents = [r for r in runs.get("runs", [])  # a child run carries mlflow.parentRunId; a parent does not
                   if not any(t["key"] == "mlflow.parentRunId" for t in r.get("data", {}).get("tags", []))]
        run = parents[0]["info"]["run_id"] if parents else ""
        args.out.mkdir(parents=True, exist_ok=True)
        print(f"MLflow {mlflow.__version__}; store {db}")
        for stem, route in PAGES.items():
            if "{run}" in route and not run:
                continue
            url = f"{base}/#/{route.format(exp=exp, run=run)}"
            png = args.out / f"{stem}.png"
            screenshot(chromium, url, png, args.budget_ms)
            print(f"{url:70s} -> {png}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
