"""The learned abstention stage in ``evalkit score --answers``: on by default, turned off or named by an eval set
(``model: none`` / ``model: e5`` in NAME.abstention.yaml)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.errors import EvalkitError
from evalkit.scoring import score_answers

# a refusal in a wording the rules do not know (written for the test; in no split)
UNSEEN_REFUSAL = ("Good question! Our onboarding guide covers laptops, badges and the VPN, and HR can walk you "
                  "through the rest.")


def test_the_stage_reads_scored_answers_unless_the_eval_set_turns_it_off(tmp_path: Path, make_eval_set):
    es = make_eval_set(tmp_path / "es")
    answers = tmp_path / "a.jsonl"
    answers.write_text(json.dumps({"id": "q4", "answer": UNSEEN_REFUSAL, "retrieved": []}) + "\n", encoding="utf-8")

    def finding() -> tuple[dict, dict]:
        (r,) = [r for r in score_answers(answers, "mine", eval_set=f"{es}@v1", metrics=("hit@5",)).results
                if r.query_id == "q4"]
        return r.generation["abstention"], r.metrics

    default, metrics = finding()  # no rules file: the defaults, the stage among them
    assert (default["reason"], default["abstained"], default["source"]) == ("learned", True, "defaults")
    assert metrics["abstained"] == 1.0
    rules = es.with_name(es.stem + ".abstention.yaml")
    for off in ("model: none\n", "model: off\n", "model: false\n"):  # YAML reads a bare off as False
        rules.write_text(off, encoding="utf-8")
        found, metrics = finding()
        assert (found["reason"], found["abstained"]) == ("answer", False) and metrics.get("abstained") == 0.0, off
    rules.write_text("model: e5\n", encoding="utf-8")
    on, metrics = finding()
    assert (on["reason"], on["abstained"], on["source"]) == ("learned", True, "eval set")
    assert metrics["abstained"] == 1.0
    rules.write_text("patterns: ['outside my remit']\n", encoding="utf-8")  # patterns only: the stage stays on
    assert finding()[0]["reason"] == "learned"
    rules.write_text("model: e6\n", encoding="utf-8")
    with pytest.raises(EvalkitError, match=r"abstention\.yaml.*model.*unknown abstention model 'e6'.*none"):
        finding()


def test_the_rules_reach_a_ray_worker_whole():
    """A worker rebuilds the eval set's rules from their asdict form: the model too."""
    from dataclasses import asdict

    from evalkit.evalsets.evalset import AbstentionRules

    rules = AbstentionRules(("暂无该数据",), ("不提供住宿补贴",), "es.abstention.yaml", "ab" * 32, "e5")
    assert AbstentionRules.from_dict(asdict(rules)) == rules
    assert AbstentionRules.from_dict(asdict(AbstentionRules())) == AbstentionRules()



def test_a_scored_answer_is_read_with_its_eval_set_question(tmp_path: Path, make_eval_set):
    """The same referral (written for the test; the stage reads it at p ~0.80) declines a question that asks for an
    amount and answers one that asks whom to call: ``evalkit score`` passes each record's question to the stage
    (evalkit.text.asked_values)."""
    from fakes import QUESTIONS

    hotline = "您好，这个问题建议您拨打12333社保热线咨询，工作人员会为您解答。"
    asked = [("q1", "养老金每月能领多少？", *QUESTIONS[0][2:]), ("q2", "社保问题打什么电话？", *QUESTIONS[1][2:])]
    es = make_eval_set(tmp_path / "es", questions=asked)
    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps({"id": i, "answer": hotline, "retrieved": []}) + "\n" for i in ("q1", "q2")),
                       encoding="utf-8")
    found = {r.query_id: r.generation["abstention"]
             for r in score_answers(answers, "mine", eval_set=f"{es}@v1", metrics=("hit@5",)).results}
    assert (found["q1"]["abstained"], found["q1"]["reason"]) == (True, "learned")
    assert "not what its question asks for" in found["q1"]["matched"]
    assert (found["q2"]["abstained"], found["q2"]["reason"]) == (False, "answer")
