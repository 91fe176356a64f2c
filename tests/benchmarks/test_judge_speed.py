"""The pure parts of ``benchmarks/judge_speed.py`` (issue 34): the deploy-gate answers it judges and the way it
judges them (as a run does: the answer, then each checkable claim against the passages it cites)."""
from __future__ import annotations

from benchfiles import load_benchmark

speed = load_benchmark("judge_speed", "deploy_gate_data")
VOCAB = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "lambda", "sigma",
         "资", "料", "库", "文", "档", "检", "索"]


def test_deploy_gate_answers_quote_two_sentences_of_their_top_passages_with_citations():
    answers = speed.deploy_gate_answers(120, 10, seed=3, vocab=VOCAB, sizes=(2000, 500))
    assert len(answers) == 20 and answers == speed.deploy_gate_answers(120, 10, seed=3, vocab=VOCAB, sizes=(2000, 500))
    assert [len(ev) for _, _, _, ev in answers] == [3, 5] * 10  # the RRF variant's top 3, the BM25 one's top 5
    for (lang, question, answer, evidence), (_, q2, _, ev2) in zip(answers[::2], answers[1::2]):
        assert question == q2 and evidence == ev2[:3]  # one ranking, cut at 3 and at 5
        lines = answer.split("\n")
        assert len(lines) == 2
        texts = dict(evidence)
        for line in lines:
            sentence, cite = line.rsplit(" [", 1)
            assert cite.endswith("]") and sentence in texts[cite[:-1]]  # quoted from the passage it cites
        assert lang in ("en", "zh")


def test_an_answer_is_judged_as_a_run_judges_it():
    from evalkit.judges.offline import OfflineJudge

    evidence = [("a", "The fee is 40 dollars per month."), ("b", "Support is open on weekdays.")]
    answer = "The fee is 40 dollars per month [a]. Support is open on weekdays [a][b]."
    judge = OfflineJudge()
    (result, findings), calls = speed.judge_as_a_run(judge, "What does it cost?", answer, evidence)
    assert [c["verdict"] for c in result["claims"]] == ["supported", "supported"]
    assert [f["cited"] for f in findings] == [["a"], ["a", "b"]]
    # 1 call for the answer, 1 for the first claim's citation, 1 for the second claim's two citations together,
    # then each of them alone (2) and, where alone does not support it, the other ones (1: "a" alone does not)
    assert calls == 1 + 1 + 1 + 2 + 1
    assert findings[1]["precise"] == [False, True]
    assert "judge" not in vars(judge)  # the call counter is taken off again
