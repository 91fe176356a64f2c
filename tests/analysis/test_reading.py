"""What compare, gate and report keep of each record (evalkit.recordview, issue 34).

The proof that keeping less changes nothing: each command runs twice on the same runs, once as
it ships (the ANALYSIS view) and once reading whole records (the commands' view patched to
WHOLE, as main read them), and every printed line, exit code and written file is compared byte
for byte. The runs have rankings deeper than the view keeps, gold documents below rank 20, a
reranker, a guard, generation and judged claims, hybrid fusion traces, and scored TREC runs in
the benchmark's own shape.
"""
from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import evalkit.commands.compare as compare_cmd
import evalkit.commands.gate as gate_cmd
import evalkit.commands.report as report_cmd
from evalkit.analysis import fusion_diag, report_data, report_queries, tool_diag
from evalkit.analysis.runs import load_run
from evalkit.cli import cli
from evalkit.graph import events
from evalkit.recordfile import read_rows
from evalkit.records import QueryResult
from evalkit.recordview import ANALYSIS, ANALYSIS_DEPTH, WHOLE, CompactWrote, RecordView, as_parsed
from evalkit.runstore import RecordsFileError

from .conftest import write_run
from .test_report import _plain, _rich

_spec = importlib.util.spec_from_file_location(
    "evalkit_bench_score_run_scale", Path(__file__).resolve().parents[2] / "benchmarks" / "score_run_scale.py")
assert _spec is not None and _spec.loader is not None
_bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _bench
_spec.loader.exec_module(_bench)

DEPTH = 100


def _deep(results: list, offset: int = 0) -> list:
    """``results`` with every ranking filled to DEPTH documents; a gold document the ranking misses is put
    at rank 15-24, on both sides of what the view keeps (the funnel and the labels must say the same
    from the first 20 alone)."""
    for i, r in enumerate(results):
        for key in ("retrieved", "reranked"):
            ranking = getattr(r, key)
            if not ranking:
                continue
            filler = [{"doc_id": f"f{offset + i}-{n}", "score": round(0.5 / (n + 2), 6)}
                      for n in range(DEPTH - len(ranking))]
            if r.gold_doc_ids and not set(r.gold_doc_ids) & {d["doc_id"] for d in ranking}:
                filler[max(0, 14 - len(ranking) + i % 10)] = {"doc_id": r.gold_doc_ids[0], "score": 0.01}
            setattr(r, key, ranking + filler)
        channels = {"dense": [[f"p{n}", d["doc_id"], d["score"]] for n, d in enumerate(r.retrieved)],
                    "bm25": [[f"p{n}", d["doc_id"], 2.0 - n / 50] for n, d in enumerate(reversed(r.retrieved))]}
        r.trace = [{**e, "wrote": {**e["wrote"], "retrieved": [d["doc_id"] for d in r.retrieved],
                                   "reranked": [d["doc_id"] for d in r.reranked], "channel_hits": channels}}
                   if e.get("node") == "retrieve" else e for e in r.trace]
    return results


@pytest.fixture(scope="module")
def deep_run(tmp_path_factory) -> dict:
    """The report tests' run (every failure label, reranker, guard, generation) with 100-document rankings."""
    folder = tmp_path_factory.mktemp("deep")
    other = _deep(_rich(), 200)  # the same queries, two of them better, one worse
    for r, hit in zip(other[:3], (1.0, 1.0, 0.0)):
        r.metrics["hit@5"] = hit
    other[7].metrics["faithfulness"] = 0.5
    path = write_run(folder, "deep", {"rich": _deep(_rich()), "other": other, "plain": _deep(_plain(), 100)})
    return {"run": path, "variants": ("rich", "other"), "metrics": ("hit@5", "faithfulness")}


