"""Versions of an eval set: immutable prefixes of its file, recorded in a manifest.

``eval_sets/NAME.jsonl`` only ever grows. ``freeze`` records a version as "the first
L lines, whose bytes hash to H" in ``eval_sets/NAME.manifest.json``::

    {"name": "demo_kb", "corpus": "corpora/demo_kb.jsonl", "description": "...",
     "versions": [{"version": 1, "lines": 84, "sha256": "...", "created": "2026-11-29T12:00:00Z",
                   "corpus_content_sha256": "..."}],
     "line_sha256": ["<16 hex chars per line of the latest version>", ...]}

``corpus`` is relative to the manifest's folder. The per-line hashes let the tamper
check name the first line that was edited, deleted or moved since it was frozen. Each
version also records the content hash of the corpus it was labelled against
(``corpus_identity``); a run or ``validate`` on a changed corpus is refused, naming the
changed documents.
Lines after the latest version are unfrozen: checked for format, not yet citable.

A run loads a pinned version with ``load_eval_set("eval_sets/NAME.jsonl@v2")``.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalkit.errors import EvalSetError
from evalkit.evalsets import corpus_identity
from evalkit.evalsets.evalset import (
    EvalSet,
    check_gold_ids,
    display_path,
    duplicate_questions,
    load_abstention_rules,
    parse_records,
    read_lines,
    record_stats,
    resolve_spec,
)
from evalkit.evalsets.manifest import (
    Manifest,
    check_untampered,
    line_hash,
    manifest_path_for,
    read_manifest,
)
from evalkit.evalsets.provenance import effective_records
from evalkit.index.corpus import Corpus, load_corpus
from evalkit.locking import evalset_lock
from evalkit.records import EvalRecord


def load_eval_set(spec: str | Path, check_corpus: bool = True) -> EvalSet:
    """Load one frozen version of an eval set: ``PATH`` (latest), ``PATH@vN``, or a bare NAME.

    Refuses a set whose frozen lines were tampered with. With ``check_corpus`` the
    corpus named by the manifest is loaded and every gold id must be in it.
    """
    path, want = resolve_spec(spec)
    file = str(path)
    lines = read_lines(path)
    manifest = read_manifest(path)
    if manifest is None:
        raise EvalSetError(file, "", f"no frozen version yet: run `evalkit evalset freeze {path.stem} --corpus PATH` "
                           "first (a run must pin a version)")
    check_untampered(file, lines, manifest)
    entry = manifest.get(want) if want else manifest.latest
    numbered = effective_records(file, parse_records(file, lines[: entry["lines"]]))  # reviews applied
    corpus, warnings = None, []
    if check_corpus:
        corpus = _load_corpus(manifest)
        warning = _check_corpus(file, manifest, entry, corpus)
        warnings += [warning] if warning else []
        check_gold_ids(file, numbered, corpus)
    if want is None and len(lines) > entry["lines"]:  # unpinned: say which lines this run leaves out, and why
        warnings.append(_unfrozen_ignored(file, lines, entry))
    return EvalSet(name=manifest.name, path=path, version=entry["version"], sha256=entry["sha256"],
                   records=[r for _, r in numbered], corpus_path=manifest.corpus_path,
                   manifest_path=manifest.path, corpus=corpus, warnings=warnings,
                   abstention=load_abstention_rules(path))


def _unfrozen_ignored(file: str, lines: list[bytes], entry: dict[str, Any]) -> str:
    """The warning of an unpinned load: the lines after the latest version (and their ids) are not used."""
    done, n = entry["lines"], len(lines)
    ids = []
    for raw in lines[done: done + 5]:
        try:
            ids.append(str(json.loads(raw)["id"]))
        except (ValueError, KeyError, TypeError):
            continue
    span = f"line {done + 1}" if n == done + 1 else f"lines {done + 1}-{n}"
    named = f" (ids {', '.join(ids)}{', ...' if n - done > len(ids) else ''})" if ids else ""
    return (f"{file}: ignoring {span}{named}: not frozen yet, so this uses v{entry['version']} ({done} lines); "
            f"freeze them with `evalkit evalset freeze {file}` to include them, or pin {file}@v{entry['version']}")


def _one_changer(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``fn(path, ...)`` holding the eval set's lock (``evalkit.locking``): a second append, freeze or
    import of the same set waits for the first, so no line is lost or doubled and versions count up by one."""
    @functools.wraps(fn)
    def wrapper(path: str | Path, *args: Any, **kwargs: Any) -> Any:
        with evalset_lock(resolve_spec(path)[0], note=lambda m: print(m, file=sys.stderr, flush=True)):
            return fn(path, *args, **kwargs)
    return wrapper


