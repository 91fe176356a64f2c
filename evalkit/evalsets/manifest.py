"""The manifest of an eval set: its frozen versions and per-line hashes, read, checked and compared.

What it is for: :mod:`evalkit.evalsets.versions` freezes, appends and loads versions; this module
owns the file that records them (``eval_sets/NAME.manifest.json``, format in that module's
docstring): reading it with errors that name the key, and the tamper check that names the first
line edited, deleted or moved since its version was frozen.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.errors import EvalSetError, did_you_mean
from evalkit.evalsets import corpus_identity
from evalkit.fileio import write_atomic

__all__ = ["MANIFEST_KEYS", "MANIFEST_SUFFIX", "OPTIONAL_VERSION_KEYS", "VERSION_KEYS", "Manifest", "check_untampered",
           "line_hash", "manifest_path_for", "read_manifest"]

MANIFEST_SUFFIX = ".manifest.json"
MANIFEST_KEYS = ("name", "corpus", "description", "versions", "line_sha256")
VERSION_KEYS = ("version", "lines", "sha256", "created")
OPTIONAL_VERSION_KEYS = (corpus_identity.CONTENT_KEY,)  # absent in versions frozen by older evalkits
_FIX = "restore it, or append a corrected record with a new id"


@dataclass
class Manifest:
    """The machine-written record of an eval set's versions (always at least one)."""

    path: Path
    name: str
    corpus: str
    description: str = ""
    versions: list[dict[str, Any]] = field(default_factory=list)
    line_sha256: list[str] = field(default_factory=list)

    @property
    def latest(self) -> dict[str, Any]:
        return self.versions[-1]

    @property
    def corpus_path(self) -> Path:
        """The corpus file, resolved (the manifest stores it relative to its own folder)."""
        return (self.path.parent / self.corpus).resolve()

    def get(self, version: int) -> dict[str, Any]:
        """The entry of ``version``, or an error listing the versions that exist."""
        for entry in self.versions:
            if entry["version"] == version:
                return entry
        known = ", ".join(f"v{e['version']}" for e in self.versions)
        raise EvalSetError(str(self.path), "versions", f"no version {version}; recorded versions: {known}")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "corpus": self.corpus, "description": self.description,
                "versions": [{k: e[k] for k in (*VERSION_KEYS, *OPTIONAL_VERSION_KEYS) if k in e}
                             for e in self.versions],
                "line_sha256": list(self.line_sha256)}

    def save(self) -> None:
        """Write the manifest atomically as pretty JSON with a fixed key order."""
        write_atomic(self.path, json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n",
                     hint="make the eval set's folder writable")


def manifest_path_for(path: Path) -> Path:
    """``eval_sets/NAME.jsonl`` -> ``eval_sets/NAME.manifest.json``."""
    return path.with_name(path.stem + MANIFEST_SUFFIX)


def line_hash(line: bytes) -> str:
    """The per-line fingerprint kept in ``line_sha256``: 16 hex chars of the line's sha256."""
    return hashlib.sha256(line).hexdigest()[:16]