@pytest.fixture(scope="module")
def scored_run(tmp_path_factory) -> dict:
    """Three variants scored by ``evalkit score --run`` from seeded TREC runs, as benchmarks/analysis_scale.py
    makes them (40 queries, 100 documents each, gold documents at random ranks)."""
    folder = tmp_path_factory.mktemp("scored")
    out = folder / "results" / "scored.json"
    variants = {}
    base = _bench.make_files(folder / "set", 40, DEPTH, 400, 34, run_seed=100)  # the eval set of every variant
    for i in range(3):
        files = _bench.make_files(folder / "set", 40, DEPTH, 400, 34, run_seed=100 + i)
        res = CliRunner().invoke(cli, ["score", "--run", str(files["run"]), "--eval-set", f"{base['set']}@v1",
                                       "--name", f"v{i}", "--output", str(out), "--no-mlflow"])
        assert res.exit_code == 0, res.output
        variants.update(json.loads(out.read_text(encoding="utf-8"))["variants"])
    summary = json.loads(out.read_text(encoding="utf-8"))
    out.write_text(json.dumps({**summary, "variants": variants}, indent=2), encoding="utf-8")
    return {"run": out, "variants": ("v0", "v1"), "metrics": ("hit@5", "ndcg@10")}


def _outputs(run: dict, folder: Path) -> dict[str, object]:
    """Every printed line, exit code and written file of compare, gate and report on ``run``."""
    path, (a, b) = str(run["run"]), run["variants"]
    gated = [arg for m in run["metrics"] for arg in ("--metric", m, "--max-drop", "0.02")]
    folder.mkdir(parents=True, exist_ok=True)
    commands = {
        "compare": ["compare", path, "--resamples", "500", "--json", str(folder / "compare.json")],
        "gate": ["gate", "--baseline", path, "--candidate", path, "--baseline-variant", a, "--candidate-variant", b,
                 *gated, "--max-failed-share", "0.2", "--resamples", "500", "--json", str(folder / "gate.json")],
        "report": ["report", path, "--resamples", "200", "--html", str(folder / "report.html"), "--markdown",
                   str(folder / "report.md"), "--no-mlflow"],
    }
    out: dict[str, object] = {}
    for name, args in commands.items():
        res = CliRunner().invoke(cli, args)
        assert res.exception is None or isinstance(res.exception, SystemExit), res.output
        out[name] = (res.exit_code, res.output)
    for file in sorted(folder.iterdir()):
        out[file.name] = file.read_bytes()
    return out


@pytest.mark.parametrize("which", ["deep_run", "scored_run", "tiny"])
def test_compare_gate_report_print_and_write_the_same_as_with_whole_records(which, request, tmp_path, monkeypatch):
    run = request.getfixturevalue(which)
    if which == "tiny":  # real runs: bm25, bm25_plain, hybrid_weighted (fusion diagnostics from channel_hits)
        run = {"run": run["run"], "variants": ("bm25", "hybrid_weighted"), "metrics": ("hit@5",)}
    new = _outputs(run, tmp_path / "out")
    for module in (compare_cmd, gate_cmd, report_cmd):
        monkeypatch.setattr(module, "ANALYSIS", WHOLE)
    old = _outputs(run, tmp_path / "out")
    assert set(new) == set(old) == {"compare", "gate", "report", "compare.json", "gate.json", "report.html",
                                    "report.md"}, new["gate"]
    for key in new:
        assert new[key] == old[key], key
    assert new["compare"][0] == 0 and new["report"][0] == 0 and new["gate"][0] in (0, 1)


@pytest.mark.parametrize("which", ["deep_run", "scored_run"])
def test_the_runs_above_hold_more_than_the_view_keeps(which, request):
    """Not vacuous: the records the comparison above read were cut, and gold lay below the cut."""
    path = request.getfixturevalue(which)["run"]
    whole, kept = load_run(path, view=WHOLE), load_run(path, view=ANALYSIS)
    name = whole.variant_names[0]
    assert {len(r["retrieved"]) for r in whole.rows(name) if r["retrieved"]} == {DEPTH}   # a failed query has none
    assert {len(r["retrieved"]) for r in kept.rows(name) if r["retrieved"]} == {ANALYSIS_DEPTH}
    deep_gold = [r for r in whole.rows(name)
                 if set(r["gold_doc_ids"]) & {d["doc_id"] for d in r["retrieved"][ANALYSIS_DEPTH:]}]
    assert deep_gold
    assert all(r["metrics"] == k["metrics"] for r, k in zip(whole.rows(name), kept.rows(name), strict=True))
    if which == "deep_run":  # the retrieve events' 100-item lists and channel rankings were held as bytes
        held = [e["wrote"] for r in kept.rows(name) for e in r["trace"] if type(e.get("wrote")) is CompactWrote]
        assert len(held) == len([r for r in kept.rows(name) if r["retrieved"]])
        assert all(type(w._items["channel_hits"]) is bytes for w in held)


