"""The word-list files (evalkit/text/data/*.txt) and their loader (evalkit.text.wordlists)."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from evalkit.text import wordlists
from evalkit.text.wordlists import DATA, WordListError, alternation, read_list, templates

FILES = sorted(DATA.glob("*.txt"))
TEXT = Path(wordlists.__file__).parent
ROOT = TEXT.parent.parent
READERS = (TEXT, ROOT / "evalkit" / "judges")  # the modules that read the lists


def _kind(name: str) -> str:
    """How the judge's code reads ``data/NAME.txt`` (from the call that names it)."""
    code = "\n".join(p.read_text(encoding="utf-8") for folder in READERS for p in folder.glob("*.py"))
    calls = re.findall(rf'\b(words|phrases|alternation|table|cue_table|templates)\("{name}"(, regex=True)?', code)
    assert calls, f"data/{name}.txt is read by no module of evalkit/text or evalkit/judges"
    fn, regex = calls[0]
    return {"words": "words", "phrases": "phrases", "table": "table", "cue_table": "table"}.get(
        fn, "regex" if regex else "phrases")  # lexicon.cue_table reads a table


def test_there_are_data_files():
    assert len(FILES) >= 20


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_file_loads_with_a_header_and_no_duplicate_or_empty_entry(path: Path):
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# "), "a list file opens with a comment saying what it is for"
    entries = read_list(path, kind=_kind(path.stem))  # raises on a duplicate, a bad word, regex or table line
    assert entries, "a list file has entries"
    raw = [ln for ln in lines if not ln.startswith("#")]
    assert all(ln.strip() for ln in raw), "no blank line between entries"
    assert all(ln == ln.strip() for ln in raw), "no white space around an entry"
    assert len(set(raw)) == len(raw)


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "bad.txt"
    p.write_text(text, encoding="utf-8")
    return p


def test_a_duplicate_entry_names_the_file_and_both_lines(tmp_path):
    p = _write(tmp_path, "# header\nalpha\nbeta\nalpha\n")
    with pytest.raises(WordListError) as e:
        read_list(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}:4: ") and "duplicate entry 'alpha' (first on line 2)" in msg
    assert e.value.line == 4 and e.value.file == str(p)


def test_a_word_with_white_space_names_its_line(tmp_path):
    p = _write(tmp_path, "# header\nalpha\nbeta gamma\n")
    with pytest.raises(WordListError, match=rf"^{re.escape(str(p))}:3: .*'beta gamma' has white space"):
        read_list(p, kind="words")
    assert read_list(p, kind="phrases") == ("alpha", "beta gamma")  # a phrase may have spaces


def test_an_invalid_regex_fragment_names_its_line(tmp_path):
    p = _write(tmp_path, "# header\nok+\n(?:unclosed\n")
    with pytest.raises(WordListError, match=rf"^{re.escape(str(p))}:3: .*not a valid regular expression"):
        read_list(p, kind="regex")


def test_a_table_line_without_a_pattern_names_its_line(tmp_path):
    p = _write(tmp_path, "# header\nms milliseconds?\nsec\n")
    with pytest.raises(WordListError, match=rf"^{re.escape(str(p))}:3: .*'CODE PATTERN'"):
        read_list(p, kind="table")


def test_comments_and_blank_lines_are_skipped_and_order_kept(tmp_path):
    p = _write(tmp_path, "# header\n\nzeta\n  # indented comment\nalpha\n")
    assert read_list(p, kind="phrases") == ("zeta", "alpha")


def test_alternation_escapes_literal_entries_and_keeps_fragments(monkeypatch, tmp_path):
    (tmp_path / "lit.txt").write_text("# h\na.b\nc+d\n", encoding="utf-8")
    monkeypatch.setattr(wordlists, "DATA", tmp_path)
    wordlists._load.cache_clear()
    try:
        assert alternation("lit") == r"a\.b|c\+d"
        assert alternation("lit", regex=True) == "a.b|c+d"
        assert re.fullmatch(alternation("lit"), "a.b") and not re.fullmatch(alternation("lit"), "axb")
    finally:
        wordlists._load.cache_clear()


def test_the_table_reads_pattern_and_code_in_file_order():
    from evalkit.text.units import DURATION_UNITS, SCALE_SUFFIX

    assert DURATION_UNITS[0] == (r"milliseconds?|msecs?|ms|毫秒", "ms")
    assert ("亿", 1e8) in SCALE_SUFFIX and SCALE_SUFFIX.index(("万亿", 1e12)) < SCALE_SUFFIX.index(("亿", 1e8))


def test_the_files_are_package_data():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "data/*" in conf["tool"]["setuptools"]["package-data"]["evalkit.text"]


def test_templates_fill_parts_and_name_the_line_of_an_unknown_one(monkeypatch, tmp_path):
    (tmp_path / "t.txt").write_text("# h\n\\b${WHO}\\s+(?:$|no)\nx${WHAT}\n", encoding="utf-8")
    monkeypatch.setattr(wordlists, "DATA", tmp_path)
    wordlists._load.cache_clear()
    try:
        with pytest.raises(WordListError, match=r"t\.txt:3: unknown part \$\{WHAT\}; the parts are WHO"):
            templates("t", {"WHO": "i|we"})
        assert templates("t", {"WHO": "(?:i|we)", "WHAT": "y"}) == (r"\b(?:i|we)\s+(?:$|no)", "xy")
    finally:
        wordlists._load.cache_clear()


def test_the_refusal_wordings_are_the_filled_templates():
    from evalkit.text import refusal_rules as r

    assert len(r._EN) == len(templates("refusals_en", r._PARTS)) > 30
    assert all("${" not in p for p in r._EN + r._ZH)
    assert r._REFUSAL.search("The context does not mention the warranty period.")
    assert not r._REFUSAL.search("The device does not contain a Wi-Fi module.")
