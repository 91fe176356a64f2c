"""``chunking: {table: true}`` keeps Markdown tables whole in chunks of their own; ``parent_child`` with
``child_method: semantic`` cuts each parent where the topic changes."""
from __future__ import annotations

import numpy as np
import pytest

from evalkit.index.chunking import check_chunking, chunk_corpus, chunking_id, with_defaults
from evalkit.index.tables import segments, table_pieces, table_spans
from evalkit.records import Document

ROWS = [f"| 城市{i:02d} | {400 + 10 * i} | 含早餐 |" for i in range(30)]  # 30 rows of 19-20 characters
HEADER = "| 城市 | 住宿标准（元/晚） | 备注 |\n| --- | --- | --- |"
TABLE = HEADER + "\n" + "\n".join(ROWS)
PROSE_A = "出差住宿费按城市等级报销。" * 6
PROSE_B = "超出标准的部分由个人承担，特殊情况须经部门负责人审批。" * 4
TEXT = f"# 住宿标准\n\n{PROSE_A}\n\n{TABLE}\n\n{PROSE_B}"


class Corpus:
    def __init__(self, *docs: Document):
        self.documents = list(docs)


CORPUS = Corpus(Document(id="lodging", title="住宿标准", text=TEXT))


def _table_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.startswith("|")]


def test_table_spans_and_segments_find_the_table_exactly():
    (span,) = table_spans(TEXT)
    assert TEXT[span[0]:span[1]] == TABLE
    segs = segments(TEXT)
    assert [is_table for _, is_table in segs] == [False, True, False]
    assert TEXT[segs[0][0][0]:segs[0][0][1]] == f"# 住宿标准\n\n{PROSE_A}" and TEXT[slice(*segs[2][0])] == PROSE_B
    assert table_spans("| not a table |\n| a | b |") == []  # no delimiter line: not a table
    assert table_spans("a | b\n|---|---|\n") == []            # a table's lines start with |


@pytest.mark.parametrize("cfg", [
    {"method": "fixed", "size": 200, "overlap": 40, "table": True},
    {"method": "recursive", "size": 200, "overlap": 40, "table": True},
])
def test_a_table_is_never_split_mid_row_and_never_shares_a_chunk_with_prose(cfg):
    units = chunk_corpus(CORPUS, with_defaults(cfg)).units
    tables = [u for u in units if u.text.startswith("|")]
    prose = [u for u in units if not u.text.startswith("|")]
    assert len(tables) > 1  # the table (about 680 characters) is larger than a chunk, so it is cut between rows
    for u in tables:
        assert u.text.startswith(HEADER + "\n") and len(u.text) <= cfg["size"]
        assert all(line in TABLE.split("\n") for line in u.text.split("\n"))  # whole rows only
    assert [r for u in tables for r in _table_lines(u.text)[2:]] == ROWS  # each row once, in order
    assert all(not _table_lines(u.text) for u in prose)
    assert "".join(u.text for u in prose).count("出差住宿费") == 6 and PROSE_B[:20] in "".join(u.text for u in prose)
    assert [u.id for u in units] == [f"lodging#{i}" for i in range(len(units))]
    for u in units:  # offsets point at the piece's own text in the document (its rows, for a table piece)
        own = TEXT[u.start:u.end]
        assert own == u.text or (u.text.startswith(HEADER) and u.text.endswith(own))


def test_without_the_option_a_fixed_window_cuts_rows_in_the_middle():
    units = chunk_corpus(CORPUS, with_defaults({"method": "fixed", "size": 200, "overlap": 40})).units
    row_set = set(TABLE.split("\n"))
    cut = [line for u in units for line in u.text.split("\n") if line.startswith("|") and line not in row_set]
    assert cut, "expected the plain fixed method to split a table row (what table: true prevents)"


def test_a_small_table_is_one_chunk_of_its_own():
    small = Document(id="d", title="", text=f"前言。\n\n{HEADER}\n{ROWS[0]}\n{ROWS[1]}\n\n后记。")
    units = chunk_corpus(Corpus(small), with_defaults({"method": "fixed", "size": 400, "table": True})).units
    assert [u.text for u in units] == ["前言。", f"{HEADER}\n{ROWS[0]}\n{ROWS[1]}", "后记。"]


def test_a_row_longer_than_the_size_is_kept_whole():
    long_row = "| " + "很长的备注" * 20 + " | 1 |"
    text = f"| a | b |\n| --- | --- |\n{long_row}\n| x | 2 |"
    pieces = table_pieces(text, (0, len(text)), 30)
    assert [p[2] for p in pieces] == [f"| a | b |\n| --- | --- |\n{long_row}", "| a | b |\n| --- | --- |\n| x | 2 |"]


