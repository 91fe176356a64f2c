"""Citation markers as written, claims with their citations, and ALCE citation support
(recall and precision recomputed by hand on small cases)."""
from __future__ import annotations

import pytest

from evalkit.judges.base import ClaimVerdict, JudgeResult
from evalkit.judges.citation_support import judge_citations
from evalkit.judges.offline import OfflineJudge
from evalkit.metrics.answer import aggregate_answers, citation_support, score_answer
from evalkit.text.citations import find_markers, resolve, strip_markers
from evalkit.text.claims import cited_claims, split_claims


@pytest.mark.parametrize("text, refs", [
    ("上限 750 元 [fin-004]。", [("fin-004",)]),
    ("Cap: CNY 750 [1].", [("1",)]),
    ("见 [文档1] 和 [来源：fin-013]。", [("文档1",), ("fin-013",)]),  # 文档1: passage 1 unless an id (resolve)
    ("（来源：fin-004）", [("fin-004",)]),
    ("(Source: fin-004, fin-013)", [("fin-004", "fin-013")]),
    ("【1】【2】", [("1",), ("2",)]),
    ("[a, b] and [c; d]", [("a", "b"), ("c", "d")]),
    ("[1][2]", [("1",), ("2",)]),
    ("[1-3]", [("1", "2", "3")]),
    ("[Doc 2]", [("2",)]),
    ("[^3]", [("3",)]),
    ("（参考：文档1、文档2）", [("文档1", "文档2")]),
    ("【fin-004、fin-013】", [("fin-004", "fin-013")]),
    ("see [the docs](http://x) and (this)", []),  # a Markdown link and plain parentheses are not citations
])
def test_markers(text, refs):
    assert [m.refs for m in find_markers(text)] == refs


def test_strip_keeps_the_text():
    assert strip_markers("上限 750 元 [1]，超标自付（来源：fin-004）。") == "上限 750 元，超标自付。"


def test_resolve_ids_documents_and_numbers():
    shown = [("fin-004#0", "fin-004"), ("fin-013", "fin-013")]
    assert resolve("fin-004#0", shown).index == 0
    assert resolve("fin-004", shown).passage_id == "fin-004#0"  # a document id: its first passage
    assert resolve("2", shown).passage_id == "fin-013"
    assert not resolve("3", shown).valid and not resolve("hr-001", shown).valid


def test_ids_that_begin_with_a_label_word_are_ids():
    """Users' corpora name documents doc-1, source-3, ref_7: a label is removed only when
    something separates it from the reference; a label glued to a number is a position only
    when no passage or document has that id."""
    shown = [("doc-a", "doc-a"), ("doc-b", "doc-b"), ("doc1", "doc1")]
    assert [m.refs for m in find_markers("x [doc-b] [source-3] (Source: doc-a)")] == [("doc-b",), ("source-3",),
                                                                                   ("doc-a",)]
    assert resolve("doc-b", shown).doc_id == "doc-b" and not resolve("source-3", shown).valid
    assert resolve("doc1", shown).doc_id == "doc1"      # the id, not the first passage
    assert resolve("doc3", shown).doc_id == "doc1"      # no such id: the third passage
    assert resolve("文档2", shown).doc_id == "doc-b"
    assert [m.refs for m in find_markers("[文档1-3] [Doc 2]")] == [("1", "2", "3"), ("2",)]


def test_a_marker_belongs_to_the_sentence_it_ends():
    answer = "上限 750 元。[fin-004] 超标部分自付 [2]。Hope this helps [1][3]!"
    assert cited_claims(answer) == [("上限 750 元。", ("fin-004",)), ("超标部分自付。", ("2",)),
                                    ("Hope this helps!", ("1", "3"))]
    assert split_claims(answer) == [c for c, _ in cited_claims(answer)]


# --- ALCE citation support, by hand ----------------------------------------------------------------
EV = [("p1", "d1", "The Team plan allows 600 requests per minute."),
      ("p2", "d2", "The Business plan allows 3,000 requests per minute."),
      ("p3", "d3", "Lunch is served at noon in the canteen.")]
Q = "What are the API rate limits?"


def findings(answer):
    judge = OfflineJudge()
    result = judge.judge(Q, answer, [(doc, text) for _, doc, text in EV])
    return [f.to_dict() for f in judge_citations(judge, Q, answer, EV, result)]


def test_alce_recall_and_precision_by_hand():
    answer = ("The Team plan allows 600 requests per minute [1]. "     # supported by its citation: precise
              "The Business plan allows 3,000 requests per minute [1]. "  # true, but [1] does not support it
              "The Team plan allows 600 requests per minute [1][3]. "   # [3] is irrelevant: [1] alone supports it
              "The Business plan allows 3,000 requests per minute.")    # true, no citation
    f = findings(answer)
    assert [x["supported_by_citations"] for x in f] == [True, False, True, False]
    assert [x["precise"] for x in f] == [[True], [False], [True, False], []]
    m = citation_support(f)
    # recall: 2 of 4 checkable claims are supported by their own citations
    # precision: precise citations 1 + 0 + 1 = 2 of 1 + 1 + 2 = 4 citations
    assert m["citation_recall"] == pytest.approx(2 / 4) and m["citation_precision"] == pytest.approx(2 / 4)
    assert (m["citation_claims"], m["citations_checked"], m["citations_precise"]) == (4, 4, 2)


def test_both_citations_needed_are_both_precise():
    f = findings("Team allows 600 requests per minute and Business allows 3,000 requests per minute [1][2].")
    assert f[0]["supported_by_citations"] is True and f[0]["precise"] == [True, True]


