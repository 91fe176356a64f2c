"""Getting JSON out of model output: the forms models really produce, and clear failures."""
from __future__ import annotations

import pytest

from evalkit.llm import LLMError, parse_json


@pytest.mark.parametrize("text, value", [
    ('{"a": 1}', {"a": 1}),
    ("  [1, 2, 3]\n", [1, 2, 3]),
    ("42", 42),  # the whole text is any JSON value
    ("\ufeff{\"a\": null}", {"a": None}),
    # fenced blocks
    ('```json\n{"verdict": "yes", "score": 0.9}\n```', {"verdict": "yes", "score": 0.9}),
    ('Here you go:\n```\n[{"claim": "x"}]\n```\nDone.', [{"claim": "x"}]),
    ('```JSON\n{"a": [1, 2,],}\n```', {"a": [1, 2]}),
    ('```json\nnot json\n```\n```json\n{"second": true}\n```', {"second": True}),
    # JSON inside chatty text
    ('Sure! Here is the JSON: {"answer": "Paris", "sources": ["d1"]} Hope this helps.',
     {"answer": "Paris", "sources": ["d1"]}),
    ('The result {"nested": {"deep": [1, {"x": "}"}]}} follows.', {"nested": {"deep": [1, {"x": "}"}]}}),
    ('I think {this is not json} but {"real": 1} is.', {"real": 1}),
    ('{"text": "a string with { and [ inside", "n": 2}', {"text": "a string with { and [ inside", "n": 2}),
    ('{"quote": "she said \\"hi\\""}', {"quote": 'she said "hi"'}),
    # trailing commas
    ('{"a": 1, "b": [1, 2, ], }', {"a": 1, "b": [1, 2]}),
    ('[\n  {"a": 1},\n  {"b": 2},\n]', [{"a": 1}, {"b": 2}]),
    ('{"s": "keep, ]"}', {"s": "keep, ]"}),
    # single quotes and Python literals
    ("{'verdict': 'supported', 'score': 1}", {"verdict": "supported", "score": 1}),
    ("{'text': 'it's a dog', 'ok': True, 'none': None}", {"text": "it's a dog", "ok": True, "none": None}),
    ("{'text': 'say \"hi\"'}", {"text": 'say "hi"'}),
    ("Answer: {'claims': ['A', 'B'],}", {"claims": ["A", "B"]}),
    ('{"quote": "don\'t"}', {"quote": "don't"}),
    # Chinese content
    ('结果如下：{"答案": "30天", "引用": ["fin-010"]}。', {"答案": "30天", "引用": ["fin-010"]}),
])
def test_parses(text, value):
    assert parse_json(text) == value


def test_expect_skips_a_citation_array_before_the_object():
    text = 'According to [1] the answer is {"answer": "yes"}'
    assert parse_json(text) == [1]  # first balanced value wins by default
    assert parse_json(text, expect=dict) == {"answer": "yes"}
    assert parse_json('{"a": 1} and [2]', expect=list) == [2]


@pytest.mark.parametrize("text, says", [
    ("I cannot answer that.", "no JSON object or array found"),
    ("", "no JSON object or array found"),
    ('{"answer": "Paris", "sources": ["d1"', "truncated"),
    ('```json\n{"a": 1,\n', "truncated"),
    ("```json", "truncated"),  # SmolLM2 with max_tokens=3
    ("{'a': 'never closed}", "truncated"),
    ("[1, 2}", "no JSON object or array found"),
    ("{a: 1}", "no JSON object or array found"),  # unquoted keys are not guessed
])
def test_fails_clearly(text, says):
    with pytest.raises(LLMError) as err:
        parse_json(text)
    assert err.value.kind == "bad_json" and says in str(err.value)


def test_failure_quotes_the_output_briefly():
    with pytest.raises(LLMError) as err:
        parse_json("x" * 1000)
    assert "x" * 200 + "..." in str(err.value) and "x" * 201 not in str(err.value)


def test_expect_must_be_dict_or_list():
    with pytest.raises(ValueError):
        parse_json("{}", expect=str)
