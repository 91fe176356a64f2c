"""The abstention detector: refusals (en, zh) vs negative facts, the order of its rules, user
patterns, and the labelled held-out splits (benchmarks/data/abstention_test.jsonl, abstention_test2.jsonl)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evalkit.text.abstention import AbstentionPatternError, detect_abstention

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"


@pytest.mark.parametrize("answer", [
    "I don't know.", "The knowledge base has no information on this.", "抱歉，我找不到相关信息。",
    "知识库中没有找到相关信息。", "根据现有资料无法回答。", "没有找到与该问题相关的内容。",
    "The provided documents do not mention the Q4 figures.", "I'm not finding anything about that in our docs.",
    "就目前掌握的资料来看，这一点没有记载。", "信息不足，无法回复。",
    # the speaker cannot help at all, puts the answer off, or hands it to a ticket (2026-12-06)
    "I'm not able to help with that request.", "Unfortunately that's not something I can help with.",
    "That's outside what I can assist with. Please contact the HR service centre.",
    "Let me check with the team and get back to you.",
    "I've opened a ticket for you; an agent will reach out within 24 hours.",
    "这个问题我帮不了您，请联系人事部门。", "这个需要进一步核实，核实后再回复您。", "我再确认一下，稍后给您回复。",
    "I'm not permitted to give individual investment recommendations.", "I'd rather not quote a figure from an old rate card.",
    "您的问题已记录，工单号为20240517-0031，客服会在24小时内联系您。", "出于隐私保护，我无法提供其他用户的信息。",
])
def test_refusals(answer):
    assert detect_abstention(answer).abstained, answer


@pytest.mark.parametrize("answer", [
    "The LX-200 does not contain a built-in Wi-Fi module.", "2026 版制度也未提供住宿补贴。",
    "前一笔借款未冲销完毕前，不得再次借款。", "No, USB storage is blocked by default.",
    "Data older than the retention period cannot be restored.", "资料显示，LX-300 没有 4G 模组。",
    "The documents say the Hong Kong rates will be announced separately, so there is no fixed cap yet.",
    # an answer with a declining word around it stays one (2026-12-06)
    "Sorry for the trouble: the limit is 3 devices per account.",
    "I can't see your account, but the standard processing time is 5 working days.",
    "The fee is $25; we'll get back to you by email once the refund is processed.",
    "抱歉让您久等了，退款会在3个工作日内到账。",
])
def test_negative_facts_are_answers(answer):
    assert not detect_abstention(answer).abstained, answer


def test_a_partial_refusal_that_answers_is_an_answer():
    d = detect_abstention("The documents don't give an exact date, but the policy took effect on 1 January 2026.")
    assert (d.abstained, d.reason) == (False, "partial")


def test_the_order_of_the_rules():
    assert detect_abstention("", finish_reason="stop").reason == "empty"
    assert detect_abstention("Here is a harmless text.", finish_reason="content_filter").reason == "content_filter"
    d = detect_abstention("暂无该数据。", extra_patterns=["暂无该数据"])
    assert (d.abstained, d.reason, d.matched, d.by_user) == (True, "user_pattern", "暂无该数据", True)
    # a not_pattern wins over a default refusal and over the user's own patterns
    d = detect_abstention("I don't know the exact date.", not_patterns=["exact date"], extra_patterns=["know"])
    assert (d.abstained, d.reason) == (False, "user_not_pattern")
    assert detect_abstention("x", not_patterns=["x"], finish_reason="content_filter").abstained is False


def test_invalid_user_patterns_are_errors():
    with pytest.raises(AbstentionPatternError, match=r"patterns\[1\].*not a valid regular expression"):
        detect_abstention("a", extra_patterns=["ok", "(unclosed"])


def test_the_held_out_split_meets_the_targets():
    rows = [json.loads(x) for x in (DATA / "abstention_test.jsonl").read_text(encoding="utf-8").splitlines() if x]
    assert len(rows) >= 190 and {r["lang"] for r in rows} == {"en", "zh"}
    pred = [detect_abstention(r["answer"], finish_reason=r.get("finish_reason")).abstained for r in rows]
    gold = [r["label"] == "abstained" for r in rows]
    tp = sum(p and g for p, g in zip(pred, gold))
    precision, recall = tp / sum(pred), tp / sum(gold)
    assert precision >= 0.95 and recall >= 0.95, (precision, recall)


def test_the_second_held_out_split_meets_the_targets():
    """120 answers written by a helper that did not read the rules; short answers heading their caveat
    ("Paris. The documents don't say when.") are among the partial ones. Measured once: precision 0.750
    before the short-answer rule, 0.955 after (recall 0.955 both)."""
    rows = [json.loads(x) for x in (DATA / "abstention_test2.jsonl").read_text(encoding="utf-8").splitlines() if x]
    assert len(rows) == 120 and {r["kind"] for r in rows} == {"refusal", "partial", "negative_fact", "answer"}
    pred = [detect_abstention(r["answer"]).abstained for r in rows]
    gold = [r["label"] == "abstained" for r in rows]
    tp = sum(p and g for p, g in zip(pred, gold))
    wrong = [r["id"] for r, p, g in zip(rows, pred, gold) if p != g]
    assert tp / sum(pred) >= 0.95 and tp / sum(gold) >= 0.95, wrong


def test_the_third_held_out_split_is_measured_as_reported():
    """120 more answers (60 refusals, each worded differently), written blind for judge v10 and measured
    once with the rules unchanged: precision 0.960, recall 0.800 (below the 0.95 target: refusals that
    restate the question, list what was searched or add where to ask are read as partial answers).
    Pinned so that the figure docs/judges.md quotes is what the detector does."""
    rows = [json.loads(x) for x in (DATA / "abstention_test3.jsonl").read_text(encoding="utf-8").splitlines() if x]
    assert len(rows) == 120 and sum(r["label"] == "abstained" for r in rows) == 60
    pred = [detect_abstention(r["answer"]).abstained for r in rows]
    gold = [r["label"] == "abstained" for r in rows]
    tp = sum(p and g for p, g in zip(pred, gold))
    fp = sum(p and not g for p, g in zip(pred, gold))
    # measured once at 48 / 2 / 12 (recall 0.800); since then the background rules (a refusal's general
    # knowledge, source descriptions, search lists, referrals) were written with this split in view:
    # it is development data now, pinned so that a change that loses it shows
    assert (tp, fp, sum(gold) - tp) == (60, 2, 0)


def _split_counts(name: str) -> dict[str, tuple[int, int, int]]:
    """(true positives, false positives, false negatives) of "abstained" per language on a 120-answer split."""
    rows = [json.loads(x) for x in (DATA / name).read_text(encoding="utf-8").splitlines() if x]
    assert len(rows) == 120 and sum(r["label"] == "abstained" for r in rows) == 60
    counts = {}
    for lang in ("en", "zh"):
        mine = [r for r in rows if r["lang"] == lang]
        pred = [detect_abstention(r["answer"]).abstained for r in mine]
        gold = [r["label"] == "abstained" for r in mine]
        tp = sum(p and g for p, g in zip(pred, gold))
        counts[lang] = (tp, sum(p and not g for p, g in zip(pred, gold)), sum(gold) - tp)
    return counts


def test_the_fourth_held_out_split_is_measured_as_reported():
    """120 more answers (60 refusals in 60 wordings, en/zh 30/30; 60 answers: negative facts, reported
    facts, partial answers, "not found" as part of the world), written 2026-12-04 by a writer who saw
    no code, test or data of evalkit, and measured once with the rules unchanged: precision 0.971,
    recall 0.567 (en 0.944 / 0.567, zh 1.000 / 0.567). The misses are refusals that say what the
    sources do cover ("the passages mention 14 programs, but not ..."), open with general knowledge
    ("Typically, banks charge $15-$35 ..."), restate the question, list what was searched or end with
    pleasantries: read as partial answers. The background rules of :mod:`evalkit.text.refusal_rules`
    were then written with these misses in view (precision 0.983, recall 0.967 after): development
    data now; the held-out figures are the later splits' (below)."""
    counts = _split_counts("abstention_test4.jsonl")
    assert counts == {"en": (29, 1, 1), "zh": (30, 0, 0)}


