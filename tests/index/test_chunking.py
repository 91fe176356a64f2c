"""Chunking: document / fixed / parent_child passages, boundaries, ids, config checks."""
from __future__ import annotations

import json

import pytest

from evalkit.graph import config_from_dict
from evalkit.index.chunking import Passages, check_chunking, chunk_corpus, chunking_id, split_spans
from evalkit.index.corpus import load_corpus
from evalkit.records import Chunk

# One Chinese and one English document, long enough to be cut; one short, untitled one.
ZH = ("电子发票的报销上限为每月五千元，超出部分需要部门经理审批。出差住宿标准按城市等级执行，"
      "一线城市每晚不超过六百元。报销单需在发生费用后三十天内提交，逾期不予受理。")
EN = ("To reset your password open Settings and choose Security. The client retries failed "
      "requests up to three times with exponential backoff. Contact the help desk if the "
      "account stays locked after an hour.")
DOCS = [
    {"id": "zh1", "title": "报销制度", "text": ZH},
    {"id": "en1", "title": "Account help", "text": EN},
    {"id": "tiny", "text": "short"},  # no title: nothing is prepended
]


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in DOCS) + "\n", encoding="utf-8")
    return load_corpus(path)


def _units_of(p: Passages, doc_id: str) -> list[Chunk]:
    return [u for u in p.units if u.doc_id == doc_id]


def _assert_cover(spans: list[tuple[int, int]], n: int) -> None:
    """Spans start at 0, end at n, never leave a gap and always move forward."""
    assert spans[0][0] == 0 and spans[-1][1] == n
    for (s0, e0), (s1, e1) in zip(spans, spans[1:]):
        assert s0 < s1 <= e0 <= e1  # progress, no gap


# --- document -------------------------------------------------------------------------

def test_document_one_passage_per_document(corpus):
    p = chunk_corpus(corpus, {"method": "document"})
    assert [u.id for u in p.units] == ["zh1", "en1", "tiny"]
    for u, d in zip(p.units, corpus.documents):
        assert (u.doc_id, u.text, u.start, u.end) == (d.id, d.text, 0, len(d.text))
    assert p.parents == {}
    assert p.parent_of("zh1") == "zh1"


# --- fixed ----------------------------------------------------------------------------

@pytest.mark.parametrize("size,overlap", [(20, 0), (20, 5), (37, 10), (50, 49)])
def test_fixed_ids_spans_and_overlap(corpus, size, overlap):
    p = chunk_corpus(corpus, {"method": "fixed", "size": size, "overlap": overlap})
    for doc in corpus.documents:
        units = _units_of(p, doc.id)
        assert [u.id for u in units] == [f"{doc.id}#{i}" for i in range(len(units))]
        spans = [(u.start, u.end) for u in units]
        if len(doc.text) <= size:
            assert spans == [(0, len(doc.text))]
            continue
        _assert_cover(spans, len(doc.text))
        for u in units:
            assert u.text == doc.text[u.start:u.end]
            assert 0 < u.end - u.start <= size
            assert p.doc_of(u.id) == doc.id
        for a, b in zip(units, units[1:]):
            # the next window starts `overlap` characters before the previous end
            # (or one character after the previous start, whichever is later)
            assert b.start == max(a.end - overlap, a.start + 1)


def test_fixed_prefers_chinese_punctuation_boundary():
    # size 10: the last fifth of the first window is indices 8-9; '。' at index 8
    text = "甲乙丙丁戊己庚辛。壬癸子丑寅卯辰巳午未申酉戌亥"
    spans = split_spans(text, 10, 0)
    assert spans[0] == (0, 9)  # ends right after '。', not mid-run at 10
    assert text[spans[0][1] - 1] == "。"
    _assert_cover(spans, len(text))


@pytest.mark.parametrize("mark", ["，", "、", "；", "！", "？"])
def test_fixed_prefers_other_chinese_marks(mark):
    text = "一二三四五六七八" + mark + "九十百千万亿兆京垓秭穰沟涧正载"
    assert split_spans(text, 10, 0)[0] == (0, 9)


def test_fixed_prefers_space_boundary_in_english():
    # size 20: window 0-20 would cut "backoff" mid-word; the space at index 17 is in its last fifth
    text = "exponential retry backoff keeps servers alive"
    start, end = split_spans(text, 20, 0)[0]
    assert text[start:end] == "exponential retry "
    assert text[end:].startswith("backoff")


def test_fixed_hard_cut_when_no_boundary_is_near():
    # the only boundary (index 2) is outside the last fifth: cut at exactly `size`
    text = "ab " + "x" * 30
    assert split_spans(text, 10, 0)[0] == (0, 10)


def test_split_spans_short_and_empty_text():
    assert split_spans("abc", 10, 3) == [(0, 3)]
    assert split_spans("", 10, 0) == [(0, 0)]


def test_chunking_is_deterministic(corpus):
    cfg = {"method": "parent_child", "parent_size": 60, "child_size": 25, "child_overlap": 5}
    a, b = chunk_corpus(corpus, cfg), chunk_corpus(corpus, dict(cfg))
    assert a.units == b.units and a.parents == b.parents
    # the identity ignores key order and changes with any setting
    assert chunking_id(cfg) == chunking_id(dict(reversed(list(cfg.items()))))
    assert chunking_id(cfg) != chunking_id({**cfg, "child_overlap": 6})


