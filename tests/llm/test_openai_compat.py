"""The ``openai`` backend against a real HTTP server (tests/llm/fault_server.py).

Successful answers come from the real SmolLM2 model behind the server; faults are
scripted per request. Waiting is measured with the server's own request timestamps.
"""
from __future__ import annotations

import email.utils
import logging
import threading
import time
import traceback

import pytest

from evalkit.llm import LLMClient, LLMError, LLMSpec, usage_scope
from evalkit.llm.openai_compat import OpenAIBackend

pytestmark = pytest.mark.integration

KEY_ENV = "EVALKIT_TEST_LLM_KEY"
SECRET = "sk-test-SECRET-5f3a9c17e2"


@pytest.fixture(autouse=True)
def _api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)


def make_spec(base_url: str, **kw) -> LLMSpec:
    settings = {"backend": "openai", "model": "smollm2-135m", "base_url": base_url, "api_key_env": KEY_ENV,
                "timeout_s": 20.0, "max_retries": 2, "max_tokens": 16, "cache": "off"}
    return LLMSpec(**{**settings, **kw})


def client_for(server, tmp_path, **kw) -> LLMClient:
    return LLMClient(make_spec(server.base_url, **kw), tmp_path)


def test_answers_over_real_http_with_smollm2(fault_server, tmp_path):
    client = client_for(fault_server, tmp_path)
    with usage_scope() as usage:
        reply = client.chat("What is the capital of France? Answer in one word.", system="Answer briefly.")
    assert reply.text.strip() and reply.retries == 0
    assert reply.tokens_in > 0 and reply.tokens_out > 0  # from the response's usage
    (seen,) = fault_server.requests
    assert seen.body["model"] == "smollm2-135m" and seen.body["max_tokens"] == 16
    assert seen.body["messages"][0] == {"role": "system", "content": "Answer briefly."}
    assert "response_format" not in seen.body
    assert usage["generate"].calls == 1 and usage["generate"].tokens_out == reply.tokens_out


def test_429_retry_after_is_honoured(fault_server, tmp_path):
    fault_server.push("429:1", "ok")
    reply = client_for(fault_server, tmp_path).chat("Say hi.")
    assert reply.retries == 1
    first, second = fault_server.requests
    assert first.status == 429 and second.status == 200
    assert second.t_start - first.t_end >= 0.95  # Retry-After: 1 s, not the SDK's <= 0.5 s first backoff


def test_500_then_success(fault_server, tmp_path):
    fault_server.push("500", "503", "ok")
    reply = client_for(fault_server, tmp_path).chat("Say hi.")
    assert reply.retries == 2 and reply.text.strip()
    assert [s.status for s in fault_server.requests] == [500, 503, 200]


def test_server_errors_exhaust_retries(fault_server, tmp_path):
    fault_server.push("500", "500", "500")
    with usage_scope() as usage, pytest.raises(LLMError) as err:
        client_for(fault_server, tmp_path).chat("Say hi.")
    assert err.value.kind == "server_error" and err.value.retries == 2
    assert f"after 2 retries at {fault_server.base_url}/chat/completions" in str(err.value)
    assert len(fault_server.requests) == 3
    assert usage["generate"].failures == 1 and usage["generate"].retries == 2 and usage["generate"].calls == 1


def test_timeout_retries_then_fails(fault_server, tmp_path):
    fault_server.push("slow:3", "slow:3", "slow:3")
    client = client_for(fault_server, tmp_path, timeout_s=0.5)
    with pytest.raises(LLMError) as err:
        client.chat("Say hi.")
    assert err.value.kind == "timeout" and err.value.retries == 2
    assert str(err.value) == (f"timed out after 2 retries (deadline 0.5 s per request) at "
                              f"{fault_server.base_url}/chat/completions")
    assert len(fault_server.requests) == 3


def test_malformed_json_body_is_bad_response(fault_server, tmp_path):
    fault_server.push("badjson")
    with pytest.raises(LLMError) as err:
        client_for(fault_server, tmp_path).chat("Say hi.")
    assert err.value.kind == "bad_response" and "not a chat completion" in str(err.value)
    assert len(fault_server.requests) == 1  # not retried


def test_connection_refused(closed_port, tmp_path):
    base = f"http://127.0.0.1:{closed_port}/v1"
    with pytest.raises(LLMError) as err:
        LLMClient(make_spec(base), tmp_path).chat("Say hi.")
    assert err.value.kind == "connection" and err.value.retries == 2
    assert f"could not connect after 2 retries to {base}/chat/completions" in str(err.value)