def test_the_fifth_held_out_split_is_measured_as_reported():
    """120 more (60 refusals, en/zh 30/30), written blind on 2026-12-04 and measured once after the
    background rules that split 4's misses showed: precision 1.000, recall 0.683 (en 0.567, zh 0.800;
    the rules before them: 0.400). Its misses were clarifying questions instead of an answer, refusals
    worded as "there is no mention of whether ...", "the information available to me does not
    include ...", offers to help with something else and headed lists of what was found instead; the
    rules for those were then written with them in view, so it is development data now (60 of 60 since
    the rules learned from split 7: a numbered list of documents looked through is read as one)."""
    counts = _split_counts("abstention_test5.jsonl")
    assert counts == {"en": (30, 0, 0), "zh": (30, 0, 0)}


def test_the_sixth_held_out_split_is_measured_as_reported():
    """120 more (60 refusals in 60 wordings, en/zh 30/30), written blind on 2026-12-04 after the rules
    of split 5's misses were final, and measured once: precision 0.976, recall 0.683 (en 1.000 / 0.667,
    zh 0.955 / 0.700; the rules of this morning: 1.000 / 0.317). Below the 0.95 target: its misses are
    refusals in a JSON or "Answer: N/A" template, a disclaimer heading ("Note: the following is not
    from your documents") before general knowledge, a reasoning preamble, formal letters and chat-bot
    sign-offs, clarifying questions worded as "are you asking about X or Y". The rules for those were
    then written with them in view (58 of 60 after, 60 since split 7's rules): development data now."""
    counts = _split_counts("abstention_test6.jsonl")
    assert counts == {"en": (30, 0, 0), "zh": (30, 1, 0)}


def test_the_seventh_held_out_split_is_measured_as_reported():
    """120 more (60 refusals in 60 wordings, en/zh 30/30), written blind on 2026-12-04 and measured once,
    after the rules learned from split 6 were final: precision 0.902, recall 0.767 (en 0.880 / 0.733,
    zh 0.923 / 0.800; the rules of this morning: 0.926 / 0.417). Its false alarms are partial answers
    and world facts the newer rules read as refusals ("there is no record of a business ...", 查无此人的
    参保记录 after 经查询, "至于住院报销比例，资料中没有提及，无法回答" after a stated rate); its misses,
    refusals in markdown report templates, out-of-scope bots ("I can only help with ..."), offers of other
    help. The rules learned from those afterwards (a lookup in an operational system that finds no record
    is a world fact; a conclusion scoped to one part, 至于..., leaves the rest answered; conditions,
    purposes, headings and short layout lines are no statements; out-of-scope bots refuse), so it is
    development data now: precision 1.000, recall 0.983. Split 8 is the held-out one."""
    assert _split_counts("abstention_test7.jsonl") == {"en": (29, 0, 1), "zh": (30, 0, 0)}



def test_the_eighth_held_out_split_is_measured_as_reported():
    """120 more (60 refusals in 60 wordings, en/zh 30/30, each with its question), written blind on
    2026-12-04 and measured once, after the rules learned from split 7 were final: precision 1.000, recall
    0.600 (en 0.633, zh 0.567; the rules before split 7's lessons: 0.971 / 0.550). Its misses: refusals as
    markdown tables of versions checked, JSON with "answer": null, a source that "may be outdated" so
    the reply will not quote it, referrals to a hotline with no other words, a description of what the
    documents cover followed by what they do not, "无法根据现有上下文回答" (a source word between 无法 and
    回答), a conclusion line of a "结论：无法确定" template. The rules learned those structures afterwards (a JSON
    reply whose answer field is null; a pronoun for the sources just named; a possibility, or where a thing
    would normally be, asserts nothing; the key of a refused value and the value of a "Question:" key are
    no content; declining to quote a figure): development data now, 1.000 / 0.850 (19 -> 25 en, 17 -> 26
    zh). Left: markdown tables of what was checked, referrals with nothing else, adjacent facts before
    a declined part, which need the question to tell from answers."""
    assert _split_counts("abstention_test8.jsonl") == {"en": (25, 0, 5), "zh": (26, 0, 4)}