# --- parent_child ---------------------------------------------------------------------

def test_parent_child_ids_and_parent_of(corpus):
    cfg = {"method": "parent_child", "parent_size": 60, "child_size": 25, "child_overlap": 5}
    p = chunk_corpus(corpus, cfg)
    for doc in corpus.documents:
        parents = [c for c in p.parents.values() if c.doc_id == doc.id]
        assert [c.id for c in parents] == [f"{doc.id}#p{i}" for i in range(len(parents))]
        # parents tile the document with no overlap
        spans = [(c.start, c.end) for c in parents]
        assert spans[0][0] == 0 and spans[-1][1] == len(doc.text)
        assert all(e0 == s1 for (_, e0), (s1, _) in zip(spans, spans[1:]))
        for parent in parents:
            kids = [u for u in p.units if u.parent_id == parent.id]
            assert kids, parent.id
            assert [u.id for u in kids] == [f"{parent.id}.{j}" for j in range(len(kids))]
            _assert_cover([(u.start - parent.start, u.end - parent.start) for u in kids], len(parent.text))
            for u in kids:
                assert parent.start <= u.start < u.end <= parent.end
                assert u.text == doc.text[u.start:u.end]
                assert p.parent_of(u.id) == parent.id
                assert p.doc_of(u.id) == p.doc_of(parent.id) == doc.id
    assert p.parent_of("not-a-passage") == "not-a-passage"


def test_passages_text_prepends_title(corpus):
    p = chunk_corpus(corpus, {"method": "parent_child", "parent_size": 60, "child_size": 25, "child_overlap": 0})
    child = p.units[0]
    assert p.text(child.id) == f"报销制度\n{child.text}"
    assert p.text("zh1#p0") == f"报销制度\n{p.parents['zh1#p0'].text}"  # parents too
    assert p.text("tiny#p0.0") == "short"  # untitled: no empty first line
    assert p.unit_texts()[0] == p.text(child.id)
    plain = chunk_corpus(corpus, {"method": "document", "prepend_title": False})
    assert plain.text("en1") == EN


# --- check_chunking -------------------------------------------------------------------

@pytest.mark.parametrize("cfg", [
    {"method": "document"},
    {"method": "fixed", "size": 400, "overlap": 80},
    {"method": "fixed", "size": 1},
    {"method": "parent_child", "parent_size": 800, "child_size": 200, "child_overlap": 40},
])
def test_check_chunking_accepts_valid(cfg):
    assert check_chunking(cfg) is None


@pytest.mark.parametrize("cfg,expected", [
    ({"method": "fixd", "size": 10}, "did you mean 'fixed'"),
    ({}, "unknown chunking method 'None'"),
    ({"method": "fixed", "sise": 10}, "unknown chunking parameter 'sise' for method 'fixed'; did you mean 'size'"),
    ({"method": "document", "child_size": 10}, "unknown chunking parameter 'child_size' for method 'document'"),
    ({"method": "fixed", "size": 10, "overlap": 10}, "0 <= overlap < size (got size=10, overlap=10)"),
    ({"method": "fixed", "size": 0}, "size > 0"),
    ({"method": "fixed", "size": True}, "size > 0"),
    ({"method": "fixed", "size": 10.5}, "size > 0"),
    ({"method": "fixed", "size": 10, "overlap": -1}, "0 <= overlap"),
    ({"method": "parent_child", "parent_size": 100, "child_size": 200},
     "parent_size >= child_size > child_overlap >= 0 (got parent_size=100, child_size=200, child_overlap=0)"),
    ({"method": "parent_child", "parent_size": 100, "child_size": 50, "child_overlap": 50}, "child_overlap=50"),
    ({"method": "parent_child", "child_size": 50}, "got parent_size=None"),
])
def test_check_chunking_errors(cfg, expected):
    problem = check_chunking(cfg)
    assert problem is not None and expected in problem


def test_graph_config_with_document_chunking_loads():
    # the config merges its default (fixed, size 400, overlap 80) under `chunking: {method: document}`
    cfg = config_from_dict({"chunking": {"method": "document"},
                            "nodes": {"r": {"type": "retrieve", "params": {"bm25": {}}}},
                            "edges": {"start": "r", "r": "end"}})
    assert cfg.chunking["method"] == "document"


@pytest.mark.parametrize("given,expected", [
    (None, {"method": "fixed", "size": 400, "overlap": 80, "prepend_title": True}),
    ({"method": "document"}, {"method": "document", "prepend_title": True}),
    ({"method": "fixed", "size": 200}, {"method": "fixed", "size": 200, "overlap": 80, "prepend_title": True}),
    ({"method": "parent_child", "child_size": 100},
     {"method": "parent_child", "parent_size": 1200, "child_size": 100, "child_overlap": 50, "prepend_title": True}),
])
def test_defaults_come_from_the_named_method_only(given, expected):
    from evalkit.index.chunking import with_defaults

    assert with_defaults(given) == expected
    assert check_chunking(with_defaults(given)) is None
