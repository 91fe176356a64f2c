"""A small RAG service to evaluate as "your own pipeline": BM25 over a corpus, and an extractive answer.

Stands in for a user's in-house service in the docs (docs/byo.md) and the tests of the
``http`` node. It is deliberately *not* evalkit's retrieval: whole documents (no
chunking), rank-bm25's ``BM25Okapi`` with its defaults, words lower-cased and Chinese cut
by jieba, no stemming. Endpoints (POST, JSON):

* ``/search`` ``{"question", "top_k"?}`` -> ``{"retrieved": [{"doc_id", "score"}]}``
* ``/rag`` ``{"question", "top_k"?}`` -> the same plus ``answer`` (the sentence of the top 3
  documents sharing most words with the question, cited ``[doc-id]``; a refusal when none
  shares a word) and ``contexts`` (``[{"doc_id", "text"}]`` of those 3 documents).

For tests, a fault script (``service.push("429:1", "500", "slow:3", "drip:0.3", "badjson")``)
makes the next requests fail or stall; every request is recorded (``service.requests``).

    python examples/byo_service.py --corpus eval_sets/corpora/demo_kb.jsonl --port 8765
"""
from __future__ import annotations

import argparse
import json
import re
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REFUSAL = "The knowledge base has no reliable evidence for this question."
_WORD = re.compile(r"[a-z0-9]+(?:[-.][a-z0-9]+)*")
_CJK = re.compile(r"[\u4e00-\u9fff]+")
_SENTENCE = re.compile(r"(?<=[。！？.!?])\s*|\n+")


def tokens(text: str) -> list[str]:
    import jieba

    low = text.lower()
    out = _WORD.findall(low)
    for run in _CJK.findall(low):
        out += [t for t in jieba.lcut(run) if t.strip()]
    return out


class Bm25Service:
    """The service's logic and its HTTP server on 127.0.0.1 (a free port unless given)."""

    def __init__(self, corpus: str | Path, port: int = 0):
        import jieba
        from rank_bm25 import BM25Okapi

        jieba.setLogLevel(60)
        self.docs = [json.loads(x) for x in Path(corpus).read_text(encoding="utf-8").splitlines() if x.strip()]
        self.bm25 = BM25Okapi([tokens(f"{d.get('title', '')} {d['text']}") for d in self.docs])
        self.script: deque[str] = deque()
        self.requests: list[dict[str, Any]] = []
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def search(self, question: str, top_k: int = 10) -> list[dict[str, Any]]:
        scores = self.bm25.get_scores(tokens(question))
        order = sorted(range(len(self.docs)), key=lambda i: (-scores[i], i))[:top_k]
        return [{"doc_id": self.docs[i]["id"], "score": round(float(scores[i]), 6)} for i in order if scores[i] > 0]

    def rag(self, question: str, top_k: int = 10) -> dict[str, Any]:
        retrieved = self.search(question, top_k)
        by_id = {d["id"]: d for d in self.docs}
        top = [by_id[r["doc_id"]] for r in retrieved[:3]]
        asked = set(tokens(question))
        best = (0, "", "")
        for d in top:
            for sentence in filter(None, (s.strip() for s in _SENTENCE.split(d["text"]))):
                overlap = len(asked & set(tokens(sentence)))
                if overlap > best[0]:
                    best = (overlap, sentence, d["id"])
        answer = f"{best[1]} [{best[2]}]" if best[0] else REFUSAL
        return {"retrieved": retrieved, "answer": answer,
                "contexts": [{"doc_id": d["id"], "text": d["text"]} for d in top]}

    def push(self, *actions: str) -> Bm25Service:
        self.script.extend(actions)
        return self

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with service._lock:
                    action = service.script.popleft() if service.script else "ok"
                    service.in_flight += 1
                    service.max_in_flight = max(service.max_in_flight, service.in_flight)
                    service.requests.append({"t": time.monotonic(), "path": self.path, "body": body,
                                             "headers": dict(self.headers), "action": action})
                self._counted = True
                try:
                    self._answer(action, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its deadline): nothing to answer
                finally:
                    self._done()

            def _done(self) -> None:
                """Leave the in-flight count as the response starts (the client may send its next request
                as soon as it has read this one, before this handler thread returns)."""
                if self._counted:
                    self._counted = False
                    with service._lock:
                        service.in_flight -= 1

            def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
                self._done()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)

            def _answer(self, action: str, body: dict[str, Any]) -> None:
                kind, _, arg = action.partition(":")
                if kind == "429":
                    return self._send(429, b'{"error": "slow down"}', {"Retry-After": arg} if arg else {})
                if kind in ("500", "503", "400"):
                    return self._send(int(kind), b'{"error": "scripted"}')
                if kind == "badjson":
                    return self._send(200, b"<html>not json</html>")
                if kind == "slow":
                    time.sleep(float(arg))
                top_k = int(body.get("top_k") or 10)
                result = (service.rag(body["question"], top_k) if self.path.startswith("/rag")
                          else {"retrieved": service.search(body["question"], top_k)})
                payload = json.dumps(result, ensure_ascii=False).encode("utf-8")
                if kind == "drip":  # headers at once, then the body one byte per interval
                    self._done()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    for i in range(len(payload)):
                        self.wfile.write(payload[i:i + 1])
                        self.wfile.flush()
                        time.sleep(float(arg))
                    return None
                return self._send(200, payload)

        return Handler

    def __enter__(self) -> Bm25Service:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default="eval_sets/corpora/demo_kb.jsonl")
    ap.add_argument("--port", type=int, default=8765)
    args = ap.parse_args()
    with Bm25Service(args.corpus, args.port) as service:
        print(f"serving {service.url}/search and {service.url}/rag (Ctrl-C to stop)", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
