"""``evalkit cache list / verify / clear``: what the user types and sees, sizes recomputed from the files."""
from __future__ import annotations

import os
import re
import sqlite3
import time
from pathlib import Path

import numpy as np
from click.testing import CliRunner
from fakes import BagOfWords

from evalkit.cli import cli
from evalkit.index.bm25 import build_or_load_bm25
from evalkit.index.dense import build_or_load_dense
from evalkit.models.cache import EmbeddingCache
from evalkit.text.tokenize import Tokenizer

TEXTS, IDS = ["apple banana", "banana cherry", "grape fig"], ["a", "b", "c"]
KEY = {"corpus_sha256": "cmd-test", "chunking": {"method": "document"}}


def _fill(root: Path) -> None:
    build_or_load_bm25(TEXTS, IDS, Tokenizer("whitespace"), KEY, root)
    build_or_load_dense(TEXTS, IDS, BagOfWords("bow-cmd"), KEY, root)
    emb = EmbeddingCache(root / "embeddings.sqlite")
    emb.put_many("m", "passage", {"k": np.ones(4, dtype=np.float32)})
    emb.close()


def _cache(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, ["cache", *args], prog_name="evalkit", env=env)


def _folder(root: Path, kind: str) -> Path:
    [p] = [p for p in (root / "indexes").iterdir() if p.name.startswith(f"{kind}-")]
    return p


def _bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def test_list_shows_each_entry_with_its_size(tmp_path):
    root = tmp_path / "c"
    _fill(root)
    res = _cache("list", "--cache", str(root), "--json")
    assert res.exit_code == 0, res.output
    import json

    rows = {r["kind"]: r for r in map(json.loads, res.output.splitlines())}
    assert sorted(rows) == ["bm25", "bm25tok", "dense", "embeddings"]
    for kind in ("bm25", "bm25tok", "dense"):
        folder = _folder(root, kind)
        assert rows[kind]["bytes"] == _bytes(folder) and rows[kind]["key"] == folder.name.split("-", 1)[1]
    emb = root / "embeddings.sqlite"
    wal = Path(f"{emb}-wal")
    assert rows["embeddings"]["bytes"] == emb.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
    assert all(0 <= r["age_s"] < 600 for r in rows.values())
    table = _cache("list", "--cache", str(root)).output
    assert re.search(r"^dense\s+[0-9a-f]{20}\s+[\d.]+ KB\s+\d+ s$", table, flags=re.MULTILINE), table
    assert "4 entries" in table.splitlines()[-1]


def test_list_uses_evalkit_cache_like_the_rest(tmp_path):
    root = tmp_path / "envcache"
    _fill(root)
    res = _cache("list", env={"EVALKIT_CACHE": str(root)})
    assert res.exit_code == 0 and f"in {root}" in res.output and "dense" in res.output
    empty = _cache("list", "--cache", str(tmp_path / "none"))
    assert empty.exit_code == 0 and "no cache entries" in empty.output


def test_verify_reports_bad_entries_and_fix_removes_them(tmp_path):
    root = tmp_path / "c"
    _fill(root)
    good = _cache("verify", "--cache", str(root))
    assert good.exit_code == 0 and "4 entries checked" in good.output and "0 bad" in good.output
    ids_json = _folder(root, "dense") / "ids.json"
    ids_json.write_text('["c", "b", "a"]')
    bad = _cache("verify", "--cache", str(root))
    assert bad.exit_code == 1
    assert "bad  dense" in bad.output and f"{ids_json} differs from the checksum" in bad.output
    assert "1 bad; delete them with evalkit cache verify --fix" in bad.output
    fixed = _cache("verify", "--fix", "--cache", str(root))
    assert fixed.exit_code == 0 and "-> deleted" in fixed.output and not ids_json.parent.exists()
    assert _cache("verify", "--cache", str(root)).exit_code == 0


def test_verify_catches_a_damaged_sqlite_file_and_a_stopped_build(tmp_path):
    root = tmp_path / "c"
    _fill(root)
    db = root / "embeddings.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.write_bytes(db.read_bytes()[:1024])
    stopped = root / "indexes" / ".staging" / "dense-x-123-abcd"
    stopped.mkdir(parents=True)
    (stopped / "index.faiss").write_bytes(b"half")
    old = time.time() - 7200
    os.utime(stopped, (old, old))
    res = _cache("verify", "--cache", str(root))
    assert res.exit_code == 1
    assert f"{db} is damaged" in res.output and "unfinished build" in res.output and "2 bad" in res.output


def test_clear_by_kind_and_by_age(tmp_path):
    root = tmp_path / "c"
    _fill(root)
    dense = _folder(root, "dense")
    size = _bytes(dense)
    res = _cache("clear", "--kind", "dense", "--cache", str(root))
    assert res.exit_code == 0 and not dense.exists() and _folder(root, "bm25").exists()
    assert f"({size / 1024:.1f} KB)" in res.output and "(1 entry)" in res.output
    old = time.time() - 10 * 86400
    os.utime(_folder(root, "bm25"), (old, old))
    dry = _cache("clear", "--older-than", "7d", "--dry-run", "--cache", str(root))
    assert dry.exit_code == 0 and "would delete  bm25 " in dry.output and _folder(root, "bm25").exists()
    _cache("clear", "--older-than", "7d", "--cache", str(root))
    left = [p.name.split("-")[0] for p in (root / "indexes").iterdir() if not p.name.startswith(".")]
    assert left == ["bm25tok"]
    assert _cache("clear", "--cache", str(root)).exit_code == 0
    assert _cache("list", "--cache", str(root)).output.endswith("no cache entries\n")


def test_clear_refuses_a_bad_age_and_kind(tmp_path):
    res = _cache("clear", "--older-than", "7 days", "--cache", str(tmp_path))
    assert res.exit_code == 2 and "'7 days' is not an age: write a number and a unit, e.g. 30m" in res.output
    res = _cache("clear", "--kind", "indexes", "--cache", str(tmp_path))
    assert res.exit_code == 2 and "'indexes' is not one of" in res.output


def test_verify_catches_an_edited_llm_answer(tmp_path):
    from evalkit.llm.base import ChatRequest, ChatResponse, Message
    from evalkit.llm.cache import LLMCache

    root = tmp_path / "c"
    cache = LLMCache(root / "llm.sqlite")
    for k in range(3):
        cache.put("id", ChatRequest((Message("user", f"q{k}"),)), ChatResponse(text=f"a{k}"))
    cache.close()
    assert _cache("verify", "--cache", str(root)).exit_code == 0
    with sqlite3.connect(root / "llm.sqlite") as db:
        db.execute("UPDATE llm SET text='forged' WHERE text='a1'")
    res = _cache("verify", "--cache", str(root))
    assert res.exit_code == 1 and f"{root / 'llm.sqlite'} holds 1 answer(s) that differ from their checksum" in res.output
