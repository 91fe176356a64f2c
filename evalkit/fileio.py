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
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from evalkit.errors import EvalkitError

__all__ = ["OutputError", "ensure_folder", "output_error", "write_atomic"]


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
