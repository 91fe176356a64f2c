"""The analysis view kept beside ``per_query.jsonl`` (evalkit.viewfile, issue 34).

The proof that the view changes nothing: compare, gate and report run on the same runs with views off,
with views written (the first read) and with views loaded (every later read), and every printed line,
exit code and written file is compared byte for byte; the records a view gives back are compared with
the ones read from the file, record by record, held bytes and shared lists included. Then the ways a
view must not be trusted: records changed (even to the same length), a view cut short, a flipped byte,
another depth or format, and the ways it must be harmless: a folder that cannot be written, a record
msgpack cannot hold, a moved folder, two writers.
"""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import orjson
import ormsgpack
import pytest
import xxhash

from evalkit import viewfile
from evalkit.analysis.runs import load_run
from evalkit.recordfile import read_rows
from evalkit.recordview import ANALYSIS, CompactWrote, RecordView

from .conftest import write_run
from .test_reading import _deep, _outputs, _record, deep_run  # noqa: F401 - deep_run is a fixture used below
from .test_report import _rich


def _views(run: Path) -> list[Path]:
    return sorted(run.with_suffix("").glob("*/per_query.view"))


def _as_json(value: Any) -> Any:
    """``value`` with every CompactWrote read whole, as JSON text (NaN compares equal to itself there)."""
    def walk(v: Any) -> Any:
        if type(v) is CompactWrote:
            return {"<held>": {k: h.decode() if type(h) is bytes else walk(h) for k, h in v.held_items()}}
        if type(v) is dict:
            return {k: walk(x) for k, x in v.items()}
        if type(v) in (list, tuple):
            return [walk(x) for x in v]
        return v
    return json.dumps(walk(value))


def _parsed_from_file(path: Path, view: RecordView = ANALYSIS) -> list[tuple[int, dict]]:
    return read_rows(path, keep=view.keep, keep_orjson=view.keep_compact)


@pytest.fixture()
def no_parse(monkeypatch):
    """Reading a records file fails: whatever is read after this came from a view."""
    def refuse(*a: Any, **k: Any) -> Any:
        raise AssertionError("the records were parsed, not loaded from their view")
    monkeypatch.setattr(viewfile, "read_rows", refuse)


@pytest.mark.parametrize("which", ["deep_run", "tiny"])
def test_compare_gate_report_are_the_same_with_views_off_written_and_loaded(which, request, tmp_path, monkeypatch):
    run = request.getfixturevalue(which)
    if which == "tiny":
        run = {"run": run["run"], "variants": ("bm25", "hybrid_weighted"), "metrics": ("hit@5",)}
    copy = tmp_path / "run"
    shutil.copytree(Path(run["run"]).with_suffix(""), copy / Path(run["run"]).stem)
    shutil.copy(run["run"], copy)
    run = {**run, "run": copy / Path(run["run"]).name}
    for view in _views(run["run"]):
        view.unlink()
    monkeypatch.setenv("EVALKIT_NO_VIEWS", "1")
    off = _outputs(run, tmp_path / "out")
    assert not _views(run["run"])
    monkeypatch.delenv("EVALKIT_NO_VIEWS")
    written = _outputs(run, tmp_path / "out")
    n_variants = len(json.loads(run["run"].read_text(encoding="utf-8"))["variants"])
    assert len(_views(run["run"])) == n_variants
    with pytest.MonkeyPatch.context() as m:
        m.setattr(viewfile, "read_rows", lambda *a, **k: pytest.fail("parsed again instead of loading the view"))
        loaded = _outputs(run, tmp_path / "out")
    assert set(off) == set(written) == set(loaded)
    for key in off:
        assert off[key] == written[key] == loaded[key], key
    assert off["compare"][0] == 0 and off["report"][0] == 0