def test_the_fusion_diagnostics_and_weight_sweep_read_the_same_from_channel_rankings_held_as_bytes(tiny):
    """The tiny run's channel rankings are shorter than the view's depth (held as parsed): read it with a depth
    of 3, every retrieve event's rankings held as bytes, the diagnostics and the sweep print what they print
    from the same records (the records cut to the same depth, their trace as parsed)."""
    view = RecordView(ranking_depth=3)
    held = load_run(tiny["run"], view=view)
    events = [e for r in held.rows("hybrid_weighted") for e in r["trace"] if e.get("node") == "retrieve"]
    assert events and all(type(e["wrote"]._items["channel_hits"]) is bytes for e in events)
    config = held.config("hybrid_weighted")
    path = held.per_query_path("hybrid_weighted")
    a = [QueryResult.from_dict(r) for _, r in read_rows(path, keep=view.keep)]  # rankings cut alike, nothing held
    b = held.results("hybrid_weighted")
    assert fusion_diag.channel_diagnostics(a, 3) == fusion_diag.channel_diagnostics(b, 3)
    sweep = fusion_diag.weight_sweep(a, config, n_resamples=200)
    assert "skipped" not in sweep and sweep == fusion_diag.weight_sweep(b, config, n_resamples=200)


def test_every_ranking_depth_the_views_read_fits_in_what_is_kept():
    """The analysis views read rankings to these depths; a deeper one would read a cut ranking."""
    depths = {"report funnel": report_data.RETRIEVAL_DEPTH, "final top": report_data.FINAL_DEPTH,
              "query view": report_queries.TOP_N, "fusion diagnostics": fusion_diag.TOP_N,
              "tool diagnostics": tool_diag.TOP_N}
    assert max(depths.values()) <= ANALYSIS_DEPTH, depths


def _record(n: int = 30, reranked: list | None = None) -> dict:
    retrieved = [{"doc_id": f"d{i}", "score": 1.0 - i / 100} for i in range(n)]
    ids = [d["doc_id"] for d in retrieved]
    return {"query_id": "q1", "retrieved": retrieved, "reranked": reranked if reranked is not None else
            [dict(d) for d in retrieved], "metrics": {"hit@5": 1.0},
            "trace": [{"node": "r", "wrote": {"retrieved": ids, "reranked": list(ids), "other": ["x"]}}, "odd"]}


def test_the_view_cuts_rankings_and_holds_equal_lists_once():
    kept = ANALYSIS.keep(_record())
    assert [d["doc_id"] for d in kept["retrieved"]] == [f"d{i}" for i in range(ANALYSIS_DEPTH)]
    assert kept["reranked"] is kept["retrieved"]                 # equal after the cut: one list
    wrote = kept["trace"][0]["wrote"]
    assert wrote["reranked"] is wrote["retrieved"] and len(wrote["retrieved"]) == 30   # the trace stays whole
    assert kept["trace"][1] == "odd" and kept["metrics"] == {"hit@5": 1.0}
    other = ANALYSIS.keep(_record(reranked=[{"doc_id": "z", "score": 0.5}]))
    assert other["reranked"] == [{"doc_id": "z", "score": 0.5}] and len(other["retrieved"]) == ANALYSIS_DEPTH
    short = _record(5)
    assert ANALYSIS.keep(json.loads(json.dumps(short))) == short
    assert RecordView(ranking_depth=3).keep(_record())["retrieved"][-1]["doc_id"] == "d2"
    whole = _record()
    assert WHOLE.keep(whole) is whole and len(whole["retrieved"]) == 30 and whole["reranked"] is not whole["retrieved"]


