"""`evalkit evalset generate --llm` against a local OpenAI-compatible server that answers by rule.

The server is tests/llm/fault_server.py with its model replaced by ``RuleServer.answer``: the
reply depends on the document shown in the prompt (and the question type the prompt asks for),
never on the order of the requests, so every check and failure path runs whatever the seed:

| document | the server replies | expected outcome |
|---|---|---|
| doc-good | a paraphrased question, an answer the passage states | kept |
| doc-badjson | text with no JSON, twice (the client's corrective retry too) | llm_bad_json |
| doc-lie | an answer with a number the passage does not state (14 hours, not 9) | unsupported |
| doc-vague | an answer with nothing checkable ("Yes, it is.") | not_supported |
| doc-slow | nothing before the client's 3 s deadline | llm_timeout |
| doc-copy | the passage's sentence as the question | copies_passage |
| doc-nokey | JSON without "answer" | bad_item |
| doc-dup1, doc-dup2 | the same question, each supported by its passage | one kept, one near_duplicate |
| doc-chip-a, doc-chip-b | (single) a question the passage answers | kept |
"""
from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from evalkit.cli import cli

DOCS = {
    "doc-good": "The ZX-100 router costs CNY 1,200 and ships within 5 days.",
    "doc-badjson": "The Widget W-7 weighs 3 kilograms.",
    "doc-lie": "The Gadget G-2 battery lasts 9 hours.",
    "doc-vague": "Our office is a friendly place to work.",
    "doc-slow": "The Sleepy S-1 lamp uses 40 watts.",
    "doc-copy": "Employees of Lanxing receive ten days of paid annual leave after one year of service.",
    "doc-nokey": "The Lumen L-3 light has 2 modes.",
    "doc-dup1": "The Orion O-5 phone has 128 GB storage.",
    "doc-dup2": "The Orion O-5 phone has 128 GB of storage in the base model.",
    "doc-chip-a": "The ZX-100 router uses the Orvanta K3 chip.",
    "doc-chip-b": "The Orvanta K3 chip is made in Singapore by Orvanta Semiconductor.",
}
SLOW_S = 6.0
TIMEOUT_S = 3.0  # generous: a loaded CI machine must not time out the calls that answer at once

SINGLE = {
    "doc-good": {"question": "What is the price of the ZX-100 router?", "answer": "The ZX-100 router costs CNY 1,200."},
    "doc-lie": {"question": "How long does the Gadget G-2 battery last?", "answer": "The Gadget G-2 battery lasts 14 hours."},
    "doc-vague": {"question": "Is the office nice?", "answer": "Yes, it is."},
    "doc-copy": {"question": DOCS["doc-copy"], "answer": "Ten days of paid annual leave after one year of service."},
    "doc-nokey": {"question": "How many modes does the Lumen L-3 light have?"},
    "doc-dup1": {"question": "How much storage does the Orion O-5 phone have?",
                 "answer": "The Orion O-5 phone has 128 GB storage."},
    "doc-dup2": {"question": "How much storage does the Orion O-5 phone have?",
                 "answer": "The Orion O-5 phone has 128 GB storage."},
    "doc-chip-a": {"question": "Which chip is inside the ZX-100?", "answer": DOCS["doc-chip-a"]},
    "doc-chip-b": {"question": "Where is the K3 produced?", "answer": DOCS["doc-chip-b"]},
}
UNANSWERABLE = {
    "doc-good": {"question": "What does the ZX-900 router cost?",
                 "answer": "The documents do not give a price for the ZX-900 router."},
    "doc-lie": {"question": "What is the battery life of the Gadget G-2?", "answer": "The Gadget G-2 battery lasts 9 hours."},
}
MULTI_HOP = {"question": "In which country is the chip of the ZX-100 router made?",
             "answer": "The ZX-100 router uses the Orvanta K3 chip. The Orvanta K3 chip is made in Singapore."}


def reply_for(prompt: str) -> str | None:
    """The server's rule: the reply text for a prompt (None: sleep past the client's deadline)."""
    docs = re.findall(r"\[(?:Passage|文段) \d+: ([^\]]+)\]", prompt)
    if "JSON" in prompt and "previous reply was not valid JSON" in prompt:
        return "I am sorry, still no JSON here."
    if "BOTH passages" in prompt:
        return json.dumps(MULTI_HOP)
    doc = docs[0]
    if doc == "doc-slow":
        return None
    if doc == "doc-badjson":
        return "Sure! Here is a question: what does the widget weigh"
    if "LOOKS like" in prompt:
        return json.dumps(UNANSWERABLE.get(doc, {"question": f"What colour is the item of {doc}?",
                                                 "answer": f"The documents do not say what colour {doc} is."}))
    return json.dumps(SINGLE.get(doc, {"question": f"What does document {doc} state?", "answer": DOCS[doc]}))


