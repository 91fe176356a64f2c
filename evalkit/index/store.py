"""The on-disk index cache: one folder per index, named by a hash of what it was built from.

The folder holds the index files and ``meta.json`` (corpus hash, chunking, model
identity, settings, creation time). A folder without ``meta.json`` is an interrupted
build and is rebuilt; ``meta.json`` is written last, atomically.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from evalkit import __version__
from evalkit.fileio import write_atomic

CACHE_ENV = "EVALKIT_CACHE"


def default_cache_root() -> Path:
    """``$EVALKIT_CACHE`` if set, else ``.evalkit_cache`` in the current folder."""
    return Path(os.environ.get(CACHE_ENV, ".evalkit_cache"))


def cache_dir_for(root: Path, kind: str, key_meta: dict[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(key_meta, sort_keys=True).encode()).hexdigest()[:20]
    return Path(root) / "indexes" / f"{kind}-{digest}"


def read_meta(folder: Path) -> dict[str, Any] | None:
    path = folder / "meta.json"
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def write_meta(folder: Path, meta: dict[str, Any]) -> dict[str, Any]:
    meta = {**meta, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "evalkit": __version__, "path": str(folder)}
    write_atomic(folder / "meta.json", json.dumps(meta, indent=2, sort_keys=True, ensure_ascii=False),
                 hint=f"point {CACHE_ENV} at a writable folder")
    return meta
