"""``LLMClient``: message handling, the backend registry, and usage accounting via ``usage_scope``."""
from __future__ import annotations

import threading

import pytest

from evalkit import llm
from evalkit.llm import (
    BACKENDS,
    LLMClient,
    LLMError,
    LLMSpec,
    Message,
    Usage,
    make_backend,
    usage_scope,
)
from evalkit.llm.client import to_messages

pytestmark = pytest.mark.integration  # loads real models (SmolLM2 / e5)

EVIDENCE = (("hr-001", "New employees receive 15 days of paid annual leave. The office opens at 9."),)


def test_public_api():
    for name in ("LLMClient", "LLMSpec", "LLMError", "CacheMiss", "Message", "ChatRequest", "ChatResponse",
                 "INSUFFICIENT_EVIDENCE", "usage_scope", "Usage", "parse_json"):
        assert hasattr(llm, name), name
    assert set(BACKENDS) == {"openai", "local", "extractive"}


def test_messages_from_strings_dicts_pairs_and_system():
    msgs = to_messages([{"role": "user", "content": "a"}, ("assistant", "b"), Message("user", "c")], system="s")
    assert msgs == (Message("system", "s"), Message("user", "a"), Message("assistant", "b"), Message("user", "c"))
    assert to_messages("hi") == (Message("user", "hi"),)
    with pytest.raises(ValueError, match="role must be one of system, user, assistant"):
        to_messages([{"role": "bot", "content": "x"}])


def test_request_takes_defaults_from_the_spec(tmp_path):
    c = LLMClient(LLMSpec(backend="extractive", max_tokens=77, temperature=0.2, seed=5), tmp_path)
    r = c.request("hi", evidence=[("d", "t")])
    assert (r.max_tokens, r.temperature, r.seed, r.evidence) == (77, 0.2, 5, (("d", "t"),))
    assert c.request("hi", max_tokens=3, temperature=0).max_tokens == 3


def test_unknown_backend_suggests_the_right_one(monkeypatch):
    spec = LLMSpec.model_construct(backend="extractiv")
    with pytest.raises(ValueError, match="did you mean 'extractive'"):
        make_backend(spec)


def test_usage_is_kept_per_purpose_and_per_scope(tmp_path):
    gen = LLMClient(LLMSpec(backend="extractive"), tmp_path, purpose="generate")
    judge = LLMClient(LLMSpec(backend="extractive", cache="off"), tmp_path, purpose="judge")
    with usage_scope() as outer:
        gen.chat("q", question="How much annual leave?", evidence=EVIDENCE)
        with usage_scope() as inner:
            judge.chat("q", question="When does the office open?", evidence=EVIDENCE)
        gen.chat("q", question="How much annual leave?", evidence=EVIDENCE)  # a cache hit
    assert set(inner) == {"judge"} and inner["judge"].calls == 1
    assert set(outer) == {"generate"}
    assert (outer["generate"].calls, outer["generate"].cache_hits) == (2, 1)
    assert outer["generate"].latency_ms > 0


def test_failures_are_recorded_then_raised(tmp_path):
    c = LLMClient(LLMSpec(backend="extractive"), tmp_path, purpose="judge")
    with usage_scope() as usage, pytest.raises(LLMError):
        c.chat_json("q", question="x", evidence=EVIDENCE)  # extractive refuses JSON mode
    assert usage["judge"] == Usage(calls=1, failures=1, latency_ms=usage["judge"].latency_ms)


def test_scopes_are_per_thread(tmp_path):
    c = LLMClient(LLMSpec(backend="extractive", cache="off"), tmp_path)
    seen: dict[str, int] = {}

    def query(name: str) -> None:
        with usage_scope() as usage:
            c.chat("q", question=name, evidence=EVIDENCE)
        seen[name] = usage["generate"].calls

    threads = [threading.Thread(target=query, args=(f"q{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"q0": 1, "q1": 1, "q2": 1}


def test_no_scope_no_error(tmp_path):
    LLMClient(LLMSpec(backend="extractive", cache="off"), tmp_path).chat("q", question="x", evidence=EVIDENCE)


class _Scripted:
    """Stands in for the model only (the cache, the client and usage are the real ones): replies in order."""

    identity = "scripted/v1"

    def __init__(self, *texts: str):
        self.texts, self.calls = list(texts), 0

    def chat(self, request):
        from evalkit.llm import ChatResponse

        self.calls += 1
        return ChatResponse(self.texts.pop(0), tokens_in=5, tokens_out=3)


def test_an_error_message_as_the_reply_is_not_cached_so_the_next_run_asks_again(tmp_path):
    """A gateway answering 200 with "upstream overloaded" was cached and replayed by every later run, so a
    query stayed degraded after the LLM came back; an answer is cached as before."""
    from evalkit.llm import LLMClient, LLMSpec

    spec = LLMSpec(backend="openai", model="m", base_url="http://127.0.0.1:9/v1", cache="read-write")
    backend = _Scripted('{"error": {"message": "Rate limit reached for requests", "code": "429"}}',
                        "The warranty lasts two years [doc-1].", "unused")
    c = LLMClient(spec, tmp_path, backend=backend)
    assert c.chat("How long is the warranty?").text.startswith('{"error"')
    assert c.cache.count() == 0
    again = c.chat("How long is the warranty?")  # the LLM is back: asked again, and this answer is kept
    assert again.text == "The warranty lasts two years [doc-1]." and not again.cache_hit and backend.calls == 2
    third = c.chat("How long is the warranty?")
    assert third.cache_hit and backend.calls == 2 and c.cache.count() == 1


def test_a_json_call_answered_by_an_error_message_fails_as_the_endpoints_not_as_bad_json(tmp_path):
    """bad_json is the model's failure and repeats (an entity graph built with it is cached); an error
    message from the endpoint may not repeat, so it gets its own kind and no corrective retry."""
    from evalkit.llm import LLMClient, LLMError, LLMSpec, usage_scope

    spec = LLMSpec(backend="openai", model="m", base_url="http://127.0.0.1:9/v1", cache="read-write")
    backend = _Scripted("当前分组上游负载已饱和，请稍后再试", '{"entities": [], "relations": []}')
    c = LLMClient(spec, tmp_path, backend=backend, purpose="graph_extract")
    with usage_scope() as usage, pytest.raises(LLMError) as err:
        c.chat_json("Passage: ...", expect=dict)
    assert err.value.kind == "error_reply" and backend.calls == 1  # no corrective retry sent to a failing endpoint
    assert usage["graph_extract"].failures == 1 and c.cache.count() == 0
    value, _ = c.chat_json("Passage: ...", expect=dict)  # the next run: asked again
    assert value == {"entities": [], "relations": []} and c.cache.count() == 1
