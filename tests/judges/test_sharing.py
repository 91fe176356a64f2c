"""The judge's shared analyses change no number (issue 34): every case of the judge data sets, judged with the
sharing of evalkit.text.memo on (caches kept across calls, as in a run) and off (the code path from before it,
every text cache emptied before each call), gives the same signals, verdicts, reasons and answer figures.

Cases: tests/judges/data/judge_multidoc*.jsonl (development, blind and held-out multi-document answers),
benchmarks/data/judge_cases.jsonl, benchmarks/data/judge_paraphrases.jsonl (evidence from the demo corpus) and
the demo's reference answers against their gold documents: the sets the other judge tests read. Each answer is
judged as a run judges it: the answer against all its evidence, and (every fourth answer) each claim against
one passage alone, as the citation check does (evalkit.judges.citation_support; its findings are compared too).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalkit.judges.base import JudgeResult
from evalkit.judges.citation_support import judge_citations
from evalkit.judges.offline import OfflineJudge
from evalkit.judges.scoring import load_cases
from evalkit.metrics.answer import score_answer
from evalkit.text.claims import split_claims
from evalkit.text.memo import clear_caches, enabled, sharing

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
CORPUS = REPO / "eval_sets" / "corpora" / "demo_kb.jsonl"


def _cases() -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(question, answer, evidence) of every case of the judge data sets, in file order."""
    out = []
    for path in sorted(DATA.glob("judge_multidoc*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                out.append((r["question"], r["answer"], [(e["id"], e["text"]) for e in r["evidence"]]))
    for path, corpus in ((REPO / "benchmarks" / "data" / "judge_cases.jsonl", None),
                         (REPO / "benchmarks" / "data" / "judge_paraphrases.jsonl", CORPUS)):
        out += [(c.question, c.answer, list(c.evidence)) for c in load_cases(path, corpus=corpus)]
    docs = {d["id"]: d["text"] for d in map(json.loads, CORPUS.read_text(encoding="utf-8").splitlines())}
    for q in map(json.loads, (REPO / "eval_sets" / "demo_kb.jsonl").read_text(encoding="utf-8").splitlines()):
        if q["relevant_doc_ids"] and q.get("reference_answer"):
            out.append((q["question"], q["reference_answer"], [(d, docs[d]) for d in q["relevant_doc_ids"]]))
    return out


def _judged(judge: OfflineJudge, question: str, answer: str, evidence: list[tuple[str, str]], fresh: bool,
            claims: bool) -> list[Any]:
    """Everything the judge says about one answer against all its evidence (and, with ``claims``, about each
    claim against the first passage alone): its signals, its result (verdicts, reasons, passage ids) and the
    answer figures computed from it."""
    calls: list[tuple[str, list[tuple[str, str]]]] = [(answer, evidence)]
    calls += [(c, evidence[:1]) for c in split_claims(answer)] if evidence and claims else []
    out: list[Any] = []
    for text, ev in calls:
        if fresh:
            clear_caches()
        signals = judge.analyse(question, text, ev)
        r = JudgeResult(claims=[judge.decide(x) for x in signals]).to_dict()  # what judge.judge returns
        out.append((signals, r, score_answer(answerable=True, answered=True, abstained=False, judgement=r,
                                             answer=text, reference=None, cited_docs=[], invalid_citations=0, gold=[])))
    return out


@pytest.fixture(scope="module")
def cases() -> list[tuple[str, str, list[tuple[str, str]]]]:
    return _cases()


def test_every_case_judges_the_same_with_and_without_sharing(cases):
    assert len(cases) >= 2034  # 1,178 multi-document + 216 judge cases + 533 paraphrases + 107 references
    judge = OfflineJudge()
    assert enabled()
    shared_run = [_judged(judge, q, a, ev, fresh=False, claims=i % 4 == 0) for i, (q, a, ev) in enumerate(cases)]
    with sharing(False):
        fresh_run = [_judged(judge, q, a, ev, fresh=True, claims=i % 4 == 0) for i, (q, a, ev) in enumerate(cases)]
    assert enabled()
    differ = [i for i, (x, y) in enumerate(zip(shared_run, fresh_run)) if x != y]
    assert not differ, [cases[i][1][:80] for i in differ[:5]]
    # the comparison compares something: verdicts of every kind, reasons and figures
    verdicts = {c["verdict"] for run in shared_run for _, r, _ in run for c in r["claims"]}
    assert verdicts >= {"supported", "unsupported", "unverified", "not_checkable"}
    assert {f["faithfulness"] for run in shared_run for *_, f in run} >= {0.0, 0.5, 1.0}


def test_citation_findings_are_the_same_with_and_without_sharing(cases):
    """The run's third kind of call: each claim against only the passages it cites (every passage cited here)."""
    judge = OfflineJudge()
    picked = [(q, a, ev) for q, a, ev in cases if 2 <= len(ev) <= 4][::7]
    assert len(picked) >= 50

    def findings(fresh: bool) -> list[list[dict[str, Any]]]:
        out = []
        for q, a, ev in picked:
            cited = " ".join(f"{s} [{pid}]" for s in split_claims(a) for pid, _ in ev[:2])
            if fresh:
                clear_caches()
            r = judge.judge(q, cited, ev)
            out.append([f.to_dict() for f in judge_citations(judge, q, cited, [(p, p, t) for p, t in ev], r)])
        return out

    on = findings(fresh=False)
    with sharing(False):
        off = findings(fresh=True)
    assert on == off
    assert any(f["supported_by_citations"] for run in on for f in run)


def test_clear_caches_empties_the_judge_caches():
    from evalkit.judges.grounding import analyse
    from evalkit.judges.stated import unit_numbers

    OfflineJudge().judge("Q?", "It costs 82kWh and 3 days.", [("p", "It costs 82kWh. 3 days.")])
    assert analyse.cache_info().currsize > 0
    assert clear_caches() >= 10
    assert analyse.cache_info().currsize == 0 and unit_numbers.cache_info().currsize == 0


def test_sharing_off_computes_afresh():
    from evalkit.judges.stated import unit_numbers

    clear_caches()
    with sharing(False):
        assert unit_numbers("a 82kWh pack") == ((82.0, "kwh"),)
    assert unit_numbers.cache_info().currsize == 0
    assert unit_numbers("a 82kWh pack") == ((82.0, "kwh"),)
    assert unit_numbers.cache_info().currsize == 1
