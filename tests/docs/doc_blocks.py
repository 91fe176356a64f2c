"""The code blocks of the README files and docs/ pages, as the example tests see them.

A fenced block's language decides what it is:

* ``python``: executed (``exec``) in a scratch folder;
* ``bash``, ``sh``, ``shell``: every line is a command (``\\`` continues a line, ``#`` starts a
  comment);
* ``console``: a transcript; lines starting with ``$ `` are commands, the others are the output
  as the docs show it (from the full demo; not compared);
* anything else (``text``, ``yaml``, ``json``, no language): text, never run.

An HTML comment on the line before a block changes that:

* ``<!-- no-test: REASON -->``: the block cannot run here (a remote server, an API key, a Ray
  cluster, a command that rewrites the repository); the reason is required;
* ``<!-- test: tests/PATH.py ... -->``: another test runs this block as written (that test
  must exist and read the page).

A block that holds an ``evalkit`` command but is not one of the runnable languages is an
error (:func:`unmarked_commands`): every command the docs show is run or says why not.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHELL = ("bash", "sh", "shell")
RUNNABLE = ("python", "console", *SHELL)
_MARK = re.compile(r"<!--\s*(no-test|test):\s*(.*?)\s*-->")
_COMMAND = re.compile(r"^\s*(\$ )?(\.venv/bin/)?(evalkit|python -m evalkit\S*)\s")


@dataclass(frozen=True)
class Block:
    """One code block: where it is, its language, its text, and the marker above it."""

    page: Path
    line: int  # 1-based line of the opening fence (of the first line, for an indented block)
    lang: str  # "" for a fence without a language; "indented" for an indented block
    code: str
    mark: str | None = None  # "no-test" or "test"
    reason: str = ""

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    def commands(self) -> list[str]:
        """The shell commands of a bash or console block, continuation lines joined."""
        lines = self.code.splitlines()
        if self.lang == "console":
            out, cont = [], False
            for ln in lines:
                if cont:
                    out[-1] += "\n" + ln
                elif ln.startswith("$ "):
                    out.append(ln[2:])
                else:
                    continue
                cont = ln.endswith("\\")
            return out
        out, cont = [], False
        for ln in lines:
            if cont:
                out[-1] += "\n" + ln
            elif ln.strip() and not ln.lstrip().startswith("#"):
                out.append(ln)
            else:
                continue
            cont = ln.endswith("\\")
        return out


def pages() -> list[Path]:
    """Every page whose examples are tested: the two READMEs and docs/*.md."""
    return [REPO / "README.md", REPO / "README.zh-CN.md", *sorted((REPO / "docs").glob("*.md"))]


def blocks(page: Path) -> list[Block]:
    """The fenced and indented code blocks of ``page``, in order, with their markers."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0

    def mark_before(j: int) -> tuple[str | None, str]:
        """The marker among the HTML comment lines right above line ``j`` (blank lines skipped)."""
        k = j - 1
        while k >= 0 and (not lines[k].strip() or lines[k].strip().startswith("<!--")):
            m = _MARK.fullmatch(lines[k].strip())
            if m:
                return m.group(1), m.group(2)
            k -= 1
        return None, ""

    while i < len(lines):
        ln = lines[i]
        fence = re.match(r"^(\s*)(```+)\s*([\w.+-]*)", ln)
        if fence:
            indent, ticks, lang = fence.groups()
            body = []
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(ticks):
                body.append(lines[j].removeprefix(indent))
                j += 1
            mark, reason = mark_before(i)
            out.append(Block(page, i + 1, lang.lower(), "\n".join(body) + "\n", mark, reason))
            i = j + 1
            continue
        # an indented block: 4+ spaces after a blank line (or after a marker comment)
        prev = lines[i - 1].strip() if i else ""
        if ln.startswith("    ") and ln.strip() and (not prev or prev.startswith("<!--")):
            body = []
            j = i
            while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
                body.append(lines[j][4:])
                j += 1
            mark, reason = mark_before(i)
            out.append(Block(page, i + 1, "indented", "\n".join(body).rstrip() + "\n", mark, reason))
            i = j
            continue
        i += 1
    return out


def all_blocks() -> list[Block]:
    return [b for p in pages() for b in blocks(p)]


def unmarked_commands(bs: list[Block]) -> list[Block]:
    """Blocks that show an evalkit command but would not be run and do not say why."""
    return [b for b in bs if b.lang not in (*RUNNABLE, "text") and b.mark is None
            and any(_COMMAND.match(ln) for ln in b.code.splitlines())]