def test_the_ninth_held_out_split_is_measured_as_reported():
    """120 more (60 refusals, en/zh 30/30, each with its question), written blind on 2026-12-04 by a writer
    asked for wordings a detector built from common phrases would miss, and measured once, with the rules
    learned from split 8 (unchanged since): precision 1.000, recall 0.350 (en 0.267, zh 0.433). Its misses
    have no stock phrase: clarification-only and upload requests, descriptions of what the documents cover
    ("the leave policy explains how sick days are earned ..."), "Search returned 0 matching passages.", "I'm
    drawing a blank on that in the docs", conflicting sources, a source "from 2021" so "may well be out of
    date", hotline referrals, a markdown table whose value is "Not found". A recall this far under the
    earlier fresh splits (0.767, 0.600) says the rules fit the wordings they were written from. The
    rules did not learn from it, but the learned stage did (evalkit.models.abstention), and a rule
    learned from split 10 (a pipeline's report of an empty retrieval) catches its "Search returned 0
    matching passages.": 0.367 (en 8 -> 9); split 18's (thanks for reaching out is no content) one more."""
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (10, 0, 20), zh: (13, 0, 17)}
    # bare refusals to disclose, addresses, negated commands (2026-12-07, later): was {en: (11, 0, 19), zh: (13, 0, 17)}
    assert _split_counts("abstention_test9.jsonl") == {"en": (12, 0, 18), "zh": (13, 0, 17)}


def test_the_tenth_and_eleventh_held_out_splits_are_measured_as_reported():
    """240 more (120 refusals, en/zh 60/60), written blind on 2026-12-04 by two writers given one brief
    (refusals a phrase-built detector would miss, answers that look like refusals), and measured once with
    the rules of split 9 (unchanged) and the learned stage's first weights (fitted on splits dev to 9):
    rules alone precision 1.000, recall 0.167 (split 10) and 0.117 (split 11); rules + learned stage
    0.947 / 0.300 and 0.933 / 0.233 (benchmarks/abstention.py --model e5 at commit 1eeaa62). Their misses:
    referrals and tickets with nothing else, descriptions of what the sources cover, a nearby question
    answered in full, clarifying questions, privacy declines, persona bots, tables and JSON whose value
    cells are empty or dashes, replies of bare punctuation ("—", "……"), empty-retrieval system messages,
    output that repeats or is cut off before any answer. Development data since: the rules learned the
    structures (evalkit.text.structured_replies: a JSON answer field, a table or a form line that holds
    no value; a reply of punctuation only; a pipeline's report of an empty retrieval), recall 0.300 and
    0.233 with precision 1.000, and the learned stage was fitted again with both splits (split 12 and
    13 measure the result)."""
    # since 2026-12-06 (the speaker cannot help, an answer put off, a ticket for an answer): 8 and 10 English,
    # 12 Chinese (稍后给您回复)
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (8, 0, 22), zh: (12, 0, 18)}
    assert _split_counts("abstention_test10.jsonl") == {"en": (9, 0, 21), "zh": (13, 0, 17)}
    # since 2026-12-07's second session (a request logged, 已帮您登记, is the service talking): 7 Chinese in 11
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (10, 0, 20), zh: (7, 0, 23)}
    assert _split_counts("abstention_test11.jsonl") == {"en": (12, 0, 18), "zh": (7, 0, 23)}


def test_the_twelfth_and_thirteenth_held_out_splits_are_measured_as_reported():
    """240 more (120 refusals, en/zh 60/60), written blind on 2026-12-04 by two writers given one brief
    (refusals real assistants produce, as varied as possible; answers that look like refusals) before the
    rules learned from splits 10 and 11, and measured once after: rules alone precision 1.000, recall
    0.283 (split 12; the rules before: the same) and 0.947 / 0.300 (split 13; before: 0.944 / 0.283). With
    the learned stage (``model: e5``, fitted on splits dev to 11 then; dev to 13 now): tests/models/test_abstention_model.py."""
    # since 2026-12-06 (the speaker cannot help, an answer put off, a ticket for an answer): 8 and 11 English
    # and since the second rules of that day ("it depends" in place of an answer, the speaker who cannot do what
    # was asked, a referral to staff is no content): 1 more of each language in split 12; and since the rules learned
    # from split 21 (what "the specifics" depend on): 1 more Chinese
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (9, 0, 21), zh: (12, 0, 18)}
    assert _split_counts("abstention_test12.jsonl") == {"en": (9, 0, 21), "zh": (13, 0, 17)}
    # and split 18's lessons (a ticket number, thanks, a question handed to people): 1 more Chinese in split 13
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (11, 1, 19), zh: (10, 0, 20)}
    assert _split_counts("abstention_test13.jsonl") == {"en": (11, 1, 19), "zh": (11, 0, 19)}


def test_the_fourteenth_held_out_split_is_measured_as_reported():
    """120 more (60 refusals, en/zh 30/30 each), written blind on 2026-12-05 by one writer from the brief of
    splits 12 and 13, measured once with the rules unchanged: precision 0.870, recall 0.333. The three
    false alarms are partial answers that answer one part and say the sources lack the other ("...我手头的
    资料里没有写", "I don't have the full leave policy in front of me, but the excerpt I found says ...").
    With the learned stage: tests/models/test_abstention_model.py."""
    # development data since; 2026-12-06's rules (the speaker cannot help, an answer put off or handed to a
    # ticket, the service talking about itself is no content: 核实后再回复您, 出于隐私保护) take 5 more
    # and the second rules of that day 2 more, and one partial answer read as a refusal ("I'm sorry, I can't check
    # the status of your specific application. For general reference, the ... standard is 10 business days")
    # (and split 18's lessons 1 more Chinese)
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (13, 2, 17), zh: (15, 2, 15)}
    assert _split_counts("abstention_test14.jsonl") == {"en": (13, 2, 17), "zh": (16, 2, 14)}


def test_the_fifteenth_held_out_split_is_measured_as_reported():
    """120 more (60 refusals, en/zh 30/30 each), written blind on 2026-12-06 from a new brief (refusals as deployed
    assistants typically write them, not tricks), after that day's rules were final; measured once: precision
    1.000, recall 0.717 (en 0.700, zh 0.733); the rules before that day: 1.000 / 0.650. With the learned stage:
    tests/models/test_abstention_model.py."""
    # development data since; the second rules of 2026-12-06 (found on splits 16 and 17) take 9 more
    # (and split 18's 1 more Chinese)
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (27, 0, 3), zh: (26, 0, 4)}
    # transfers, requests noted, figures withheld, where the information appears (2026-12-07, fifth session): was {en: (27, 0, 3), ...}
    assert _split_counts("abstention_test15.jsonl") == {"en": (28, 0, 2), "zh": (27, 0, 3)}

# --- refusals in users' own wordings (tests/judges/data/abstention_cases.jsonl) -----------------------------
CASES = Path(__file__).resolve().parent / "data" / "abstention_cases.jsonl"
FLOOR_PRECISION, FLOOR_RECALL = 0.95, 0.93  # per language, on the held-out split (the old rules: en 0.78/0.84, zh 0.71/0.80)


