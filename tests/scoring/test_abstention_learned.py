"""An eval set's learned abstention stage (``model: e5`` in NAME.abstention.yaml) in ``evalkit score --answers``."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.errors import EvalkitError
from evalkit.scoring import score_answers

# a refusal in a wording the rules do not know (written for the test; in no split)
UNSEEN_REFUSAL = ("Good question! Our onboarding guide covers laptops, badges and the VPN, and HR can walk you "
                  "through the rest.")


def test_an_eval_sets_model_reaches_the_scored_answers_finding(tmp_path: Path, make_eval_set):
    es = make_eval_set(tmp_path / "es")
    answers = tmp_path / "a.jsonl"
    answers.write_text(json.dumps({"id": "q4", "answer": UNSEEN_REFUSAL, "retrieved": []}) + "\n", encoding="utf-8")

    def finding() -> tuple[dict, dict]:
        (r,) = [r for r in score_answers(answers, "mine", eval_set=f"{es}@v1", metrics=("hit@5",)).results
                if r.query_id == "q4"]
        return r.generation["abstention"], r.metrics

    off, metrics = finding()
    assert off["reason"] == "answer" and metrics.get("abstained") == 0.0
    es.with_name(es.stem + ".abstention.yaml").write_text("model: e5\n", encoding="utf-8")
    on, metrics = finding()
    assert (on["reason"], on["abstained"], on["source"]) == ("learned", True, "eval set")
    assert metrics["abstained"] == 1.0
    es.with_name(es.stem + ".abstention.yaml").write_text("model: e6\n", encoding="utf-8")
    with pytest.raises(EvalkitError, match=r"abstention\.yaml.*model.*unknown abstention model 'e6'"):
        finding()


def test_the_rules_reach_a_ray_worker_whole():
    """A worker rebuilds the eval set's rules from their asdict form: the model too."""
    from dataclasses import asdict

    from evalkit.evalsets.evalset import AbstentionRules

    rules = AbstentionRules(("暂无该数据",), ("不提供住宿补贴",), "es.abstention.yaml", "ab" * 32, "e5")
    assert AbstentionRules.from_dict(asdict(rules)) == rules
    assert AbstentionRules.from_dict(asdict(AbstentionRules())) == AbstentionRules()