def test_the_records_a_view_gives_back_are_the_ones_read_from_the_file(deep_run, tmp_path):  # noqa: F811
    """Every record equal, the large trace values held as the same bytes, reranked shared with retrieved where
    the cut made them equal, on a file orjson wrote (held values found in the line) and one json wrote with
    spaces (not found: kept in the view itself)."""
    src = Path(deep_run["run"]).with_suffix("") / "rich" / "per_query.jsonl"
    spaced = tmp_path / "spaced" / "per_query.jsonl"
    spaced.parent.mkdir()
    spaced.write_text("".join(json.dumps(json.loads(line)) + "\n" for line in src.read_text("utf-8").splitlines()),
                      encoding="utf-8")
    compact = tmp_path / "compact" / "per_query.jsonl"                    # as evalkit writes records
    compact.parent.mkdir()
    compact.write_bytes(b"".join(orjson.dumps(json.loads(line)) + b"\n" for line in src.read_bytes().splitlines()))
    assert b'", "' in spaced.read_bytes() and b'", "' not in compact.read_bytes()
    for path in (compact, spaced):
        expected = _parsed_from_file(path)
        written = viewfile.read_kept_rows(path, ANALYSIS)
        assert viewfile.view_path(path).is_file()
        data = path.read_bytes()
        loaded = viewfile._load(viewfile.view_path(path), viewfile._header(xxhash.xxh3_128_hexdigest(data), len(data),
                                                                           ANALYSIS), data)
        assert loaded is not None and len(loaded) == len(expected) == len(written)
        held = 0
        for (n0, a), (n1, b), (n2, c) in zip(expected, written, loaded, strict=True):
            assert n0 == n1 == n2 and _as_json(a) == _as_json(b) == _as_json(c)
            assert (a["reranked"] is a["retrieved"]) == (c["reranked"] is c["retrieved"])
            for ea, ec in zip(a["trace"], c["trace"], strict=True):
                if type(ea.get("wrote")) is CompactWrote:
                    held += 1
                    assert type(ec["wrote"]) is CompactWrote and dict(ec["wrote"]) == dict(ea["wrote"])
                    assert dict(ea["wrote"].held_items()) == dict(ec["wrote"].held_items())
        assert held >= 5
    # the compact file's held values are spans of its lines; the spaced file's are in the view itself
    assert viewfile.view_path(compact).stat().st_size * 2 < viewfile.view_path(spaced).stat().st_size


def _small_run(tmp_path: Path) -> tuple[Path, Path]:
    path = write_run(tmp_path, "small", {"v": _deep(_rich())})
    return path, tmp_path / "small" / "v" / "per_query.jsonl"


def test_changed_records_are_read_again_even_at_the_same_length(tmp_path):
    path, records = _small_run(tmp_path)
    first = load_run(path, view=ANALYSIS).rows("v")
    text = records.read_text(encoding="utf-8")
    old = f'"query_id": "{first[0]["query_id"]}"'
    assert old in text
    changed = text.replace(old, old[:-2] + "Z" + old[-1:], 1)                # the same length, one letter other
    assert len(changed) == len(text) and changed != text
    records.write_text(changed, encoding="utf-8")
    again = load_run(path, view=ANALYSIS).rows("v")
    assert again[0]["query_id"] == first[0]["query_id"][:-1] + "Z"
    assert _as_json(again) == _as_json([r for _, r in _parsed_from_file(records)])


def _retrailed(view: bytes, change: Any) -> bytes:
    """``view`` with its trailer changed by ``change``."""
    n = int.from_bytes(view[-4:], "big")
    trailer = ormsgpack.packb(change(ormsgpack.unpackb(view[-4 - n:-4])))
    return view[:-4 - n] + trailer + len(trailer).to_bytes(4, "big")