def _cases(split: str) -> list[dict]:
    rows = [json.loads(x) for x in CASES.read_text(encoding="utf-8").splitlines() if x.strip()]
    return [r for r in rows if r["split"] == split]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_users_held_out_split_meets_the_floor(lang):
    rows = [r for r in _cases("test") if r["lang"] == lang]
    assert len(rows) >= 60 and {r["label"] for r in rows} == {"abstained", "answered"}
    pred = [detect_abstention(r["answer"]).abstained for r in rows]
    gold = [r["label"] == "abstained" for r in rows]
    tp = sum(p and g for p, g in zip(pred, gold))
    wrong = [r["answer"] for r, p, g in zip(rows, pred, gold) if p != g]
    assert tp / sum(pred) >= FLOOR_PRECISION and tp / sum(gold) >= FLOOR_RECALL, wrong


def _curled(text: str) -> str:
    """An answer as chat models typeset it: every apostrophe inside a word is U+2019 ("don’t")."""
    return re.sub(r"(?<=\w)'(?=\w)", "\u2019", text)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_held_out_split_typeset_with_curly_apostrophes_meets_the_same_floor(lang):
    """Chat models write "don’t": with the apostrophes curled, the held-out English refusals went from
    recall 0.95 to 0.65 (the rules spelled "don't"). The normalisation folds them; the floor holds."""
    rows = [r for r in _cases("test") if r["lang"] == lang]
    texts = [_curled(r["answer"]) for r in rows]
    if lang == "en":
        assert sum(t != r["answer"] for t, r in zip(texts, rows)) >= 10  # the change reaches many answers
    pred = [detect_abstention(t).abstained for t in texts]
    gold = [r["label"] == "abstained" for r in rows]
    tp = sum(p and g for p, g in zip(pred, gold))
    wrong = [t for t, p, g in zip(texts, pred, gold) if p != g]
    assert tp / sum(pred) >= FLOOR_PRECISION and tp / sum(gold) >= FLOOR_RECALL, wrong


@pytest.mark.parametrize(("answer", "patterns", "not_patterns", "reason"), [
    ("I don\u2019t know.", ["I don't know"], [], "user_pattern"),  # the model's apostrophe, the user's
    ("I don't know.", ["I don\u2019t know"], [], "user_pattern"),  # a pattern pasted from a model's answer
    ("Sorry, that is not in\nthe   manual.", ["not in the manual"], [], "user_pattern"),  # a wrapped line
    ("抱歉，资料中\n没有这方面的记载。", ["资料中没有"], [], "user_pattern"),  # a line broken between characters
    ("资料中 没有\n相关补贴", [], ["没有相关补贴"], "user_not_pattern"),
    ("The “Refund” section doesn\u2019t apply.", [], ['"refund" section'], "user_not_pattern"),
    ("Nothing is in the manual about it.", ["not in the manual"], [], "refusal"),  # no match: the defaults decide
])
def test_user_patterns_match_whatever_the_models_typography(answer, patterns, not_patterns, reason):
    found = detect_abstention(answer, extra_patterns=patterns, not_patterns=not_patterns)
    assert found.reason == reason, found


@pytest.mark.parametrize("answer", [
    "關於這個問題，文件中沒有相關說明。", "很抱歉，知識庫裡找不到答案。",  # traditional characters
    "N/A", "Unknown.", "未知。", "Answer: not specified.",  # a bare fragment is the whole refusal
    "None of the supplied passages talk about the rollout plan.", "Neither source discusses the Q3 margin.",
    "The excerpts don't go into pricing at all.", "There's no record of that in the materials I was given.",
    "根据检索到的内容，无法判断合同是否有效。", "我在资料里没有看到关于年假结转的说明。",
    "I don't know, but the helpdesk can probably tell you.",  # a contrast clause that only redirects
    "很抱歉，资料中没有这方面的记载，建议您咨询人事部门。",
])
def test_refusals_in_users_wordings(answer):
    assert detect_abstention(answer).abstained, answer


@pytest.mark.parametrize("answer", [
    "The inspection found no defects in the welds.", "No personal data is stored on the device.",
    "There is no information counter at the north gate.", "The API returns 'No records found' for an empty query.",
    "Error 403 (Forbidden) means the token has expired.", "The boiling point cannot be determined by this method.",
    "Sorry, but gift cards cannot be refunded.", "本次巡检没有发现任何漏水。", "调查人员至今没有找到事故原因。",
    "对不起，该票种无法退改。", "忘记密码的用户可以通过邮箱重置。", "找不到发票的员工，可以申请补开证明。",
    "资料显示，2023 年没有发生安全事故。", "该文件不包含任何个人隐私数据。", "仅凭外观无法确定真伪，需要做专业鉴定。",
])
def test_worldly_negations_are_answers(answer):
    assert not detect_abstention(answer).abstained, answer


@pytest.mark.parametrize("answer", [
    "The fee is $25 per month; the documents don't say whether it includes tax.",
    "会员每月可免费退货两次。文档中没有提到非会员的规定。",
])
def test_an_answer_before_a_refusal_is_a_partial_answer(answer):
    d = detect_abstention(answer)
    assert (d.abstained, d.reason) == (False, "partial"), answer


@pytest.mark.parametrize("answer", [
    "Paris. The documents don't mention the exact date of the move, though.",
    "Acme Ltd. I could not find its address in the sources.",
    "Yes — but the context doesn’t say whether this applies to interns.",
    "Yes, but the context does not say whether interns qualify.",
    "**Answer:** 42%. The report does not break this down by region, and I couldn't find more.",
    "2019。资料没有提到具体月份。", "是的。不过资料中没有说明是否适用于实习生。", "好的。北京：文档没有提到具体地址。",
])
def test_a_short_answer_heading_a_refusal_is_a_partial_answer(answer):
    """Chat models answer first and add the caveat: scored as a refusal, a wrong "Paris." escaped judging."""
    d = detect_abstention(answer)
    assert (d.abstained, d.reason) == (False, "partial"), answer


