"""A torn or invalid per_query.jsonl line: every reader names file:line in one error line, never a traceback.

Before (issue 33): `evalkit compare` on a run whose per_query.jsonl held a torn line died with a raw
`json.decoder.JSONDecodeError` traceback.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from faultkit import N_QUESTIONS, SET, cli, lines_of, one_line_error

import evalkit
from evalkit.errors import EvalkitError

TORN_LINE = 6


@pytest.fixture
def torn(ws: Path) -> Path:
    """A finished run of bm25 and bm25b whose bm25b/per_query.jsonl has line 6 cut in the middle."""
    done = cli(ws, "run", "--eval-set", SET, "--graph-config", "bm25.yaml", "--graph-config", "bm25b.yaml",
               "--output", "out/kb.json", "--no-mlflow", "--no-progress")
    assert done.returncode == 0, done.stderr[-2000:]
    path = ws / "out" / "kb" / "bm25b" / "per_query.jsonl"
    lines = lines_of(path)
    lines[TORN_LINE - 1] = lines[TORN_LINE - 1][: len(lines[TORN_LINE - 1]) // 2]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _names_the_line(msg: str, path: Path) -> None:
    assert f"{path}:{TORN_LINE}: not a whole JSON record" in msg
    assert "`evalkit run --resume " in msg and "kb.json` runs those queries again" in msg


READERS = {
    "compare": (("compare", "out/kb.json"), 2),
    "gate": (("gate", "--baseline", "out/kb.json", "--candidate", "out/kb.json", "--variant", "bm25b",
              "--metric", "hit@5", "--max-drop", "0.02"), 7),
    "report": (("report", "out/kb.json"), 2),
    "export": (("export", "out/kb.json", "--format", "csv"), 2),
    "label": (("label", "out/kb.json", "--variant", "bm25b", "--n", "5", "--out", "labels.jsonl"), 2),
}


@pytest.mark.parametrize("reader", list(READERS))
def test_a_reader_names_the_torn_line(ws: Path, torn: Path, reader: str):
    args, code = READERS[reader]
    before = torn.read_bytes()
    _names_the_line(one_line_error(cli(ws, *args), code), torn)
    assert torn.read_bytes() == before  # a reader changes nothing


def test_load_results_names_the_torn_line_and_resume_repairs_it(ws: Path, torn: Path):
    with pytest.raises(EvalkitError) as err:
        evalkit.load_results(ws / "out" / "kb.json").to_pandas()
    _names_the_line(str(err.value), torn)
    # the fix the message gives: --resume keeps the whole lines and runs the torn query again
    resumed = cli(ws, "run", "--resume", "out/kb.json", "--no-progress")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"bm25b: resuming, {N_QUESTIONS - 1} finished queries kept, 1 to run" in resumed.stderr
    ids = [json.loads(line)["query_id"] for line in lines_of(torn)]
    assert ids == [f"q{n}" for n in range(N_QUESTIONS)]
    assert cli(ws, "compare", "out/kb.json").returncode == 0


def test_a_line_that_is_json_but_no_record_is_named(ws: Path, torn: Path):
    lines = lines_of(torn)
    lines[TORN_LINE - 1] = json.dumps({"note": "pasted by hand"})
    torn.write_text("\n".join(lines) + "\n", encoding="utf-8")
    msg = one_line_error(cli(ws, "compare", "out/kb.json"), 2)
    assert f"{torn}:{TORN_LINE}: not a per-query record (no query_id)" in msg
