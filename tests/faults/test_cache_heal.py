"""Damaged cache entries are reported (naming the file), rebuilt, and give the same numbers.

Each test builds an entry, damages one file the way a user, a full disk or a killed
process would (truncate, edit, overwrite), loads again and checks three things: the
warning on stderr names the damaged file, the results equal those of a fresh build in an
untouched cache folder, and the rebuilt entry verifies.
"""
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from fakes import BagOfWords

from evalkit.cachestore import check_entry
from evalkit.index.bm25 import build_or_load_bm25
from evalkit.index.dense import build_or_load_dense
from evalkit.llm.base import ChatRequest, ChatResponse, Message
from evalkit.llm.cache import LLMCache
from evalkit.models.cache import EmbeddingCache
from evalkit.text.tokenize import Tokenizer

IDS = ["d1", "d2", "d3", "d4", "d5"]
TEXTS = ["apple banana apple", "banana cherry", "cherry date elderberry fig", "grape", "fig apple grape"]
KEY = {"corpus_sha256": "heal-test", "chunking": {"method": "document"}}
QUERIES = ["apple", "cherry fig", "banana grape apple"]


def _bm25(root: Path):
    return build_or_load_bm25(TEXTS, IDS, Tokenizer("whitespace"), KEY, root)


def _dense(root: Path):
    return build_or_load_dense(TEXTS, IDS, Embedder(), KEY, root)


class Embedder(BagOfWords):
    def __init__(self):
        super().__init__("bow-test")


def _folder(root: Path, kind: str) -> Path:
    [folder] = [p for p in (root / "indexes").iterdir() if p.name.startswith(f"{kind}-")]
    return folder


def _bm25_results(index) -> list:
    return [index.search(q, 5) for q in QUERIES]


def _dense_results(index) -> list:
    vecs = Embedder().encode_queries(QUERIES)
    return index.search(vecs, 5, "bow-test")


def _truncate(path: Path, size: int = 64) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(size)


@pytest.mark.parametrize("kind, file, damage", [
    ("bm25", "indptr.csc.index.npy", _truncate),  # the case: "mmap length is greater than file size"
    ("bm25", "data.csc.index.npy", lambda p: p.write_bytes(p.read_bytes()[:-8] + b"\0" * 8)),  # same size, edited
    ("bm25", "meta.json", _truncate),
    ("bm25tok", "token_ids.npy", _truncate),
])
def test_damaged_bm25_entry_is_reported_and_rebuilt(tmp_path, capsys, kind, file, damage):
    expected = _bm25_results(_bm25(tmp_path / "clean"))
    root = tmp_path / "cache"
    _bm25(root)
    bad = _folder(root, kind) / file
    damage(bad)
    if kind == "bm25tok":  # tokens are read only to build a matrix
        shutil.rmtree(_folder(root, "bm25"))
    capsys.readouterr()
    healed = _bm25(root)
    err = capsys.readouterr().err
    assert f"warning: cache file {bad} " in err and "rebuilding the entry" in err
    assert _bm25_results(healed) == expected
    assert check_entry(_folder(root, kind)).ok


def test_bm25_scores_after_healing_match_the_hand_computation(tmp_path):
    root = tmp_path / "cache"
    _bm25(root)
    _truncate(_folder(root, "bm25") / "indptr.csc.index.npy")
    # "grape" is in d4 (length 1) and d5 (length 3): Lucene idf, k1=0.9, b=0.4, avgdl = 13/5
    idf = np.log(1 + (5 - 2 + 0.5) / (2 + 0.5))
    avgdl = 13 / 5

    def score(dl: int) -> float:
        return float(idf * 1 * (0.9 + 1) / (1 + 0.9 * (1 - 0.4 + 0.4 * dl / avgdl)))
    hits = dict(_bm25(root).search("grape", 5))
    assert hits == pytest.approx({"d4": score(1), "d5": score(3)}, rel=1e-12)


def test_edited_ids_json_is_caught(tmp_path, capsys):
    """The issue's silent case: valid JSON, ids reversed; before, 10 of 10 queries ranked differently."""
    expected = _dense_results(_dense(tmp_path / "clean"))
    root = tmp_path / "cache"
    _dense(root)
    ids_json = _folder(root, "dense") / "ids.json"
    ids_json.write_text(json.dumps(list(reversed(IDS))))  # same size, other content
    capsys.readouterr()
    healed = _dense(root)
    err = capsys.readouterr().err
    assert f"warning: cache file {ids_json} differs from the checksum in meta.json" in err
    assert healed.ids == IDS and _dense_results(healed) == expected