@pytest.mark.parametrize("answer", [
    "Sure. The documents do not mention it.", "Hmm... I cannot find that in the documents.",
    "Good question! The documents do not mention it.", "Hello! I couldn't find that in the knowledge base.",
    "Dear customer, the documents do not mention it.", "No, the documents do not mention it.",
    "Sorry. I cannot find that in the documents.", "Answer: I don't know.", "Unclear. The context does not say.",
    "好的。文档中没有提到。", "您好！文档中没有提到。", "嗯。资料里找不到。", "答：资料中没有提到。",
    "Unclear.", "Can't say.", "Not clear.", "不明。", "说不准。", "难说。",
])
def test_a_filler_or_a_bare_fragment_before_a_refusal_keeps_it_a_refusal(answer):
    d = detect_abstention(answer)
    assert (d.abstained, d.reason) == (True, "refusal"), answer


@pytest.mark.parametrize("answer", ["Paris.", "Yes.", "北京。", "The cause is unclear.", "病因不明。"])
def test_a_short_answer_alone_or_a_worldly_unclear_is_an_answer(answer):
    assert not detect_abstention(answer).abstained, answer


@pytest.mark.parametrize(("answer", "abstained"), [
    # X isn't available / provided / contained in the (given | supplied | attached) sources: a refusal, curly or not
    ("What you asked about isn\u2019t available in the given context.", True),
    ("Those figures aren't provided in the supplied excerpts.", True),
    ("The deadline is not contained within the attached documents.", True),
    ("Pricing is absent from the retrieved passages.", True),
    # the same shape about a thing in the world is an answer
    ("The Pro plan isn't available in the given region.", False),
    ("Night buses aren't provided in the current timetable period.", False),
    ("Support is unavailable in the given time zone after 6 pm.", False),
])
def test_a_source_qualified_as_given_or_supplied_is_still_a_source(answer, abstained):
    """"isn't available in the given context" read as an answer: the rule allowed "in the context" only."""
    assert detect_abstention(answer).abstained is abstained, answer


def test_an_empty_answer_cut_off_by_the_token_limit_is_not_a_refusal():
    # a reasoning model that spent max_tokens before writing anything did not decline
    d = detect_abstention("", finish_reason="length")
    assert (d.abstained, d.reason) == (False, "truncated")
    assert detect_abstention("  ", finish_reason="stop").abstained


@pytest.mark.parametrize("answer", [
    "The handbook doesn't cover overtime for part-time staff. If you can share your employment contract, I can look at it.",
    "资料里没有提到夜间施工的审批流程。如您能提供施工许可证，我可以帮您进一步核对。",
    "文档中未说明该接口的限流规则。为避免误导您，我不做推测，建议查阅最新版开发者文档。",
    "I can't find the late fee in the documents. It can depend on your contract type, so please ask billing.",
])
def test_conditions_purposes_and_dependencies_are_no_partial_answer(answer):
    """A condition, a purpose or what something depends on asserts nothing: the reply still refuses."""
    assert detect_abstention(answer).abstained


@pytest.mark.parametrize("answer", [
    "## Summary\n\nThe sources do not say whether refunds are possible.\n\n### Sources checked\n- Refund policy\n"
    "- Terms of sale\n\n### Next steps\n- Ask the support team",
    "I looked through these documents:\n1. Travel policy (v2.4)\n2. Expense FAQ\n\nNone of them mention parking fees.",
    "**结论**：参考资料中没有关于退货运费的说明。\n\n**已查阅**\n- 《售后服务条款》\n- 《2025年促销规则（第3版）》",
])
def test_headings_and_short_layout_lines_of_a_refusal_are_no_partial_answer(answer):
    assert detect_abstention(answer).abstained


@pytest.mark.parametrize("answer", [
    "We only answer questions about your electricity account; pension questions are outside our remit.",
    "I can only help with questions about orders and deliveries, so I can't advise on tax.",
    "本助手只能解答与会员积分有关的问题，您问的房贷利率不在我的服务范围内。",
])
def test_a_bot_for_something_else_refuses(answer):
    assert detect_abstention(answer).abstained


@pytest.mark.parametrize("answer", [
    "The parking FAQ doesn't give the monthly price. What I can tell you is that permits are issued by the estates office.",
    "停车费为每小时5元，封顶40元。至于月卡价格，资料中没有提及，无法回答。",
    "The registry shows no record of a vehicle with plate KX-2291 in the national database.",
    "经查询，系统中没有该订单的退款记录，说明这笔款项尚未退回。",
    "The policy states that the warranty covers parts for two years. It doesn't mention labour, so I can't confirm that.",
])
def test_facts_beside_a_lack_are_answers(answer):
    """What the speaker can tell, a conclusion scoped to one part (至于...), a system that has no record of a
    thing, a fact a source states: answered."""
    assert not detect_abstention(answer).abstained


@pytest.mark.parametrize("answer", [
    '{"answer": null, "sources": [], "note": "The passages do not cover visa fees."}',
    '{"答案": "", "原因": "资料中未找到相关内容"}',
    "The files you sent cover the gym's opening hours. They don't say anything about locker rental.",
    "I have the 2019 tariff sheet only, which may be outdated, so I'd rather not quote a price.",
    "**Question:** Annual leave for contractors\n**Answer:** not stated in the documents\n**Next step:** ask HR",
    "我看了一下入住须知，里面没有提到宠物能否入住，建议直接问前台。",
])
def test_structured_and_anaphoric_refusals(answer):
    """A JSON reply with a null answer, "they" for the documents just named, declining to quote a possibly
    outdated figure, a "Question:" template line, 里面 for the notice just named: refusals."""
    assert detect_abstention(answer).abstained


@pytest.mark.parametrize("answer", [
    '{"answer": "Yes, up to 2 bags", "sources": ["p3"]}',
    "The manual lists the LX-200's ports. They don't include HDMI.",
    "可以：资料确认支持线上办理，但没有写明需要准备哪些材料。",
])
def test_a_structured_answer_and_a_fact_about_a_thing_are_answers(answer):
    """A JSON answer that holds an answer; "they" for a thing's ports (not for the documents); a one-line key."""
    assert not detect_abstention(answer).abstained


@pytest.mark.parametrize("text", [
    "Could you tell me which plan you're on?", "请问您说的是哪一款产品呢", "The fee is $25. Anything else?",
    "The fee is $25; is that fine? It renews yearly.", "请提供订单号吗。\n", "The fee is $25.", "好的呢，费用25元。",
    "I have opened " * 50 + "ticket",
])
def test_asking_is_found_as_the_sentence_pattern_would_find_it(text):
    """_background asks whether a sentence asks something with _ASKS, the end of QUESTION searched alone: the same
    answer (any question mark, or 吗/呢 at a line's end) without QUESTION's rescan of the sentence from every start."""
    from evalkit.text import partial_answers as pa

    for s in range(0, len(text), 7):
        for e in (len(text), max(s, len(text) - 5)):
            assert bool(pa._ASKS.search(text, s, e)) == bool(pa.QUESTION.search(text, s, e)), (s, e)


