"""The checks of generated questions (evalkit.evalsets.gen_checks), on hand-made cases."""
from __future__ import annotations

import numpy as np
from fakes import BagOfWords

from evalkit.evalsets import gen_checks
from evalkit.judges import make_judge


def test_copy_check_measures_the_longest_shared_run():
    passage = [("d1", "Employees receive ten days of paid annual leave after one year of service.")]
    q = "Employees receive ten days of paid annual leave after one year of service?"
    copied, share = gen_checks.copies(q, passage)
    assert copied == "copies_passage" and share == round((len(q) - 1) / len(q), 3)  # all but the "?"
    q = "How many days of leave after a year?"
    run = gen_checks.longest_common_run(q, passage[0][1])
    assert run == len(" leave after ")  # the longest run both share
    assert gen_checks.copies(q, passage) == (None, round(run / len(q), 3))
    # Chinese: one run of 16 of the question's 18 characters
    zh = [("d2", "一线城市住宿标准为每晚不超过750元。")]
    assert gen_checks.copies("一线城市住宿标准为每晚不超过750元吗？", zh)[0] == "copies_passage"
    assert gen_checks.copies("去北京出差酒店能报多少？", zh)[0] is None


def test_lexical_dedup_by_character_trigrams():
    d = gen_checks.Dedup()
    assert d.method.startswith("lexical") and d.similarity("anything") == 0.0
    d.add("How much storage does the Orion O-5 phone have?")
    assert d.is_duplicate("How much storage does the Orion O-5 phone have ?")
    assert not d.is_duplicate("Where is the K3 chip made?")
    a, b = gen_checks.trigrams("abcd"), gen_checks.trigrams("abce")
    assert (a, b) == ({"abc", "bcd"}, {"abc", "bce"}) and gen_checks.jaccard(a, b) == 1 / 3


def test_embedding_dedup_by_cosine():
    model = BagOfWords("bow")
    d = gen_checks.Dedup(model.encode_queries, "bow")
    assert d.method == f"embedding bow cosine >= {gen_checks.EMBED_SIM}"
    d.add("hotel allowance per night")
    same = float(model.encode_queries(["night allowance hotel per"])[0] @ model.encode_queries(["hotel allowance per night"])[0])
    assert np.isclose(same, 1.0) and d.is_duplicate("night allowance hotel per")  # same words, another order
    assert not d.is_duplicate("laptop repair days")


def test_support_counts_only_supported_claims():
    judge = make_judge("offline")
    ev = [("d", "The Gadget G-2 battery lasts 9 hours.")]
    assert gen_checks.support(judge, "How long?", "The Gadget G-2 battery lasts 9 hours.", ev)[0] is None
    assert gen_checks.support(judge, "How long?", "The Gadget G-2 battery lasts 14 hours.", ev)[0] == "unsupported"
    assert gen_checks.support(judge, "Is it good?", "Yes, it is.", ev)[0] == "not_supported"


class _Judge:
    """A judge whose verdicts are given: what a judge with a new verdict ("unverified") returns."""

    def __init__(self, verdicts):
        self.verdicts = verdicts

    def judge(self, question, answer, evidence):
        from types import SimpleNamespace

        return SimpleNamespace(error=None, claims=[SimpleNamespace(verdict=v) for v in self.verdicts])


def test_a_verdict_other_than_supported_is_not_support():
    ev = [("d", "x")]
    assert gen_checks.support(_Judge(["unverified"]), "q", "a", ev)[0] == "not_supported"
    assert gen_checks.support(_Judge(["unverified", "supported"]), "q", "a", ev)[0] is None
    assert gen_checks.support(_Judge(["supported", "unsupported"]), "q", "a", ev)[0] == "unsupported"


def test_unanswerable_check_judges_the_bm25_top_passages():
    judge = make_judge("offline")
    passages = [("p1", "The ZX-100 router costs CNY 1,200."), ("p2", "The Gadget G-2 battery lasts 9 hours.")]
    search = lambda q, k: passages[:k]  # noqa: E731
    assert gen_checks.answerable_somewhere(judge, search, "How long does the G-2 battery last?",
                                           ["The Gadget G-2 battery lasts 9 hours."]) == "p2"
    assert gen_checks.answerable_somewhere(judge, search, "What does the ZX-900 cost?",
                                           ["The documents do not give a price for the ZX-900 router."]) is None
