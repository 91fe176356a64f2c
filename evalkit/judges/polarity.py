"""Polarity: does a claim say "not" where its evidence does not, or drop a "not" the evidence says?

What it is for: the offline judge's negation check (:mod:`evalkit.judges.offline`),
clause by clause, against the clauses of the evidence windows the claim was grounded in:

- a **negated claim clause** (a cue of :mod:`evalkit.text.lexicon` that the question
  did not bring) needs its best-matching evidence clause to be negated too, or a negated
  evidence clause it restates (term overlap >= 0.5), or the same Chinese cue phrase
  written in the evidence ("不限"), or a negated clause of the best clause's sentence whose
  scope it repeats, or whose cue and scope hold the characters of the claim's negated word
  ("不收费" for "……办理跨行转账，免收手续费"; one claim clause for two evidence clauses), or,
  for an elliptical negation ("T2 则没有"), a negated evidence clause that negates what the
  claim's earlier clauses state, or, for a bare answer ("No for the X1"), a negated clause about the
  question's predicate where its subject is named; otherwise: ``negation_missing``. A claim
  clause negated only by a word that ends a thing (下线, 停售, 失去) needs no negated evidence
  (its synonyms 结束, 终止 are no cues), but it is no plain clause either;
- a **plain claim clause** that restates what a negated evidence clause negates (its
  *scope*, the first content words after the cue) is a polarity **flip**; its strength is
  the term overlap, compared with the judge's ``flip_overlap`` threshold; not when another,
  negated clause of the same claim restates that evidence clause (a label before the fact:
  "Production access: interns do not get production access"), nor when another passage
  states it plainly with more of the claim clause's words (its subject: "T1 有防干烧" when
  only T2's leaflet says "未配备防干烧功能"). A name or code of the claim clause stated in an
  earlier clause of the negated clause's sentence counts as restated ("青禾T2为1.7升保温款，
  但未配备防干烧功能" against "T2也配备了防干烧保护"). Nor is "only X" a flip of a negation
  with an exception ("only water" for "do not eat or drink anything except water").

A "free" (免费, 免票: :func:`evalkit.text.lexicon.is_soft_cue`) negates only a charge: in the
evidence it stands for a claim clause's negated charge (不收费, 无需购票), never for another
negation, and is never flipped ("免费预约参观" is not "无需预约", nor flipped by "需要预约"); in a
claim it is a plain word ("门票免费" flips "门票并不免费"). A claim's end word (下线, 失去, "dropped
support") flips only a negated end ("从未下线"), and no evidence end stands for a negated one ("从未闭馆").
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from evalkit.judges.grounding import Clause, Window
from evalkit.text.assertions import CONDITION
from evalkit.text.lexicon import CJK, content_terms, is_charge, is_end_cue, is_soft_cue, negated_before, term_found
from evalkit.text.values import extract_atoms

__all__ = ["Polarity", "check_polarity", "short"]


@dataclass
class Polarity:
    """The polarity findings of one claim (thresholds are applied by the judge)."""

    negation_missing: str | None = None  # reason, when a claim negation has no negated evidence
    missing_overlap: float = 0.0         # ... and how much of that claim clause a plain evidence clause restates
    flip: float = 0.0                    # how strongly a plain claim clause restates a negated evidence clause
    flip_reason: str = ""


def _overlap(a: frozenset[str], b: Clause) -> tuple[float, int]:
    """(share of ``b``'s terms found in ``a``, number of shared terms)."""
    if not b.terms:
        return 0.0, 0
    joined = " ".join(a)
    hits = sum(1 for t in b.terms if term_found(t, a, joined) >= 1.0)
    return hits / len(b.terms), hits


def _dice(terms: frozenset[str], e: Clause) -> float:
    if not terms or not e.terms:
        return 0.0
    joined = " ".join(e.terms)
    hits = sum(1 for t in terms if term_found(t, e.terms, joined) >= 1.0)
    return 2 * hits / (len(terms) + len(e.terms))


def short(text: str, n: int = 60) -> str:
    """``text`` on one line, cut to ``n`` characters (for reasons)."""
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= n else text[:n - 1] + "…"


def _found(terms: frozenset[str] | Sequence[str], where: frozenset[str], text: str) -> int:
    """How many of ``terms`` are found (fully) in ``where`` / ``text``."""
    return sum(1 for t in terms if term_found(t, where, text) >= 1.0)


def _sentence_negation(c: Clause, best: Clause, sentences: Sequence[Sequence[Clause]]) -> bool:
    """True when another clause of ``best``'s evidence sentence is negated and ``c`` repeats its scope.

    One claim clause may join two clauses of one evidence sentence ("it should not be combined
    with warfarin because of a bleeding risk" for "X should not be used with warfarin, because
    the combination increases the risk of bleeding"): the best-matching clause is then the plain one.
    """
    joined = " ".join(c.terms)
    for sent in sentences:
        if any(x is best for x in sent):
            return any(_negates(e, c) and ((e.scope and (_found(e.scope, c.terms, joined) >= 1 or _same_predicate(c, e)))
                                           or _free_of(c, e)) for e in sent if e is not best)
    return False


def _negates(e: Clause, c: Clause) -> bool:
    """True when the evidence clause ``e`` is negated for the claim clause ``c``: a "free" (免费预约参观)
    negates only a charge, so it counts only for a claim that negates one ("不收费"); an end (闭馆)
    does not count for a claim that negates an end itself ("从未闭馆")."""
    if e.cues and all(is_end_cue(x) for x in e.cues) and any(is_end_cue(x) for x in c.cues):
        return False  # "从未闭馆", "never dropped support": a negated end, not the end "曾两次闭馆" states
    return bool(e.cues) and (not all(is_soft_cue(x) for x in e.cues) or _of_charge(c))


def _of_charge(c: Clause) -> bool:
    """True when the claim clause ``c`` speaks of a charge (不收费, 无需购票, "pay no admission"),
    its own "free" aside (无法免费预约: the 费 of 免费 is no charge of its own)."""
    text = c.text
    for cue in c.cues:
        if is_soft_cue(cue):
            text = text.replace(cue, " ")
    return is_charge(text)


def _free_of(c: Clause, e: Clause) -> bool:
    """True when ``e`` says "free" (免费) and ``c`` negates a charge ("……办理跨行转账，免费" for "不收手续费")."""
    return all(is_soft_cue(x) for x in e.cues) and _of_charge(c)


def _negated_from(c: Clause) -> str:
    """``c``'s text from its first cue on (the cue and what it negates)."""
    at = c.text.find(c.cues[0]) if c.cues else -1
    return c.text[at:] if at >= 0 else ""


def _same_predicate(c: Clause, e: Clause) -> bool:
    """True when every character of the Chinese word ``c`` negates first is in ``e`` from its cue on:
    "不收费" restates "免收手续费" (免收 = 不收), though jieba cuts 收费 and 手续费 apart."""
    said = content_terms(_negated_from(c))
    return bool(said) and CJK.search(said[0]) is not None and term_found(said[0], frozenset(), _negated_from(e)) >= 0.5


def _answers_question(c: Clause, windows: Sequence[Window], q_terms: frozenset[str]) -> bool:
    """True for a bare answer ("No for the X1", "T2 则没有": every term from the question) when the
    evidence negates the question's predicate for its subject.

    Its subject is its own terms; its predicate the question's other terms ("support", "Wi-Fi").
    It is stated when a window that names the subject has a negated clause whose scope is a
    predicate term ("It does not support the 6 GHz band" after "The Orbit X1 is ...").
    """
    q_text = " ".join(q_terms)
    if not q_terms or _found(c.terms, q_terms, q_text) < len(c.terms):
        return False
    predicate = frozenset(t for t in q_terms if term_found(t, c.terms, " ".join(c.terms)) < 1.0)
    p_text = " ".join(predicate)
    return any(_found(c.terms, w.terms, w.text) == len(c.terms)
               and any(e.cues and _found(e.scope, predicate, p_text) >= 1 for e in w.clauses) for w in windows)


_TRAILING = re.compile(r"[\s\W_]+$")


def _elliptical(c: Clause, before: Sequence[Clause], sentences: Sequence[Sequence[Clause]]) -> bool:
    """True when ``c`` ends on its cue ("T2（1.7L，可55℃恒温）则没有", "..., HR does not") and an
    evidence sentence negates what the claim's earlier clauses state ("有防干烧": "未配备防干烧功能").

    The negated evidence clause must share a sentence with a clause that states ``c``'s own
    words, if it has any (the subject it is about: "青禾T2为1.7升保温款，支持55℃恒温，但未配备防干烧功能").
    """
    if not c.cues or not _TRAILING.sub("", c.text).lower().endswith(c.cues[-1]) or not before:
        return False
    prior_text = " ".join(b.text for b in before)
    prior = frozenset(t for b in before for t in b.terms)
    own = " ".join(c.terms)
    for sent in sentences:
        if c.terms and not any(_found(x.terms, c.terms, own) >= 1 for x in sent):
            continue  # not about this clause's subject
        if any(e.cues and _found(e.scope, prior, prior_text) >= 1 for e in sent):
            return True
    return False


def _sentence_terms(sent: Sequence[Clause]) -> tuple[frozenset[str], str]:
    terms = frozenset(t for x in sent for t in x.terms)
    return terms, " ".join(x.text for x in sent)


@lru_cache(maxsize=20_000)
def _subject_terms(text: str) -> frozenset[str]:
    """The terms of the names and codes of a claim clause (what it is about: "T2", "Orbit X1")."""
    return frozenset(t for a in extract_atoms(text) if a.kind in ("entity", "code") for t in content_terms(a.text))


def _bound(c: Clause, e: Clause, sentences: Sequence[Sequence[Clause]]) -> int:
    """How many names and codes of ``c`` the clauses before the evidence clause ``e`` in its
    sentence state, that ``e`` itself does not (0 if not found).

    The subject of a negated clause is often in an earlier clause of its sentence ("青禾T2为1.7升
    保温款，……，但未配备防干烧功能"): a claim naming it ("T2也配备了防干烧保护") restates that sentence.
    """
    for sent in sentences:
        at = next((i for i, x in enumerate(sent) if x is e), None)
        if at is not None:
            subject = [t for t in _subject_terms(c.text) if term_found(t, e.terms, e.text) < 1.0]
            terms, text = _sentence_terms(sent[:at])
            return _found(subject, terms, text)
    return 0


def _plain_elsewhere(c: Clause, e: Clause, passages: dict[str, list[Sequence[Clause]]]) -> bool:
    """True when another passage states what ``e`` negates, plainly, in a sentence with more of
    ``c``'s terms (its subject) than ``e``'s passage has: the claim is about the thing that has it."""
    def found(sents: Sequence[Sequence[Clause]]) -> int:
        terms, text = _sentence_terms([x for sent in sents for x in sent])
        return _found(c.terms, terms, text)

    own = [sents for sents in passages.values() if any(x is e for sent in sents for x in sent)]
    if not own:
        return False
    bound = found(own[0])
    return any(found([sent]) > bound for sents in passages.values() if sents is not own[0] for sent in sents
               if any(not x.cues and _found(e.scope, x.terms, x.text) >= 1 for x in sent))


def _brought(c: Clause, q_cues: bool | frozenset[str]) -> bool:
    """True when the question brought ``c``'s negation ("Why can't ...?": "... cannot ..."): a
    shared cue, or a plain "not" in both; a question asking what loses a right ("会失去资格吗")
    does not bring the "不" of the answer's other clause ("病假不计入缺勤天数")."""
    if isinstance(q_cues, bool):
        return q_cues
    plain = [x for x in c.cues if not is_end_cue(x)]  # "从未闭馆" against "曾经闭馆过吗": 从未 is the answer's own
    return any(x in q_cues for x in plain) or (bool(plain) and any(not is_end_cue(q) for q in q_cues))


_EXCEPTION = re.compile(r"\b(?:except|other than|apart from|besides|save for)\b|\bbut\s+(?=\w)|除")
# "nothing but water": the clauses are cut at "but", so the clause before ends on "nothing"
_BOUNDED = re.compile(r"\b(?:only|solely|exclusively|minimum|maximum|at least|at most|or more|or older|or less|"
                      r"and above|and over|up to|unless|provided)\b|\d\s*\+|只|仅|唯|最低|最高|最少|最多|至少|以上|"
                      r"以下|以内", re.IGNORECASE)
# a rule for the cases a condition or a bound picks out ("Vessels of more than 200 metres must engage a pilot", "If
# the fee is unpaid, the patent lapses", 如果...): a case outside it is negated by the rule too (not Chinese 超过: "累计缺勤超过
# 20天的学生失去资格" with the student's 25 days beside it decides the case, measured). Read
# in the best clause's part of its sentence (up to a semicolon): "Callouts are included in the monthly fee; parts
# costing more than $500 are billed separately" bounds the parts, not the callouts
_CONDITIONED = re.compile(r"\b(?:more|less|fewer|longer|shorter|larger|smaller|greater) than\b|\b(?:over|under|above|below|"
                          r"exceeding)\s+(?:[$€£¥]\s?)?\d|\b(?:if|when|whenever|where|who|whose)\b|如果|假如|若是",
                          re.IGNORECASE)
_COMPARATIVE = re.compile(r"\s*(?:(?:yet|quite|even|at\s+all)\s+)?(?:超过|超出|高于|低于|多于|少于|达到|达标|够|exceed\w*|above|below|"
                          r"over|under|more\s+than|less\s+than|fewer\s+than|reach\w*|meet\w*|higher|lower|enough)",
                          re.IGNORECASE)
_EXCLUSIVE = re.compile(r"\b(?:only|solely|exclusively)\b|\bnothing(?: but\b|\W*\n)|只|仅|唯", re.IGNORECASE)


def _exclusive(said: str, e: Clause, sentences: Sequence[Sequence[Clause]]) -> bool:
    """True when ``e`` negates all but an exception ("do not eat or drink anything except water",
    "除饮水外不得进食") and the claim clause (with the one before it: ``said``) says "only" ("only
    water", "nothing but water", 只能饮水): the same rule, not a flip."""
    if not _EXCLUSIVE.search(said):
        return False
    sent = next((x for x in sentences if any(y is e for y in x)), [e])
    m = _EXCEPTION.search(" ".join(x.text for x in sent))
    if not m:
        return False
    # the exception is what the claim allows: "only water" for "... except water"
    excepted = content_terms(re.split(r"以外|之外|外", m.string[m.end():], maxsplit=1)[0])[:2]
    said_terms = frozenset(content_terms(said))
    return _found(excepted, said_terms, " ".join(said_terms)) >= 1


def _negated_end(e: Clause) -> bool:
    """True for an evidence clause that negates an end ("从未下线", "did not drop support")."""
    return any(is_end_cue(x) for x in e.cues) and any(not (is_end_cue(x) or is_soft_cue(x)) for x in e.cues)


def _written_plain(phrase: str, clauses: Sequence[Clause]) -> bool:
    """True when one of ``clauses`` writes ``phrase`` with no negator right before it."""
    return any(not negated_before(e.text, m.start()) for e in clauses for m in re.finditer(re.escape(phrase), e.text))


def _plain_phrases(c: Clause) -> list[str]:
    """``c``'s cue phrases ("不限") but those of a "free" or an end (免费预, 闭馆): written the same in
    the evidence, they do not show the evidence negates what ``c`` does ("免费预约参观", "两次闭馆")."""
    return [p for p in c.phrases if not any(p.startswith(x) and (is_soft_cue(x) or is_end_cue(x)) for x in c.cues)]


def check_polarity(claim_clauses: Sequence[Clause], windows: Sequence[Window], q_negated: bool | frozenset[str],
                   q_terms: frozenset[str] = frozenset(), context: Sequence[Window] = ()) -> Polarity:
    """Compare each claim clause's polarity with the clauses of the evidence ``windows`` (see the
    module docstring); ``context``: every window in the claim's language, where a bare answer's
    subject is looked for (with the question's terms ``q_terms``); ``q_negated``: the question's
    negation cues (or whether it has any)."""
    out = Polarity()
    evidence_clauses = [c for w in windows for c in w.clauses]
    sentences = [u.clauses for w in (*windows, *context) for u in w.sentences]
    written = {id(u.clauses): u.text for w in (*windows, *context) for u in w.sentences}  # with its punctuation
    passages: dict[str, list[Sequence[Clause]]] = {}
    for w in (*windows, *context):
        got = passages.setdefault(w.passage_id, [])
        got += [u.clauses for u in w.sentences if not any(u.clauses is g for g in got)]
    neg_ev = [c for c in evidence_clauses if c.cues and c.terms]
    # a clause negated only by "free" (免费预约参观) negates a fee, not the words after it
    # ... and one that opens with a condition ("If the fee is not paid, ...", 如果未按期缴费) states no fact to flip
    hard_ev = [e for e in neg_ev if not all(is_soft_cue(x) for x in e.cues) and not CONDITION.match(e.text)]
    # a negated evidence clause that a negated clause of the claim restates is not flipped by
    # another, plain clause of the same claim ("Production access: interns do not get production access.")
    # ("门票免费" is plain; "已下线" restates no negated end "从未下线")
    neg_claim = [c for c in claim_clauses if c.cues and c.terms and not all(is_soft_cue(x) for x in c.cues)]
    # ... nor one the claim restates across its clauses: a negated clause that says two of its words, in a claim
    # that says half of them ("购物卡属于现金等价物，任何情况下都不能接受" for "任何情况下不得接受现金、购物卡等现金等价物")
    claim_terms = frozenset(t for c in claim_clauses for t in c.terms)
    flippable = [e for e in hard_ev if not any((_overlap(c.terms, e)[0] >= 0.5 and _overlap(c.terms, e)[1] >= 1
                                               or _overlap(c.terms, e)[1] >= 2 and _overlap(claim_terms, e)[0] >= 0.5)
                                              and not (_negated_end(e) and all(is_end_cue(x) for x in c.cues))
                                              for c in neg_claim)]
    for i, c in enumerate(claim_clauses):
        if not c.terms:
            continue
        candidates = flippable
        if c.cues and all(is_soft_cue(x) for x in c.cues):
            pass  # "门票免费" is plain: a flip of "门票并不免费", and no cue that "不收取手续费" must match
        elif c.cues and all(is_end_cue(x) or is_soft_cue(x) for x in c.cues):
            # "下线", "停售", "ended support": a word too, whose synonyms (结束, 终止) carry no cue; a flip
            # only of a negated end ("从未下线"), since "失去资格" says what "不具备资格" does
            candidates = [e for e in flippable if _negated_end(e)]
        elif c.cues:
            if _brought(c, q_negated):
                continue  # the question brought the negation ("Why can't ...?")
            best = max(evidence_clauses, key=lambda e: _dice(c.terms, e), default=None)
            restated = any(_overlap(c.terms, e)[0] >= 0.5 and _overlap(c.terms, e)[1] >= 1 for e in neg_ev
                           if _negates(e, c))
            # jieba may cut the same words differently in two contexts (企业版不限 / 不限):
            # the negated phrase written the same way in the evidence counts
            # (not where a negator negates the phrase: 不免收服务费 is no 免收服务费; the best clause, where it has it)
            restated = restated or any(_written_plain(p, [best] if best is not None and p in best.text
                                                      else evidence_clauses) for p in _plain_phrases(c))
            restated = restated or _elliptical(c, [b for b in claim_clauses[:i] if not b.cues], sentences)
            restated = restated or (best is not None and _sentence_negation(c, best, sentences))
            # "No for the X1": the question's predicate, negated for its subject
            restated = restated or _answers_question(c, context or windows, q_terms)
            # the best clause must say the same thing: two shared terms (or all of a one-term clause),
            # else the evidence holds no plain counterpart to compare with
            same = best is not None and _overlap(best.terms, c)[1] >= min(2, len(c.terms))
            if same and best is not None and not _negates(best, c) and not restated and out.negation_missing is None:
                out.negation_missing = f"negation '{c.cues[0]}' absent from best sentence ('{short(best.text)}')"
                sent = next((" ".join(y.text for y in x) for x in sentences if any(y is best for y in x)), best.text)
                # a rule with a boundary ("仅旗舰版支持", "minimum Android 9", "30+ hours") says the negation of
                # what falls outside it: restating it negated is no flip
                # nor does a negated comparison ("没有超过30万元", "not above the limit"): the answer compared values
                compares = bool(_COMPARATIVE.match(_negated_from(c), len(c.cues[0])))
                # nor a negated condition, which states no fact: "If you haven't used it before, ..." ("New users must")
                condition = bool(CONDITION.match(c.text))
                whole = next((written.get(id(x), sent) for x in sentences if any(y is best for y in x)), sent)
                part = next((p for p in re.split(r"[;；]", whole) if best.text.strip() in p), whole)
                bounded = bool(_BOUNDED.search(sent) or _CONDITIONED.search(part))
                out.missing_overlap = 0.0 if bounded or compares or condition else _overlap(best.terms, c)[0]
            continue
        joined = " ".join(c.terms)
        for e in candidates:
            if not any(term_found(t, c.terms, joined) >= 1.0 for t in e.scope):
                continue  # the claim does not restate what the evidence negates
            cov_e, hits = _overlap(c.terms, e)
            cov_c = (hits + _bound(c, e, sentences)) / len(c.terms)
            score = max(cov_e, cov_c) if hits >= min(2, len(e.terms)) else 0.0
            if score and _exclusive("\n".join(x.text for x in claim_clauses[max(0, i - 1):i + 1]), e, sentences):
                continue  # "only water for 8 hours" restates "nothing except water for 8 hours"
            if score and _plain_elsewhere(c, e, passages):
                continue  # the claim's subject has it ("T1 有防干烧"), another one lacks it ("T2 未配备防干烧功能")
            if score > out.flip:
                out.flip = score
                out.flip_reason = f"polarity flip: evidence says '{short(e.text)}' (negation '{e.cues[0]}'), the claim does not"
    return out
