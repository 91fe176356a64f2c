"""The on-disk cache store: one folder per entry (an index, a model), named by a hash of what it was built from.

An entry (a BM25 matrix, a faiss index, an entity graph...) is built in a private staging
folder (``indexes/.staging/<name>-<pid>-<random>``) and renamed into place only when
complete, so a reader sees a whole entry or none; two builders of one entry (two runs,
Ray workers on shared storage) each build their own copy and the first rename wins, the
other is thrown away. ``meta.json``, written last, records what the entry was built from
plus the size and the xxh3-128 checksum of every file, and a checksum of itself.

Every load verifies the entry against its ``meta.json`` (:func:`check_entry`). A bad entry
(a truncated ``.npy``, an edited ``ids.json``, a damaged ``meta.json``, an interrupted
build, or one written by an evalkit that recorded no checksums) is reported as a warning
naming the file, moved aside and rebuilt: the cache is derived data, and a rebuilt entry
gives the same numbers. ``evalkit cache verify`` runs the same check on every entry.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import xxhash

from evalkit import __version__
from evalkit.fileio import ensure_folder, output_error, write_atomic

CACHE_ENV = "EVALKIT_CACHE"
ENTRY_FORMAT = 1  # bump when what meta.json records about the files changes
STAGING, TRASH = ".staging", ".trash"
HINT = f"point {CACHE_ENV} at a writable folder"
CHUNK = 1 << 20
LEGACY = "was written by an evalkit that recorded no checksums"  # an upgrade, not damage: rebuilt without a warning
T = TypeVar("T")


def default_cache_root() -> Path:
    """``$EVALKIT_CACHE`` if set, else ``.evalkit_cache`` in the current folder."""
    return Path(os.environ.get(CACHE_ENV, ".evalkit_cache"))


def cache_dir_for(root: Path, kind: str, key_meta: dict[str, Any]) -> Path:
    """``<root>/indexes/<kind>-<20 hex of sha256(key_meta)>``."""
    digest = hashlib.sha256(json.dumps(key_meta, sort_keys=True).encode()).hexdigest()[:20]
    return Path(root) / "indexes" / f"{kind}-{digest}"


def warn(message: str) -> None:
    """Tell the user about a cache problem evalkit repaired (stderr; the run goes on)."""
    print(f"warning: {message}", file=sys.stderr, flush=True)


# -- checksums ---------------------------------------------------------------------------

def file_digest(path: Path) -> str:
    """xxh3-128 of a file's bytes (hex): ~30 GB/s, so verifying a warm load costs little more than reading it."""
    h = xxhash.xxh3_128()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _meta_digest(meta: dict[str, Any]) -> str:
    """The checksum of ``meta`` itself (every field but ``meta_xxh3``)."""
    body = {k: v for k, v in meta.items() if k != "meta_xxh3"}
    return xxhash.xxh3_128(json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def describe_files(folder: Path) -> dict[str, dict[str, Any]]:
    """``{relative path: {size, xxh3}}`` of every file under ``folder`` except ``meta.json``."""
    out = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        if rel != "meta.json":
            out[rel] = {"size": path.stat().st_size, "xxh3": file_digest(path)}
    return out


# -- checking ----------------------------------------------------------------------------

@dataclass(frozen=True)
class EntryCheck:
    """What a check of one cache entry found: ``problem`` is None for a good entry."""

    folder: Path
    problem: str | None = None
    file: Path | None = None
    meta: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


def check_entry(folder: Path, checksums: bool = True) -> EntryCheck:
    """Verify an entry against its ``meta.json``: every listed file present, of its size and checksum.

    Files not listed (side results added later, such as a graph's ``communities-*.json``)
    are not checked here. ``checksums=False`` checks sizes only.
    """
    meta_path = folder / "meta.json"
    if not meta_path.is_file():
        return EntryCheck(folder, "has no meta.json (an interrupted build)", meta_path)
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return EntryCheck(folder, f"is unreadable ({type(exc).__name__}: {exc})", meta_path)
    if not isinstance(meta, dict) or meta.get("entry_format") != ENTRY_FORMAT or "files" not in meta:
        return EntryCheck(folder, LEGACY, meta_path)
    if meta.get("meta_xxh3") != _meta_digest(meta):
        return EntryCheck(folder, "differs from its checksum (edited or damaged)", meta_path)
    for rel, rec in meta["files"].items():
        path = folder / rel
        if not path.is_file():
            return EntryCheck(folder, "is missing", path)
        size = path.stat().st_size
        if size != rec["size"]:
            return EntryCheck(folder, f"is {size} bytes, meta.json says {rec['size']} (truncated or replaced)", path)
        if checksums and file_digest(path) != rec["xxh3"]:
            return EntryCheck(folder, "differs from the checksum in meta.json (edited or damaged)", path)
    return EntryCheck(folder, meta=meta)


def discard(folder: Path) -> None:
    """Move an entry aside (one atomic rename) and delete it; a no-op when someone else already did."""
    trash = folder.parent / TRASH / f"{folder.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    for _ in range(5):
        try:
            ensure_folder(trash.parent, HINT)
            os.rename(folder, trash)
            break
        except FileNotFoundError:
            if not folder.exists():
                return  # another process discarded it first
            # else another process removed the empty .trash between our mkdir and rename: again
        except OSError as exc:
            raise output_error(folder, exc, HINT) from None
    shutil.rmtree(trash, ignore_errors=True)
    _tidy(folder.parent)


def write_file(path: Path, content: bytes) -> None:
    """Write one cache file whole: a temporary name private to this process, then a rename over ``path``."""
    ensure_folder(path.parent, HINT)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
    try:
        tmp.write_bytes(content)
        os.replace(tmp, path)
    except OSError as exc:
        raise output_error(path, exc, HINT) from None
    finally:
        tmp.unlink(missing_ok=True)


def publish_folder(staging: Path, folder: Path) -> None:
    """Rename a complete ``staging`` folder to ``folder``; when another process published it first, keep theirs."""
    try:
        os.rename(staging, folder)
    except OSError as exc:
        if not folder.exists():
            raise output_error(folder, exc, HINT) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        _tidy(folder.parent)


def staging_for(folder: Path) -> Path:
    """A new private folder beside ``folder``'s parent to build it in (``<parent>/.staging/<name>-<pid>-<rand>``)."""
    staging = folder.parent / STAGING / f"{folder.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    for _ in range(5):  # another process may remove the empty .staging between our two mkdirs
        try:
            staging.mkdir(parents=True)
            return staging
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise output_error(staging, exc, HINT) from None
    return ensure_folder(staging, HINT)


def _tidy(parent: Path) -> None:
    """Remove ``parent``'s ``.staging`` and ``.trash`` folders when nothing is left in them."""
    for name in (STAGING, TRASH):
        try:
            (parent / name).rmdir()
        except OSError:
            pass  # absent, or another build in progress


# -- building and loading ----------------------------------------------------------------

@dataclass(frozen=True)
class Uncached:
    """What a builder returns for a result it must not cache (e.g. an index built while its LLM failed)."""

    value: Any


def load_or_build(root: Path, kind: str, key_meta: dict[str, Any], *, load: Callable[[Path, dict[str, Any]], T],
                  build: Callable[[Path], dict[str, Any] | Uncached]) -> T:
    """The entry for ``key_meta``: verified and loaded, or built, published and loaded.

    ``build(staging)`` writes the entry's files into a private folder and returns what
    ``meta.json`` should record beyond ``key_meta`` (or :class:`Uncached`); ``load(folder,
    meta)`` reads a published entry. A bad entry is reported, discarded and rebuilt; an
    entry that fails to load once verified counts as bad too.
    """
    folder = cache_dir_for(root, kind, key_meta)
    for _ in range(3):  # another process may discard or publish between our steps
        found = check_entry(folder) if folder.exists() else None
        unloadable = False
        if found is not None and found.ok:
            try:
                return load(folder, found.meta or {})
            except Exception as exc:  # noqa: BLE001 - any failure to read a verified entry: rebuild it
                found = EntryCheck(folder, f"could not be loaded ({type(exc).__name__}: {exc})", folder)
                unloadable = True
        if found is not None:
            if not unloadable and check_entry(folder).ok:
                continue  # another process replaced the bad entry meanwhile: load theirs
            _report(found)
            discard(folder)
        built = _build(folder, key_meta, build)
        if isinstance(built, Uncached):
            return built.value
        fresh = check_entry(folder)
        if fresh.ok:  # ours, or an identical one another builder published first
            return load(folder, fresh.meta or {})
    raise RuntimeError(f"cache entry {folder} was replaced three times while loading it; is something deleting it?")


def _build(folder: Path, key_meta: dict[str, Any], build: Callable[[Path], dict[str, Any] | Uncached]) -> Any:
    """Run ``build`` in a private staging folder and publish the result (or return it :class:`Uncached`)."""
    staging = staging_for(folder)
    try:
        extra = build(staging)
        if not isinstance(extra, Uncached):
            publish(staging, folder, {**key_meta, **extra})
        return extra
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        _tidy(folder.parent)


def _report(found: EntryCheck) -> None:
    if found.problem == LEGACY:
        return  # an upgrade, not damage: rebuilt quietly
    what = "entry" if found.file == found.folder else "file"
    warn(f"cache {what} {found.file} {found.problem}; rebuilding the entry "
         f"(the cache is derived data: nothing is lost, the numbers are the same)")


def publish(staging: Path, folder: Path, meta: dict[str, Any]) -> None:
    """Write ``meta.json`` (with the files' sizes and checksums) into ``staging`` and rename it to ``folder``.

    When another builder published the same entry first, its copy stays and ours is dropped.
    """
    meta = {**meta, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "evalkit": __version__,
            "path": str(folder), "entry_format": ENTRY_FORMAT, "files": describe_files(staging)}
    meta["meta_xxh3"] = _meta_digest(meta)
    write_atomic(staging / "meta.json", json.dumps(meta, indent=2, sort_keys=True, ensure_ascii=False), hint=HINT)
    publish_folder(staging, folder)  # when another builder won the race, its entry stands (verified next)
