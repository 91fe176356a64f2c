"""One reader per document format: a file's bytes to a title and Markdown-like text.

The readers are registered in :data:`READERS` by file suffix; ``evalkit import docs``
(:mod:`evalkit.importers.docs`) picks one by the file's suffix. Each returns a
:class:`ParsedDoc` or raises :class:`DocReadError` with a message saying what is wrong
with the file and what to do; the importer adds the file's name and goes on with the others.

- **PDF** (pypdf): the text layer of each page, pages separated by a blank line; where each
  page starts goes to ``page_starts``. Title: the PDF's own /Title, else the first line.
  An encrypted PDF is opened when its user password is empty, else refused; a PDF without
  text (a scan) is refused (OCR it first). pypdf sees no table structure: a PDF table
  arrives as lines of text.
- **Word** (python-docx): paragraphs and tables in document order; ``Heading N`` styles
  become ``#`` headings, tables Markdown rows (:mod:`evalkit.importers.doc_markdown`).
  Title: the file's Title property, else the first ``Title`` or heading paragraph.
- **HTML** (lxml, lxml_html_clean): the main content (``<main>``, ``<article>``, else the
  body), without scripts, forms, navigation, sidebars and footers, rendered as Markdown
  (headings, paragraphs, list items, tables as rows). Title: the first ``<h1>`` of the main
  content, else ``<title>``.
- **Markdown and text** (UTF-8): as written; a YAML front matter's ``title`` or the first
  ``# `` heading is the title, and the front matter is left out of the text.

Every format falls back to the file name (without its suffix) for the title.
"""
from __future__ import annotations

import contextlib
import io
import logging
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from evalkit.extras import require
from evalkit.importers import doc_markdown as md

FEATURE = "evalkit import docs"


class DocReadError(Exception):
    """A file that cannot be imported: the message says why and what to do (the importer names the file)."""


@dataclass
class ParsedDoc:
    """A document read from one file: its title, its text (Markdown tables) and where each page starts."""

    title: str
    text: str
    format: str
    page_starts: list[int] = field(default_factory=list)


Reader = Callable[[bytes, str], ParsedDoc]  # (file bytes, file stem) -> ParsedDoc


def read_pdf(data: bytes, stem: str) -> ParsedDoc:
    """The text of every page of a PDF, and the character offset where each page starts."""
    pypdf = require("docs", f"{FEATURE} (PDF files)", "pypdf")
    try:
        with _quiet("pypdf"):
            pages, meta_title = _pdf_pages(pypdf, data)
    except DocReadError:
        raise
    except Exception as exc:  # noqa: BLE001 - a damaged file raises anything from deep inside the parser
        raise DocReadError(f"not a readable PDF ({type(exc).__name__}: {_short(exc)}); is the file complete?") \
            from exc
    if not any(p.strip() for p in pages):
        raise DocReadError(f"the PDF has no text layer ({len(pages)} page(s), no text: a scan?); run OCR on it "
                           "(e.g. ocrmypdf in.pdf out.pdf) and import the result")
    text, starts = _join_pages(pages)
    return ParsedDoc(title=_first_of(meta_title, _first_line(text), stem), text=text, format="pdf",
                     page_starts=starts)


def _pdf_pages(pypdf: Any, data: bytes) -> tuple[list[str], str]:
    """The text of each page and the /Title of a PDF (pypdf), or DocReadError for a password-protected one."""
    reader = pypdf.PdfReader(io.BytesIO(data))
    if reader.is_encrypted and not reader.decrypt(""):
        raise DocReadError("the PDF is encrypted with a password; save a copy without one "
                           "(e.g. qpdf --decrypt --password=PASSWORD in.pdf out.pdf) and import that")
    pages = [_clean(page.extract_text() or "") for page in reader.pages]
    return pages, str((reader.metadata.title if reader.metadata else None) or "")


@contextlib.contextmanager
def _quiet(logger_name: str) -> Iterator[None]:
    """Keep a parser's warnings about a damaged file off the console (the skip message says it)."""
    logger = logging.getLogger(logger_name)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def _join_pages(pages: list[str]) -> tuple[str, list[int]]:
    """Pages joined by a blank line, and the offset of each page's first character (empty pages included)."""
    parts: list[str] = []
    starts: list[int] = []
    pos = 0
    for i, page in enumerate(pages):
        if i:
            parts.append("\n\n")
            pos += 2
        starts.append(pos)
        parts.append(page)
        pos += len(page)
    return "".join(parts), starts