def read_manifest(path: Path) -> Manifest | None:
    """The manifest beside eval set ``path``, or None if the set was never frozen."""
    mpath = manifest_path_for(path)
    if not mpath.exists():
        return None
    mfile = str(mpath)

    def fail(where: str, message: str) -> EvalSetError:
        return EvalSetError(mfile, where, f"{message} (the manifest is machine-written: restore it, "
                            "don't edit it by hand)")

    try:
        data = json.loads(mpath.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise fail("", f"cannot read manifest ({exc})") from exc
    if not isinstance(data, dict):
        raise fail("", "expected a JSON object")
    for key in data:
        if key not in MANIFEST_KEYS:
            raise fail(key, f"unknown key{did_you_mean(key, MANIFEST_KEYS)}")
    for key, kind in (("name", str), ("corpus", str), ("versions", list), ("line_sha256", list)):
        if not isinstance(data.get(key), kind) or not data[key]:
            raise fail(key, f"missing or empty (expected a non-empty {kind.__name__})")
    if data["name"] != path.stem:
        raise fail("name", f"names eval set '{data['name']}' but sits beside {path.name}; the manifest "
                   "belongs to another set")
    prev_lines, prev_corpus = 0, None
    for i, entry in enumerate(data["versions"], start=1):
        ok = isinstance(entry, dict) and set(VERSION_KEYS) <= set(entry) <= {*VERSION_KEYS, *OPTIONAL_VERSION_KEYS} \
            and entry["version"] == i and isinstance(entry["lines"], int) \
            and isinstance(entry["sha256"], str) and isinstance(entry["created"], str) \
            and isinstance(entry.get(corpus_identity.CONTENT_KEY, ""), str)
        # a version covers more lines than the one before, or the same lines over a changed corpus
        grows = ok and (entry["lines"] > prev_lines or (entry["lines"] == prev_lines and i > 1 and bool(
            entry.get(corpus_identity.CONTENT_KEY)) and entry.get(corpus_identity.CONTENT_KEY) != prev_corpus))
        if not grows:
            raise fail(f"versions[{i - 1}]", f"expected {{version: {i}, lines > {prev_lines} (or = {prev_lines} with "
                       f"a new corpus_content_sha256), sha256, created}}, got {json.dumps(entry)[:120]}")
        prev_lines, prev_corpus = entry["lines"], entry.get(corpus_identity.CONTENT_KEY)
    hashes = data["line_sha256"]
    if len(hashes) != prev_lines or not all(isinstance(h, str) for h in hashes):
        raise fail("line_sha256", f"expected {prev_lines} line hashes (one per line of the latest version), "
                   f"got {len(hashes)}")
    return Manifest(path=mpath, name=data["name"], corpus=data["corpus"], description=str(data.get("description", "")),
                    versions=data["versions"], line_sha256=hashes)


def check_untampered(file: str, lines: list[bytes], manifest: Manifest) -> None:
    """Raise naming the first frozen line that was edited, deleted or moved.

    Every line of every recorded version must still hold the bytes it had when it was
    frozen, and each version's prefix must still hash to its recorded ``sha256``.
    """
    recorded = manifest.line_sha256
    where_recorded = {h: i for i, h in enumerate(recorded)}
    for i, want in enumerate(recorded):
        lineno, version = i + 1, _version_covering(manifest, i + 1)
        if i >= len(lines):
            raise EvalSetError(file, "", f"line {lineno} deleted since version {version} was frozen: the file has "
                               f"{len(lines)} lines, version {version} covers {manifest.get(version)['lines']}; "
                               "restore the deleted lines (frozen records are never removed; append a corrected "
                               "record with a new id instead)")
        got = line_hash(lines[i])
        if got == want:
            continue
        if got in where_recorded:
            how = f"it now holds what was line {where_recorded[got] + 1}: lines were moved or deleted"
        elif want in (line_hash(lines[i] + b"\n"), line_hash(lines[i].replace(b"\r\n", b"\n"))):
            how = "only its line ending changed, e.g. an editor converted newlines"
        elif i + 1 < len(lines) and line_hash(lines[i + 1]) == want:
            how = "a line was inserted before it"
        else:
            how = f"it now reads {_preview(lines[i])}"
        raise EvalSetError(file, "", f"line {lineno} changed since version {version} was frozen ({how}): {_FIX}")
    for entry in manifest.versions:
        digest = hashlib.sha256(b"".join(lines[: entry["lines"]])).hexdigest()
        if digest != entry["sha256"]:
            raise EvalSetError(str(manifest.path), "versions", f"version {entry['version']} records sha256 "
                               f"{entry['sha256'][:12]}... but its {entry['lines']} lines hash to {digest[:12]}...; "
                               "the manifest was edited by hand: restore it")


def _version_covering(manifest: Manifest, lineno: int) -> int:
    return next(e["version"] for e in manifest.versions if e["lines"] >= lineno)


def _preview(line: bytes) -> str:
    text = line.decode("utf-8", errors="replace").strip()
    return repr(text if len(text) <= 60 else text[:57] + "...")