DAMAGE = {
    "cut short": lambda b: b[: len(b) // 2],
    "a flipped byte in the body": lambda b: b[:-40] + bytes([b[-40] ^ 0x01]) + b[-39:],
    "empty": lambda b: b"",
    "not msgpack": lambda b: b"\xc1" * 50,
    "another format": lambda b: _retrailed(b, lambda t: {**t, "header": {**t["header"], "format": viewfile.FORMAT + 1}}),
    "another count": lambda b: _retrailed(b, lambda t: {**t, "count": t["count"] - 1}),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_a_damaged_or_foreign_view_is_ignored_and_written_again(case, tmp_path):
    path, records = _small_run(tmp_path)
    expected = _as_json([r for _, r in _parsed_from_file(records)])
    load_run(path, view=ANALYSIS).rows("v")
    view = viewfile.view_path(records)
    good = view.read_bytes()
    view.write_bytes(DAMAGE[case](good))
    assert _as_json(load_run(path, view=ANALYSIS).rows("v")) == expected
    assert view.read_bytes() == good                                      # written again, whole


def test_a_view_of_another_depth_is_not_used(tmp_path):
    path, records = _small_run(tmp_path)
    deep = RecordView(ranking_depth=30)
    assert _as_json(viewfile.read_kept_rows(records, deep)) == _as_json(_parsed_from_file(records, deep))
    cut = [r for _, r in viewfile.read_kept_rows(records, ANALYSIS)]
    assert _as_json(cut) == _as_json([r for _, r in _parsed_from_file(records)])
    assert {len(r["retrieved"]) for r in cut if r["retrieved"]} == {ANALYSIS.ranking_depth}


def test_a_moved_folder_keeps_its_views(tmp_path, no_parse):
    path, records = _small_run(tmp_path / "a")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(viewfile, "read_rows", read_rows)                          # the first read parses
        expected = _as_json(load_run(path, view=ANALYSIS).rows("v"))
    shutil.move(tmp_path / "a", tmp_path / "b")
    assert _as_json(load_run(tmp_path / "b" / "small.json", view=ANALYSIS).rows("v")) == expected


def test_a_folder_that_cannot_be_written_gets_no_view_and_no_error(tmp_path, monkeypatch):
    path, records = _small_run(tmp_path)

    def refuse(*a: Any, **k: Any) -> Any:
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(viewfile.tempfile, "mkstemp", refuse)
    assert _as_json(load_run(path, view=ANALYSIS).rows("v")) == _as_json([r for _, r in _parsed_from_file(records)])
    assert not viewfile.view_path(records).exists() and sorted(p.name for p in records.parent.iterdir()) == \
        ["per_query.jsonl"]


def test_a_record_msgpack_cannot_hold_leaves_the_file_without_a_view(tmp_path):
    """An integer past 64 bits (read by json) cannot be packed: no view, the records read as before each time."""
    huge = _record() | {"question": "?", "gold_doc_ids": ["d1"], "count": 2 ** 70}
    records = tmp_path / "per_query.jsonl"
    records.write_text(json.dumps(_record() | {"question": "?", "gold_doc_ids": []}) + "\n" + json.dumps(huge)
                       + "\n", encoding="utf-8")
    for _ in range(2):
        rows = viewfile.read_kept_rows(records, ANALYSIS)
        assert rows[1][1]["count"] == 2 ** 70 and not viewfile.view_path(records).exists()


def test_nan_read_by_json_comes_back_from_the_view(tmp_path, monkeypatch):
    record = _record() | {"question": "?", "gold_doc_ids": []}
    record["trace"][0]["wrote"]["retrieved"][3] = float("nan")
    record["metrics"]["faithfulness"] = float("nan")
    records = tmp_path / "per_query.jsonl"
    records.write_text(json.dumps(_record()) + "\n" + json.dumps(record) + "\n", encoding="utf-8")
    written = viewfile.read_kept_rows(records, ANALYSIS)
    monkeypatch.setattr(viewfile, "read_rows", lambda *a, **k: pytest.fail("parsed again"))
    loaded = viewfile.read_kept_rows(records, ANALYSIS)
    assert _as_json(loaded) == _as_json(written) and math.isnan(loaded[1][1]["metrics"]["faithfulness"])
    assert type(loaded[1][1]["trace"][0]["wrote"]) is dict and type(loaded[0][1]["trace"][0]["wrote"]) is CompactWrote


def test_two_writers_leave_one_whole_view_and_no_temporary_file(tmp_path):
    path, records = _small_run(tmp_path)
    target = viewfile.view_path(records)
    assert viewfile.prepare_view(records)
    first = target.read_bytes()
    target.unlink()
    viewfile.read_kept_rows(records, ANALYSIS)
    assert target.read_bytes() == first
    assert sorted(p.name for p in records.parent.iterdir()) == ["per_query.jsonl", "per_query.view"]


@pytest.mark.parametrize("block", [64, 4096, 1 << 20])
def test_a_view_prepared_a_block_at_a_time_is_the_file_the_commands_write(deep_run, tmp_path, monkeypatch, block):  # noqa: F811
    """``evalkit run`` prepares views with :func:`prepare_view` (blocks of lines, nothing held): byte for byte the
    view the first command would write, lines cut across blocks of every size included."""
    monkeypatch.setattr(viewfile, "_BLOCK", block)
    src = Path(deep_run["run"]).with_suffix("") / "rich" / "per_query.jsonl"
    for name, text in {"compact": b"".join(orjson.dumps(json.loads(line)) + b"\n"
                                           for line in src.read_bytes().splitlines()),
                       "spaced": src.read_bytes(), "no final newline": src.read_bytes().rstrip(b"\n"),
                       "blank lines and CRLF": src.read_bytes().replace(b"\n", b"\r\n\n")}.items():
        records = tmp_path / name / "per_query.jsonl"
        records.parent.mkdir()
        records.write_bytes(text)
        assert viewfile.prepare_view(records), name
        prepared = viewfile.view_path(records).read_bytes()
        viewfile.view_path(records).unlink()
        expected = viewfile.read_kept_rows(records, ANALYSIS)
        assert viewfile.view_path(records).read_bytes() == prepared, name
        monkeypatch.setattr(viewfile, "read_rows", lambda *a, **k: pytest.fail("parsed again"))
        assert _as_json(viewfile.read_kept_rows(records, ANALYSIS)) == _as_json(expected)
        monkeypatch.setattr(viewfile, "read_rows", read_rows)


@pytest.mark.parametrize("mode", [0o644, 0o600, 0o640])
def test_a_view_may_be_read_by_whoever_may_read_the_records(tmp_path, mode):
    path, records = _small_run(tmp_path)
    records.chmod(mode)
    viewfile.read_kept_rows(records, ANALYSIS)
    assert viewfile.view_path(records).stat().st_mode & 0o777 == mode
    viewfile.view_path(records).unlink()
    assert viewfile.prepare_view(records) and viewfile.view_path(records).stat().st_mode & 0o777 == mode


def test_a_prepared_view_is_not_written_again(tmp_path, monkeypatch):
    path, records = _small_run(tmp_path)
    assert viewfile.prepare_view(records)
    monkeypatch.setattr(viewfile, "_write", lambda *a, **k: pytest.fail("written again"))
    assert viewfile.prepare_view(records)


@pytest.mark.parametrize("case", ["19 digits", "torn line", "not a record", "no file", "views off"])
def test_prepare_view_leaves_what_it_cannot_read_fast_to_the_commands_and_never_raises(case, tmp_path, monkeypatch):
    path, records = _small_run(tmp_path)
    lines = records.read_text(encoding="utf-8").splitlines()
    if case == "19 digits":
        lines[1] = lines[1].replace('"query_id"', '"n": 12345678901234567890, "query_id"', 1)
    elif case == "torn line":
        lines[1] = lines[1][:40]
    elif case == "not a record":
        lines[1] = "[1, 2]"
    elif case == "no file":
        records.unlink()
    elif case == "views off":
        monkeypatch.setenv("EVALKIT_NO_VIEWS", "1")
    if records.exists():
        records.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert viewfile.prepare_view(records) is False
    assert not viewfile.view_path(records).exists()
    assert sorted(p.name for p in records.parent.iterdir()) == (["per_query.jsonl"] if records.exists() else [])


def test_records_changed_while_a_view_is_prepared_leave_no_view(tmp_path, monkeypatch):
    path, records = _small_run(tmp_path)
    monkeypatch.setattr(viewfile, "_BLOCK", 256)
    real = viewfile._block_rows

    def edit_midway(block: bytes, offset: int, line: int, view: Any) -> Any:
        if offset > 0 and not records.read_bytes().endswith(b"\n\n"):
            records.write_bytes(records.read_bytes() + b"\n")              # another run appends to the file
        yield from real(block, offset, line, view)
    monkeypatch.setattr(viewfile, "_block_rows", edit_midway)
    assert viewfile.prepare_view(records) is False and not viewfile.view_path(records).exists()


def test_overwrite_removes_the_view_with_the_records():
    from evalkit.runstore import VARIANT_FILES, VIEW_FILE
    assert VIEW_FILE in VARIANT_FILES and viewfile.view_path(Path("x/per_query.jsonl")).name == VIEW_FILE