@_one_changer
def freeze(path: str | Path, corpus: str | None = None, description: str | None = None) -> dict[str, Any]:
    """Record a new version covering every current line and the corpus's content; returns its manifest entry.

    All lines are validated first (format, unique ids, gold ids in the corpus). The
    first freeze must name the corpus; later ones may repeat it but not change its path.
    A new version may cover the same lines as the latest when the corpus content changed
    (or the latest was frozen without a corpus hash): it records the corpus as it is now.
    """
    path = _whole_file(path, "freeze")
    file = str(path)
    lines = read_lines(path)
    manifest = read_manifest(path)
    mpath = manifest_path_for(path)
    if manifest is None:
        if corpus is None:
            raise EvalSetError(file, "", "the first freeze needs the corpus the gold ids refer to: "
                               f"evalkit evalset freeze {path.stem} --corpus PATH")
        if not Path(corpus).is_file():
            raise EvalSetError(str(corpus), "", "no such corpus file (the --corpus of the first freeze)")
        rel = os.path.relpath(Path(corpus).resolve(), mpath.parent.resolve())
        manifest = Manifest(path=mpath, name=path.stem, corpus=Path(rel).as_posix())
        done, next_version = 0, 1
    else:
        check_untampered(file, lines, manifest)
        if corpus is not None and Path(corpus).resolve() != manifest.corpus_path:
            raise EvalSetError(file, "corpus", f"this eval set is tied to corpus {display_path(manifest.corpus_path)};"
                               f" its versions cannot switch to {corpus}: start a new eval set for another corpus")
        done, next_version = manifest.latest["lines"], manifest.latest["version"] + 1
    if not lines:
        raise EvalSetError(file, "", "nothing to freeze: the file has no records")
    corpus_ = _load_corpus(manifest)
    numbered = parse_records(file, lines)
    check_gold_ids(file, numbered, corpus_)
    content = corpus_identity.record(mpath, manifest.name, corpus_)
    if len(lines) == done and manifest.latest.get(corpus_identity.CONTENT_KEY) == content:
        raise EvalSetError(file, "", f"nothing to freeze: version {next_version - 1} already covers all {done} lines "
                           "and the corpus is unchanged")
    if not lines[-1].endswith(b"\n"):  # frozen lines end with a newline, so appending never alters them
        with path.open("ab") as fh:
            fh.write(b"\n")
        lines[-1] += b"\n"
    entry = {"version": next_version, "lines": len(lines),
             "sha256": hashlib.sha256(b"".join(lines)).hexdigest(), "created": _now(),
             corpus_identity.CONTENT_KEY: content}
    manifest.versions.append(entry)
    manifest.line_sha256 = [line_hash(line) for line in lines]
    if description is not None:
        manifest.description = description
    manifest.save()
    return dict(entry)


@_one_changer
def append(path: str | Path, records_file: str | Path) -> int:
    """Append every record of ``records_file`` (JSONL) to the eval set; returns how many.

    All records are checked first (format, ids new to the set, gold ids in the
    corpus); if any fails, nothing is written. Existing bytes are never rewritten and
    the new records stay unfrozen until the next ``freeze``.
    """
    path = _whole_file(path, "append")
    file, rfile = str(path), str(records_file)
    lines = read_lines(path)
    manifest = read_manifest(path)
    if manifest is None:
        raise EvalSetError(file, "", f"not frozen yet, so it names no corpus to check new records against: run "
                           f"`evalkit evalset freeze {path.stem} --corpus PATH` first")
    check_untampered(file, lines, manifest)
    taken = {r.id: n for n, r in parse_records(file, lines)}
    new_lines = read_lines(Path(records_file), what="records file")
    new = parse_records(rfile, new_lines, skip_blank=True)
    if not new:
        raise EvalSetError(rfile, "", "no records to append")
    for lineno, record in new:
        if record.id in taken:
            raise EvalSetError(rfile, "id", f"id '{record.id}' is already used on line {taken[record.id]} of {file}; "
                               "give the new record a new id", line=lineno)
    check_gold_ids(rfile, new, _load_corpus(manifest))
    payload = b"".join(new_lines[n - 1].decode("utf-8-sig").strip().encode("utf-8") + b"\n" for n, _ in new)
    if lines and not lines[-1].endswith(b"\n"):
        payload = b"\n" + payload
    with path.open("ab") as fh:
        fh.write(payload)
    return len(new)


