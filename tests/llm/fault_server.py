"""A small OpenAI-compatible HTTP server for tests: real SmolLM2 answers, or scripted faults.

``POST /v1/chat/completions`` is answered by the REAL ``local`` backend (SmolLM2 via
xllamacpp), unless the next entry of the fault script says otherwise. The script is a
queue consumed one entry per request (empty queue = ``ok``):

| entry | response |
|---|---|
| ``ok`` | the model's answer, with ``usage`` |
| ``slow:S`` | sleep S seconds, then the model's answer (past a client timeout) |
| ``wait:S`` | sleep S seconds, then the fixed answer ``waited`` (holds a request in flight) |
| ``429`` / ``429:S`` | HTTP 429, with ``Retry-After: S`` when given |
| ``500`` / ``503`` / ``400`` / ``401`` | that status with an OpenAI-style error body |
| ``badjson`` | HTTP 200 whose body is not JSON |
| ``echo401`` | HTTP 401 whose body quotes the request's Authorization header (a leaky server) |
| ``text:T`` | a well-formed completion whose content is T (for the client's JSON repair paths) |
| ``drip:S`` | the whole response (status line, headers, body: a completion ``dripped``) one byte every S seconds |
| ``dripbody:S`` | headers at once, then that body one byte every S seconds |
| ``finish:R`` | a completion whose ``finish_reason`` is R; its content is null for ``content_filter`` |

A drip stops when the client hangs up (the next write fails), so it never outlives a
client that gave up by more than a byte or two.

Every request is recorded (``Seen``: start/end times on the server's clock, the
action, path with its query string, headers, body), and the number of requests in flight is tracked, so tests
assert on what the server saw rather than on wall-clock time in the test. For a
refused connection use ``closed_port()``: a port that was bound, then released.

Run it by hand: ``python tests/llm/fault_server.py`` (serves until Ctrl-C).
"""
from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from evalkit.llm.base import ChatRequest, LLMSpec, Message


class Headers(dict):
    """Request headers by case-insensitive name (HTTP clients differ in the case they send)."""

    def __init__(self, items: Any = ()):
        super().__init__((str(k).lower(), v) for k, v in items)

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return super().__contains__(str(name).lower())

    def get(self, name: str, default: Any = None) -> Any:
        return super().get(name.lower(), default)