def test_parent_child_tables_are_their_own_parents_with_row_children():
    cfg = with_defaults({"method": "parent_child", "parent_size": 400, "child_size": 120, "child_overlap": 0,
                         "table": True})
    p = chunk_corpus(CORPUS, cfg)
    table_parents = [c for c in p.parents.values() if c.text.startswith("|")]
    assert len(table_parents) == 2 and all(len(c.text) <= 400 for c in table_parents)
    assert [r for c in table_parents for r in _table_lines(c.text)[2:]] == ROWS
    for parent in table_parents:
        kids = [u for u in p.units if u.parent_id == parent.id]
        assert all(k.text.startswith(HEADER + "\n") and len(k.text) <= 120 for k in kids)
        assert [r for k in kids for r in _table_lines(k.text)[2:]] == _table_lines(parent.text)[2:]
    prose_parents = [c for c in p.parents.values() if not c.text.startswith("|")]
    assert prose_parents and all(not _table_lines(c.text) for c in prose_parents)
    assert list(p.parents) == [f"lodging#p{i}" for i in range(len(p.parents))]


LEAVE = ["员工入职满一年后享有五天带薪年假。", "年假需提前三个工作日在系统中申请。", "未休完的年假可以顺延到次年三月底。"]
VPN = ["连接公司内网需要先安装 LanLink 客户端。", "如果 VPN 提示错误 E-4012，请重新登录多因素认证。"]


class TopicEmbedder:
    """Sentence vectors by topic: annual leave -> e1, VPN/network -> e2 (what a real embedder would separate)."""

    def __init__(self, spec):
        self.spec = spec

    def encode_passages(self, texts):
        vecs = np.array([[1.0, 0.0] if "年假" in t else [0.0, 1.0] for t in texts])
        return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def test_semantic_children_break_at_the_topic_change_inside_each_parent():
    text = "".join(LEAVE + VPN)
    cfg = with_defaults({"method": "parent_child", "parent_size": 400, "child_size": 200,
                         "child_method": "semantic", "threshold": 0.5, "child_min_size": 0})
    assert cfg["embedder"] == "e5" and "percentile" not in cfg
    p = chunk_corpus(Corpus(Document(id="d", title="", text=text)), cfg, embedder=TopicEmbedder)
    assert list(p.parents) == ["d#p0"]
    assert [u.text for u in p.units] == ["".join(LEAVE), "".join(VPN)]
    assert [u.id for u in p.units] == ["d#p0.0", "d#p0.1"] and {u.parent_id for u in p.units} == {"d#p0"}
    fixed = chunk_corpus(Corpus(Document(id="d", title="", text=text)),
                         with_defaults({"method": "parent_child", "parent_size": 400, "child_size": 200}))
    assert [u.text for u in fixed.units] != [u.text for u in p.units]  # the fixed windows cut elsewhere


def test_neutral_values_are_the_same_chunking_and_bad_values_are_named():
    base = with_defaults({"method": "fixed"})
    assert chunking_id(with_defaults({"method": "fixed", "table": False})) == chunking_id(base)
    assert chunking_id(with_defaults({"method": "fixed", "table": True})) != chunking_id(base)
    pc = with_defaults({"method": "parent_child"})
    assert with_defaults({"method": "parent_child", "child_method": "fixed"}) == pc
    assert check_chunking(with_defaults({"method": "parent_child", "child_method": "semantic"})) is None
    problems = {
        "document": check_chunking(with_defaults({"method": "document", "table": True})),
        "not bool": check_chunking(with_defaults({"method": "fixed", "table": "yes"})),
        "child": check_chunking(with_defaults({"method": "parent_child", "child_method": "semantc"})),
        "stray": check_chunking(with_defaults({"method": "parent_child", "threshold": 0.5})),
        "min": check_chunking(with_defaults({"method": "parent_child", "child_method": "semantic",
                                             "child_min_size": 300})),
    }
    assert "document keeps each document whole" in problems["document"]
    assert problems["not bool"] == "table must be true or false (got 'yes')"
    assert problems["child"] == "unknown child_method 'semantc' (valid: fixed, semantic); did you mean 'semantic'?"
    assert problems["stray"].startswith("threshold: only used with child_method: semantic")
    assert "0 <= child_min_size < child_size" in problems["min"]


def test_semantic_method_with_tables_cuts_prose_by_topic_and_keeps_the_table_apart():
    text = "".join(LEAVE) + "\n\n" + f"{HEADER}\n{ROWS[0]}\n{ROWS[1]}" + "\n\n" + "".join(VPN)
    cfg = with_defaults({"method": "semantic", "threshold": 0.5, "min_size": 0, "max_size": 300, "table": True})
    units = chunk_corpus(Corpus(Document(id="d", title="", text=text)), cfg, embedder=TopicEmbedder).units
    assert [u.text for u in units] == ["".join(LEAVE), f"{HEADER}\n{ROWS[0]}\n{ROWS[1]}", "".join(VPN)]