def test_no_retry_on_400(fault_server, tmp_path):
    fault_server.push("400")
    with pytest.raises(LLMError) as err:
        client_for(fault_server, tmp_path).chat("Say hi.")
    assert err.value.kind == "client_error" and err.value.retries == 0
    assert "HTTP 400 (not retried)" in str(err.value) and "scripted 400" in str(err.value)
    assert len(fault_server.requests) == 1


def test_json_mode_sends_response_format(fault_server, tmp_path):
    client_for(fault_server, tmp_path).chat('Reply with a JSON object {"ok": true}.', json_mode=True)
    assert fault_server.requests[0].body["response_format"] == {"type": "json_object"}


def test_chat_json_repairs_and_corrects_over_http(fault_server, tmp_path):
    client = client_for(fault_server, tmp_path)
    fault_server.push('text:Sure! Here it is:\n```json\n{"answer": "Paris", "score": 2,}\n```')
    value, reply = client.chat_json("Capital of France as JSON?")
    assert value == {"answer": "Paris", "score": 2} and reply.retries == 0

    fault_server.push("text:I think the answer is Paris.", 'text:{"answer": "Paris"}')
    with usage_scope() as usage:
        value, reply = client.chat_json("Capital of France as JSON?", expect=dict)
    assert value == {"answer": "Paris"} and reply.retries == 1
    corrective = fault_server.requests[-1].body["messages"]
    assert corrective[-2] == {"role": "assistant", "content": "I think the answer is Paris."}
    assert corrective[-1]["role"] == "user" and "not valid JSON" in corrective[-1]["content"]
    assert usage["generate"].calls == 2 and usage["generate"].retries == 1 and usage["generate"].failures == 0


def test_api_key_sent_but_never_leaked(fault_server, closed_port, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)  # httpx / httpcore debug logging included
    client = LLMClient(make_spec(fault_server.base_url, cache="read-write"), tmp_path)
    client.chat("Say hi.")
    assert fault_server.requests[0].headers["Authorization"] == f"Bearer {SECRET}"

    errors = []
    impatient = LLMClient(make_spec(fault_server.base_url, cache="read-write", timeout_s=0.5, max_retries=1),
                          tmp_path)
    fault_server.push("echo401", "500", "500", "slow:3", "slow:3")
    for _ in range(3):
        with pytest.raises(LLMError) as err:
            impatient.chat("Say hello again.")
        errors.append(err.value)
    with pytest.raises(LLMError) as err:
        LLMClient(make_spec(f"http://127.0.0.1:{closed_port}/v1", max_retries=0), tmp_path).chat("Hi.")
    errors.append(err.value)
    assert [e.kind for e in errors] == ["client_error", "server_error", "timeout", "connection"]
    assert "***" in str(errors[0]) and KEY_ENV in str(errors[0])  # the echoed key was masked
    for e in errors:
        assert SECRET not in str(e) and SECRET not in repr(e)
        assert SECRET not in "".join(traceback.format_exception(e))
    assert SECRET not in caplog.text
    assert SECRET not in repr(vars(client.backend)) and SECRET not in client.identity
    files = list(tmp_path.glob("llm.sqlite*"))
    assert files and all(SECRET.encode() not in f.read_bytes() for f in files)


