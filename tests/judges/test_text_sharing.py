"""The text analyses' fast paths change no output (issue 34): the tokenizer (terms of a word and of a Chinese run
kept), the date finder (texts that spell no date skip its scans) and the atoms of a claim (its names added to the
atoms already read for evidence), with the sharing of evalkit.text.memo on and off, over every text of the demo
corpus and eval set, of the judge data sets and of crafted dates, sentence by sentence."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.text.dates import find_dates
from evalkit.text.memo import clear_caches, sharing
from evalkit.text.sentences import split_sentences
from evalkit.text.tokenize import Tokenizer
from evalkit.text.values import extract_atoms

REPO = Path(__file__).resolve().parents[2]
DATES = ["2026-01-01", "2026/1/1", "2026年1月1日", "January 1, 2026", "1 Jan 2026", "2026年元旦", "Q3 2025",
         "third quarter of 2025", "2025年第三季度", "FY2023", "FY23", "2023财年", "每月 18 日", "the 18th of each month",
         "Christmas Day 2024", "new year's day", "by the 5th", "4月19日至20日", "4 到 6 月", "一九九七年七月一日",
         "in March", "MARCH", "ＱＵＡＲＴＥＲ", "the third QUARTER", "May 2026", "may", "12 to 14 January 2026", "18 号",
         "第三季度", "Ｑ３ ２０２５", "١٢ يناير ٢٠٢٦", "二〇二一年", "CHRISTMAS 2024", "on the 1st"]


def _texts() -> list[str]:
    texts = list(DATES)
    for path in [REPO / "eval_sets" / "corpora" / "demo_kb.jsonl", REPO / "eval_sets" / "demo_kb.jsonl",
                 *sorted((REPO / "tests" / "judges" / "data").glob("judge_multidoc*.jsonl")),
                 REPO / "benchmarks" / "data" / "judge_cases.jsonl"]:
        for row in map(json.loads, filter(str.strip, path.read_text(encoding="utf-8").splitlines())):
            for key in ("text", "question", "answer", "reference_answer"):
                if isinstance(row.get(key), str):
                    texts += [row[key], *split_sentences(row[key])]
            texts += [e["text"] for e in row.get("evidence", []) if isinstance(e, dict) and "text" in e]
    return list(dict.fromkeys(texts))


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return _texts()


TOKENIZERS = [Tokenizer("auto"), Tokenizer("en"), Tokenizer("zh"), Tokenizer("auto", stem=False, stopwords=False),
              Tokenizer("auto", accents="strip"), Tokenizer("auto", letters="ascii")]


def _read(texts: list[str], fresh: bool) -> list[object]:
    out: list[object] = []
    for text in texts:
        if fresh:
            clear_caches()
        out.append(([tok(text) for tok in TOKENIZERS], find_dates(text), extract_atoms(text, False),
                    extract_atoms(text, True)))
    return out


def test_every_text_reads_the_same_with_and_without_the_fast_paths(texts):
    assert len(texts) > 3000
    clear_caches()
    extract_atoms.cache_clear()
    shared = _read(texts, fresh=False)
    with sharing(False):
        extract_atoms.cache_clear()
        fresh = _read(texts, fresh=True)
    assert shared == fresh
    assert sum(bool(dates) for _, dates, _, _ in shared) > 500  # the dates were found, not skipped


def test_a_claim_read_after_its_evidence_gives_the_atoms_of_a_first_reading(texts):
    """With the sharing on, a text read first as evidence (entities=False) then as a claim gives the same atoms as
    a claim read first."""
    sample = texts[::7]
    extract_atoms.cache_clear()
    first = [extract_atoms(t, True) for t in sample]
    extract_atoms.cache_clear()
    for t in sample:
        extract_atoms(t, False)
    assert [extract_atoms(t, True) for t in sample] == first