def read_docx(data: bytes, stem: str) -> ParsedDoc:
    """Paragraphs and tables of a Word file in document order, as Markdown."""
    docx = require("docs", f"{FEATURE} (Word files)", "docx")
    try:
        document = docx.Document(io.BytesIO(data))
        blocks, title = _docx_blocks(document)
        core_title = document.core_properties.title or ""
    except Exception as exc:  # noqa: BLE001 - a damaged file raises anything from deep inside the parser
        raise DocReadError(f"not a readable Word .docx file ({type(exc).__name__}: {_short(exc)}); an old .doc "
                           "must be saved as .docx first") from exc
    text = "\n\n".join(b for b in blocks if b.strip())
    if not text.strip():
        raise DocReadError("the Word file holds no text")
    return ParsedDoc(title=_first_of(core_title, title, stem), text=text, format="docx")


def _docx_blocks(document: Any) -> tuple[list[str], str]:
    """Markdown blocks of a python-docx document, and its first Title or heading paragraph."""
    blocks: list[str] = []
    title = ""
    for item in document.iter_inner_content():
        if hasattr(item, "rows"):
            rows = [[cell.text for cell in row.cells] for row in item.rows]
            if rows:
                blocks.append(md.table(rows))
            continue
        text = item.text.strip()
        if not text:
            continue
        style = (item.style.name if item.style is not None else "") or ""
        level = md.heading_level(style)
        if style == "Title" or (level and not title):
            title = title or text
        blocks.append(f"{'#' * (level or 1)} {text}" if level or style == "Title" else text)
    return blocks, title


def read_html(data: bytes, stem: str) -> ParsedDoc:
    """The main content of a web page (:func:`evalkit.importers.doc_markdown.main_content`), as Markdown."""
    require("docs", f"{FEATURE} (HTML files)", "lxml_html_clean")
    from lxml import html as lxml_html

    try:
        source: str | bytes
        try:  # UTF-8 whatever the page declares; other encodings as its <meta charset> says (lxml)
            decoded = data.decode("utf-8-sig")
            source = re.sub(r"^\s*<\?xml[^>]*\?>", "", decoded)  # lxml refuses a str with an encoding declaration
        except UnicodeDecodeError:
            source = data
        root = lxml_html.document_fromstring(source)
        head_title = " ".join(" ".join(root.xpath("//title//text()")).split())
        text, h1 = md.from_html(md.main_content(root))
    except Exception as exc:  # noqa: BLE001 - a damaged file raises anything from deep inside the parser
        raise DocReadError(f"not readable HTML ({type(exc).__name__}: {_short(exc)})") from exc
    if not text.strip():
        raise DocReadError("no main text found in the page (only navigation, scripts or an empty body)")
    return ParsedDoc(title=_first_of(h1, head_title, stem), text=text, format="html")


_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*\r?\n", re.S)
_FM_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.M)
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.M)


def read_markdown(data: bytes, stem: str) -> ParsedDoc:
    """A Markdown or text file as written (UTF-8), front matter left out."""
    text = _decode(data)
    title = ""
    fm = _FRONT_MATTER.match(text)
    if fm:
        found = _FM_TITLE.search(fm.group(1))
        title = found.group(1).strip("'\"") if found else ""
        text = text[fm.end():]
    text = _clean(text)
    if not text.strip():
        raise DocReadError("the file holds no text")
    heading = _H1.search(text)
    return ParsedDoc(title=_first_of(title, heading.group(1) if heading else "", stem), text=text,
                     format="markdown")


def read_text(data: bytes, stem: str) -> ParsedDoc:
    """A plain text file (UTF-8) as written; the title is the file name."""
    text = _clean(_decode(data))
    if not text.strip():
        raise DocReadError("the file holds no text")
    return ParsedDoc(title=stem, text=text, format="text")


def _decode(data: bytes) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocReadError(f"not UTF-8 text (byte {exc.start}); re-save it as UTF-8, e.g. "
                           "iconv -f GBK -t UTF-8 in.md > out.md") from exc


def _clean(text: str) -> str:
    """Line endings normalised, trailing spaces and runs of blank lines removed, ends trimmed."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _first_line(text: str) -> str:
    return next((line.strip().lstrip("#").strip() for line in text.splitlines() if line.strip()), "")[:200]


def _first_of(*titles: str) -> str:
    return next((" ".join(t.split()) for t in titles if t and t.strip()), "")


def _short(exc: Exception) -> str:
    return " ".join(str(exc).split())[:160] or "no detail"


READERS: dict[str, Reader] = {
    ".pdf": read_pdf,
    ".docx": read_docx,
    ".html": read_html,
    ".htm": read_html,
    ".md": read_markdown,
    ".markdown": read_markdown,
    ".txt": read_text,
}
"""File suffix (lower case) -> the reader of that format."""