@dataclass
class CheckResult:
    """What ``check`` found: the manifest (None if never frozen), all records, warnings."""

    path: Path
    manifest: Manifest | None
    lines: int
    records: list[EvalRecord]
    warnings: list[str]

    @property
    def unfrozen(self) -> int:
        return self.lines - (self.manifest.latest["lines"] if self.manifest else 0)


def check(path: str | Path) -> CheckResult:
    """Validate the whole file: tamper check, every line's format, the corpus unchanged since the
    latest version, gold ids in the corpus."""
    path = _whole_file(path, "validate")
    file = str(path)
    lines = read_lines(path)
    manifest = read_manifest(path)
    warnings: list[str] = []
    if manifest is not None:
        check_untampered(file, lines, manifest)
    numbered = parse_records(file, lines)
    effective_records(file, numbered)  # every review names an earlier line
    if manifest is None:
        warnings.append(f"not frozen yet (no {manifest_path_for(path).name}), so gold ids were not checked "
                        f"against a corpus: run `evalkit evalset freeze {path.stem} --corpus PATH`")
    else:
        corpus = _load_corpus(manifest)
        warning = _check_corpus(file, manifest, manifest.latest, corpus)
        warnings += [warning] if warning else []
        check_gold_ids(file, numbered, corpus)
        done = manifest.latest["lines"]
        if len(lines) > done:
            span = f"line {done + 1} is" if len(lines) == done + 1 else f"lines {done + 1}-{len(lines)} are"
            warnings.append(f"{span} not frozen yet; runs use v{manifest.latest['version']} until "
                            f"`evalkit evalset freeze {path.stem}`")
    warnings += duplicate_questions(numbered)
    return CheckResult(path=path, manifest=manifest, lines=len(lines), records=[r for _, r in numbered],
                       warnings=warnings)


def validate(path: str | Path) -> list[str]:
    """Validate an eval set (see ``check``); raises ``EvalSetError``, returns warnings."""
    return check(path).warnings


def stats(spec: str | Path) -> dict[str, Any]:
    """Summary counts of an eval set: by type, lang and tag, gold docs per question, versions.

    ``PATH`` covers every line (frozen and unfrozen); ``PATH@vN`` covers that version.
    ``gold_per_question`` is over answerable questions only.
    """
    path, want = resolve_spec(spec)
    file = str(path)
    lines = read_lines(path)
    manifest = read_manifest(path)
    if manifest is not None:
        check_untampered(file, lines, manifest)
    elif want:
        raise EvalSetError(file, "", f"no frozen version yet, so there is no v{want}")
    entry = manifest.get(want) if manifest and want else (manifest.latest if manifest else None)
    used = lines[: entry["lines"]] if want and entry else lines
    records = [r for _, r in effective_records(file, parse_records(file, used))]
    return {"name": path.stem, "path": file, "version": entry["version"] if entry else None,
            "lines": len(used), "unfrozen": len(used) - (entry["lines"] if entry else 0),
            **record_stats(records), "versions": manifest.to_dict()["versions"] if manifest else []}


def _whole_file(spec: str | Path, verb: str) -> Path:
    path, version = resolve_spec(spec)
    if version is not None:
        raise EvalSetError(str(path), "", f"{verb} works on the whole file, not one version: drop '@v{version}'")
    return path


def _load_corpus(manifest: Manifest) -> Corpus:
    if not manifest.corpus_path.is_file():
        raise EvalSetError(str(manifest.path), "corpus", f"corpus {display_path(manifest.corpus_path)} does not exist "
                           f"('{manifest.corpus}' is relative to {display_path(manifest.path.parent)}/); restore it")
    return load_corpus(manifest.corpus_path)


def _check_corpus(file: str, manifest: Manifest, entry: dict[str, Any], corpus: Corpus) -> str | None:
    """Refuse a corpus changed since ``entry`` was frozen (see ``corpus_identity``); a warning when unknown."""
    return corpus_identity.check(manifest.path, manifest.name, entry, manifest.latest["version"], corpus, file,
                                 display_path(manifest.corpus_path))


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
