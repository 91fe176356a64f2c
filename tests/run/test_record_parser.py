"""Reading per_query.jsonl with orjson and the collector paused gives exactly what ``json.loads`` gave.

Before (issue 34): ``compare`` + ``gate`` + ``report`` on 8 variants x 10,000 queries took 95 s, over
half of it ``json.loads`` of the records and the cyclic collector walking them. ``read_rows`` now
parses with orjson where orjson reads a line as ``json`` does, and pauses the collector. Every
comparison here is by ``repr`` of the parsed record with its line number: ``1`` and ``1.0``, ``0.0``
and ``-0.0``, ``nan`` and a float, or a big integer and its float all print differently.
"""
from __future__ import annotations

import gc
import json
import math
from pathlib import Path

import pytest

from evalkit import redact
from evalkit.analysis.runs import LoadedRun, summary_from_dict
from evalkit.records import QueryResult
from evalkit.runstore import RecordsFileError, gc_paused, long_lived_frozen, read_rows, record_parser


def _by_json(path: Path) -> list[tuple[int, str]]:
    """What read_rows returned before: ``json.loads`` of each non-blank line, as reprs (lines cut at "\n")."""
    return [(n, repr(json.loads(line))) for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1)
            if line.strip()]


def _by_read_rows(path: Path, hold: bool = False) -> list[tuple[int, str]]:
    return [(n, repr(row)) for n, row in read_rows(path, hold=hold)]


def _record(i: int, **extra: object) -> dict[str, object]:
    """A per-query record as the runner writes it: rankings, a trace, metrics (written by evalkit's writer)."""
    r = QueryResult(query_id=f"q{i:03d}", question=f"问题 {i}: what is 5 % of 1e3?", gold_doc_ids=[f"d{i}"],
                    retrieved=[{"doc_id": f"d{j}", "score": 1.0 / (j + 1) - 0.5} for j in range(20)],
                    reranked=[{"doc_id": f"d{j}", "score": -0.0 if j == 0 else j * 1e-300} for j in range(5)],
                    metrics={"hit@5": float(i % 2), "ndcg@10": 1 / 3, "recall@20": 2 / 3, "n": i},
                    trace=[{"step": 0, "node": "retrieve", "duration_ms": 0.1 * i, "started_at": 1796384824.8377233,
                            "wrote": {"retrieved": [f"d{j}" for j in range(20)]}}])
    return {**r.to_dict(), **extra}


EDGE_VALUES = [
    0, -1, 2**53 + 1, -(10**17) - 7,                     # integers (19 digits or more: the test below)
    0.1, -0.0, 5e-324, 1.7976931348623157e308, 1e-7, 123456789.12345679,
    "",  "\u2028 line separator", "tab\tand \"quote\" and \\ and \u00e9 中文", None, True, False, [], {},
]


def test_every_record_written_by_evalkit_reads_back_as_json_loads_read_it(tmp_path):
    path = tmp_path / "per_query.jsonl"
    lines = [redact.dumps_line(_record(i, extra={"v": v})) for i, v in enumerate(EDGE_VALUES)]
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")  # a blank line at the end is skipped
    assert record_parser(path.read_bytes()) is not json.loads  # the fast path is the one tested
    assert _by_read_rows(path) == _by_json(path)
    assert len(_by_json(path)) == len(EDGE_VALUES)


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_an_answer_holding_a_unicode_line_separator_is_one_record(tmp_path, separator):
    """Before: ``str.splitlines`` cut the record there and compare/gate/report refused the run as cut short."""
    path = tmp_path / "per_query.jsonl"
    answer = {"answer": f"first line{separator}second line", "answered": True}
    path.write_text(redact.dumps_line(_record(1, generation=answer)) + "\r\n" + redact.dumps_line(_record(2)) + "\n",
                    encoding="utf-8")
    assert separator in path.read_text(encoding="utf-8")  # written unescaped, as JSON allows
    rows = read_rows(path)
    assert [n for n, _ in rows] == [1, 2]
    assert rows[0][1]["generation"]["answer"] == f"first line{separator}second line"


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e400", '"\\ud800"'])
def test_what_orjson_refuses_is_read_by_json(tmp_path, value):
    path = tmp_path / "per_query.jsonl"
    path.write_text(json.dumps(_record(1)) + "\n" + f'{{"query_id": "q2", "x": {value}}}' + "\n", encoding="utf-8")
    assert _by_read_rows(path) == _by_json(path)
    x = read_rows(path)[1][1]["x"]
    assert isinstance(x, str) or math.isnan(x) or math.isinf(x)


