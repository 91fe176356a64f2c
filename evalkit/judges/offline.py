"""The ``offline`` judge: deterministic claim-support checking with no LLM (a grounding judge).

What it is for: a fast, free, reproducible first judge that says ``unsupported`` only on
positive evidence, and ``unverified`` for everything its rules cannot decide, so that a
model judge (``offline+llm``, ``offline+nli``) or a person looks only at those. Per claim
(answer sentence), following ``../shared/JUDGING.md``:

1. **Novel atoms** (:mod:`.values`, :mod:`.grounding`): each number, date, code and name
   the claim adds beyond the question is looked for, as a value, in some evidence passage
   *with its own subject* (the names, codes and dates of its part of the sentence), across
   passages: a comparison may take each side from another document. An atom stated with
   its subject is grounded. One stated nowhere is tried against the general derivations of
   :mod:`.reach` (presence with another subject or unit, ranges, unit conversions, one
   operation on two stated values, dates in any format, a word of a name): reached, the
   claim is ``unverified`` and the reason names the derivation (a deadline counted from a stated
   date, the weekday of a date: :mod:`.calendar`). A value not reached is ``unsupported`` only
   with positive evidence (:mod:`.counter`): an evidence sentence that says what the claim says
   states another value for it, or the claim states the value plainly (no word or sign of a
   computation in it or in the answer); otherwise it is a computation of more steps than the
   rules follow, ``unverified``. A name or code not reached is **absent**: ``unsupported``. An
   atom stated, but not with its subject or period, is ``unverified``; a value stated only in rows of
   a list or table, for an item the question or the claim's words around it name as a sibling row's,
   is ``unsupported`` (:mod:`.rows`). An equation the claim
   writes out whose result does not follow (:mod:`.arithmetic`), or two of its values set in an
   order they do not stand in ("58 hours fall short of the 57.6-hour minimum": :mod:`.comparisons`),
   makes it ``unsupported``. An answer to a choice question ("Which band was formed first, A or B?")
   that picks the option the evidence's values rule out is ``unsupported`` (:mod:`.choices`).
2. **Polarity**, per clause (:mod:`.polarity`): a negated evidence clause whose negated
   words a plain claim clause repeats, with term overlap >= ``flip_overlap``, is a polarity
   flip: ``unsupported``; so is a negated claim clause whose best-matching evidence clause
   states its words (``flip_overlap`` of them) without a negation and without a boundary
   ("only", "minimum", "30+", 仅, 以上: a rule with a boundary negates what lies outside it).
   A negated claim clause without negated evidence otherwise is ``unverified`` (antonyms and
   paraphrases negate without a cue word).
   A claim of at least ``MIN_FOREIGN_TERMS`` novel content words none of which is anywhere in
   the evidence, and no grounded atom, is an added sentence: ``unsupported``.
3. **Coverage**: the share of the claim's novel content words (words not in the question;
   grounded atoms count as found words) found in the windows it is grounded in; below
   ``min_coverage`` the claim is ``unverified`` (a paraphrase the rules cannot match).
4. A claim with no novel atom is ``not_checkable`` (never counted as supported) when it
   has fewer than ``min_novel`` content words beyond the question's (or fewer than
   ``min_content`` in all), unless the polarity check caught it; so are courtesy
   phrases ("Hope this helps!", "希望对您有帮助").
5. ``supported``: stated word for word, or every novel atom grounded with its subject, no
   polarity problem, enough coverage, and nothing derived.

Windows are ranked by content coverage (optionally plus multilingual e5 cosine,
``embedder="e5"``); similarity ranks, it never decides. Every verdict names the passage
that decided it (``evidence_id``; all passages used in ``evidence_ids``). Blind spot
(measured, not hidden): a wrong name or number that *does* appear in the evidence with
the claim's subject (the answer confused two things in its context) passes; that needs
relation-level checking (an NLI or LLM judge). Thresholds: fitted by grouped
cross-validation on ``benchmarks/data/judge_cases.jsonl`` (see ``benchmarks/judges.py --cv``).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evalkit.judges.arithmetic import wrong_equations
from evalkit.judges.base import ClaimVerdict, JudgeResult
from evalkit.judges.choices import wrong_choice
from evalkit.judges.comparisons import wrong_comparisons
from evalkit.judges.counter import VALUE_KINDS, asks_aggregate, computes, judge_unreached, same_kind
from evalkit.judges.grounding import (
    AtomGrounding,
    Unit,
    Window,
    analyse,
    coverage,
    ground_atoms,
    passage_pools,
    windows,
)
from evalkit.judges.polarity import check_polarity
from evalkit.judges.reach import reach
from evalkit.judges.rows import misbound
from evalkit.text.assertions import asserted_part, non_assertion
from evalkit.text.claims import is_chinese, split_claims
from evalkit.text.lexicon import COURTESY, negation_cues, term_found
from evalkit.text.tokenize import fold_dashes
from evalkit.text.values import Atom, AtomPool, fold, is_name_fragment

__all__ = ["VERSION", "ClaimSignals", "OfflineJudge", "Thresholds", "triple_statement"]

VERSION = 28  # bump when verdicts for the same inputs and thresholds change


MIN_FOREIGN_TERMS = 3  # content words a claim needs for "none of them is anywhere in the evidence" to count
MIN_VERBATIM = 12  # characters: shorter claims ("Yes.", "3 天") are judged by the rules, not by containment
# a graph fact the generator was shown and quoted ("LX-300 --co_occurs--> LX-200": nodes/generate.triple_text)
_TRIPLE_CLAIM = re.compile(r"^(?P<a>\S.*?)\s+--(?P<rel>[^\s<>\-][^<>]*?)-->\s+(?P<b>\S.*)$")


@dataclass(frozen=True)
class Thresholds:
    """The offline judge's tunable cut-offs.

    Defaults: fitted on ``benchmarks/data/judge_cases.jsonl`` by the grid search of
    :func:`evalkit.judges.scoring.fit_thresholds`; see ``python benchmarks/judges.py --cv``
    for the folds' choices and ``reports/judges.md`` for the out-of-fold figures.
    """

    min_coverage: float = 0.35  # share of the claim's novel content words (and atoms) found where it is grounded
    flip_overlap: float = 0.75  # overlap at which a negated evidence clause counts as restated
    min_content: int = 1        # content words a claim without new atoms needs to be checkable
    min_novel: int = 2          # ... of which not in the question


def triple_statement(claim: str) -> str:
    """The statement a quoted graph triple stands for, as the rules check it.

    ``A --co_occurs--> B`` says only that A and B appear together in its source, so it is
    checked as "A and B" ("A、B"): both grounded in the evidence; a typed relation reads as words
    (``A --supplied_by--> B`` as "A supplied by B"). The arrow notation itself is not a
    claim atom: without this, ``co_occurs`` was taken for a code missing from the evidence.
    Any other claim is returned unchanged.
    """
    m = _TRIPLE_CLAIM.match(claim.strip())
    if not m:
        return claim
    rel = m.group("rel").strip()
    if rel.lower() == "co_occurs":
        middle = "、" if is_chinese(m.group("a") + m.group("b")) else " and "
    else:
        middle = f" {rel.replace('_', ' ')} "
    return f"{m.group('a')}{middle}{m.group('b')}"


def _squash(text: str) -> str:
    """Folded text without whitespace and sentence punctuation, for word-for-word containment."""
    return re.sub(r"[\s。．.!！?？;；,，、:：\"'“”‘’`]+", "", text)


@dataclass
class ClaimSignals:
    """Everything the verdict depends on, computed once; thresholds apply in :meth:`OfflineJudge.decide`."""

    claim: str
    novel_atoms: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)   # novel atoms stated nowhere and not reachable (unsupported)
    missing: list[str] = field(default_factory=list)  # novel atoms stated, but not with their subject (unverified)
    derived: list[str] = field(default_factory=list)  # "270 万元 = 3,420 万元 - 3,150 万元" (unverified)
    notes: list[str] = field(default_factory=list)    # how an atom was grounded without a window (a translation)
    n_novel_terms: int = 0
    n_terms: int = 0
    coverage: float = 1.0
    passage_id: str | None = None                      # the passage that decided the verdict
    passages: list[str] = field(default_factory=list)  # every passage the claim is grounded in
    negation_missing: str | None = None  # reason, when a claim negation has no negated evidence
    negation_overlap: float = 0.0        # how much of that negated claim clause a plain evidence clause restates
    flip: float = 0.0                    # how strongly a plain claim clause restates a negated evidence clause
    flip_reason: str = ""
    asserts_nothing: str | None = None   # what the claim is instead: a courtesy phrase, a question to the reader...
    verbatim_in: str | None = None       # id of a passage that contains the claim word for word
    cross_lingual: bool = False          # no evidence in the claim's language: words are not compared
    wrong_choice: str | None = None      # the answer picks the option of a choice question the evidence rules out


def _asserts_nothing(claim: str, novel: list[Atom]) -> str | None:
    """What a claim that asserts nothing the evidence could check is, or None: a courtesy phrase (its names aside:
    "Thank you for contacting Acme"), or, with no value or name of its own, a question, a request or a referral to
    the reader, the speaker about itself... (:func:`evalkit.text.assertions.non_assertion`)."""
    if COURTESY.search(claim) and all(a.kind == "entity" for a in novel):
        return "a courtesy phrase"
    return None if novel else non_assertion(claim)


class OfflineJudge:
    """The ``offline`` judge backend. ``OfflineJudge(min_coverage=..., embedder="e5")``."""

    def __init__(self, min_coverage: float | None = None, flip_overlap: float | None = None,
                 min_content: int | None = None, min_novel: int | None = None, embedder: str | None = None,
                 sim_weight: float = 0.25):
        given: dict[str, Any] = {"min_coverage": min_coverage, "flip_overlap": flip_overlap, "min_content": min_content,
                 "min_novel": min_novel}
        self.thresholds = Thresholds(**{k: v for k, v in given.items() if v is not None})
        self.embedder, self.sim_weight = embedder, sim_weight
        self._encoder: Any = None
        t = self.thresholds
        self.identity = (f"offline/v{VERSION}:cov={t.min_coverage}:flip={t.flip_overlap}:content={t.min_content}"
                         f":novel={t.min_novel}" + (f":rank={embedder}*{sim_weight}" if embedder else ""))

    # --- public API ---------------------------------------------------------------------------
    def judge(self, question: str, answer: str, evidence: Sequence[tuple[str, str]]) -> JudgeResult:
        """Verdicts for every claim of ``answer``; evidence = [(passage id, text), ...]."""
        try:
            signals = self.analyse(question, answer, evidence)
        except Exception as e:  # noqa: BLE001 - a bug or bad input is an error, never a verdict
            return JudgeResult(claims=[], error=f"{type(e).__name__}: {e}")
        return JudgeResult(claims=[self.decide(s) for s in signals])

    def analyse(self, question: str, answer: str, evidence: Sequence[tuple[str, str]]) -> list[ClaimSignals]:
        """Threshold-free signals per claim (what cross-validation sweeps thresholds over)."""
        # a dash inside a code is "-" in the answer and the evidence alike ("LX‑200" as chat models write it
        # was read as another code than the evidence's "LX-200": unsupported)
        evidence = [(pid, fold_dashes(str(text))) for pid, text in evidence]
        question = fold_dashes(question)
        wins = windows(evidence)
        pools = passage_pools(evidence)
        q = analyse(question)
        q_pool = AtomPool(list(q.atoms), question)
        q_terms, q_text = frozenset(q.terms), fold(question)
        q_negated = frozenset(negation_cues(question))
        claims = split_claims(answer)
        sims = self._similarities(claims, wins)
        out: list[ClaimSignals] = []
        fragment = len(claims) == 1 and is_name_fragment(answer)  # "Brisbane": a name, though it opens the answer
        units = [analyse(triple_statement(fold_dashes(asserted_part(c))), fragment=fragment) for c in claims]
        answer_atoms = [a for u in units for a in u.atoms]  # what a value of the answer may be computed from
        # an answer that computes anywhere, or answers a question asking for a total, may state its results plainly
        computing = computes(answer) or asks_aggregate(question)
        for i, (c, unit) in enumerate(zip(claims, units)):
            out.append(self._signals(unit, wins, pools, q_pool, q_terms, q_text, q_negated,
                                     sims[i] if sims else None, answer_atoms, computing))
            out[-1].claim = c  # verdicts name the claim as the answer wrote it
        if out:  # "Which band was formed first, A or B?": the evidence's dates decide it (:mod:`.choices`)
            out[0].wrong_choice = wrong_choice(question, answer, evidence)
        passages = [(str(pid), _squash(fold(str(text)))) for pid, text in evidence]
        for s in out:  # a claim the evidence states word for word needs no further check
            claim = _squash(fold(fold_dashes(s.claim)))
            if len(claim) >= MIN_VERBATIM:
                s.verbatim_in = next((pid for pid, text in passages if claim in text), None)
        return out

    def decide(self, s: ClaimSignals, thresholds: Thresholds | None = None) -> ClaimVerdict:
        """The verdict for one claim's signals under ``thresholds`` (default: this judge's)."""
        t = thresholds or self.thresholds
        where: dict[str, Any] = {"evidence_id": s.passage_id, "evidence_ids": list(s.passages)}
        if s.wrong_choice:  # a name the evidence states, picked against what the evidence says of it
            return ClaimVerdict(s.claim, "unsupported", s.wrong_choice, **where)
        if s.verbatim_in is not None:
            return ClaimVerdict(s.claim, "supported", f"stated word for word in {s.verbatim_in}",
                                evidence_id=s.verbatim_in, evidence_ids=[s.verbatim_in])
        if s.asserts_nothing:
            return ClaimVerdict(s.claim, "not_checkable", f"{s.asserts_nothing}, not a claim about the evidence")
        if s.absent:
            return ClaimVerdict(s.claim, "unsupported", "; ".join(s.absent), **where)
        if s.flip >= t.flip_overlap:
            return ClaimVerdict(s.claim, "unsupported", s.flip_reason, **where)
        if s.negation_missing and s.negation_overlap >= t.flip_overlap:  # the evidence says all of it, unnegated
            return ClaimVerdict(s.claim, "unsupported", f"polarity flip: {s.negation_missing}", **where)
        if s.missing:
            return ClaimVerdict(s.claim, "unverified", "; ".join(s.missing), **where)
        if s.negation_missing:
            return ClaimVerdict(s.claim, "unverified", s.negation_missing, **where)
        if not s.novel_atoms and s.cross_lingual:
            return ClaimVerdict(s.claim, "not_checkable", "no checkable atoms, and the evidence is in another "
                                "language (words are not compared across languages)", **where)
        if not s.novel_atoms and (s.n_novel_terms < max(1, t.min_novel) or s.n_terms < t.min_content):
            return ClaimVerdict(s.claim, "not_checkable",
                                f"no checkable atoms and too little content ({s.n_terms} content words, "
                                f"{s.n_novel_terms} not in the question)")
        if s.coverage < t.min_coverage and not s.cross_lingual:
            return ClaimVerdict(s.claim, "unverified",
                                f"only {s.coverage:.0%} of the claim's content words found in the evidence it is "
                                f"grounded in (minimum {t.min_coverage:.0%})", **where)
        if s.derived:
            return ClaimVerdict(s.claim, "unverified", f"derived, not stated: {'; '.join(s.derived)}", **where)
        what = f"{len(s.novel_atoms)} atom(s) grounded" if s.novel_atoms else "content found"
        notes = f"; {'; '.join(s.notes)}" if s.notes else ""
        cov = "words not compared (evidence in another language)" if s.cross_lingual else f"coverage {s.coverage:.0%}"
        return ClaimVerdict(s.claim, "supported", f"{what} in {', '.join(s.passages)}; {cov}{notes}", **where)

    # --- internals ----------------------------------------------------------------------------
    def _similarities(self, claims: list[str], wins: list[Window]) -> list[list[float]] | None:
        if not self.embedder or not claims or not wins:
            return None
        if self._encoder is None:
            from evalkit.models.embedders import ModelSpec, cached_embedder

            self._encoder = cached_embedder(ModelSpec(name=self.embedder))
        qv = self._encoder.encode_queries(claims)
        pv = self._encoder.encode_passages([w.text for w in wins])
        return (qv @ pv.T).tolist()

    @staticmethod
    def _reach(grounding: list[AtomGrounding], claim: Unit, pools: dict[str, AtomPool], q_pool: AtomPool,
               answer_atoms: list[Atom], computing: bool = False) -> None:
        """Atoms stated nowhere: reached by a general derivation (unverified) or absent (unsupported)."""
        todo = [g for g in grounding if g.problem and g.window is None]
        if not todo:
            return
        atoms = [a for p in pools.values() for a in p.atoms]
        texts = [p.text for p in pools.values()] + [q_pool.text]
        passages = [p.text for p in pools.values()]
        computed = computing or computes(claim.text)  # a value two steps away is one it may have computed
        # something to compute from: the user's own values in the question ("租19天要付多少？")
        given = any(a.kind in ("number", "duration") for a in q_pool.atoms)
        for g in todo:
            how = reach(g.atom, claim.text, atoms, texts, answer_atoms + list(q_pool.atoms), q_pool.text,
                        computed=computed)
            if how:
                g.derived, g.problem = how, None
            elif g.atom.kind in VALUE_KINDS:  # unsupported only with positive evidence (:mod:`.counter`)
                # ... or another value of its unit in the answer (an operand it worked from)
                computable = given or any(a is not g.atom and a.kind == "number" and same_kind(g.atom, a)
                                          for a in answer_atoms)
                g.absent, why = judge_unreached(g.atom, claim.text, passages, computing, computable)
                g.problem = f"{g.problem}: {why}"
            else:
                g.absent = True

    def _signals(self, claim: Unit, wins: list[Window], pools: dict[str, AtomPool], q_pool: AtomPool,
                 q_terms: frozenset[str], q_text: str, q_negated: frozenset[str], sims: list[float] | None,
                 answer_atoms: list[Atom], computing: bool = False) -> ClaimSignals:
        novel = [i for i, a in enumerate(claim.atoms) if not q_pool.supports(a)]
        novel_terms = [t for t in claim.terms if term_found(t, q_terms, q_text) == 0]
        s = ClaimSignals(claim.text, [claim.atoms[i].describe() for i in novel], n_novel_terms=len(novel_terms),
                         n_terms=len(claim.terms), asserts_nothing=_asserts_nothing(claim.text, [claim.atoms[i] for i in novel]))
        if not wins:
            s.absent = ["no evidence given"] if novel else []
            s.coverage = 0.0
            return s
        rank = {w.index: coverage(claim.terms, [w]) + (self.sim_weight * sims[w.index] if sims else 0.0)
                for w in wins}
        grounding = ground_atoms(claim, novel, wins, pools, rank)
        best = max(wins, key=lambda w: (sum(g.window is w for g in grounding), rank[w.index], -len(w.sentences),
                                        -w.index))
        used = [best] + [g.window for g in grounding if g.window is not None and g.grounded and g.window is not best]
        s.passage_id = best.passage_id
        s.passages = list(dict.fromkeys(w.passage_id for w in used))
        self._reach(grounding, claim, pools, q_pool, answer_atoms, computing)
        s.absent = [g.problem for g in grounding if g.problem and g.absent]
        s.absent += [f"its own arithmetic is wrong: {e.text} gives {e.computed:,.6g}" for e in wrong_equations(claim.text)]
        s.absent += [f"its own comparison is wrong: {c.describe()}" for c in wrong_comparisons(claim.text, claim.atoms)]
        texts = [p.text for p in pools.values()]  # a value a list gives to another item (:mod:`.rows`)
        s.absent += [r for g in grounding if g.grounded and g.window is not None and not g.derived
                     for r in [misbound(g.atom, q_pool.text, claim.text, claim.atoms, texts)] if r]
        s.missing = [g.problem for g in grounding if g.problem and not g.absent]
        s.derived = [g.derived for g in grounding if g.derived]
        s.notes = [g.note for g in grounding if g.note]
        if novel_terms or novel:  # novel words found, and grounded novel atoms, count alike
            found = coverage(novel_terms, used) * len(novel_terms) + sum(g.grounded for g in grounding)
            s.coverage = found / (len(novel_terms) + len(novel))
        else:  # the claim restates the question: how much of it the evidence says
            s.coverage = coverage(claim.terms, [best])
        zh = is_chinese(claim.text)
        s.cross_lingual = not any(w.zh == zh for w in wins)
        if len(novel_terms) >= MIN_FOREIGN_TERMS and not s.cross_lingual and not any(g.grounded for g in grounding) \
                and coverage(novel_terms, wins) == 0:  # an added sentence: nothing of it is anywhere in the evidence
            s.absent.append(f"none of its {len(novel_terms)} content words ({', '.join(novel_terms[:4])}) is anywhere "
                            "in the evidence")
        # polarity compares words: only with evidence in the claim's language; each clause also
        # with the window that matches it best ("..., and it covers damage from lightning")
        same_lang = [w for w in wins if w.zh == zh]
        checked = [w for w in used if w.zh == zh]
        for c in claim.clauses:
            if c.terms and same_lang:
                terms = sorted(c.terms)
                w = max(same_lang, key=lambda w: (coverage(terms, [w]), -len(w.sentences), -w.index))
                if w not in checked and coverage(terms, [w]) >= 0.5:
                    checked.append(w)
        pol = check_polarity(claim.clauses, checked, q_negated, q_terms, same_lang)
        s.negation_missing, s.flip, s.flip_reason = pol.negation_missing, pol.flip, pol.flip_reason
        s.negation_overlap = pol.missing_overlap
        return s
