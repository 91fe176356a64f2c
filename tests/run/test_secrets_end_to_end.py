"""A real small run with keys in an LLM's base_url: no file it writes, MLflow store included, holds a key.

The graphs call an ``openai`` LLM on the scripted OpenAI-compatible server of
``tests/llm/fault_server.py`` (a real HTTP endpoint on 127.0.0.1). Keys travel in the URL's
userinfo, in its query string, in a header (the value of the variable ``api_key_env``
names) and in a leaky server's error page. The run is the real CLI in a subprocess, MLflow
on (its default sqlite store and artifact folder), then ``evalkit report``; afterwards every
file under the output folder and the cache, and everything printed, is searched for each key.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalkit.evalsets import freeze

REPO = Path(__file__).resolve().parents[2]
USERINFO_KEY = "sk-FAKEuserinfo1234567890abcdef"
QUERY_KEY = "QKEYfake0987654321zyxwvu"
ENV_KEY = "envkey-0123456789-abcdefghij"
PASTED = "sk-PASTEDkey1234567890abcdefgh"
KEYS = (USERINFO_KEY, QUERY_KEY, ENV_KEY)

DOCS = [("d1", "Laptop repair", "Open a ticket in the IT portal; repairs take 3 business days."),
        ("d2", "Travel", "Hotels in tier-one cities are refunded up to 600 per night."),
        ("d3", "Error codes", "Error E-4012 means the battery controller failed.")]
QUESTIONS = [("q1", "how long does a laptop repair take", ["d1"]), ("q2", "hotel refund per night", ["d2"]),
             ("q3", "what does E-4012 mean", ["d3"])]


def _graph(name: str, llm: str, on_error: bool = True) -> str:
    text = (f"name: {name}\nnodes:\n  retrieve: {{type: retrieve, params: {{bm25: {{tokenizer: en, top_k: 3}}}}}}\n"
            f"  generate: {{type: generate, params: {{evidence_from: retrieved, llm: {llm}}}}}\n"
            "edges: {start: retrieve, retrieve: generate, generate: end}\n")
    return text + ("on_error: {generate: end}\n" if on_error else "")


@pytest.fixture
def evalset(tmp_path: Path) -> Path:
    (tmp_path / "corpora").mkdir()
    corpus = tmp_path / "corpora" / "kb.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in DOCS))
    path = tmp_path / "kb.jsonl"
    path.write_text("".join(json.dumps({"id": i, "question": q, "relevant_doc_ids": g, "type": "single",
                                        "lang": "en"}) + "\n" for i, q, g in QUESTIONS))
    freeze(path, corpus=str(corpus))
    return path


def _cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evalkit.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def _files_with(root: Path, needle: str) -> list[str]:
    """Every file under ``root`` whose bytes contain ``needle`` (sqlite databases included)."""
    raw = needle.encode()
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and raw in p.read_bytes())


def test_no_key_reaches_any_file_or_the_console(tmp_path: Path, evalset: Path, scripted_server):
    host = f"127.0.0.1:{scripted_server.port}"
    replies = ["text:Repairs take 3 business days [d1].", "text:Up to 600 per night [d2].",
               "text:The battery controller failed [d3]."]
    scripted_server.push(*replies)                # variant userinfo: answers
    scripted_server.push(*replies)                # variant query: answers
    scripted_server.push("echo401", "echo401", "echo401")  # variant header: the server quotes the key back
    graphs = tmp_path / "graphs"
    graphs.mkdir()
    (graphs / "userinfo.yaml").write_text(_graph(
        "userinfo", f'{{backend: openai, model: m, max_retries: 0, base_url: "http://user:{USERINFO_KEY}@{host}/v1"}}'))
    (graphs / "query.yaml").write_text(_graph(
        "query", f'{{backend: openai, model: m, max_retries: 0, base_url: "http://{host}/v1?api_key={QUERY_KEY}"}}'))
    (graphs / "header.yaml").write_text(_graph(
        "header", f'{{backend: openai, model: m, max_retries: 0, base_url: "http://{host}/v1", '
                  'api_key_env: TEST_LLM_API_KEY}'))
    out, cache = tmp_path / "results", tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": str(REPO), "EVALKIT_CACHE": str(cache), "TEST_LLM_API_KEY": ENV_KEY,
           "MLFLOW_DISABLE_TELEMETRY": "true"}
    run = _cli("run", "--eval-set", f"{evalset}@v1", "--graph-config", str(graphs / "userinfo.yaml"),
               "--graph-config", str(graphs / "query.yaml"), "--graph-config", str(graphs / "header.yaml"),
               "--output", str(out / "kb.json"), "--no-progress", cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    report = _cli("report", str(out / "kb.json"), cwd=tmp_path, env=env)
    assert report.returncode == 0, report.stderr[-3000:]

    # the keys really travelled: to the server, in the URL, the query string and the header
    seen = scripted_server.requests
    assert len(seen) == 9
    assert all(r.headers.get("Authorization", "").startswith("Basic ") for r in seen[:3])
    assert all(r.path == f"/v1/chat/completions?api_key={QUERY_KEY}" for r in seen[3:6])
    assert [r.status for r in seen] == [200] * 6 + [401] * 3
    assert all(r.headers.get("Authorization") == f"Bearer {ENV_KEY}" for r in seen[6:])

    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert any(p.endswith("mlflow.db") for p in written) and any("mlartifacts" in p for p in written)
    assert any(p.endswith("config.yaml") for p in written) and any(p.endswith("report.html") for p in written)
    assert any(p.endswith("llm.sqlite") for p in written)
    for key in KEYS:
        assert _files_with(tmp_path / "results", key) == [], key
        assert _files_with(cache, key) == [], key
        for proc in (run, report):
            assert key not in proc.stdout + proc.stderr

    # what the records say instead: masked, but still telling which host and parameter
    rows = {name: [json.loads(line) for line in (out / "kb" / name / "per_query.jsonl").read_text().splitlines()]
            for name in ("userinfo", "query", "header")}
    assert rows["userinfo"][0]["generation"]["generator"].endswith(f"base_url=http://***@{host}/v1")
    assert rows["query"][0]["generation"]["generator"].endswith(f"base_url=http://{host}/v1?api_key=***")
    header_error = json.dumps(rows["header"][0]["trace"])
    assert "HTTP 401" in header_error and "Bearer ***" in header_error


def test_a_pasted_key_is_refused_and_never_printed(tmp_path: Path, evalset: Path):
    (tmp_path / "pasted.yaml").write_text(_graph(
        "pasted", f"{{backend: openai, model: m, base_url: 'http://127.0.0.1:9/v1', api_key_env: {PASTED}}}"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "EVALKIT_CACHE": str(tmp_path / "cache")}
    for args in (("graph", "check", "pasted.yaml"), ("graph", "show", "pasted.yaml"),
                 ("run", "--eval-set", f"{evalset}@v1", "--graph-config", "pasted.yaml", "--output", "r/x.json",
                  "--no-mlflow")):
        proc = _cli(*args, cwd=tmp_path, env=env)
        assert proc.returncode != 0
        assert "api_key_env" in proc.stderr and "looks like a key" in proc.stderr
        assert PASTED not in proc.stdout + proc.stderr
    assert _files_with(tmp_path, PASTED) == ["pasted.yaml"]  # only the user's own file holds it