def test_invalid_references_count_and_are_never_precise():
    f = findings("The Team plan allows 600 requests per minute [1][9].")
    assert f[0]["invalid"] == ["9"] and f[0]["precise"] == [True, False]
    assert citation_support(f)["citation_precision"] == 0.5


def test_not_checkable_claims_are_left_out_and_no_citations_is_undefined_precision():
    f = findings("Hope this helps! [1]")
    assert f[0]["verdict"] == "not_checkable" and citation_support(f) == {}
    m = citation_support(findings("The Team plan allows 600 requests per minute."))
    assert m["citation_recall"] == 0.0 and m["citation_precision"] is None


def test_a_failing_judge_is_counted_not_scored():
    class Broken:
        identity = "broken"

        def judge(self, question, answer, evidence):
            return JudgeResult(error="boom")

    result = JudgeResult([ClaimVerdict("The Team plan allows 600 requests per minute.", "supported", "ok")])
    (f,) = judge_citations(Broken(), Q, "The Team plan allows 600 requests per minute [1].", EV, result)
    assert f.supported_by_citations is None and f.error
    assert citation_support([f.to_dict()]) == {}


def test_score_answer_and_aggregate_carry_citation_support():
    f = findings("The Team plan allows 600 requests per minute [1]. The Business plan allows 3,000 requests per "
                 "minute [1].")
    judgement = {"claims": [{"verdict": x["verdict"]} for x in f], "error": None}
    m = score_answer(answerable=True, answered=True, abstained=False, judgement=judgement, answer="a", reference=None,
                     cited_docs=["d1"], invalid_citations=0, gold=["d1", "d2"], citation_findings=f)
    assert m["citation_recall"] == 0.5 and m["citation_precision"] == 0.5 and m["cited_gold_precision"] == 1.0
    other = dict(m, citation_recall=1.0, citation_precision=None)
    agg = aggregate_answers([(True, m), (True, other)])
    assert agg["citation_recall"] == pytest.approx(0.75)  # the mean over answers (ALCE averages per answer)
    assert agg["citation_precision"] == 0.5               # undefined for the second answer: left out


@pytest.mark.parametrize("text, refs", [
    ("K7 重 48 克（文档3）。", [("文档3",)]),            # a numbered passage in parentheses, no colon
    ("The K7 weighs 48 grams (Doc 3).", [("3",)]),
    ("（文档1、文档2）", [("文档1", "文档2")]),
    ("K7 重 48 克，见文档3。", [("文档3",)]),            # bare, as users write in Chinese
    ("根据文档2，报销上限为 750 元。", [("文档2",)]),
    ("共有文档12份，文档 3 份已归档。", []),              # counting documents is not citing one
])
def test_markers_users_write_without_brackets_or_colons(text, refs):
    assert [m.refs for m in find_markers(text)] == refs


def test_a_bare_chinese_citation_is_not_judged_as_a_number():
    """Before: "（文档3）" stayed in the claim and "number 3 not in evidence" made a correct answer unsupported."""
    ev = [("doc-1", "The K7 headset offers up to 9 hours of battery life."), ("doc-2", "The K7 case recharges in 90 minutes."),
          ("doc-3", "The K7 weighs 48 grams.")]
    for answer in ("K7 重 48 克（文档3）。", "K7 重 48 克，见文档3。"):
        claims = OfflineJudge().judge("K7 有多重？", answer, ev).claims
        assert [c.verdict for c in claims] == ["supported"], claims


@pytest.mark.parametrize("text, refs", [
    ("【已废弃】旧版标准：每晚 500 元。", []),         # corpus tags in Chinese text are not citations
    ("【重要提示】请改用新版。【状态】有效", []),
    ("【2024年修订】第三条", []),                      # a digit does not make a tag a reference
    ("【参考资料】见附录", []),                        # a label word alone is a heading
    ("每晚 500 元【1】，见【文档2】。", [("1",), ("文档2",)]),
    ("【来源：员工手册】", [("员工手册",)]),             # a label and colon: the writer meant a citation
    ("【Doc 3】【fin-004#1】", [("3",), ("fin-004#1",)]),
    ("[已废弃]", [("已废弃",)]),                        # square brackets are the generator's own format
])
def test_full_width_brackets_are_citations_only_when_reference_shaped(text, refs):
    assert [m.refs for m in find_markers(text)] == refs


def test_a_corpus_tag_stays_in_the_claim_and_cites_nothing():
    assert cited_claims("【已废弃】旧版标准：每晚 500 元。[fin-020]") == [("【已废弃】旧版标准：每晚 500 元。", ("fin-020",))]
    assert strip_markers("【重要提示】请改用新版【1】。") == "【重要提示】请改用新版。"


def test_a_retrieval_score_echoed_from_the_prompt_is_no_claim():
    """The generate prompt heads each passage "[cfg-001] (score 0.904)"; small models echo it beside their
    citation. The judge read 0.904 as a number missing from the evidence (the demo's labels: 5 false alarms)."""
    from evalkit.text.citations import strip_markers
    from evalkit.text.claims import split_claims

    assert strip_markers("The limit is 20 GB [cfg-001] (score 0.904).") == "The limit is 20 GB."
    assert strip_markers("上限为20GB [cfg-001]（score 0.904）。") == "上限为20GB。"
    assert split_claims("Retries: 3 [cfg-001] (score 0.904, reference only).") == ["Retries: 3."]
    # a score the answer states as a fact is kept
    assert strip_markers("The model's F1 score is 0.904 on the test set.") == "The model's F1 score is 0.904 on the test set."