@pytest.mark.parametrize("big", [2**64, -(2**63) - 1, 10**30, -(10**40)])
def test_an_integer_beyond_64_bits_stays_an_integer(tmp_path, big):
    """orjson would read these as floats: a file holding 19 digits in a row is read by json alone."""
    path = tmp_path / "per_query.jsonl"
    path.write_text(json.dumps(_record(1)) + "\n" + json.dumps({"query_id": "q2", "usage": {"tokens": big}}) + "\n",
                    encoding="utf-8")
    assert record_parser(path.read_bytes()) is json.loads
    assert read_rows(path)[1][1]["usage"]["tokens"] == big
    assert isinstance(read_rows(path)[1][1]["usage"]["tokens"], int)
    assert _by_read_rows(path) == _by_json(path)


@pytest.mark.parametrize("edge", [2**63 - 1, -(2**63), 2**64 - 1])
def test_64_bit_edges_with_19_digits_are_read_by_json_and_equal(tmp_path, edge):
    path = tmp_path / "per_query.jsonl"
    path.write_text(redact.dumps_line(_record(1, extra=edge)) + "\n", encoding="utf-8")
    assert record_parser(path.read_bytes()) is json.loads
    assert _by_read_rows(path) == _by_json(path)


def test_18_digits_in_a_row_keep_the_fast_path():
    assert record_parser(b'{"a": 123456789012345678}') is not json.loads
    assert record_parser(b'{"a": 1234567890123456789}') is json.loads


def test_a_torn_line_still_names_its_line_and_the_collector_is_back(tmp_path):
    path = tmp_path / "per_query.jsonl"
    good = json.dumps(_record(1))
    path.write_text(good + "\n" + good[: len(good) // 2] + "\n", encoding="utf-8")
    for hold in (False, True):
        with pytest.raises(RecordsFileError) as exc:
            read_rows(path, hold=hold)
        assert f"{path}:2: not a whole JSON record" in str(exc.value)
        assert gc.isenabled()


def test_gc_paused_restores_the_collector_as_it_found_it():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused(hold=True):
            assert not gc.isenabled()
        assert not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()
    with pytest.raises(ValueError), gc_paused(hold=True):
        raise ValueError("boom")
    assert gc.isenabled()


def test_held_records_join_the_frozen_generation_only_inside_a_scope(tmp_path):
    path = tmp_path / "per_query.jsonl"
    path.write_text("".join(json.dumps(_record(i)) + "\n" for i in range(50)), encoding="utf-8")
    assert gc.get_freeze_count() == 0
    read_rows(path, hold=True)
    assert gc.get_freeze_count() == 0  # a notebook's collector is left as it was
    with long_lived_frozen():
        before = gc.get_freeze_count()
        rows = read_rows(path, hold=True)
        assert gc.get_freeze_count() >= before + 50 * 5  # each record's lists and dicts
        assert not any(r is rows for r in gc.get_objects())  # not walked by collections
        assert [(n, repr(r)) for n, r in rows] == _by_json(path)
    assert gc.get_freeze_count() == 0  # all put back when the command ends


def test_loaded_run_results_are_built_once_and_equal_to_a_fresh_parse(tmp_path):
    folder = tmp_path / "run" / "a"
    folder.mkdir(parents=True)
    path = folder / "per_query.jsonl"
    path.write_text("".join(redact.dumps_line(_record(i)) + "\n" for i in range(30)), encoding="utf-8")
    summary = summary_from_dict({"eval_set": {"name": "s", "version": 1, "sha256": "x", "n_queries": 30},
                                 "variants": {"a": {"metrics": {}, "n_failed": 0, "n_queries": 30, "n_excluded": 0}}})
    run = LoadedRun(source="run.json", label="run", summary=summary, folder=tmp_path / "run")
    with long_lived_frozen():
        first, second = run.results("a"), run.results("a")
        assert first is not second and all(x is y for x, y in zip(first, second, strict=True))  # built once
        first.sort(key=lambda r: r.query_id, reverse=True)  # sorting one caller's list leaves the next one's
        assert [r.query_id for r in run.results("a")] == [f"q{i:03d}" for i in range(30)]
        fresh = [QueryResult.from_dict(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]
        assert [repr(r) for r in run.results("a")] == [repr(r) for r in fresh]