def test_a_huge_reply_of_one_sentence_is_read():
    """Hostile input: a 140 KB reply with no sentence mark (the question test once scanned it from every position)."""
    got = detect_abstention("I have opened " * 10_000 + "ticket")
    assert got.abstained and got.reason == "refusal"


@pytest.mark.parametrize("text", ["I can't check " * 10_000, "我无法为您办理" * 10_000])
def test_a_huge_reply_of_many_refusal_words_is_read(text):
    """Hostile input: one sentence of 10,000 refusal words (each once searched the whole sentence for the words near
    it, and again for a system lookup: 79 s and 12 s); found as the refusal it is."""
    got = detect_abstention(text)
    assert got.abstained and got.reason == "refusal"


def test_nearness_from_the_matches_found_once_is_the_scan_of_every_match():
    """_near's bisection over the matches of a text (sharing on) answers as the scan of every match (off), at every
    position and window, on texts with overlapping and adjacent candidates."""
    from evalkit.text import refusal_rules as rr
    from evalkit.text.memo import sharing

    texts = ["I can't find it in the documents; I don't know and the context does not say. " * 3,
             "资料中没有相关信息，我无法确定，文档里也没有提到具体的数据。" * 3]
    for text in texts:
        for pattern in (rr._SPEAKER, rr._SOURCE, rr._INFO, rr._STRONG, rr._SPEAKER_VERB):
            for at in range(0, len(text), 3):
                for span, before in ((35, None), (35, 10), (45, 6), (8, 0)):
                    with sharing(True):
                        fast = rr._near(pattern, text, at, span, before)
                    with sharing(False):
                        slow = rr._near(pattern, text, at, span, before)
                    assert fast == slow, (text[:20], pattern.pattern[:30], at, span, before)


def test_the_eighteenth_held_out_split_is_measured_as_reported():
    """120 more (60 refusals, en/zh 30/30 each), written blind on 2026-12-06 from split 15's brief (realistic refusals
    as deployed assistants write them), opened after the rules found on splits 16 and 17 were committed; measured
    once: precision 1.000, recall 0.733 (en 0.800, zh 0.667); the rules before (cdc2153): 1.000 / 0.683. With the
    learned stage: tests/models/test_abstention_model.py."""
    # development data since: the rules learned from its misses (a clarifying question with options, a ticket
    # confirmation, a question handed to people, thanks and a ticket number are no content) take 8 more
    # why no answer is given: confidential, decided case by case (2026-12-07, sixth session): was {..., zh: (25, 0, 5)}
    assert _split_counts("abstention_test18.jsonl") == {"en": (27, 0, 3), "zh": (26, 0, 4)}


def test_the_nineteenth_held_out_split_is_measured_as_reported():
    """120 more (60 refusals, en/zh 30/30 each), written blind on 2026-12-06 from split 18's brief, opened after the
    rules learned from split 18 were committed; measured once: precision 1.000, recall 0.850 (en 0.900, zh 0.800);
    the rules at the session's start (cdc2153): 0.767, after splits 16 and 17 (6da1261): 0.817. With the learned
    stage: tests/models/test_abstention_model.py."""
    # development data since the rules learned from split 21: "it varies" and what the specifics depend on take
    # r19-110 (不同线路的末班车时间不同，具体要看您乘坐的线路和站点)
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (27, 0, 3), zh: (25, 0, 5)}
    assert _split_counts("abstention_test19.jsonl") == {"en": (27, 0, 3), "zh": (27, 0, 3)}


@pytest.mark.parametrize("text, abstained", [
    ("I'm unable to check coverage for a specific address.", True),   # cannot, whatever the act
    ("I can't view your account or billing history.", True),
    ("I didn't see that in the documents.", True),                     # does not, with a verb of finding
    ("I do not recommend exceeding 3 doses a day.", False),            # advice, not a refusal
    ("I don't advise driving after the procedure.", False),
    ("No, I don't think the plan covers dental.", False),
])
def test_the_speaker_who_cannot_refuses_and_the_speaker_who_advises_against_answers(text, abstained):
    assert detect_abstention(text).abstained is abstained


def test_the_twenty_first_held_out_split_is_measured_as_reported():
    """120 more (60 refusals, en/zh 30/30 each), written blind on 2026-12-06 from split 19's brief, opened after the
    learned stage's fit with split 20 was committed (the rules unchanged since split 19); measured once: precision
    1.000, recall 0.883 (en 0.900, zh 0.867). With the learned stage: tests/models/test_abstention_model.py."""
    # development data since: the rules learned from its misses (a transfer under way, the speaker left out, what
    # "the specifics" depend on, a referral to who handles it or to a technician) take 4 more; r21-072 (the price
    # varies by distance, volume, floor ..., enumerated with 、) stays a partial answer
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (28, 0, 2), zh: (29, 0, 1)}
    assert _split_counts("abstention_test21.jsonl") == {"en": (29, 0, 1), "zh": (29, 0, 1)}


@pytest.mark.parametrize("text, abstained", [
    ("正在为您转接人工客服，请稍候……", True),                       # the question handed to people, under way
    ("资料可能已经调整过，无法为您提供准确的价格。", True),             # the speaker left out where the clause begins
    ("该卡不能为您提供境外取现服务。", False),                         # a card that cannot: a fact about it
    ("该套餐无法为您开通国际漫游。", False),
    ("具体费用需要上门评估后才能确定。", True),                         # what the specifics depend on, and nothing else
    ("不同线路的末班车时间不同，具体要看您乘坐的线路和站点。", True),   # "it varies" is no content
    ("首月免费，具体要看您办理的套餐。", False),                       # an answer, then what it depends on
    ("不同线路的末班车时间不同：1号线23:00，2号线22:30。", False),
    ("我无法为您提供设备维修指导，请在App中提交售后服务申请，师傅会上门处理。", True),
    ("师傅会上门处理。", False),
    ("That's outside what I can answer. The registrar's office handles degree requirements; you can reach them "
     "at registrar@uni.edu.", True),
    ("The registrar's office handles degree requirements.", False),
])
def test_refusals_that_put_the_answer_off_to_people_or_specifics(text, abstained):
    assert detect_abstention(text).abstained is abstained


