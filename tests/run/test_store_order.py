"""per_query.jsonl is written once when its lines are already in eval-set order, and rewritten in
order otherwise; either way the file holds exactly the ordered results' lines."""
from __future__ import annotations

from pathlib import Path

import pytest

from evalkit import redact
from evalkit import runstore as store_module
from evalkit.records import QueryResult
from evalkit.runstore import VariantStore, read_results


def result(qid: str, score: float) -> QueryResult:
    return QueryResult(query_id=qid, question=f"question {qid}?", gold_doc_ids=["d1"],
                       retrieved=[{"doc_id": "d1", "score": score}], reranked=[], metrics={"hit@5": score},
                       trace=[{"step": 0, "node": "retrieve", "wrote": {"retrieved": [["p1", "d1", score]]}}])


def expected(results: list[QueryResult]) -> str:
    return "".join(redact.dumps_line(r.to_dict()) + "\n" for r in results)


@pytest.mark.parametrize("order", [[0, 1, 2], [1, 0, 2], [2, 1, 0]])
def test_finished_file_holds_the_results_in_eval_set_order(tmp_path: Path, order: list[int], monkeypatch):
    ordered = [result("q1", 0.5), result("q2", 0.25), result("q3", 1.0)]
    rewrites: list[Path] = []
    real = store_module.write_atomic

    def counting(path, content, **kwargs):
        if Path(path).name == "per_query.jsonl":
            rewrites.append(Path(path))
        return real(path, content, **kwargs)

    monkeypatch.setattr(store_module, "write_atomic", counting)
    store = VariantStore(tmp_path / "v", {"fingerprint": 1})
    store.start([])
    for i in order:
        store.append(ordered[i])
    store.finish(ordered)
    assert store.path.read_text(encoding="utf-8") == expected(ordered)
    assert [r.query_id for r in read_results(store.path)] == ["q1", "q2", "q3"]
    assert len(rewrites) == (0 if order == [0, 1, 2] else 1)  # in order: the lines as written are kept
    assert not (tmp_path / "v" / "per_query.jsonl.tmp").exists()


def test_kept_results_of_a_resume_are_rewritten_in_order(tmp_path: Path):
    ordered = [result("q1", 0.5), result("q2", 0.25), result("q3", 1.0)]
    store = VariantStore(tmp_path / "v", {"fingerprint": 1})
    store.start([ordered[1]])  # q2 was kept from an earlier run
    store.append(ordered[0])
    store.append(ordered[2])
    store.finish(ordered)
    assert store.path.read_text(encoding="utf-8") == expected(ordered)


def test_long_lived_frozen_restores_the_collector_and_respects_an_outer_freeze():
    import gc

    from evalkit.run.runner import long_lived_frozen

    assert gc.get_freeze_count() == 0
    keep = [object() for _ in range(10)]
    with long_lived_frozen():
        assert gc.get_freeze_count() >= len(keep)  # what was alive before the loop is exempt
    assert gc.get_freeze_count() == 0  # and put back afterwards
    with long_lived_frozen() as keep:  # what the loop keeps after a query joins the frozen generation
        start = gc.get_freeze_count()
        kept = [[[i]] for i in range(10)]
        assert gc.get_freeze_count() <= start  # not before keep() (a frozen object that dies leaves it)
        keep()
        assert gc.get_freeze_count() >= start + 20
    assert gc.get_freeze_count() == 0 and len(kept) == 10
    with long_lived_frozen(enabled=False) as keep:
        keep()
        assert gc.get_freeze_count() == 0
    gc.freeze()  # a process that froze objects itself is left alone
    try:
        outer = gc.get_freeze_count()
        with long_lived_frozen() as keep:
            keep()
        assert gc.get_freeze_count() <= outer  # never froze anything more
    finally:
        gc.unfreeze()


def test_unencodable_text_is_found_with_its_field_path():
    from evalkit.fileio import describe_unencodable, unencodable

    assert unencodable({"q": "ok 中文 😀", "h": [{"c": "fine"}]}) is None  # a whole pair is one valid character
    assert unencodable({"q": "ok", "h": [{"c": "x"}, {"c": "ab\udc00"}]}) == ("h[1].c", 2, "\udc00")
    assert unencodable({"attributes": {"k\ud800": "v"}}) == ("attributes.k\\ud800", 1, "\ud800")  # printable
    assert describe_unencodable(("q", 0, "\ud800")).startswith("holds a lone surrogate '\\ud800' at character 1 ")