def test_dense_results_equal_brute_force_cosine(tmp_path):
    root = tmp_path / "cache"
    _dense(root)
    _truncate(_folder(root, "dense") / "index.faiss")
    got = _dense_results(_dense(root))
    p, q = Embedder().encode_passages(TEXTS), Embedder().encode_queries(QUERIES)
    for row, hits in zip(q @ p.T, got):
        order = sorted(range(len(IDS)), key=lambda i: (-row[i], IDS[i]))
        assert [h[0] for h in hits] == [IDS[i] for i in order]
        assert [h[1] for h in hits] == pytest.approx([float(row[i]) for i in order], abs=1e-6)


def test_entry_from_an_older_evalkit_is_rebuilt_quietly(tmp_path, capsys):
    root = tmp_path / "cache"
    _bm25(root)
    folder = _folder(root, "bm25")
    meta = json.loads((folder / "meta.json").read_text())
    for field in ("files", "entry_format", "meta_xxh3"):
        meta.pop(field)
    (folder / "meta.json").write_text(json.dumps(meta))
    capsys.readouterr()
    assert _bm25_results(_bm25(root)) == _bm25_results(_bm25(tmp_path / "clean"))
    assert "warning" not in capsys.readouterr().err and check_entry(folder).ok


def test_leftover_staging_and_a_folder_without_meta_do_not_block_a_build(tmp_path):
    root = tmp_path / "cache"
    _bm25(root)
    folder = _folder(root, "bm25")
    (folder / "meta.json").unlink()  # an interrupted build of an older evalkit
    (root / "indexes" / ".staging" / "bm25-x-1-deadbeef").mkdir(parents=True)  # a builder killed with -9
    assert _bm25_results(_bm25(root)) == _bm25_results(_bm25(tmp_path / "clean"))
    assert check_entry(folder).ok


def _fill_llm(path: Path, n: int = 300) -> LLMCache:
    cache = LLMCache(path)
    for k in range(n):
        cache.put("id", ChatRequest((Message("user", f"q{k}"),)), ChatResponse(text=f"a{k}" * 50))
    cache.close()
    return cache


