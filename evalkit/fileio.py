"""Writing files so that a failure is one clear line and never leaves debris.

Every file evalkit writes in place of another (summaries, per-query records, manifests,
index metadata, exports, reports) goes through :func:`write_atomic`: the content is
written to ``NAME.tmp`` beside the target and renamed over it, so a reader sees the old
file or the new one, never half of one; when anything fails the ``.tmp`` is removed.

An ``OSError`` while writing becomes an :class:`OutputError` (a user-facing
``EvalkitError``) naming the path and what to do (:func:`output_error`): a read-only
file system, a missing permission, a full disk, a path whose folder is a file.
"""
from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from evalkit.errors import EvalkitError

__all__ = ["OutputError", "content_sha256", "ensure_folder", "jsonl_lines", "output_error", "unencodable", "write_atomic"]


class OutputError(EvalkitError):
    """A result, record or report that cannot be written; the message names the path and the fix."""


DEFAULT_HINT = "choose another --output"


def output_error(path: str | Path, exc: OSError, hint: str = DEFAULT_HINT) -> OutputError:
    """The one-line error for an ``OSError`` raised while writing ``path``."""
    code, where = exc.errno, exc.filename or path
    if code == errno.EROFS:
        what = "the file system is read-only"
    elif code in (errno.EACCES, errno.EPERM):
        what = "permission denied"
    elif code in (errno.ENOSPC, errno.EDQUOT):
        what = "no space left on the device (disk full or over quota)"
        hint = f"free some space or {hint}" if hint == DEFAULT_HINT else hint
    elif code in (errno.ENOTDIR, errno.EEXIST) and _file_in_the_way(Path(where)):
        return OutputError(f"cannot write {path}: {_file_in_the_way(Path(where))} is a file, not a folder; move it "
                           f"away or {hint}")
    elif code == errno.EISDIR:
        what = "it is a folder, not a file"
    else:
        what = exc.strerror or type(exc).__name__
    return OutputError(f"cannot write {where}: {what}; {hint}")


def _file_in_the_way(path: Path) -> Path | None:
    """The nearest of ``path`` and its parents that exists as a non-folder, if any."""
    for p in (path, *path.parents):
        if p.exists():
            return p if not p.is_dir() else None
    return None


def ensure_folder(folder: str | Path, hint: str = DEFAULT_HINT) -> Path:
    """Create ``folder`` (and its parents), or raise :class:`OutputError` saying why it cannot be."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise output_error(folder, exc, hint) from None
    return folder


def write_atomic(path: str | Path, content: str | bytes | Callable[[IO[Any]], None], *,
                 hint: str = DEFAULT_HINT, encoding: str = "utf-8") -> None:
    """Write ``content`` to ``path`` through ``path.tmp`` and a rename; never leaves the ``.tmp`` behind.

    ``content`` is text, bytes, or a function that writes to the open (text or binary,
    by the first write's type: use text) file. Raises :class:`OutputError`.
    """
    path = Path(path)
    ensure_folder(path.parent, hint)
    tmp = path.with_name(path.name + ".tmp")
    try:
        if isinstance(content, bytes):
            with open(tmp, "wb") as fh:
                fh.write(content)
        else:
            with open(tmp, "w", encoding=encoding, newline="\n") as fh:
                if isinstance(content, str):
                    fh.write(content)
                else:
                    content(fh)
        os.replace(tmp, path)
    except OSError as exc:
        raise output_error(path, exc, hint) from None
    finally:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass  # a read-only folder where nothing could be written anyway


def unencodable(value: Any, where: str = "") -> tuple[str, int, str] | None:
    """The first string inside ``value`` that cannot be written as UTF-8: ``(field path, index, character)``.

    JSON may spell a lone UTF-16 surrogate (``"\\ud800"`` without its pair); Python reads it into
    a string that no file, terminal or tokenizer can encode, and the run that meets it dies
    writing its records. Eval sets and corpora are checked with this when read. The field path
    reads ``question``, ``history[0].content``, ``attributes.dept`` (keys are checked too).
    """
    if isinstance(value, str):
        for i, ch in enumerate(value):
            if "\ud800" <= ch <= "\udfff":
                return where, i, ch
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            name = str(key).encode("utf-8", "backslashreplace").decode("utf-8")  # a bad key is shown escaped
            path = f"{where}.{name}" if where else name
            found = unencodable(str(key), path) or unencodable(item, path)
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = unencodable(item, f"{where}[{i}]")
            if found:
                return found
    return None


def describe_unencodable(found: tuple[str, int, str]) -> str:
    """The message of a :func:`unencodable` find: the character, where it is, and the fix."""
    _, index, ch = found
    return (f"holds a lone surrogate {ascii(ch)} at character {index + 1} (a JSON escape such as \"\\ud800\" without "
            "the second half of its pair): not valid Unicode, so it cannot be written or encoded; remove it, or "
            "write the character itself")


def jsonl_lines(text: str) -> list[str]:
    """The lines of a JSON-lines text, cut at ``\n`` only (a ``\r`` before it dropped).

    Not ``str.splitlines``: that also cuts at U+2028, U+2029 and U+0085, which a JSON string holds
    unescaped whenever an answer or a document does (JSON escapes only control characters): one
    such document or answer made its file unreadable ("not valid JSON", "cut short").
    """
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def content_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes; of a folder (a datasets folder), of every file's relative path and bytes."""
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    h = hashlib.sha256()
    for p in sorted(q for q in path.rglob("*") if q.is_file()):
        h.update(p.relative_to(path).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def write_all(fd: int, buffers: list[bytes | memoryview]) -> None:
    """Write ``buffers`` (bytes, or memoryviews of bytes) to ``fd`` one after the other, in as few ``writev``
    calls as the system allows."""
    limit = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024
    pending = list(buffers)
    i = 0
    while i < len(pending):
        batch = pending[i:i + limit]
        written = os.writev(fd, batch)
        if written == sum(map(len, batch)):  # the usual case: all of it
            i += len(batch)
            continue
        for b in batch:  # a short write: skip what went out, cut the buffer it stopped in
            if written < len(b):
                pending[i] = memoryview(b)[written:]
                break
            written -= len(b)
            i += 1
