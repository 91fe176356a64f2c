"""generate's reference_only rule: low-scoring shown passages are labelled background in the prompt, never
quoted by the extractive backend, and listed per passage in evidence_tiers."""
from __future__ import annotations

import hashlib

import pytest
from fakes import BagOfWords
from pydantic import ValidationError

import evalkit.llm.extractive as extractive
from evalkit.graph import initial_state
from evalkit.index.corpus import Corpus
from evalkit.index.resources import Resources
from evalkit.llm.base import ChatResponse
from evalkit.nodes.generate import Generate, GenerateParams, quotable, render_evidence
from evalkit.nodes.reference_only import REFERENCE_NOTE, ReferenceOnly, threshold, tiers
from evalkit.records import Document, Hit

DOCS = [("d-vpn", "VPN", "The VPN needs the LanLink client."),
        ("d-err", "Errors", "Error E-4012 means the token expired.")]
QUESTION = "What does error E-4012 mean?"
HITS = [Hit("d-vpn", "d-vpn", 1.0), Hit("d-err", "d-err", 0.2)]  # d-err answers, but scored low


@pytest.fixture
def view(tmp_path, monkeypatch):
    # the extractive backend ranks sentences with e5; a hashed bag of words keeps this test offline and instant
    monkeypatch.setattr(extractive, "_embedder", lambda root: BagOfWords("ref-bow/v1"))
    docs = [Document(id=i, title=t, text=x) for i, t, x in DOCS]
    corpus = Corpus(path="<tiny>", documents=docs, sha256=hashlib.sha256(repr(DOCS).encode()).hexdigest())
    return Resources(corpus, cache_root=tmp_path / "cache").for_variant({"method": "document",
                                                                          "prepend_title": False})


def _generate(view, **params):
    node = Generate("generate", GenerateParams(llm={"backend": "extractive", "cache": "off"},
                                               evidence_from="retrieved", evidence_k=2, **params), view)
    state = {**initial_state("q", QUESTION, "en"), "retrieved": HITS}
    return node, node.run(state)


def test_the_rule_by_hand():
    # absolute: below 0.5; relative: below 0.5 x top (0.8) = 0.4
    hits = [Hit("a", "a", 0.8), Hit("b", "b", 0.45), Hit("c", "c", 0.3)]
    assert [t.reference_only for t in tiers(hits, ReferenceOnly(min_score=0.5))] == [False, True, True]
    assert [t.reference_only for t in tiers(hits, ReferenceOnly(min_share=0.5))] == [False, False, True]
    assert threshold(ReferenceOnly(min_share=0.5), [0.8, 0.45, 0.3]) == pytest.approx(0.4)
    # a share of a non-positive top score means nothing: no passage is marked, no threshold recorded
    low = tiers([Hit("a", "a", -0.1), Hit("b", "b", -0.5)], ReferenceOnly(min_share=0.5))
    assert [(t.reference_only, t.threshold) for t in low] == [(False, None), (False, None)]
    with pytest.raises(ValidationError, match="exactly one"):
        ReferenceOnly()
    with pytest.raises(ValidationError, match="exactly one"):
        ReferenceOnly(min_score=0.1, min_share=0.5)
    with pytest.raises(ValidationError):
        ReferenceOnly(min_share=1.5)


def test_render_and_quotable_leave_reference_passages_labelled_and_unquoted():
    shown = [("d-vpn", "VPN text", 1.0), ("d-err", "Error text", 0.2)]
    text = render_evidence(shown, 600, "id", [False, True])
    assert "[d-vpn] (score 1.000)\nVPN text" in text and "[d-err] (score 0.200, reference only)\nError text" in text
    assert quotable(shown, [("d-src", "source")], [False, True]) == (("d-vpn", "VPN text"), ("d-src", "source"))
    assert quotable(shown, []) == (("d-vpn", "VPN text"), ("d-err", "Error text"))  # no rule: all quotable


def test_the_prompt_says_which_passages_are_for_reference(view):
    node, _ = _generate(view, reference_only={"min_share": 0.5})
    seen = {}

    class Recorder:
        identity = "recorder"

        def chat(self, user, system=None, question="", evidence=()):
            seen.update(user=user, evidence=evidence)
            return ChatResponse(text="Token expired [d-err].", latency_ms=0.0, finish_reason="stop")

    node.client = Recorder()
    out = node.run({**initial_state("q", QUESTION, "en"), "retrieved": HITS})
    assert REFERENCE_NOTE in seen["user"]
    assert "[d-err] (score 0.200, reference only)" in seen["user"] and "[d-vpn] (score 1.000)\n" in seen["user"]
    assert [d for d, _ in seen["evidence"]] == ["d-vpn"]
    assert out["used_documents"] == ["d-err"]  # still citable, and still checked by the judges
    assert [h.id for h in out["answer_evidence"]] == ["d-vpn", "d-err"]


def test_the_extractive_backend_never_quotes_a_reference_passage_and_the_trace_lists_each(view):
    _, plain = _generate(view)
    assert "E-4012 means the token expired" in plain["answer"]  # without the rule it is quoted
    assert "evidence_tiers" not in plain
    _, ruled = _generate(view, reference_only={"min_share": 0.5})
    assert "E-4012" not in ruled["answer"] and "[d-err]" not in ruled["answer"]
    assert "LanLink" in ruled["answer"]
    assert ruled["evidence_tiers"] == [
        {"id": "d-vpn", "doc_id": "d-vpn", "score": 1.0, "reference_only": False, "threshold": 0.5},
        {"id": "d-err", "doc_id": "d-err", "score": 0.2, "reference_only": True, "threshold": 0.5}]
    # every passage reference only: nothing to quote, so the extractive answer says the evidence is insufficient
    _, none = _generate(view, reference_only={"min_score": 5.0})
    assert none["answer"] == extractive.INSUFFICIENT_EVIDENCE and none["abstained"] is True


def test_the_node_declares_evidence_tiers_only_with_the_rule():
    assert "evidence_tiers" in Generate.contract(GenerateParams(reference_only={"min_score": 0.1})).writes
    assert "evidence_tiers" not in Generate.contract(GenerateParams()).writes