def test_the_twenty_second_held_out_split_is_measured_as_reported():
    """120 more (60 refusals, en/zh 30/30 each), written blind on 2026-12-06 from split 19's brief, opened after the
    rules learned from split 21 were committed; measured once: precision 0.980, recall 0.800 (en 1.000 / 0.800, zh
    0.960 / 0.800); the rules at the session's start (aae3fe4) read it the same. The false abstention (r22-007): a
    partial answer whose second sentence says 费用方面我这里没有相关信息. With the learned stage:
    tests/models/test_abstention_model.py."""
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (24, 0, 6), zh: (24, 1, 6)}
    # transfers, requests noted, figures withheld, where the information appears (2026-12-07, fifth session): was {en: (25, 0, 5), ...}
    assert _split_counts("abstention_test22.jsonl") == {"en": (26, 0, 4), "zh": (26, 1, 4)}


def test_the_twenty_third_held_out_split_is_measured_as_reported():
    """120 more (60 refusals, en/zh 30/30 each), written blind on 2026-12-06 from split 19's brief, imported unread and
    measured once after the learned stage became the default (1872805): precision 0.979, recall 0.783 (en 1.000 / 0.767,
    zh 0.960 / 0.800); the rules at the session's start (54da2fe) read it the same. The false abstention (r23-044): an
    apology, then what to do, then "我们会在48小时内处理" read as a follow-up promised in place of an answer. With the
    learned stage: tests/models/test_abstention_model.py."""
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (23, 0, 7), zh: (24, 1, 6)}
    # transfers, requests noted, figures withheld, where the information appears (2026-12-07, fifth session): was {..., zh: (27, 1, 3)}
    assert _split_counts("abstention_test23.jsonl") == {"en": (26, 0, 4), "zh": (28, 1, 2)}


def test_the_twenty_fourth_held_out_split_is_measured_as_reported():
    """120 more (60 refusals, en/zh 30/30 each), written blind on 2026-12-06 from split 19's brief, imported unread and
    measured once at a5b7299: precision 0.981, recall 0.850 (en 0.964 / 0.900, zh 1.000 / 0.800); the rules at the
    session's start (54da2fe) read it the same. The false abstention (r24-039): a partial answer whose second sentence
    is "I don't have the current price for an additional bag, though." With the learned stage:
    tests/models/test_abstention_model.py."""
    # since 2026-12-07 "one checked bag" is content, not what the speaker searched: r24-039 is a partial answer
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (27, 0, 3), zh: (24, 0, 6)}
    # bare refusals to disclose, addresses, negated commands (2026-12-07, later): was {en: (28, 0, 2), zh: (26, 0, 4)}
    assert _split_counts("abstention_test24.jsonl") == {"en": (28, 0, 2), "zh": (27, 0, 3)}


def test_the_twenty_fifth_and_sixth_held_out_splits_are_measured_as_reported():
    """240 more (120 refusals, en/zh 30/30 each per split), written blind on 2026-12-06 from split 19's brief by two
    fresh writers, imported unread (0357ec2) and measured once with the rules of that commit: split 25 precision
    1.000, recall 0.867; split 26 precision 1.000, recall 0.833. With the learned stage:
    tests/models/test_abstention_model.py."""
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (26, 0, 4), zh: (26, 0, 4)}
    # bare refusals to disclose, addresses, negated commands (2026-12-07, later): was {en: (27, 0, 3), zh: (27, 0, 3)}
    assert _split_counts("abstention_test25.jsonl") == {"en": (28, 0, 2), "zh": (27, 0, 3)}
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (24, 0, 6), zh: (26, 0, 4)}
    assert _split_counts("abstention_test26.jsonl") == {"en": (25, 0, 5), "zh": (28, 0, 2)}


def test_the_twenty_seventh_and_eighth_held_out_splits_are_measured_as_reported():
    """240 more, written blind on 2026-12-06 from split 19's brief by two fresh writers, imported unread (ed6aab3) and
    measured once there: split 27 precision 0.979, recall 0.783 (the false abstention, r27-032: "On domestic flights
    the first checked bag costs $35. I don't have the international fee schedule, ..."); split 28 1.000 / 0.817. With
    the learned stage: tests/models/test_abstention_model.py."""
    # r27-032 is a partial answer since 2026-12-07 ("the first checked bag costs $35" is content)
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (23, 0, 7), zh: (24, 0, 6)}
    # why no answer is given: confidential, decided case by case (2026-12-07, sixth session): was {..., zh: (26, 0, 4)}
    assert _split_counts("abstention_test27.jsonl") == {"en": (26, 0, 4), "zh": (27, 0, 3)}
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (25, 0, 5), zh: (24, 0, 6)}
    assert _split_counts("abstention_test28.jsonl") == {"en": (26, 0, 4), "zh": (26, 0, 4)}


def test_the_twenty_ninth_and_thirtieth_held_out_splits_are_measured_as_reported():
    """240 more, written blind on 2026-12-07 from split 19's brief by two fresh writers, imported unread (d9f5bcd) and
    measured once there: split 29 precision 1.000, recall 0.817; split 30 0.982 / 0.917 (the false abstention, r30-068:
    "Economy Flex includes one checked bag up to 23 kg. I don't have information on Economy Light in my sources.", the
    third of its kind, after r24-039 and r27-032: "checked" read as what the speaker searched). With the learned stage:
    tests/models/test_abstention_model.py."""
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (24, 0, 6), zh: (25, 0, 5)}
    assert _split_counts("abstention_test29.jsonl") == {"en": (24, 0, 6), "zh": (28, 0, 2)}
    # since the "checked bag" mend (2026-12-07), r30-068 is a partial answer
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (29, 0, 1), zh: (26, 0, 4)}
    assert _split_counts("abstention_test30.jsonl") == {"en": (29, 0, 1), "zh": (28, 0, 2)}