def test_large_trace_values_are_held_as_bytes_and_read_back_as_parsed():
    record = _record()
    record["trace"][0]["wrote"]["channel_hits"] = {"bm25": [[f"p{i}", f"d{i}", 1 / (i + 3)] for i in range(25)],
                                                   "dense": [["p0", "d0", -0.0]]}
    record["trace"][0]["wrote"]["note"] = {"n": 2}
    parsed = json.loads(json.dumps(record))
    kept = ANALYSIS.keep_compact(json.loads(json.dumps(record)))
    wrote = kept["trace"][0]["wrote"]
    assert type(wrote) is CompactWrote and type(ANALYSIS.keep(json.loads(json.dumps(record)))["trace"][0]["wrote"]) \
        is dict                                                          # only lines orjson read are held so
    original = parsed["trace"][0]["wrote"]
    assert dict(wrote) == original and list(wrote) == list(original) and len(wrote) == len(original)
    assert json.dumps(as_parsed(wrote), indent=1) == json.dumps(original, indent=1)   # what the report prints
    assert wrote["channel_hits"] == original["channel_hits"] and wrote.get("note") == {"n": 2}
    assert "other" in wrote and "nothing" not in wrote and wrote.get("nothing") is None
    held = wrote._items
    assert type(held["retrieved"]) is bytes and held["reranked"] is held["retrieved"]   # equal lists: held once
    assert type(held["channel_hits"]) is bytes and held["other"] == ["x"] and held["note"] == {"n": 2}
    assert wrote["retrieved"] is not wrote["retrieved"]                  # parsed anew each time: nothing kept
    assert events.wrote(kept["trace"][0]) is wrote and as_parsed(original) is original
    assert kept["trace"][1] == "odd"


def test_a_line_json_read_keeps_its_trace_as_parsed(tmp_path):
    """orjson refuses NaN (json reads it) and would write it back as null: such a line is not held as bytes."""
    record = _record()
    record["trace"][0]["wrote"]["retrieved"][3] = float("nan")
    path = tmp_path / "per_query.jsonl"
    path.write_text(json.dumps(_record()) + "\n" + json.dumps(record) + "\n", encoding="utf-8")
    rows = [r for _, r in read_rows(path, keep=ANALYSIS.keep, keep_orjson=ANALYSIS.keep_compact)]
    assert type(rows[0]["trace"][0]["wrote"]) is CompactWrote and type(rows[1]["trace"][0]["wrote"]) is dict
    assert math.isnan(rows[1]["trace"][0]["wrote"]["retrieved"][3])


BAD = {  # line 2 of a per_query.jsonl, and what the refusal must say
    "torn": ('{"query_id": "q2", "retrieved": [{"doc_id"', "not a whole JSON record"),
    "no query id": ('{"retrieved": []}', "no query_id"),
    "no metrics": ('{"query_id": "q2", "question": "?", "gold_doc_ids": [], "retrieved": [], "reranked": [], '
                   '"trace": []}', "metrics"),
    "ranking not a list": ('{"query_id": "q2", "question": "?", "gold_doc_ids": [], "retrieved": "d1", '
                           '"reranked": 7, "metrics": {}, "trace": 3}', None),
    "trace events of other types": ('{"query_id": "q2", "question": "?", "gold_doc_ids": [], "retrieved": [], '
                                    '"reranked": [], "metrics": {}, "trace": [1, {"wrote": [1]}, {"wrote": "x"}]}',
                                    None),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_damaged_record_is_refused_or_read_as_when_read_whole(case, tmp_path):
    """The view never raises on a field of an unexpected type: the refusal (file, line, what is wrong) or the
    record read is the one whole records give."""
    line, message = BAD[case]
    good = json.dumps(_record(3) | {"question": "?", "gold_doc_ids": ["d1"]})
    path = write_run(tmp_path, "bad", {"v": []})
    (tmp_path / "bad" / "v" / "per_query.jsonl").write_text(good + "\n" + line + "\n", encoding="utf-8")
    got = {}
    for view in (WHOLE, ANALYSIS):
        try:
            got[view] = [r.__dict__ for r in load_run(path, view=view).results("v")]
        except RecordsFileError as exc:
            got[view] = str(exc)
    assert got[WHOLE] == got[ANALYSIS]
    if message is None:
        assert isinstance(got[ANALYSIS], list) and len(got[ANALYSIS]) == 2
    else:
        assert isinstance(got[ANALYSIS], str)
        assert f"{tmp_path / 'bad' / 'v' / 'per_query.jsonl'}:2" in got[ANALYSIS] and message in got[ANALYSIS]
        assert "--resume" in got[ANALYSIS]                             # and what to do next
