"""What the cache folder holds, entry by entry: listing, verifying and removing (``evalkit cache``).

The cache (``$EVALKIT_CACHE``, else ``.evalkit_cache``) is derived data: every entry can be
computed again, at the cost of time (indexes, embeddings) or of model calls (LLM
answers, HTTP responses). Each kind of entry is one :class:`Kind` in :data:`KINDS`:
where its entries live, and how one is checked. ``leftover`` covers what a killed build
or a repaired file leaves behind (``.staging``/``.trash`` folders, ``*.damaged`` files).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from evalkit.cachestore import STAGING, TRASH, check_entry
from evalkit.errors import EvalkitError
from evalkit.evalsets.versions import load_eval_set
from evalkit.llm.cache import count_bad_rows as count_bad_answers
from evalkit.models.cache import count_bad_rows as count_bad_vectors
from evalkit.sqlitedb import DAMAGED_SUFFIX

STALE_BUILD_S = 3600.0  # a staging folder untouched this long belongs to a builder that stopped


@dataclass(frozen=True)
class Entry:
    """One cache entry: a folder or a file under the cache root."""

    kind: str
    key: str
    path: Path
    size: int
    modified: float  # seconds since the epoch of its last change

    def age_s(self, now: float | None = None) -> float:
        return max(0.0, (time.time() if now is None else now) - self.modified)


@dataclass(frozen=True)
class Kind:
    """A kind of cache entry: ``find(root)`` yields its entries; ``check(entry)`` says what is wrong (None: good)."""

    name: str
    description: str
    find: Callable[[Path], Iterator[Entry]]
    check: Callable[[Entry], str | None]


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _entry(kind: str, key: str, path: Path) -> Entry:
    return Entry(kind, key, path, _size(path), path.stat().st_mtime)


# -- index folders ---------------------------------------------------------------------

INDEX_KINDS = {"bm25tok": "BM25 tokens of a corpus", "bm25": "BM25 score matrices",
               "dense": "faiss indexes of passage vectors", "graph": "entity graphs (and their communities)"}


def _index_finder(kind: str) -> Callable[[Path], Iterator[Entry]]:
    def find(root: Path) -> Iterator[Entry]:
        folder = root / "indexes"
        if folder.is_dir():
            for p in sorted(folder.glob(f"{kind}-*")):
                if p.is_dir():
                    yield _entry(kind, p.name.split("-", 1)[1], p)
    return find


def _check_index(entry: Entry) -> str | None:
    found = check_entry(entry.path)
    if not found.ok:
        return f"{found.file} {found.problem}"
    for extra in sorted(entry.path.glob("communities-*.json")):  # side results of a graph entry
        try:
            json.loads(extra.read_text(encoding="utf-8"))["communities"]
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
            return f"{extra} is damaged ({type(exc).__name__})"
    return None


# -- sqlite files ------------------------------------------------------------------------

def _sqlite_finder(kind: str, name: str) -> Callable[[Path], Iterator[Entry]]:
    def find(root: Path) -> Iterator[Entry]:
        path = root / name
        if path.is_file():
            size = sum(Path(f"{path}{s}").stat().st_size for s in ("", "-wal") if Path(f"{path}{s}").is_file())
            yield Entry(kind, name, path, size, path.stat().st_mtime)
    return find


def _sqlite_checker(count_bad: Callable[[sqlite3.Connection], int], what: str) -> Callable[[Entry], str | None]:
    """sqlite's integrity_check, then ``count_bad(db)``: the rows that differ from their checksum."""
    def check(entry: Entry) -> str | None:
        try:
            db = sqlite3.connect(f"file:{entry.path}?mode=ro", uri=True, timeout=60)
            try:
                result = [r[0] for r in db.execute("PRAGMA integrity_check").fetchall()]
                if result != ["ok"]:
                    return f"{entry.path} is damaged (sqlite integrity_check: {'; '.join(result[:3])})"
                bad = count_bad(db)
            finally:
                db.close()
        except sqlite3.DatabaseError as exc:
            return f"{entry.path} is damaged ({exc})"
        return f"{entry.path} holds {bad} {what} that differ from their checksum (edited or damaged)" if bad else None
    return check


def _bad_vectors(db: sqlite3.Connection) -> int:
    return count_bad_vectors(db)


def _bad_answers(db: sqlite3.Connection) -> int:
    return count_bad_answers(db)


# -- eval sets frozen from rows, answer files, HTTP responses ------------------------------

def _evalsets(root: Path) -> Iterator[Entry]:
    folder = root / "evalsets"
    if folder.is_dir():
        for p in sorted(folder.iterdir()):
            if p.is_dir() and not p.name.startswith("."):
                yield _entry("evalset", p.name, p)


