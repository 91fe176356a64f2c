"""The content-addressed LLM cache: keys, modes, and the client going through it.

The backend behind the client is the real local SmolLM2, wrapped to count the calls
that reach it.
"""
from __future__ import annotations

import dataclasses
import threading

import pytest

from evalkit.llm import (
    CacheMiss,
    ChatRequest,
    ChatResponse,
    LLMClient,
    LLMSpec,
    Message,
    usage_scope,
)
from evalkit.llm.cache import LLMCache, request_key
from evalkit.llm.local import LocalBackend

pytestmark = pytest.mark.integration  # loads real models (SmolLM2 / e5)


class Counting:
    """A real backend, counting the requests that reach it."""

    def __init__(self, inner):
        self.inner, self.identity, self.calls = inner, inner.identity, 0

    def chat(self, request: ChatRequest) -> ChatResponse:
        self.calls += 1
        return self.inner.chat(request)


@pytest.fixture(scope="module")
def smollm2():
    return LocalBackend(LLMSpec(backend="local"))


def client(tmp_path, smollm2, mode: str) -> LLMClient:
    spec = LLMSpec(backend="local", max_tokens=8, cache=mode)
    return LLMClient(spec, tmp_path, backend=Counting(smollm2))


def test_read_write_hit_is_identical_and_skips_the_backend(tmp_path, smollm2):
    c = client(tmp_path, smollm2, "read-write")
    with usage_scope() as usage:
        first = c.chat("Name a colour.")
        second = c.chat("Name a colour.")
    assert c.backend.calls == 1
    assert not first.cache_hit and second.cache_hit
    assert (second.text, second.tokens_in, second.tokens_out, second.finish_reason) == \
        (first.text, first.tokens_in, first.tokens_out, first.finish_reason)
    u = usage["generate"]
    assert (u.calls, u.cache_hits) == (2, 1)
    assert u.tokens_out == 2 * first.tokens_out  # answer tokens count whether or not they were cached


def test_a_new_client_reads_what_another_wrote(tmp_path, smollm2):
    client(tmp_path, smollm2, "read-write").chat("Name a fruit.")
    again = client(tmp_path, smollm2, "replay-only")
    assert again.chat("Name a fruit.").cache_hit and again.backend.calls == 0


def test_replay_only_miss_raises_and_says_how_to_fill(tmp_path, smollm2):
    c = client(tmp_path, smollm2, "replay-only")
    with usage_scope() as usage, pytest.raises(CacheMiss) as err:
        c.chat("Name an animal that is never cached.")
    msg = str(err.value)
    assert "replay-only" in msg and "Name an animal" in msg and "cache: read-write" in msg
    assert str(tmp_path / "llm.sqlite") in msg and err.value.kind == "cache_miss"
    assert c.backend.calls == 0 and usage["generate"].failures == 1


def test_off_never_reads_or_writes(tmp_path, smollm2):
    c = client(tmp_path, smollm2, "off")
    c.chat("Name a planet.")
    c.chat("Name a planet.")
    assert c.backend.calls == 2
    assert not (tmp_path / "llm.sqlite").exists()


def test_every_request_field_is_in_the_key():
    base = ChatRequest(messages=(Message("user", "hi"),))
    changed = {
        "messages": (Message("user", "hi!"),), "temperature": 0.7, "max_tokens": 9, "json_mode": True,
        "seed": 1, "stop": ("\n",), "question": "q", "evidence": (("d1", "text"),),
    }
    assert set(changed) == {f.name for f in dataclasses.fields(ChatRequest)}
    keys = {request_key("backend=local", dataclasses.replace(base, **{k: v})) for k, v in changed.items()}
    keys.add(request_key("backend=local", base))
    keys.add(request_key("backend=openai", base))  # another backend identity
    assert len(keys) == len(changed) + 2
    assert request_key("backend=local", base) == request_key("backend=local", ChatRequest((Message("user", "hi"),)))


def test_default_location_is_the_evalkit_cache_root(tmp_path, monkeypatch, smollm2):
    monkeypatch.setenv("EVALKIT_CACHE", str(tmp_path / "root"))
    c = LLMClient(LLMSpec(backend="local", max_tokens=4), backend=Counting(smollm2))
    c.chat("Say yes.")
    assert c.cache.path == tmp_path / "root" / "llm.sqlite" and c.cache.count() == 1


def test_cache_is_thread_safe(tmp_path):
    cache = LLMCache(tmp_path / "llm.sqlite")
    requests = [ChatRequest((Message("user", f"q{i}"),)) for i in range(40)]

    wrong: list[str] = []

    def work(part: list[ChatRequest]) -> None:
        for r in part:
            cache.put("id", r, ChatResponse(text=r.messages[0].content.upper(), tokens_out=3))
            if cache.get("id", r).text != r.messages[0].content.upper():
                wrong.append(r.messages[0].content)

    threads = [threading.Thread(target=work, args=(requests[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong and cache.count() == 40


def test_unknown_mode_lists_the_valid_ones(tmp_path):
    with pytest.raises(ValueError, match="valid: off, read-write, replay-only"):
        LLMCache(tmp_path / "x.sqlite", "write-only")