@dataclass
class Seen:
    """One request as the server saw it."""

    action: str
    t_start: float
    headers: Headers
    body: dict[str, Any] | None
    path: str = ""
    t_end: float = 0.0
    status: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def closed_port() -> int:
    """A local port nothing listens on (bound to find it free, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FaultServer:
    """An OpenAI-compatible endpoint on 127.0.0.1 with a per-request fault script."""

    def __init__(self, spec: LLMSpec | None = None):
        self.spec = spec or LLMSpec(backend="local")
        self._backend: Any = None
        self.script: deque[str] = deque()
        self.requests: list[Seen] = []
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def push(self, *actions: str) -> Self:
        """Append entries to the fault script."""
        self.script.extend(actions)
        return self

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- used by the handler --------------------------------------------------------
    def begin(self, seen: Seen) -> None:
        with self._lock:
            self.requests.append(seen)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def end(self, seen: Seen) -> None:
        with self._lock:
            self.in_flight -= 1
            seen.t_end = time.monotonic()

    def next_action(self) -> str:
        with self._lock:
            return self.script.popleft() if self.script else "ok"

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """A chat completion produced by the real local backend."""
        if self._backend is None:
            from evalkit.llm.local import LocalBackend

            self._backend = LocalBackend(self.spec)
        request = ChatRequest(
            messages=tuple(Message(m["role"], m["content"]) for m in body["messages"]),
            temperature=float(body.get("temperature", 0.0)), max_tokens=int(body.get("max_tokens", 32)),
            json_mode=(body.get("response_format") or {}).get("type") == "json_object",
            seed=int(body.get("seed", 0)), stop=tuple(body.get("stop") or ()))
        reply = self._backend.chat(request)
        return _completion(reply.text, reply.finish_reason, reply.tokens_in, reply.tokens_out, body.get("model", ""))


def _completion(text: str | None, finish: str, tokens_in: int, tokens_out: int, model: str) -> dict[str, Any]:
    """An OpenAI chat.completion body."""
    return {
        "id": "chatcmpl-fault", "object": "chat.completion", "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out, "total_tokens": tokens_in + tokens_out},
    }


def _handler(server: FaultServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

        def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timed out) before we answered

        def _drip(self, payload: bytes, interval: float, headers_at_once: bool) -> None:
            """Write a 200 response slowly: byte by byte, ``interval`` seconds apart (see ``drip:S``)."""
            head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
                    "Connection: close\r\n\r\n").encode()
            self.close_connection = True
            try:
                if headers_at_once:
                    self.wfile.write(head)
                    self.wfile.flush()
                    head = b""
                for i in range(len(head) + len(payload)):
                    time.sleep(interval)
                    self.wfile.write((head + payload)[i:i + 1])
                    self.wfile.flush()
            except OSError:
                pass  # the client hung up: it timed out, as it should

        def _client_gone(self) -> bool:
            """True when the client closed the connection (e.g. it timed out) while we were sleeping."""
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            try:
                return self.connection.recv(1, socket.MSG_PEEK) == b""
            except OSError:
                return True

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            action = server.next_action()
            seen = Seen(action, time.monotonic(), Headers(self.headers.items()), body, path=self.path)
            server.begin(seen)
            status, payload, headers = 200, b"", {}
            drip: tuple[bytes, float, bool] | None = None
            try:
                if self.path.split("?", 1)[0].rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                    status, payload = 404, b'{"error": {"message": "not found"}}'
                elif action.startswith("slow:"):
                    time.sleep(float(action.split(":", 1)[1]))
                    if self._client_gone():
                        status, payload = 499, b""  # nobody to answer: spare the CPU the model run
                    else:
                        payload = json.dumps(server.answer(body)).encode()
                elif action.startswith("wait:"):
                    time.sleep(float(action.split(":", 1)[1]))
                    payload = json.dumps(_completion("waited", "stop", 1, 1, body.get("model", ""))).encode()
                elif action.startswith("429"):
                    status, payload = 429, b'{"error": {"message": "rate limited", "type": "rate_limit"}}'
                    if ":" in action:
                        headers["Retry-After"] = action.split(":", 1)[1]
                elif action.isdigit():
                    status = int(action)
                    payload = json.dumps({"error": {"message": f"scripted {action}", "type": "test"}}).encode()
                elif action == "badjson":
                    payload = b'{"choices": [{"message": {"content": "oops"'
                elif action == "echo401":
                    status = 401
                    payload = json.dumps({"error": {"message": f"bad key: {self.headers.get('Authorization')}"}}).encode()
                elif action.startswith(("drip:", "dripbody:")):
                    kind, interval = action.split(":", 1)
                    completion = json.dumps(_completion("dripped", "stop", 1, 1, body.get("model", ""))).encode()
                    drip = (completion, float(interval), kind == "dripbody")
                elif action.startswith("finish:"):
                    reason = action.split(":", 1)[1]
                    text = None if reason == "content_filter" else f"an answer that ended by {reason}"
                    payload = json.dumps(_completion(text, reason, 3, 5, body.get("model", ""))).encode()
                elif action.startswith("text:"):
                    payload = json.dumps(_completion(action[5:], "stop", 0, 0, body.get("model", ""))).encode()
                else:
                    payload = json.dumps(server.answer(body)).encode()
            except Exception as e:  # noqa: BLE001 - the model failed: answer like a real server would
                status, payload = 500, json.dumps({"error": {"message": f"{type(e).__name__}: {e}"}}).encode()
            finally:
                seen.status = 200 if drip else status
                if not drip:
                    server.end(seen)
            if drip:
                self._drip(*drip)
                server.end(seen)
                return
            self._send(status, payload, headers)

    return Handler


if __name__ == "__main__":
    with FaultServer() as srv:
        print(f"serving {srv.base_url}/chat/completions (Ctrl-C to stop)")
        try:
            while True:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