def _check_evalset(entry: Entry) -> str | None:
    path = entry.path / f"{entry.path.name}.jsonl"
    if not (entry.path / f"{entry.path.name}.manifest.json").is_file():
        return f"{entry.path} has no manifest (an interrupted freeze)"
    try:
        load_eval_set(f"{path}@v1")
    except (EvalkitError, OSError, ValueError) as exc:
        return f"{path}: {exc}"
    return None


def _answers(root: Path) -> Iterator[Entry]:
    for p in sorted((root / "answers").glob("*.jsonl")):
        yield _entry("answers", p.stem, p)


def _check_answers(entry: Entry) -> str | None:
    digest = hashlib.sha256(entry.path.read_bytes()).hexdigest()
    return None if digest.startswith(entry.path.stem) else f"{entry.path} differs from the checksum in its name"


def _external(root: Path) -> Iterator[Entry]:
    for p in sorted((root / "external").glob("*/*.json")):
        yield _entry("external", p.stem[:16], p)


def _check_json(entry: Entry) -> str | None:
    try:
        json.loads(entry.path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return f"{entry.path} is damaged ({type(exc).__name__})"
    return None


# -- leftovers -----------------------------------------------------------------------------

def _leftovers(root: Path) -> Iterator[Entry]:
    for parent in (root / "indexes", root / "evalsets"):
        for holder in (STAGING, TRASH):
            for p in sorted((parent / holder).glob("*")):
                yield _entry("leftover", f"{holder}/{p.name}", p)
    for p in sorted(root.glob(f"*{DAMAGED_SUFFIX}")):
        yield _entry("leftover", p.name, p)


def _check_leftover(entry: Entry) -> str | None:
    if entry.path.name.endswith(DAMAGED_SUFFIX):
        return f"{entry.path} is a damaged file evalkit set aside"
    if entry.key.startswith(TRASH):
        return f"{entry.path} is a discarded entry not yet deleted"
    if entry.age_s() > STALE_BUILD_S:
        return f"{entry.path} is an unfinished build (its builder stopped over an hour ago)"
    return None  # a build in progress


KINDS: dict[str, Kind] = {
    **{k: Kind(k, d, _index_finder(k), _check_index) for k, d in INDEX_KINDS.items()},
    "embeddings": Kind("embeddings", "passage and query vectors by model and text (sqlite)",
                       _sqlite_finder("embeddings", "embeddings.sqlite"), _sqlite_checker(_bad_vectors, "vector(s)")),
    "llm": Kind("llm", "LLM answers by request (sqlite; paid calls: clearing them costs money)",
                _sqlite_finder("llm", "llm.sqlite"), _sqlite_checker(_bad_answers, "answer(s)")),
    "evalset": Kind("evalset", "eval sets given to evalkit.evaluate as rows, frozen by content", _evalsets,
                    _check_evalset),
    "answers": Kind("answers", "answers given to evalkit.score as rows", _answers, _check_answers),
    "external": Kind("external", "responses of http nodes (cache: read-write)", _external, _check_json),
    "leftover": Kind("leftover", "unfinished builds, discarded entries, damaged files set aside", _leftovers,
                     _check_leftover),
}


def entries(root: Path, kinds: list[str] | None = None) -> list[Entry]:
    """Every entry under ``root`` of ``kinds`` (default: all), in :data:`KINDS` order."""
    return [e for name, kind in KINDS.items() if not kinds or name in kinds for e in kind.find(Path(root))]


def check(entry: Entry) -> str | None:
    """What is wrong with ``entry`` (naming the file), or None when it is good."""
    try:
        return KINDS[entry.kind].check(entry)
    except FileNotFoundError as exc:  # removed while we looked
        return f"{exc.filename} is missing"


def remove(entry: Entry) -> None:
    """Delete an entry (a sqlite file with its WAL and shared-memory files)."""
    if entry.path.is_dir():
        shutil.rmtree(entry.path, ignore_errors=True)
        return
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(f"{entry.path}{suffix}")
        except FileNotFoundError:
            continue


def parse_age(text: str) -> float:
    """Seconds in ``30m``, ``12h``, ``7d`` or ``2w``; ValueError naming the accepted forms otherwise."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    t = text.strip().lower()
    if len(t) < 2 or t[-1] not in units or not t[:-1].replace(".", "", 1).isdigit():
        raise ValueError(f"'{text}' is not an age: write a number and a unit, e.g. 30m, 12h, 7d or 2w")
    return float(t[:-1]) * units[t[-1]]


def human_size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def human_age(seconds: float) -> str:
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"
