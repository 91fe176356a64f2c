"""How long one ``openai``-backend call lasts against a server that drips its answer.

A local HTTP server on 127.0.0.1 answers a chat completion one byte every ``--interval``
seconds (status line and headers included, ~330 bytes). The call uses ``timeout_s`` and
``max_retries: 0``; the script prints how long it took and how it ended. With a
whole-request deadline the call ends after about ``timeout_s``; with per-read timeouts it
lasts until the server has dripped everything (every single read is fast).

    PYTHONPATH=$PWD python benchmarks/llm_deadline.py --timeout 2 --interval 1

Run it with another checkout on ``PYTHONPATH`` to measure that code instead (the
``OpenAIBackend(spec).chat(request)`` interface is all it uses). ``--give-up`` bounds the
run: the server stops dripping after that many seconds (a client still waiting then
gets a truncated response).
"""
from __future__ import annotations

import argparse
import json
import socket
import threading
import time


def drip_server(interval: float, give_up: float) -> tuple[socket.socket, int]:
    """A one-request-at-a-time server that drips a fixed chat completion."""
    body = json.dumps({"id": "x", "object": "chat.completion", "model": "m",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": "dripped"},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
    reply = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
             "Connection: close\r\n\r\n").encode() + body
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                t0 = time.monotonic()
                try:
                    for i in range(len(reply)):
                        if time.monotonic() - t0 > give_up:
                            break
                        time.sleep(interval)
                        conn.sendall(reply[i:i + 1])
                except OSError:
                    pass  # the client hung up

    threading.Thread(target=serve, daemon=True).start()
    return srv, srv.getsockname()[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=2.0, help="the LLM spec's timeout_s")
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between two bytes")
    ap.add_argument("--give-up", type=float, default=600.0, help="the server stops dripping after this")
    args = ap.parse_args()

    import evalkit
    from evalkit.llm.base import ChatRequest, LLMError, LLMSpec, Message
    from evalkit.llm.openai_compat import OpenAIBackend

    srv, port = drip_server(args.interval, args.give_up)
    spec = LLMSpec(backend="openai", model="m", base_url=f"http://127.0.0.1:{port}/v1", timeout_s=args.timeout,
                   max_retries=0, cache="off")
    backend = OpenAIBackend(spec)  # built outside the timing: only the call is measured
    t0 = time.monotonic()
    try:
        reply = backend.chat(ChatRequest((Message("user", "hi"),)))
        outcome = f"answered {reply.text!r}"
    except LLMError as e:
        outcome = f"LLMError kind={e.kind}: {e}"
    elapsed = time.monotonic() - t0
    srv.close()
    print(f"evalkit from {evalkit.__file__}")
    print(f"timeout_s={args.timeout:g}  drip interval={args.interval:g} s  max_retries=0")
    print(f"call lasted {elapsed:.1f} s  ({elapsed / args.timeout:.1f}x timeout_s): {outcome}")


if __name__ == "__main__":
    main()
