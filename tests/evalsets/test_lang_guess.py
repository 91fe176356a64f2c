"""--lang auto: a record's language from its question's script, as the importers' default."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.evalsets.lang import guess_lang, record_lang, valid_default


@pytest.mark.parametrize("text, lang", [
    ("差旅报销的住宿标准是多少？", "zh"), ("VPN 连不上怎么办", "zh"), ("What is the refund window?", "en"),
    ("Wie lange gilt die Garantie?", "en"),  # a Latin script says nothing more: en, as before
    ("返品の期限はいつですか", "ja"), ("환불 기간은 얼마입니까", "ko"), ("E-4012 是什么错误码？", "zh"),
    ("", "en"), (None, "en")])
def test_guess_by_script(text, lang):
    assert guess_lang(text) == lang


def test_explicit_codes_win_and_are_checked():
    assert record_lang("en", "差旅报销") == "en" and record_lang("auto", "差旅报销") == "zh"
    assert valid_default("auto") and valid_default("zh") and valid_default("pt-BR")
    assert not valid_default("Chinese") and not valid_default("")


def test_import_dataset_labels_chinese_questions_zh_by_default(tmp_path: Path):
    from evalkit.interop.importers import import_dataset

    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in [
        {"id": "d1", "text": "住宿标准为每晚 500 元。"}, {"id": "d2", "text": "The refund window is 14 days."}]),
        encoding="utf-8")
    qs = tmp_path / "qs.jsonl"
    qs.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in [
        {"question": "住宿标准是多少？", "relevant_doc_ids": ["d1"]},
        {"question": "How long is the refund window?", "relevant_doc_ids": ["d2"]},
        {"question": "退款多久？", "relevant_doc_ids": ["d2"], "lang": "en"}]),  # a column wins over the guess
        encoding="utf-8")
    result = import_dataset(qs, "mixed", tmp_path / "out", corpus=docs)
    langs = [json.loads(line)["lang"] for line in Path(result.eval_set_path).read_text(encoding="utf-8").splitlines()]
    assert langs == ["zh", "en", "en"]
    forced = import_dataset(qs, "forced", tmp_path / "out", corpus=docs, lang="zh")
    langs = [json.loads(line)["lang"] for line in Path(forced.eval_set_path).read_text(encoding="utf-8").splitlines()]
    assert langs == ["zh", "zh", "en"]
