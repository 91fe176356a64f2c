"""Graph triples the generator was shown and quoted ("A --co_occurs--> B [doc]") are judged as the
statement they stand for, not as a code "co_occurs" missing from the evidence.

The answers are real: lines the extractive generator wrote from graph_local's triples on the demo
(graph_configs/mechanisms/graphrag_local_rag_triples.yaml, 2026-12-01), judged against the title
and text of the documents shown (eval_sets/corpora/demo_kb.jsonl). Before the fix every one of
them was "unsupported: code 'co_occurs' not in evidence" (31 of 120 answers flagged).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.judges.offline import OfflineJudge, triple_statement

CORPUS = Path(__file__).resolve().parents[2] / "eval_sets" / "corpora" / "demo_kb.jsonl"


@pytest.fixture(scope="module")
def docs() -> dict[str, str]:
    rows = [json.loads(x) for x in CORPUS.read_text(encoding="utf-8").splitlines() if x.strip()]
    return {d["id"]: f"{d['title']}\n{d['text']}" for d in rows}


@pytest.fixture(scope="module")
def judge() -> OfflineJudge:
    return OfflineJudge()


def verdicts(judge, docs, question, answer, ids):
    return [(c.claim, c.verdict, c.reason) for c in judge.judge(question, answer, [(d, docs[d]) for d in ids]).claims]


@pytest.mark.parametrize("question,answer,ids", [
    ("How many days a week can I work from home?",
     ("Remote Work Policy --co_occurs--> following week [hr-008]\nFrequency: employees may work remotely 1 day "
      "per week with their manager's approval. [hr-012]"), ["hr-008", "hr-012"]),
    ("What is the LX-300?",
     ("The LX-300 is an edge AI terminal with a built-in touch display, used for visual inspection, people "
      "counting and operator dashboards. [prod-003]\nLX-300 --co_occurs--> LX-200 [prod-009]"),
     ["prod-003", "prod-009"]),
    ("Can I use a USB stick on my work laptop?", "USB --co_occurs--> Acceptable Use Policy [sec-003]", ["sec-003"]),
    ("LX-200 Pro 的主控芯片由哪家公司供应？", "岚屿微电子（合肥）有限公司 --co_occurs--> SoC [sup-001]", ["sup-001"]),
    ("metrics.export_port 的默认值是多少？", "metrics.export_port --co_occurs--> 指标端口 [cfg-012]", ["cfg-012"]),
])
def test_a_quoted_triple_whose_names_the_evidence_holds_is_supported(judge, docs, question, answer, ids):
    got = verdicts(judge, docs, question, answer, ids)
    assert got and all(v == "supported" for _, v, _ in got), got
    assert all("co_occurs" not in r for _, _, r in got)
    assert any("-->" in c for c, _, _ in got)  # the verdict names the claim as the answer wrote it


@pytest.mark.parametrize("answer,ids,missing", [
    ("LX-300 --co_occurs--> LX-900 [prod-009]", ["prod-009"], "LX-900"),                 # a code the source lacks
    ("Remote Work Policy --co_occurs--> Orvanta Semiconductor [hr-008]", ["hr-008"], "Orvanta"),  # a name it lacks
    ("岚屿微电子（合肥）有限公司 --co_occurs--> 汀岚通信 [sup-001]", ["sup-001"], "汀岚"),  # another supplier
])
def test_a_triple_naming_what_its_source_does_not_hold_is_unsupported(judge, docs, answer, ids, missing):
    got = verdicts(judge, docs, "What is related?", answer, ids)
    assert [v for _, v, _ in got] == ["unsupported"], got
    assert missing in got[0][2]


def test_triple_statement_reads_the_arrow_notation_and_leaves_other_claims_alone():
    assert triple_statement("USB --co_occurs--> Acceptable Use Policy") == "USB and Acceptable Use Policy"
    assert triple_statement("内网 --co_occurs--> AppHub") == "内网、AppHub"
    assert triple_statement("LX-200 Pro --supplied_by--> Orvanta") == "LX-200 Pro supplied by Orvanta"
    for plain in ("The fee rose from 10 to 12 -- a 20% rise.", "Set retry.max_attempts --> 5", "A -> B"):
        assert triple_statement(plain) == plain