def test_the_thirty_first_to_thirty_fourth_held_out_splits_are_measured_as_reported():
    """480 more, written blind on 2026-12-07 from split 19's brief by four fresh writers, imported unread (c7346da,
    ebef5fa; 33 and 34 written after 31 and 32 were read) and measured once with the rules of 7eb6b4c, unchanged
    since: recall 0.783, 0.867, 0.733 and 0.833, no false abstention. With the learned stage:
    tests/models/test_abstention_model.py."""
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (25, 0, 5), zh: (22, 0, 8)}
    assert _split_counts("abstention_test31.jsonl") == {"en": (25, 0, 5), "zh": (24, 0, 6)}
    # since the same day's second session, r32-117 ("I understand how frustrating ... I've created a support ticket"):
    # sympathy and a ticket logged are the service talking, so the reply is a refusal, not a partial answer
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (29, 0, 1), zh: (24, 0, 6)}
    assert _split_counts("abstention_test32.jsonl") == {"en": (29, 0, 1), "zh": (28, 0, 2)}
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (21, 0, 9), zh: (23, 0, 7)}
    assert _split_counts("abstention_test33.jsonl") == {"en": (24, 0, 6), "zh": (26, 0, 4)}
    # deferrals, questions back, what it depends on (2026-12-07): was {en: (24, 0, 6), zh: (26, 0, 4)}
    # a contact promised, a request noted with its object first, passive publication (2026-12-07, sixth session): was {..., zh: (27, 0, 3)}
    assert _split_counts("abstention_test34.jsonl") == {"en": (26, 0, 4), "zh": (28, 0, 2)}


@pytest.mark.parametrize("reply, reason", [
    ("Economy Flex includes one checked bag up to 23 kg. I don't have information on Economy Light in my sources.",
     "partial"),
    ("The reviewed plan costs $40 a month. I couldn't find what the basic plan costs.", "partial"),
    ("I checked the handbook and the FAQ, but neither says how many days contractors get.", "refusal"),
    ("I've searched our policies and can't find a rule on this.", "refusal"),
    ("Sources checked:\n- Travel policy\n- Finance FAQ\n\nNone of these state a per-mile rate.", "refusal"),
])
def test_a_search_verb_is_what_the_speaker_searched_only_as_a_verb(reply: str, reason: str) -> None:
    """"checked" in "one checked bag" is an adjective of the content, not the speaker's search: three splits' only false
    abstentions (r24-039, r27-032, r30-068) were such answers with a refusal for their other part."""
    assert detect_abstention(reply).reason == reason


def test_the_thirty_ninth_and_fortieth_held_out_splits_are_measured_as_reported():
    """Splits 39 and 40 (split 19's brief), imported unread and measured once with the rules of 2026-12-07 that
    read deferrals, questions back, what the answer depends on and withheld figures: recall 0.900 and 0.850
    (precision 1.000); the rules of the session's start found 51 and 47 of their 60 refusals."""
    # transfers, requests noted, figures withheld, where the information appears (2026-12-07, fifth session): was {en: (25, 0, 5), ...}
    # a contact promised, a request noted with its object first, passive publication (2026-12-07, sixth session): was {en: (26, 0, 4), ...}
    assert _split_counts("abstention_test39.jsonl") == {"en": (27, 0, 3), "zh": (29, 0, 1)}
    # transfers, requests noted, figures withheld, where the information appears (2026-12-07, fifth session): was {..., zh: (25, 0, 5)}
    assert _split_counts("abstention_test40.jsonl") == {"en": (26, 0, 4), "zh": (26, 0, 4)}


def test_the_forty_first_and_forty_second_held_out_splits_are_measured_as_reported():
    """Splits 41 and 42 (split 19's brief), imported unread and measured once with the rules as they were: recall
    0.833 and 0.750 (precision 1.000); the learned stage brings them to 1.000 and 0.917
    (tests/models/test_abstention_question.py)."""
    assert _split_counts("abstention_test41.jsonl") == {"en": (26, 0, 4), "zh": (24, 0, 6)}
    # bare refusals to disclose, addresses, negated commands (2026-12-07, later): was {en: (25, 0, 5), zh: (20, 0, 10)}
    assert _split_counts("abstention_test42.jsonl") == {"en": (25, 0, 5), "zh": (22, 0, 8)}


def test_the_forty_third_and_forty_fourth_held_out_splits_are_measured_as_reported():
    """Splits 43 and 44 (split 19's brief), imported unread and measured once with the rules of 0be3bac: recall 0.817
    and 0.783 (precision 1.000); the learned stage brings them to 0.933 and 0.967
    (tests/models/test_abstention_question.py)."""
    # transfers, requests noted, figures withheld, where the information appears (2026-12-07, fifth session): was {en: (24, 0, 6), zh: (25, 0, 5)}
    assert _split_counts("abstention_test43.jsonl") == {"en": (26, 0, 4), "zh": (27, 0, 3)}
    # transfers, requests noted, figures withheld, where the information appears (2026-12-07, fifth session): was {en: (21, 0, 9), ...}
    # why no answer is given: confidential, decided case by case (2026-12-07, sixth session): was {en: (22, 0, 8), ...}
    assert _split_counts("abstention_test44.jsonl") == {"en": (23, 0, 7), "zh": (26, 0, 4)}


def test_the_forty_fifth_and_forty_sixth_held_out_splits_are_measured_as_reported():
    """Splits 45 and 46 (split 44's brief), imported unread (4641d66) and measured once with the rules of 7b68732: recall
    0.833 and 0.950 (precision 1.000); the rules of the session's start 0.833 and 0.933. With the learned stage:
    tests/models/test_abstention_question.py."""
    # a contact promised, a request noted with its object first, passive publication (2026-12-07, sixth session): was {en: (24, 0, 6), zh: (26, 0, 4)}
    assert _split_counts("abstention_test45.jsonl") == {"en": (25, 0, 5), "zh": (27, 0, 3)}
    # the same: was {en: (27, 0, 3), ...}
    assert _split_counts("abstention_test46.jsonl") == {"en": (28, 0, 2), "zh": (30, 0, 0)}


def test_the_forty_seventh_and_forty_eighth_held_out_splits_are_measured_as_reported():
    """Splits 47 and 48 (split 46's brief), imported unread (cb4fde9) and measured once with the rules of f530839:
    recall 0.867 and 0.883 (precision 1.000); the rules of the session's start read them the same. With the learned
    stage: tests/models/test_abstention_question.py. Development data since: the rules that read why no answer is
    given, a promise to tell later and a sign-off find six more of their refusals."""
    # why no answer is given, a promise to tell later, a sign-off (2026-12-07, sixth session): was {en: (25, 0, 5),
    # zh: (27, 0, 3)} and {en: (27, 0, 3), zh: (26, 0, 4)}
    assert _split_counts("abstention_test47.jsonl") == {"en": (26, 0, 4), "zh": (28, 0, 2)}
    assert _split_counts("abstention_test48.jsonl") == {"en": (29, 0, 1), "zh": (28, 0, 2)}