@pytest.fixture
def rule_server(fault_server):
    """The shared fault server (tests/conftest.py) answering by ``reply_for`` instead of a model."""
    def answer(body: dict) -> dict:
        prompt = "\n".join(m["content"] for m in body["messages"])
        text = reply_for(prompt)
        if text is None:
            time.sleep(SLOW_S)
            text = "{}"
        return {"id": "rule", "object": "chat.completion", "model": body.get("model", ""),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}

    fault_server.answer = answer
    return fault_server


@pytest.fixture
def workspace(tmp_path: Path, rule_server) -> tuple[Path, Path, Path]:
    """(corpus, llm spec, eval set folder) in a scratch folder."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": d, "title": d, "text": t}) + "\n" for d, t in DOCS.items()),
                      encoding="utf-8")
    spec = tmp_path / "llm.yaml"
    spec.write_text(yaml.safe_dump({"backend": "openai", "model": "rule", "base_url": rule_server.base_url,
                                    "max_retries": 0, "timeout_s": TIMEOUT_S, "cache": "off"}), encoding="utf-8")
    return corpus, spec, tmp_path / "sets"


def _generate(workspace, types: str, n: int = 50, extra: tuple[str, ...] = ()) -> tuple[str, list[dict]]:
    corpus, spec, out = workspace
    path = out / "gen.jsonl"
    res = CliRunner().invoke(cli, ["evalset", "generate", "--corpus", str(corpus), "--name", str(path), "--n", str(n),
                                   "--llm", str(spec), "--types", types, "--lang", "en", *extra])
    assert res.exit_code == 0, res.output + repr(res.exception)
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []
    return res.output, lines


def _dropped(output: str) -> Counter:
    m = re.search(r"dropped: (\d+)(?: \((.*)\))?", output)
    return Counter({k: int(v) for k, v in re.findall(r"(\w+) (\d+)", m.group(2) or "")}) if m else Counter()


def test_single_questions_every_check_and_failure(workspace, rule_server):
    output, lines = _generate(workspace, "single")
    kept = {next(iter(x["generated"]["sources"])) for x in lines}
    assert kept - {"doc-dup1", "doc-dup2"} == {"doc-good", "doc-chip-a", "doc-chip-b"}, output
    assert len(kept & {"doc-dup1", "doc-dup2"}) == 1  # whichever came first; the other is its near-duplicate
    assert _dropped(output) == Counter({"llm_bad_json": 1, "unsupported": 1, "not_supported": 1, "llm_timeout": 1,
                                        "copies_passage": 1, "bad_item": 1, "near_duplicate": 1})
    attempts = int(re.search(r"attempts: (\d+)", output).group(1))
    assert attempts == len(DOCS) == len(lines) + sum(_dropped(output).values())
    assert f"kept: {len(lines)}," in output and "near-duplicates found by: lexical 3-gram Jaccard" in output
    # every call reached the server (cache off); bad JSON was asked again once
    calls = int(re.search(r"LLM: (\d+) call\(s\)", output).group(1))
    assert calls == len(rule_server.requests) == len(DOCS) + 1
    assert int(re.search(r"(\d+) failed", output).group(1)) == 2  # the timeout and the JSON still bad after the retry
    for x in lines:
        assert x["type"] == "single" and x["lang"] == "en" and x["generated"]["generator"] == "llm/v1"
        assert x["relevant_doc_ids"] == list(x["generated"]["sources"])
        assert "rule" in x["generated"]["model"] and x["generated"]["checks"]["support"].startswith(("1 supported",))
        assert x["reference_answer"]


def test_unanswerable_is_dropped_when_a_passage_supports_it(workspace):
    output, lines = _generate(workspace, "unanswerable")
    by_source = {next(iter(x["generated"]["sources"])): x for x in lines}
    assert "doc-good" in by_source and by_source["doc-good"]["relevant_doc_ids"] == []
    assert by_source["doc-good"]["type"] == "unanswerable"
    assert "doc-lie" not in by_source  # its "unanswerable" question is answered by doc-lie itself
    assert _dropped(output)["answerable_in_corpus"] == 1


def test_multi_hop_over_two_documents_linked_by_an_entity(workspace):
    output, lines = _generate(workspace, "multi_hop")
    chip = [x for x in lines if set(x["relevant_doc_ids"]) == {"doc-chip-a", "doc-chip-b"}]
    assert len(chip) == 1 and chip[0]["type"] == "multi_hop" and chip[0]["question"] == MULTI_HOP["question"]


def test_an_unknown_type_and_a_bad_llm_spec_are_clear_errors(workspace, tmp_path):
    corpus, spec, out = workspace
    res = CliRunner().invoke(cli, ["evalset", "generate", "--corpus", str(corpus), "--name", str(out / "x.jsonl"),
                                   "--types", "singel"])
    assert res.exit_code == 2 and "unknown type 'singel'" in res.output and "did you mean 'single'" in res.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("backend: openai\nmodel: rule\ntimeout_s: -1\n", encoding="utf-8")
    res = CliRunner().invoke(cli, ["evalset", "generate", "--corpus", str(corpus), "--name", str(out / "x.jsonl"),
                                   "--llm", str(bad)])
    assert res.exit_code == 1 and "bad.yaml" in res.output and "timeout_s" in res.output
    assert not (out / "x.jsonl").exists()


def test_replies_come_from_the_llm_cache_on_a_second_run(workspace, rule_server, tmp_path, monkeypatch):
    corpus, spec, out = workspace
    monkeypatch.setenv("EVALKIT_CACHE", str(tmp_path / "cache"))
    data = yaml.safe_load(spec.read_text(encoding="utf-8"))
    spec.write_text(yaml.safe_dump({**data, "cache": "read-write"}), encoding="utf-8")
    first, lines = _generate(workspace, "single")
    sent = len(rule_server.requests)
    (out / "gen.jsonl").unlink()
    second, again = _generate(workspace, "single")
    # only the timed-out call is asked again: a failed call is never cached
    assert len(rule_server.requests) == sent + 1
    calls = int(re.search(r"LLM: (\d+) call\(s\)", second).group(1))
    hits = int(re.search(r"(\d+) from the cache", second).group(1))
    assert (calls, hits) == (sent, sent - 1)
    assert again == lines


def test_lang_auto_asks_in_each_passage_language(tmp_path, rule_server):
    corpus = tmp_path / "bi.jsonl"
    docs = {"doc-zh": "澜星科技员工每年享有 10 天带薪年假。", "doc-good": DOCS["doc-good"]}
    corpus.write_text("".join(json.dumps({"id": d, "title": d, "text": t}, ensure_ascii=False) + "\n"
                              for d, t in docs.items()), encoding="utf-8")
    SINGLE["doc-zh"] = {"question": "澜星员工一年有几天带薪年假？", "answer": "澜星科技员工每年享有 10 天带薪年假。"}
    DOCS["doc-zh"] = docs["doc-zh"]
    try:
        spec = tmp_path / "llm.yaml"
        spec.write_text(yaml.safe_dump({"backend": "openai", "model": "rule", "base_url": rule_server.base_url,
                                        "max_retries": 0, "timeout_s": TIMEOUT_S, "cache": "off"}), encoding="utf-8")
        path = tmp_path / "bi_set.jsonl"
        _run = CliRunner().invoke(cli, ["evalset", "generate", "--corpus", str(corpus), "--name", str(path),
                                        "--llm", str(spec), "--types", "single"])
        assert _run.exit_code == 0, _run.output
    finally:
        del SINGLE["doc-zh"], DOCS["doc-zh"]
    lines = {next(iter(x["generated"]["sources"])): x for x in map(json.loads, path.read_text(encoding="utf-8").splitlines())}
    assert (lines["doc-zh"]["lang"], lines["doc-good"]["lang"]) == ("zh", "en")
    prompts = {re.search(r"\[(?:文段|Passage) 1: ([^\]]+)\]", r.body["messages"][-1]["content"]).group(1):
               r.body["messages"] for r in rule_server.requests}
    assert "用中文写问题和答案" in prompts["doc-zh"][-1]["content"] and prompts["doc-zh"][0]["role"] == "system"
    assert "Write the question and the answer in English" in prompts["doc-good"][-1]["content"]


def test_near_duplicates_by_the_configured_embedder(workspace, tmp_path, monkeypatch):
    """--embedder e5: the real multilingual e5 (through the embedding cache) finds the same duplicate."""
    monkeypatch.setenv("EVALKIT_CACHE", str(tmp_path / "cache"))
    output, lines = _generate(workspace, "single", extra=("--embedder", "e5"))
    assert "near-duplicates found by: embedding e5 cosine >= 0.95" in output
    assert _dropped(output)["near_duplicate"] == 1
    assert len(lines) == 4 and all(x["generated"]["checks"]["dedup"].startswith("embedding e5") for x in lines)
    assert list((tmp_path / "cache").glob("embeddings.sqlite*"))  # the vectors went through the content cache
