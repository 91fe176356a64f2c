"""evalkit gate at 80 columns: the PASS/FAIL column survives fitting, and the header names each run once."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner

from evalkit.analysis.gate import GateCheck, GateResult, format_gate
from evalkit.analysis.tables import Layout
from evalkit.cli import cli
from evalkit.evalsets import load_eval_set

from .conftest import QUESTIONS, qr, write_eval_set, write_run


def _results(hit: dict[str, float], hallucinated: float) -> list:
    return [qr(qid, gold, ({"hit@5": hit.get(qid, 1.0), "ndcg@10": 0.8} if gold else {}) | {"hallucinated":
               hallucinated}, question=question) for qid, question, gold, _ in QUESTIONS]


def _gate_json(tmp_path: Path) -> dict:
    """A real gate (files named baseline.json / candidate.json, as users name them) with a FAIL and PASS rows."""
    path = write_eval_set(tmp_path / "sets")
    sha = load_eval_set(str(path)).sha256
    base = write_run(tmp_path, "baseline", {"v": _results({}, 0.0)}, path=str(path), sha=sha)
    cand = write_run(tmp_path, "candidate", {"v": _results({"q01": 0.0, "q02": 0.0, "q03": 0.0}, 0.0)}, path=str(path),
                     sha=sha)
    out = tmp_path / "g.json"
    res = CliRunner().invoke(cli, ["gate", "--baseline", str(base), "--candidate", str(cand), "--resamples", "500",
                                   "--metric", "hit@5", "--max-drop", "0.02", "--metric", "ndcg@10", "--max-drop",
                                   "0.02", "--metric", "hallucinated", "--max-drop", "0.05", "--json", str(out)])
    assert res.exit_code == 1, res.output  # hit@5 lost 3 of 12: FAIL
    return json.loads(out.read_text())


def _result(data: dict) -> GateResult:
    """The GateResult back from the --json file (its fields; ``passed`` is derived)."""
    def fields(cls, d):
        return {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
    return GateResult(**{**fields(GateResult, data), "checks": [GateCheck(**fields(GateCheck, c)) for c in data["checks"]]})


def test_the_verdict_column_survives_80_columns(tmp_path: Path):
    data = _gate_json(tmp_path)
    g = _result(data)
    text = format_gate(g, Layout(width=80))
    wide = format_gate(g, Layout(width=80, wide=True))
    assert "not shown to fit 80 columns" in text  # the table did have to drop columns
    header = next(x for x in text.splitlines() if x.lstrip().startswith("metric"))
    assert header.rstrip().endswith("result") and "result" in wide
    rows = {c["metric"]: c["passed"] for c in data["checks"]}
    assert set(rows) >= {"hit@5", "ndcg@10", "hallucinated"} and rows["hit@5"] is False and rows["ndcg@10"] is True
    for line in text.splitlines():
        metric = line.split()[0] if line.strip() else ""
        if metric in rows:  # each metric's row ends with its own verdict
            assert line.rstrip().endswith("PASS" if rows[metric] else "FAIL"), line
    assert all(len(line) <= 80 for line in text.splitlines()), text


def test_the_header_names_each_run_once(tmp_path: Path):
    data = _gate_json(tmp_path)
    g = _result(data)
    first = format_gate(g, Layout(width=200)).splitlines()[0]
    assert first.startswith("gate: candidate:v vs baseline:v;"), first
    assert "candidate candidate" not in first and "baseline baseline" not in first
    other = format_gate(replace(g, candidate="run2:v", baseline="run1:v"),
                        Layout(width=200)).splitlines()[0]
    assert other.startswith("gate: candidate run2:v vs baseline run1:v;"), other
