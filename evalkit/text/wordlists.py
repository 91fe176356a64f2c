"""The word and phrase lists of the offline judge and of the nodes, read from ``evalkit/text/data/NAME.txt``.

What it is for: the rules live in code, the words they look for in data files a reviewer
can read and extend without reading a regular expression. A list file is UTF-8 text, one
entry per line; a line starting with ``#`` is a comment (each file opens with one saying
what the list is for and how entries are matched); blank lines are skipped; an entry is
the line without its surrounding white space. Entries keep their file order (a regex
alternation tries them in that order). A file is read once per process.

- :func:`words`: single tokens (no white space), as a ``frozenset``;
- :func:`phrases`: entries that may contain spaces, in file order;
- :func:`alternation`: a regex alternation ``a|b|c`` of the entries, escaped
  (``regex=False``) or, for lists of regex fragments, as written (``regex=True``);
- :func:`table`: ``CODE PATTERN`` lines (a code, white space, a regex fragment), in file order;
- :func:`templates`: regex fragments naming shared parts of the code's vocabulary as ``${PART}``
  (``${SOURCE_EN}``: the words for "the documents"), filled in, in file order.

A bad file (a duplicate entry, white space inside a word, an invalid fragment) raises
:class:`WordListError` naming the file and line.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from string import Template

from evalkit.errors import LocatedError

__all__ = ["DATA", "WordListError", "alternation", "phrases", "read_list", "table", "templates", "words"]

DATA = Path(__file__).with_name("data")


class WordListError(LocatedError, ValueError):
    """A word-list file of the judge with a bad entry (names the file and line)."""


def read_list(path: Path, *, kind: str = "words") -> tuple[str, ...]:
    """The entries of one list file, checked: ``kind`` is ``words`` (single tokens), ``phrases``, ``regex`` or
    ``table`` (``CODE PATTERN``)."""
    entries: dict[str, int] = {}
    for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        entry = raw.strip()
        if not entry or entry.startswith("#"):
            continue
        fix = "fix or remove the line"
        if entry in entries:
            raise WordListError(str(path), "", f"duplicate entry {entry!r} (first on line {entries[entry]}); {fix}",
                                line=lineno)
        if kind == "words" and len(entry.split()) > 1:
            raise WordListError(str(path), "", f"entry {entry!r} has white space in it; a word list holds one word "
                                f"per line: {fix}", line=lineno)
        if kind == "table" and len(entry.split(None, 1)) != 2:
            raise WordListError(str(path), "", f"entry {entry!r} is not 'CODE PATTERN' (a code, a space, a regular "
                                f"expression); {fix}", line=lineno)
        if kind in ("regex", "table"):
            try:
                re.compile(entry if kind == "regex" else entry.split(None, 1)[1])
            except re.error as exc:
                raise WordListError(str(path), "", f"entry {entry!r} is not a valid regular expression ({exc}); {fix}",
                                    line=lineno) from exc
        entries[entry] = lineno
    return tuple(entries)


@cache
def _load(name: str, kind: str) -> tuple[str, ...]:
    return read_list(DATA / f"{name}.txt", kind=kind)


def words(name: str) -> frozenset[str]:
    """The words of ``data/NAME.txt`` (one token per line)."""
    return frozenset(_load(name, "words"))


def phrases(name: str) -> tuple[str, ...]:
    """The entries of ``data/NAME.txt`` in file order (an entry may contain spaces)."""
    return _load(name, "phrases")


def alternation(name: str, *, regex: bool = False) -> str:
    """``data/NAME.txt`` as a regex alternation in file order: entries escaped, or as written when ``regex``."""
    entries = _load(name, "regex" if regex else "phrases")
    return "|".join(entries if regex else map(re.escape, entries))


def table(name: str) -> list[tuple[str, str]]:
    """``data/NAME.txt`` as ``(pattern, code)`` pairs in file order (each line is ``CODE PATTERN``)."""
    return [(p, c) for c, p in (e.split(None, 1) for e in _load(name, "table"))]


def templates(name: str, parts: Mapping[str, str]) -> tuple[str, ...]:
    """``data/NAME.txt``'s regex fragments with each ``${PART}`` replaced by ``parts[PART]`` (a ``$`` not
    followed by a name, as in ``(?:$|...)``, stays an anchor); an unknown part or an invalid result raises
    :class:`WordListError` naming the file and line."""
    path = DATA / f"{name}.txt"
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    for entry in _load(name, "phrases"):
        lineno = next(i for i, ln in enumerate(lines, start=1) if ln.strip() == entry)
        unknown = sorted(set(re.findall(r"\$\{(\w+)\}", entry)) - set(parts))
        if unknown:
            raise WordListError(str(path), "", f"unknown part ${{{unknown[0]}}}; the parts are "
                                f"{', '.join(sorted(parts))}", line=lineno)
        filled = Template(entry).safe_substitute(parts)
        try:
            re.compile(filled)
        except re.error as exc:
            raise WordListError(str(path), "", f"not a valid regular expression once filled in ({exc})",
                                line=lineno) from exc
        out.append(filled)
    return tuple(out)