def test_missing_key_variable_is_a_config_error(fault_server, tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(LLMError) as err:
        client_for(fault_server, tmp_path).chat("Say hi.")
    assert err.value.kind == "config" and KEY_ENV in str(err.value)
    assert fault_server.requests == []


def test_concurrency_limit_is_respected(fault_server, tmp_path):
    fault_server.push(*["wait:0.3"] * 6)
    client = client_for(fault_server, tmp_path, concurrency=2, max_tokens=4)
    errors: list[BaseException] = []

    def ask(i: int) -> None:
        try:
            client.chat(f"Say the number {i}.")
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(fault_server.requests) == 6
    assert fault_server.max_in_flight == 2  # the limit was reached and never exceeded


def test_openai_backend_needs_a_model():
    with pytest.raises(LLMError, match="needs 'model'"):
        OpenAIBackend(LLMSpec(backend="openai", base_url="http://127.0.0.1:1/v1"))


# --- the whole-request deadline (issue 11: a slow-drip server held one call 126 s with timeout_s: 2) ---------


@pytest.mark.parametrize("drip", ["drip:1", "dripbody:1"])
def test_a_dripping_server_fails_at_the_deadline(fault_server, tmp_path, drip):
    fault_server.push(drip)  # ~330 bytes, one a second: per-read timeouts would wait ~5 minutes
    client = client_for(fault_server, tmp_path, timeout_s=2.0, max_retries=0)
    t0 = time.monotonic()
    with pytest.raises(LLMError) as err:
        client.chat("Say hi.")
    elapsed = time.monotonic() - t0
    assert err.value.kind == "timeout" and err.value.retries == 0
    assert "deadline 2 s per request" in str(err.value)
    assert 1.9 <= elapsed < 3.5, elapsed
    (seen,) = fault_server.requests
    assert seen.action == drip


def test_the_deadline_is_per_request_and_retried(fault_server, tmp_path):
    fault_server.push("drip:1", "drip:1")
    client = client_for(fault_server, tmp_path, timeout_s=1.0, max_retries=1)
    t0 = time.monotonic()
    with pytest.raises(LLMError) as err:
        client.chat("Say hi.")
    elapsed = time.monotonic() - t0
    assert err.value.kind == "timeout" and err.value.retries == 1
    first, second = fault_server.requests
    assert second.t_start - first.t_start >= 1.0  # the first was given its full second
    assert elapsed < 2 * 1.0 + 0.5 + 1.5, elapsed  # two deadlines, the SDK's first wait (<= 0.5 s), slack


def test_a_slow_but_complete_response_within_the_deadline_succeeds(fault_server, tmp_path):
    fault_server.push("dripbody:0.005")  # ~330 bytes in ~1.7 s, every read well under any per-read timeout
    reply = client_for(fault_server, tmp_path, timeout_s=10.0).chat("Say hi.")
    assert reply.text == "dripped" and reply.finish_reason == "stop" and reply.retries == 0


# --- the SDK's retries and waits, seen from the server -----------------------------------------------------


def test_backoff_between_server_errors_is_the_sdks(fault_server, tmp_path):
    fault_server.push("500", "500", "ok")
    reply = client_for(fault_server, tmp_path, max_retries=2).chat("Say hi.")
    assert reply.retries == 2
    a, b, c = fault_server.requests
    # 0.5 s then 1 s, each minus up to 25 % jitter
    assert 0.37 <= b.t_start - a.t_end <= 0.5 + 0.3
    assert 0.75 <= c.t_start - b.t_end <= 1.0 + 0.3


def test_retry_after_as_http_date(fault_server, tmp_path):
    when = email.utils.formatdate(time.time() + 3, usegmt=True)  # whole seconds: waits 2-3 s
    fault_server.push(f"429:{when}", "ok")
    reply = client_for(fault_server, tmp_path).chat("Say hi.")
    first, second = fault_server.requests
    assert reply.retries == 1 and second.t_start - first.t_end >= 1.5


def test_retry_after_beyond_two_minutes_is_not_retried(fault_server, tmp_path):
    fault_server.push("429:600")
    with pytest.raises(LLMError) as err:
        client_for(fault_server, tmp_path).chat("Say hi.")
    assert err.value.kind == "rate_limited" and err.value.retries == 0
    assert "rate limited (HTTP 429) after 0 retries" in str(err.value)
    assert len(fault_server.requests) == 1


def test_no_key_variable_sends_no_authorization_and_ignores_openai_api_key(fault_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # the SDK's default variable must not be picked up
    client_for(fault_server, tmp_path, api_key_env=None).chat("Say hi.")
    assert "Authorization" not in fault_server.requests[0].headers


# --- finish_reason (issue 11: content_filter is a refusal, length a truncated answer) ----------------------


def test_finish_reason_reaches_the_response_and_the_usage(fault_server, tmp_path):
    fault_server.push("finish:length", "finish:content_filter", "finish:stop", "finish:length")
    client = client_for(fault_server, tmp_path)
    with usage_scope() as usage:
        replies = [client.chat(f"Question {i}.") for i in range(4)]
    assert [r.finish_reason for r in replies] == ["length", "content_filter", "stop", "length"]
    assert replies[1].text == ""  # a filtered answer has null content: an empty answer, not a bad response
    assert usage["generate"].finish_reasons == {"length": 2, "content_filter": 1, "stop": 1}
    d = usage["generate"].to_dict()
    assert (d["finish_reason.length"], d["finish_reason.content_filter"], d["finish_reason.stop"]) == (2, 1, 1)
