"""The ``offline`` judge: deterministic claim-support checking with no LLM (a grounding judge).

What it is for: a fast, free, reproducible first judge that catches the errors a
retrieval-augmented answer most often makes (a changed number or date, a name the
evidence never mentions, a flipped negation, an added unsupported sentence), following
the grounding judge measured in ``../shared/JUDGING.md``. Per claim (answer sentence):

1. **Novel atoms** (:mod:`.values`): the numbers, dates, codes and names the claim adds
   beyond the question must ALL be stated, as values, in ONE evidence window (1-3
   consecutive sentences of a passage). Otherwise: unsupported ("number 5,000 not in
   evidence (evidence has 10,000)").
2. **Polarity**, per clause (:mod:`.lexicon` cue lists): a negated claim clause (cue
   absent from the question) needs its best-matching evidence clause in that window to
   be negated; a negated evidence clause whose negated words (its *scope*) a plain claim
   clause repeats, with term overlap >= ``flip_overlap``, is a polarity flip.
3. **Coverage**: the share of the claim's novel content words (words not in the
   question; stated novel atoms count as found words) found in the window must be at
   least ``min_coverage``.
4. A claim with no novel atom is ``not_checkable`` (never counted as supported) when it
   has fewer than ``min_novel`` content words beyond the question's (or fewer than
   ``min_content`` in all), unless the polarity check caught it; so are courtesy
   phrases ("Hope this helps!", "希望对您有帮助").

Windows are ranked by matched atoms, then content coverage (optionally plus multilingual
e5 cosine, ``embedder="e5"``); similarity ranks, it never decides. Blind spot (measured,
not hidden): a wrong name or number that *does* appear in the evidence window (the
answer confused two things in its context) passes; that needs relation-level checking
(an NLI or LLM judge). Thresholds: fitted by grouped cross-validation on
``benchmarks/data/judge_cases.jsonl`` (see ``benchmarks/judges.py --cv``).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from evalkit.judges.base import ClaimVerdict, JudgeResult
from evalkit.judges.claims import split_claims, split_clauses
from evalkit.judges.lexicon import (
    CJK,
    content_terms,
    negation_cues,
    negation_spans,
    term_found,
)
from evalkit.judges.values import Atom, AtomPool, extract_atoms, fold, mask_atoms

__all__ = ["VERSION", "ClaimSignals", "OfflineJudge", "Thresholds"]

VERSION = 2  # bump when verdicts for the same inputs and thresholds change
MAX_WINDOW = 3
# answer courtesy, not claims: never checked (a claim with an atom is still checked)
_BOILERPLATE = re.compile(
    r"^\W*(?:i\s+)?hope\s+(?:this|that|it)\s+helps|^\W*(?:please\s+)?(?:let\s+me\s+know|feel\s+free)|"
    r"^\W*(?:thanks|thank\s+you)\b|^\W*(?:is\s+there\s+anything\s+else)|^\W*(?:i\s+)?hope\s+this\s+answers|"
    r"^\W*(?:希望|但愿)(?:以上|这些|这)?(?:内容|回答|信息)?(?:对(?:你|您)有(?:所)?帮助|能帮到(?:你|您))|"
    r"^\W*如(?:果)?(?:有|还有)(?:其他|任何)?(?:问题|疑问)|^\W*(?:谢谢|感谢)", re.IGNORECASE)


@dataclass(frozen=True)
class Thresholds:
    """The offline judge's tunable cut-offs.

    Defaults: fitted on ``benchmarks/data/judge_cases.jsonl`` by the grid search of
    :func:`evalkit.judges.scoring.fit_thresholds`; the 5 grouped CV folds chose the same
    coverage and novelty and flip_overlap 0.75 in 4 of 5 (0.67 in one); see
    ``python benchmarks/judges.py --cv``.
    """

    min_coverage: float = 0.35  # share of the claim's novel content words (and atoms) found in the window
    flip_overlap: float = 0.75  # overlap at which a negated evidence clause counts as restated
    min_content: int = 1        # content words a claim without new atoms needs to be checkable
    min_novel: int = 2          # ... of which not in the question


@dataclass(frozen=True)
class Clause:
    """A clause with its comparable terms (content words + atom keys) and its negation cues."""

    text: str
    terms: frozenset[str]
    cues: tuple[str, ...]
    scope: frozenset[str] = frozenset()  # the first content terms after the first cue: what it negates
    phrases: tuple[str, ...] = ()        # Chinese cue + next character as written ("不限")


SCOPE_TERMS = 4


@dataclass(frozen=True)
class Unit:
    """An analysed sentence (claim, evidence sentence or question): atoms, terms, clauses."""

    text: str
    atoms: tuple[Atom, ...]
    terms: tuple[str, ...]
    clauses: tuple[Clause, ...]


def _mask_values(text: str, atoms: tuple[Atom, ...]) -> str:
    """Blank numbers, dates and times (compared as values); codes and names stay as words."""
    return mask_atoms(text, [a for a in atoms if a.kind not in ("entity", "code")])


@lru_cache(maxsize=200_000)
def _clause(text: str) -> Clause:
    atoms = extract_atoms(text, entities=False)
    terms = set(content_terms(_mask_values(text, atoms))) | {a.key for a in atoms if a.kind not in ("entity", "code")}
    spans = negation_spans(text)
    scope: tuple[str, ...] = ()
    if spans:
        cue, end = spans[0]
        # "non-refundable", "unavailable": the cue word carries what it negates
        inner = content_terms(re.sub(r"^(?:non-|un)", "", cue)) if re.match(r"non-|un", cue) else ()
        after = content_terms(_mask_values(text, atoms)[end:])[:SCOPE_TERMS]
        # an elliptical negation ("..., HR does not.") negates what comes before it
        before = content_terms(_mask_values(text, atoms)[:max(0, end - len(cue))])[-SCOPE_TERMS:]
        scope = inner + (after or (() if inner else before))
    phrases = tuple(text[max(0, end - len(cue)):end + 1] for cue, end in spans if CJK.search(cue))
    return Clause(text, frozenset(terms), tuple(c for c, _ in spans), frozenset(scope), phrases)


MIN_VERBATIM = 12  # characters: shorter claims ("Yes.", "3 天") are judged by the rules, not by containment


def _squash(text: str) -> str:
    """Folded text without whitespace and sentence punctuation, for word-for-word containment."""
    return re.sub(r"[\s。．.!！?？;；,，、:：\"'“”‘’`]+", "", text)


@lru_cache(maxsize=200_000)
def analyse(text: str, entities: bool = True) -> Unit:
    """Atoms, content terms and clauses of one sentence (cached by text: passages repeat).

    Evidence sentences are analysed with ``entities=False`` (see :func:`extract_atoms`)."""
    atoms = extract_atoms(text, entities)
    return Unit(text, atoms, content_terms(_mask_values(text, atoms)),
                tuple(_clause(c) for c in split_clauses(text)))


@dataclass
class Window:
    """Up to three consecutive sentences of one passage, with their atoms and terms."""

    passage_id: str
    sentences: tuple[Unit, ...]
    index: int

    def __post_init__(self) -> None:
        self.text = " ".join(u.text for u in self.sentences)
        self.pool = AtomPool([a for u in self.sentences for a in u.atoms], self.text)
        self.terms = frozenset(t for u in self.sentences for t in u.terms)
        self.folded = fold(self.text)
        self.clauses = [c for u in self.sentences for c in u.clauses]


@lru_cache(maxsize=512)
def _windows(evidence: tuple[tuple[str, str], ...]) -> list[Window]:
    """Every window of 1..MAX_WINDOW consecutive sentences of each passage (cached: the same
    evidence is often judged with several answers). Windows are never mutated."""
    out: list[Window] = []
    for pid, text in evidence:
        units = [analyse(s, entities=False) for s in split_claims(text)]
        for i in range(len(units)):
            for n in range(1, MAX_WINDOW + 1):
                if i + n <= len(units):
                    out.append(Window(pid, tuple(units[i:i + n]), len(out)))
    return out


def _coverage(terms: Sequence[str], window: Window) -> float:
    if not terms:
        return 1.0
    return sum(term_found(t, window.terms, window.folded) for t in terms) / len(terms)


def _overlap(a: frozenset[str], b: Clause) -> tuple[float, int]:
    """(share of ``b``'s terms found in ``a``, number of shared terms)."""
    if not b.terms:
        return 0.0, 0
    joined = " ".join(a)
    hits = sum(1 for t in b.terms if term_found(t, a, joined) >= 1.0)
    return hits / len(b.terms), hits


@dataclass
class ClaimSignals:
    """Everything the verdict depends on, computed once; thresholds apply in :meth:`OfflineJudge.decide`."""

    claim: str
    novel_atoms: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # reasons for atoms no window states with the rest
    n_novel_terms: int = 0
    n_terms: int = 0
    coverage: float = 1.0
    passage_id: str | None = None
    negation_missing: str | None = None  # reason, when a claim negation has no negated evidence
    flip: float = 0.0                    # how strongly a plain claim clause restates a negated evidence clause
    flip_reason: str = ""
    boilerplate: bool = False            # "Hope this helps!", "如有其他问题请随时联系"
    verbatim_in: str | None = None       # id of a passage that contains the claim word for word


class OfflineJudge:
    """The ``offline`` judge backend. ``OfflineJudge(min_coverage=..., embedder="e5")``."""

    def __init__(self, min_coverage: float | None = None, flip_overlap: float | None = None,
                 min_content: int | None = None, min_novel: int | None = None, embedder: str | None = None,
                 sim_weight: float = 0.25):
        given = {"min_coverage": min_coverage, "flip_overlap": flip_overlap, "min_content": min_content,
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
        windows = self._windows(evidence)
        q = analyse(question)
        q_pool = AtomPool(list(q.atoms), question)
        q_terms, q_text = frozenset(q.terms), fold(question)
        q_negated = bool(negation_cues(question))
        claims = split_claims(answer)
        sims = self._similarities(claims, windows)
        out = [self._signals(analyse(c), windows, q_pool, q_terms, q_text, q_negated, sims[i] if sims else None)
               for i, c in enumerate(claims)]
        passages = [(str(pid), _squash(fold(str(text)))) for pid, text in evidence]
        for s in out:  # a claim the evidence states word for word needs no further check
            claim = _squash(fold(s.claim))
            if len(claim) >= MIN_VERBATIM:
                s.verbatim_in = next((pid for pid, text in passages if claim in text), None)
        return out

    def decide(self, s: ClaimSignals, thresholds: Thresholds | None = None) -> ClaimVerdict:
        """The verdict for one claim's signals under ``thresholds`` (default: this judge's)."""
        t = thresholds or self.thresholds
        if s.verbatim_in is not None:
            return ClaimVerdict(s.claim, "supported", f"stated word for word in {s.verbatim_in}",
                                evidence_id=s.verbatim_in)
        if s.boilerplate:
            return ClaimVerdict(s.claim, "not_checkable", "a courtesy phrase, not a claim about the evidence")
        if s.missing:
            return ClaimVerdict(s.claim, "unsupported", "; ".join(s.missing))
        if s.negation_missing:
            return ClaimVerdict(s.claim, "unsupported", s.negation_missing)
        if s.flip >= t.flip_overlap:
            return ClaimVerdict(s.claim, "unsupported", s.flip_reason)
        if not s.novel_atoms and (s.n_novel_terms < max(1, t.min_novel) or s.n_terms < t.min_content):
            return ClaimVerdict(s.claim, "not_checkable",
                                f"no checkable atoms and too little content ({s.n_terms} content words, "
                                f"{s.n_novel_terms} not in the question)")
        if s.coverage < t.min_coverage:
            return ClaimVerdict(s.claim, "unsupported",
                                f"only {s.coverage:.0%} of the claim's content words found in the best evidence "
                                f"window (minimum {t.min_coverage:.0%})")
        what = f"{len(s.novel_atoms)} atom(s) found together" if s.novel_atoms else "content found"
        return ClaimVerdict(s.claim, "supported", f"{what} in {s.passage_id}; coverage {s.coverage:.0%}",
                            evidence_id=s.passage_id)

    # --- internals ----------------------------------------------------------------------------
    @staticmethod
    def _windows(evidence: Sequence[tuple[str, str]]) -> list[Window]:
        return _windows(tuple((str(pid), str(text)) for pid, text in evidence))

    def _similarities(self, claims: list[str], windows: list[Window]) -> list[list[float]] | None:
        if not self.embedder or not claims or not windows:
            return None
        if self._encoder is None:
            from evalkit.index.store import default_cache_root
            from evalkit.models.cache import EmbeddingCache
            from evalkit.models.embedders import (
                CachedEmbedder,
                ModelSpec,
            )

            cache = EmbeddingCache(default_cache_root() / "embeddings.sqlite")
            self._encoder = CachedEmbedder.lazy(ModelSpec(name=self.embedder), cache)
        qv = self._encoder.encode_queries(claims)
        pv = self._encoder.encode_passages([w.text for w in windows])
        return (qv @ pv.T).tolist()

    def _signals(self, claim: Unit, windows: list[Window], q_pool: AtomPool, q_terms: frozenset[str],
                 q_text: str, q_negated: bool, sims: list[float] | None) -> ClaimSignals:
        novel = [a for a in claim.atoms if not q_pool.supports(a)]
        novel_terms = [t for t in claim.terms if term_found(t, q_terms, q_text) == 0]
        s = ClaimSignals(claim.text, [a.describe() for a in novel], n_novel_terms=len(novel_terms),
                         n_terms=len(claim.terms), boilerplate=bool(_BOILERPLATE.search(claim.text))
                         and not any(a.kind != "entity" for a in novel))
        if not windows:
            s.missing = ["no evidence given"] if novel else []
            s.coverage = 0.0
            return s
        scored = []
        for w in windows:
            matched = sum(w.pool.supports(a) for a in novel)
            rank = _coverage(claim.terms, w) + (self.sim_weight * sims[w.index] if sims else 0.0)
            scored.append((matched, rank, -len(w.sentences), -w.index, w))
        matched, _, _, _, best = max(scored, key=lambda x: x[:4])
        s.passage_id = best.passage_id
        if novel_terms or novel:  # novel words found, and novel atoms stated, count alike
            found = sum(term_found(t, best.terms, best.folded) for t in novel_terms) + matched
            s.coverage = found / (len(novel_terms) + len(novel))
        else:  # the claim restates the question: how much of it the evidence says
            s.coverage = _coverage(claim.terms, best)
        if matched < len(novel):
            s.missing = self._missing_reasons(novel, best, windows)
        self._polarity(s, claim, best, q_negated)
        return s

    @staticmethod
    def _missing_reasons(novel: list[Atom], best: Window, windows: list[Window]) -> list[str]:
        out = []
        for a in novel:
            if best.pool.supports(a):
                continue
            if any(w.pool.supports(a) for w in windows):
                out.append(f"{a.describe()} is in the evidence but not together with the claim's other facts")
                continue
            has = best.pool.nearest(a)
            out.append(f"{a.describe()} not in evidence" + (f" (evidence has {', '.join(has)})" if has else ""))
        return out

    @staticmethod
    def _polarity(s: ClaimSignals, claim: Unit, window: Window, q_negated: bool) -> None:
        neg_ev = [c for c in window.clauses if c.cues and c.terms]
        for c in claim.clauses:
            if not c.terms:
                continue
            if c.cues:
                if q_negated:
                    continue  # the question brought the negation ("Why can't ...?")
                best = max(window.clauses, key=lambda e: _dice(c.terms, e), default=None)
                restated = any(_overlap(c.terms, e)[0] >= 0.5 and _overlap(c.terms, e)[1] >= 1 for e in neg_ev)
                # jieba may cut the same words differently in two contexts (企业版不限 / 不限):
                # the negated phrase written the same way in the evidence counts
                restated = restated or any(p in e.text for p in c.phrases for e in window.clauses)
                if best is not None and not best.cues and not restated and s.negation_missing is None:
                    s.negation_missing = (f"negation '{c.cues[0]}' absent from best sentence "
                                          f"('{_short(best.text)}')")
                continue
            joined = " ".join(c.terms)
            for e in neg_ev:
                if not any(term_found(t, c.terms, joined) >= 1.0 for t in e.scope):
                    continue  # the claim does not restate what the evidence negates
                cov_e, hits = _overlap(c.terms, e)
                cov_c = hits / len(c.terms)
                score = max(cov_e, cov_c) if hits >= min(2, len(e.terms)) else 0.0
                if score > s.flip:
                    s.flip = score
                    s.flip_reason = (f"polarity flip: evidence says '{_short(e.text)}' (negation "
                                     f"'{e.cues[0]}'), the claim does not")


def _dice(terms: frozenset[str], e: Clause) -> float:
    if not terms or not e.terms:
        return 0.0
    joined = " ".join(e.terms)
    hits = sum(1 for t in terms if term_found(t, e.terms, joined) >= 1.0)
    return 2 * hits / (len(terms) + len(e.terms))


def _short(text: str, n: int = 60) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= n else text[:n - 1] + "…"
