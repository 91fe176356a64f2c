"""The ``generate`` node over real HTTP (scripted replies): numbered citations mapped back to
passages, abstention findings (defaults, the node's patterns, the eval set's patterns, a
provider's content filter), and what the per-query record carries for the report."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.errors import EvalSetError
from evalkit.evalsets import freeze, load_eval_set
from evalkit.graph import config_from_dict
from evalkit.nodes.generate import render_evidence
from evalkit.run.runner import RunOptions, run_eval
from evalkit.runstore import read_results

DOCS = [("fin-001", "差旅住宿", "一线城市每晚住宿不超过 750 元。二线城市每晚不超过 550 元。"),
        ("fin-002", "报销时限", "差旅费须在出差结束后 30 天内提交报销。"),
        ("hr-001", "Parental leave", "Fathers get 15 calendar days of paternity leave.")]
QUESTIONS = [("q1", "一线城市住宿标准和报销时限？", ["fin-001", "fin-002"], "zh", "每晚 750 元，30 天内报销。"),
             ("q2", "How many days of paternity leave?", ["hr-001"], "en", "15 calendar days."),
             ("q3", "二线城市住宿标准？", ["fin-001"], "zh", "550 元。"),
             ("q4", "海外出差补贴多少？", [], "zh", None),
             ("q5", "出差住宿有补贴吗？", ["fin-001"], "zh", "没有补贴，只有上限。")]


@pytest.fixture
def evalset(tmp_path: Path) -> Path:
    (tmp_path / "corpora").mkdir()
    corpus = tmp_path / "corpora" / "kb.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}, ensure_ascii=False) + "\n"
                              for i, t, x in DOCS), encoding="utf-8")
    path = tmp_path / "kb.jsonl"
    path.write_text("".join(json.dumps({"id": i, "question": q, "relevant_doc_ids": g, "lang": lang,
                                        "type": "single" if g else "unanswerable", "reference_answer": ref},
                                       ensure_ascii=False) + "\n" for i, q, g, lang, ref in QUESTIONS), encoding="utf-8")
    freeze(path, corpus=str(corpus))
    return path


def _config(base_url: str, **params) -> dict:
    llm = {"backend": "openai", "model": "scripted", "base_url": base_url, "max_retries": 0, "timeout_s": 10.0,
           "cache": "off"}
    return {"name": "rag", "chunking": {"method": "document"},
            "nodes": {"retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "auto", "top_k": 3}}},
                      "generate": {"type": "generate", "params": {"llm": llm, "evidence_from": "retrieved",
                                                                  "evidence_k": 2, **params}}},
            "edges": {"start": "retrieve", "retrieve": "generate", "generate": "end"}}


def _run(evalset: Path, config: dict, out: Path):
    opts = RunOptions(output=out, progress=False, mlflow=False)
    run_eval(load_eval_set(str(evalset)), [config_from_dict(config)], opts, echo=lambda m: None)
    return {r.query_id: r for r in read_results(out.with_suffix("") / "rag" / "per_query.jsonl")}


def test_numbered_citations_abstentions_and_the_record(evalset: Path, tmp_path: Path, scripted_server):
    (tmp_path / "kb.abstention.yaml").write_text('patterns: ["outside my remit"]\nnot_patterns: ["没有补贴"]\n',
                                                 encoding="utf-8")
    scripted_server.push("text:一线城市每晚不超过 750 元 [1]。须在 30 天内报销 [2][7]。",
                         "finish:content_filter",
                         "text:暂无该数据。",
                         "text:That is outside my remit.",
                         "text:没有补贴，每晚住宿不超过 750 元 [1]。")
    got = _run(evalset, _config(scripted_server.base_url, citation_style="numbered",
                                abstention={"patterns": ["暂无该数据"]}), tmp_path / "out.json")
    # q1: [1] and [2] name the first two passages shown; [7] was never shown
    prompt = scripted_server.requests[0].body["messages"][-1]["content"]
    assert "[1] (score" in prompt and "[2] (score" in prompt and "[fin-" not in prompt
    g1 = got["q1"].generation
    shown = [e[1] for e in g1["evidence"]]
    assert g1["used_documents"] == shown[:2] and g1["invalid_citations"] == ["7"]
    assert g1["reference_answer"] == "每晚 750 元，30 天内报销。"
    assert g1["abstention"]["abstained"] is False
    f = g1["citation_findings"]
    assert [x["refs"] for x in f] == [["1"], ["2", "7"]] and f[1]["invalid"] == ["7"]
    assert all(c["evidence_id"] for c in g1["judgement"]["claims"])  # the passage that decided each verdict
    # q2: the provider refused: the detector says so, and the query is degraded (evalkit.run.health), so it
    # stays out of every answer metric and the gate counts it
    assert got["q2"].generation["abstention"]["reason"] == "content_filter"
    assert got["q2"].metrics["degraded"] == 1 and "abstained" not in got["q2"].metrics
    assert [d["cause"] for d in got["q2"].degraded] == ["content_filter"]
    # q3: the node's own pattern; q4: the eval set's pattern
    assert got["q3"].generation["abstention"] == {"abstained": True, "reason": "user_pattern", "matched": "暂无该数据",
                                                  "finish_reason": "stop"}
    # q4 is unanswerable: declining it is counted by "answered" 0 (hallucinated is the answerable-question figure)
    assert got["q4"].generation["abstention"]["source"] == "eval set" and got["q4"].metrics["answered"] == 0
    assert got["q4"].metrics["hallucinated"] is None
    # q5: "没有补贴" would not be a refusal anyway; the eval set's not_pattern says so explicitly
    a5 = got["q5"].generation["abstention"]
    assert a5["abstained"] is False and a5["reason"] == "user_not_pattern"


def test_id_style_is_the_default_and_cites_document_ids(evalset: Path, tmp_path: Path, scripted_server):
    scripted_server.push("text:每晚不超过 750 元 [fin-001]。", "text:15 days [hr-001].", "text:550 元 [fin-001]。",
                         "text:抱歉，我找不到相关信息。", "text:每晚不超过 750 元（来源：fin-001）。")
    got = _run(evalset, _config(scripted_server.base_url), tmp_path / "out.json")
    assert "[fin-001] (score" in scripted_server.requests[0].body["messages"][-1]["content"]
    assert got["q1"].generation["used_documents"] == ["fin-001"]
    assert got["q4"].generation["abstention"]["reason"] == "refusal"  # the defaults: a correct refusal
    assert got["q4"].metrics["answered"] == 0.0 and got["q4"].metrics["hallucinated"] is None
    assert got["q5"].generation["used_documents"] == ["fin-001"]


# a refusal in a wording the rules do not know (written for the test; in no split)
UNSEEN_REFUSAL = ("Good question! Our onboarding guide covers laptops, badges and the VPN, and HR can walk you "
                  "through the rest.")


def test_the_learned_stage_is_on_by_default_and_either_the_node_or_the_eval_set_turns_it_off(
        evalset: Path, tmp_path: Path, scripted_server):
    rules = tmp_path / "kb.abstention.yaml"

    def q2(eval_set_model: str | None, **params) -> dict:
        rules.unlink(missing_ok=True)
        if eval_set_model is not None:
            rules.write_text(f"model: {eval_set_model}\n", encoding="utf-8")
        scripted_server.push("text:每晚不超过 750 元 [fin-001]。", f"text:{UNSEEN_REFUSAL}", "text:550 元 [fin-001]。",
                             "text:抱歉，我找不到相关信息。", "text:没有补贴 [fin-001]。")
        out = tmp_path / f"out{len(scripted_server.requests)}.json"
        return _run(evalset, _config(scripted_server.base_url, **params), out)["q2"].generation["abstention"]

    default = q2(None)
    assert (default["abstained"], default["reason"]) == (True, "learned") and "source" not in default  # the node's
    assert q2(None, abstention={"model": "none"})["reason"] == "answer"
    assert q2(None, abstention={"model": False})["reason"] == "answer"  # YAML's bare off
    by_eval_set = q2("none")  # the eval set turns off the stage that decided at the node
    assert (by_eval_set["abstained"], by_eval_set["reason"], by_eval_set["source"]) == (False, "answer", "eval set")
    on = q2("e5", abstention={"model": "none"})  # and names it where the node turned it off
    assert (on["abstained"], on["reason"], on["source"]) == (True, "learned", "eval set")


def test_render_evidence_styles():
    passages = [("fin-001", "text one", 0.9), ("fin-002", "text two", 0.5)]
    assert render_evidence(passages, 100).startswith("[fin-001] (score 0.900)")
    assert render_evidence(passages, 100, "numbered").split("\n\n")[1].startswith("[2] (score 0.500)")


@pytest.mark.parametrize("text, message", [
    ("patterns: ['(unclosed']\n", "patterns"),
    ("pattern: ['x']\n", "did you mean 'patterns'"),
    ("patterns: 'x'\n", "expected a list"),
])
def test_bad_eval_set_patterns_name_the_file_and_field(evalset: Path, tmp_path: Path, text, message):
    (tmp_path / "kb.abstention.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(EvalSetError, match="kb.abstention.yaml") as e:
        load_eval_set(str(evalset))
    assert message in str(e.value)


def test_bad_node_patterns_fail_at_load(scripted_server):
    from evalkit.errors import EvalkitError

    with pytest.raises((EvalkitError, ValueError), match="not a valid regular expression"):
        config_from_dict(_config(scripted_server.base_url, abstention={"patterns": ["(unclosed"]}))


def test_the_rules_are_part_of_the_run_fingerprint(evalset: Path, tmp_path: Path):
    from evalkit.evalsets.evalset import load_abstention_rules

    assert load_abstention_rules(evalset) is None
    (tmp_path / "kb.abstention.yaml").write_text("patterns: [x]\n", encoding="utf-8")
    a = load_abstention_rules(evalset)
    (tmp_path / "kb.abstention.yaml").write_text("patterns: [y]\n", encoding="utf-8")
    assert a.sha256 != load_abstention_rules(evalset).sha256


def test_the_learned_stages_weights_are_part_of_the_run_fingerprint(evalset: Path, tmp_path: Path):
    """A run resumed after the stage's weights changed would mix findings read with two sets of weights: the weights'
    sha256 is in the resume fingerprint (``run.json``), so such a run starts afresh instead."""
    import hashlib

    config = _config("http://127.0.0.1:9")  # never called: the extractive backend below
    config["nodes"]["generate"]["params"]["llm"] = {"backend": "extractive"}
    out = tmp_path / "out.json"
    messages: list[str] = []

    def run() -> None:
        opts = RunOptions(output=out, progress=False, mlflow=False, resume=True)
        run_eval(load_eval_set(str(evalset)), [config_from_dict(config)], opts, echo=messages.append)

    run()
    meta = out.with_suffix("") / "rag" / "run.json"
    weights = Path(__file__).resolve().parents[2] / "evalkit" / "models" / "data" / "abstention_e5.json"
    fingerprint = json.loads(meta.read_text(encoding="utf-8"))
    assert fingerprint["abstention_stage"] == {"e5": hashlib.sha256(weights.read_bytes()).hexdigest()[:12]}
    run()
    assert any("resuming, 5 finished queries kept" in m for m in messages)
    messages.clear()
    meta.write_text(json.dumps({**fingerprint, "abstention_stage": {"e5": "0" * 12}}), encoding="utf-8")
    run()  # results read with other weights: nothing is kept
    assert not any("resuming" in m for m in messages)
