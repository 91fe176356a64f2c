"""The one secret-masking function: every form a key can travel in is masked, the rest kept."""
from __future__ import annotations

import pytest

from evalkit.redact import looks_like_key, redact, redact_obj

KEY = "sk-proj-Abc123xyz789LMNOPqrstUVW"


@pytest.mark.parametrize("text, kept", [
    (f"http://user:{KEY}@llm.internal:8000/v1", "llm.internal:8000/v1"),
    (f"https://{KEY}@api.example.com/v1", "api.example.com/v1"),
    (f"https://api.example.com/v1?api_key={KEY}&model=x", "model=x"),
    (f"https://api.example.com/v1?foo=1&token={KEY}", "foo=1"),
    (f"POST failed: Authorization: Bearer {KEY} rejected", "rejected"),
    (f"the key {KEY} was pasted", "was pasted"),
    ("https://h/v1?key=AIzaSyD-1234567890abcdefghijklmnopqrs", "https://h/v1"),
])
def test_redact_masks_every_form(text, kept):
    out = redact(text)
    assert KEY not in out and "AIzaSyD" not in out
    assert "***" in out
    assert kept in out


def test_redact_keeps_ordinary_text():
    for text in ("http://localhost:8000/v1", "recall@20 0.85", "user@example.com wrote", "OPENAI_API_KEY",
                 "华南区销售额为 2,240 万元", "https://h/v1?model=qwen&temperature=0"):
        assert redact(text) == text


def test_redact_obj_walks_nested_values():
    obj = {"llm": {"base_url": f"http://u:{KEY}@h/v1", "model": "m"}, "list": [f"?api_key={KEY}", 3]}
    out = redact_obj(obj)
    assert KEY not in repr(out)
    assert out["llm"]["model"] == "m" and out["list"][1] == 3


@pytest.mark.parametrize("value, is_key", [
    ("OPENAI_API_KEY", False), ("DASHSCOPE_API_KEY", False), ("MY_KEY_2", False),
    (KEY, True), ("hf_abcdefghijklmnopqrstuvwxyz12", True), ("AbCdEf1234567890GhIjKl1234567890xyz", True),
    ("abc-def.ghi-jkl-mnop-qrst", True),
])
def test_looks_like_key(value, is_key):
    assert looks_like_key(value) is is_key
