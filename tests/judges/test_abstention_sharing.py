"""The abstention detector's fast paths change no finding: every labelled answer of benchmarks/data/abstention_*.jsonl,
and long deploy-gate-like answers (runs of words without a sentence mark, where the skipped clarification scan was
quadratic), with and without a clarifying question in them, give the same refusal spans and the same finding with
the sharing of evalkit.text.memo on and off."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from evalkit.text.abstention import detect_abstention
from evalkit.text.memo import sharing
from evalkit.text.refusal_rules import normalise, refusal_spans

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"
ASKS = ("", " Could you clarify which plan you mean?", " Which one do you mean?", "请您确认具体是哪一个。",
        "您指的是门诊预约还是体检预约？", "具体是指哪个版本？", "I don't know?")


def _answers() -> list[str]:
    labelled = [json.loads(line)["answer"] for path in sorted(DATA.glob("abstention_*.jsonl"))
                for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    words = sorted({w for a in labelled for w in a.split() if w.isalpha()})
    rng = random.Random(34)
    long = [" ".join(rng.choices(words, k=rng.randint(40, 160))) for _ in range(60)]  # one sentence, no mark
    return labelled + [a + ask for a in long for ask in ASKS] + [ask.strip() for ask in ASKS if ask]


@pytest.fixture(scope="module")
def answers() -> list[str]:
    return _answers()


def test_every_answer_finds_the_same_with_and_without_the_fast_paths(answers):
    assert len(answers) > 2000
    def findings() -> list[object]:
        return [(refusal_spans(normalise(a)), detect_abstention(a, finish_reason="stop").to_dict()) for a in answers]

    fast = findings()
    with sharing(False):
        slow = findings()
    assert fast == slow
    assert any(spans for spans, _ in fast[-len(ASKS):])  # the clarifying questions were found, so the scan ran
