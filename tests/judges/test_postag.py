"""evalkit.text.postag: the faster part-of-speech decoder gives exactly jieba's tags (issue 34).

Texts: every Chinese question, answer, claim and evidence text of the judge data sets (dictionary words,
names, numbers), and seeded runs of characters that jieba's dictionary does not cut into words (its hidden
Markov model decodes them: the deploy-gate benchmark's synthetic passages are made of such runs).
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import jieba.posseg as pseg

from evalkit.text.claims import is_chinese, split_claims
from evalkit.text.memo import sharing
from evalkit.text.postag import posseg

REPO = Path(__file__).resolve().parents[2]
FILES = [*sorted((REPO / "tests" / "judges" / "data").glob("judge_multidoc*.jsonl")),
         REPO / "benchmarks" / "data" / "judge_cases.jsonl", REPO / "benchmarks" / "data" / "judge_paraphrases.jsonl"]


def _texts() -> list[str]:
    out: set[str] = set()
    for path in FILES:
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line) if line.strip() else {}
            for key in ("question", "answer"):
                if row.get(key):
                    out |= {row[key], *split_claims(row[key])}
            out |= {e["text"] for e in row.get("evidence", []) if isinstance(e, dict) and "text" in e}
    return sorted(t for t in out if is_chinese(t))


def _jieba(text: str) -> tuple[tuple[str, str], ...]:
    return tuple((p.word, p.flag) for p in pseg.lcut(text))


def test_tags_equal_jieba_on_the_judge_data_sets():
    texts = _texts()
    assert len(texts) >= 1000
    differ = [t for t in texts if posseg(t) != _jieba(t)]
    assert not differ, differ[:3]


def test_tags_equal_jieba_on_unknown_character_runs():
    rng = random.Random(34)
    chars = [chr(c) for c in range(0x4E00, 0x9FA5)]
    texts = ["".join(rng.choice(chars) for _ in range(rng.randint(4, 40))) for _ in range(60)]
    texts += [t[:20] + "，" + t[20:] + "。LX-200 于2024年3月发布" for t in texts[:20]]
    tagged = [posseg(t) for t in texts]
    assert tagged == [_jieba(t) for t in texts]
    # the runs are decoded word by word, not as one unknown block: the test exercises the decoder
    assert sum(len(x) for x in tagged) > 2 * len(texts)


def test_sharing_off_uses_jiebas_own_decoder():
    with sharing(False):
        assert posseg("张伟在上海工作") == _jieba("张伟在上海工作")
    assert ("张伟", "nr") in posseg("张伟在上海工作")