def test_truncated_llm_cache_is_set_aside_and_started_afresh(tmp_path, capsys):
    path = tmp_path / "llm.sqlite"
    _fill_llm(path)
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    _truncate(path, path.stat().st_size // 2)
    capsys.readouterr()
    cache = LLMCache(path)
    request = ChatRequest((Message("user", "q250"),))
    assert cache.get("id", request) is None  # a miss: the answer is asked again
    cache.put("id", request, ChatResponse(text="again"))
    assert cache.get("id", request).text == "again" and cache.count() == 1
    err = capsys.readouterr().err
    assert f"warning: cache file {path} is damaged" in err and f"moved it to {path}.damaged" in err
    assert (tmp_path / "llm.sqlite.damaged").is_file()


def test_overwritten_embedding_cache_is_set_aside(tmp_path, capsys):
    path = tmp_path / "embeddings.sqlite"
    cache = EmbeddingCache(path)
    cache.put_many("m", "passage", {"k": np.ones(4, dtype=np.float32)})
    cache.close()
    for extra in ("-wal", "-shm"):
        Path(f"{path}{extra}").unlink(missing_ok=True)
    path.write_bytes(b"this is not a sqlite file" * 200)
    capsys.readouterr()
    cache = EmbeddingCache(path)
    assert cache.get_many("m", "passage", ["k"]) == {}
    cache.put_many("m", "passage", {"k": np.full(4, 2, dtype=np.float32)})
    assert cache.get_many("m", "passage", ["k"])["k"].tolist() == [2, 2, 2, 2]
    assert f"warning: cache file {path} is damaged" in capsys.readouterr().err


def test_embedding_of_the_wrong_length_is_not_returned(tmp_path):
    path = tmp_path / "embeddings.sqlite"
    cache = EmbeddingCache(path)
    cache.put_many("m", "passage", {"good": np.ones(4, dtype=np.float32), "bad": np.ones(4, dtype=np.float32)})
    cache._db.run(lambda db: db.execute("UPDATE emb SET vec=? WHERE key='bad'", (b"\0" * 12,)))
    assert sorted(cache.get_many("m", "passage", ["good", "bad"])) == ["good"]


def test_the_users_case_end_to_end(tmp_path, monkeypatch):
    """What the issue's user typed: a run, a truncated BM25 file in .evalkit_cache/, the same run again.

    Before: every later run failed with ``could not build variant 'bm25': ValueError: mmap length is
    greater than file size``. Now: exit 0, a warning naming the file, the same numbers.
    """
    from click.testing import CliRunner

    from evalkit.cli import cli

    repo = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVALKIT_CACHE", raising=False)  # the default: .evalkit_cache in the current folder

    def run(out: str):
        return CliRunner().invoke(cli, ["run", "--eval-set", str(repo / "eval_sets" / "demo_kb.jsonl@v1"),
                                        "--graph-config", str(repo / "graph_configs" / "bm25.yaml"), "--output", out,
                                        "--no-progress", "--no-mlflow"], prog_name="evalkit")
    first = run("results/a.json")
    assert first.exit_code == 0, first.output
    [npy] = (tmp_path / ".evalkit_cache" / "indexes").glob("bm25-*/indptr.csc.index.npy")
    _truncate(npy, 100)
    second = run("results/b.json")
    assert second.exit_code == 0, second.output
    assert f"warning: cache file .evalkit_cache/indexes/{npy.parent.name}/indptr.csc.index.npy is 100 bytes" in \
        second.output
    a, b = (json.loads((tmp_path / "results" / f"{x}.json").read_text())["variants"]["bm25"]["metrics"]
            for x in "ab")
    assert a == b
    records = [(tmp_path / "results" / x / "bm25" / "per_query.jsonl").read_text().splitlines() for x in "ab"]
    rankings = [[json.loads(line)["retrieved"] for line in r] for r in records]
    assert rankings[0] == rankings[1] and len(rankings[0]) == 120


def test_an_entry_that_verifies_but_cannot_be_loaded_is_rebuilt_once(tmp_path, capsys):
    """Checksums agree (meta.json rewritten to match) but the loader fails: reported as unloadable, rebuilt."""
    from evalkit import cachestore as store

    root = tmp_path / "cache"
    _dense(root)
    folder = _folder(root, "dense")
    (folder / "index.faiss").write_bytes(b"not a faiss index")
    meta = json.loads((folder / "meta.json").read_text())
    meta["files"]["index.faiss"] = {"size": 17, "xxh3": store.file_digest(folder / "index.faiss")}
    meta["meta_xxh3"] = store._meta_digest(meta)
    (folder / "meta.json").write_text(json.dumps(meta))
    capsys.readouterr()
    assert _dense_results(_dense(root)) == _dense_results(_dense(tmp_path / "clean"))
    err = capsys.readouterr().err
    assert err.count("warning:") == 1 and f"cache entry {folder} could not be loaded (RuntimeError" in err


def test_an_edited_llm_answer_is_not_replayed(tmp_path, capsys):
    """A valid sqlite file whose stored answer was changed: the answer no longer matches its checksum."""
    path = tmp_path / "llm.sqlite"
    cache = LLMCache(path)
    request = ChatRequest((Message("user", "how many days of leave?"),))
    cache.put("id", request, ChatResponse(text="ten days", tokens_out=2, finish_reason="stop"))
    cache._db.run(lambda db: (db.execute("UPDATE llm SET text='ninety days'"), db.commit()))
    capsys.readouterr()
    assert LLMCache(path, "read-write").get("id", request) is None
    assert "differs from its checksum" in capsys.readouterr().err and LLMCache(path).count() == 0


def test_an_edited_vector_is_encoded_again(tmp_path, capsys):
    path = tmp_path / "embeddings.sqlite"
    cache = EmbeddingCache(path)
    cache.put_many("m", "passage", {"a": np.ones(4, dtype=np.float32), "b": np.ones(4, dtype=np.float32)})
    edited = np.full(4, 9, dtype=np.float32).tobytes()  # same length, other numbers
    cache._db.run(lambda db: (db.execute("UPDATE emb SET vec=? WHERE key='b'", (edited,)), db.commit()))
    capsys.readouterr()
    assert sorted(cache.get_many("m", "passage", ["a", "b"])) == ["a"]
    assert f"cache file {path}: 1 stored vector(s) of m differ" in capsys.readouterr().err


def test_files_from_before_row_checksums_are_read_and_upgraded(tmp_path):
    """An llm.sqlite / embeddings.sqlite written before the checksum column: rows still served, column added."""
    llm, emb = tmp_path / "llm.sqlite", tmp_path / "embeddings.sqlite"
    with sqlite3.connect(llm) as db:
        db.execute("CREATE TABLE llm (key TEXT PRIMARY KEY, identity TEXT, text TEXT, tokens_in INTEGER,"
                   " tokens_out INTEGER, finish_reason TEXT, latency_ms REAL, created REAL)")
        from evalkit.llm.cache import request_key

        request = ChatRequest((Message("user", "old"),))
        db.execute("INSERT INTO llm VALUES (?, 'id', 'old answer', 1, 2, 'stop', 0, 0)", (request_key("id", request),))
    with sqlite3.connect(emb) as db:
        db.execute("CREATE TABLE emb (model TEXT, role TEXT, key TEXT, dim INTEGER, vec BLOB,"
                   " PRIMARY KEY (model, role, key))")
        db.execute("INSERT INTO emb VALUES ('m', 'passage', 'k', 2, ?)", (np.ones(2, dtype=np.float32).tobytes(),))
    assert LLMCache(llm).get("id", request).text == "old answer"
    assert EmbeddingCache(emb).get_many("m", "passage", ["k"])["k"].tolist() == [1.0, 1.0]
    for path, table in ((llm, "llm"), (emb, "emb")):
        with sqlite3.connect(path) as db:
            assert "checksum" in [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
