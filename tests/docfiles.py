"""Small PDF, Word, HTML and Markdown files the document-import tests write themselves.

:func:`pdf_bytes` hand-builds a PDF: one Type0 font with a ``ToUnicode`` map (no embedded
glyphs: nothing is drawn that a text extractor needs), one content stream per page, each
line one ``Tj`` of 2-byte codes (the character's code point). pypdf reads the text back
through the map, Chinese included, and the title from the ``/Info`` dictionary.
"""
from __future__ import annotations

from pathlib import Path


def _cmap(chars: set[str]) -> bytes:
    codes = sorted({ord(c) for c in chars})
    blocks = []
    for i in range(0, len(codes), 100):  # at most 100 entries per bfchar block
        chunk = codes[i:i + 100]
        entries = "\n".join(f"<{c:04X}> <{c:04X}>" for c in chunk)
        blocks.append(f"{len(chunk)} beginbfchar\n{entries}\nendbfchar")
    return ("/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n"
            "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
            "/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n"
            "1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n" + "\n".join(blocks) +
            "\nendcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n").encode("ascii")


def _stream(data: bytes) -> bytes:
    return b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


def pdf_bytes(pages: list[list[str]], title: str | None = None) -> bytes:
    """A PDF of ``pages`` (each a list of text lines, any BMP characters), with ``title`` in its /Info."""
    chars = {c for page in pages for line in page for c in line} | {" "}
    n = len(pages)
    # objects: 1 catalog, 2 pages, 3 font, 4 descendant, 5 descriptor, 6 cmap, 7 info, then page/content pairs
    objs: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % (8 + 2 * i) for i in range(n)) + b"] /Count %d >>" % n,
        3: b"<< /Type /Font /Subtype /Type0 /BaseFont /EvalkitTest /Encoding /Identity-H "
           b"/DescendantFonts [4 0 R] /ToUnicode 6 0 R >>",
        4: b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /EvalkitTest /CIDToGIDMap /Identity "
           b"/CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /FontDescriptor 5 0 R "
           b"/DW 1000 >>",
        5: b"<< /Type /FontDescriptor /FontName /EvalkitTest /Flags 4 /FontBBox [0 0 1000 1000] /ItalicAngle 0 "
           b"/Ascent 880 /Descent -120 /CapHeight 700 /StemV 80 >>",
        6: _stream(_cmap(chars)),
        7: b"<< /Producer (evalkit tests)" + (b" /Title <FEFF" + title.encode("utf-16-be").hex().upper().encode()
                                              + b">" if title else b"") + b" >>",
    }
    for i, lines in enumerate(pages):
        ops = [b"BT /F1 12 Tf 14 TL 72 760 Td"]
        for line in lines:
            ops.append(b"<" + line.encode("utf-16-be").hex().upper().encode() + b"> Tj T*")
        ops.append(b"ET")
        objs[8 + 2 * i] = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                           b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (9 + 2 * i))
        objs[9 + 2 * i] = _stream(b"\n".join(ops))
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    for num in sorted(objs):
        offsets[num] = len(out)
        out += b"%d 0 obj\n" % num + objs[num] + b"\nendobj\n"
    xref = len(out)
    size = max(objs) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for num in range(1, size):
        out += b"%010d 00000 n \n" % offsets[num]
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 7 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref)
    return bytes(out)


def write_pdf(path: Path, pages: list[list[str]], title: str | None = None) -> Path:
    path.write_bytes(pdf_bytes(pages, title))
    return path


def write_encrypted_pdf(path: Path, pages: list[list[str]], password: str = "s3cret") -> Path:
    """The PDF of ``pages`` encrypted with a user password (RC4: pypdf needs no crypto library for it)."""
    import io

    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_bytes(pages))))
    writer.encrypt(user_password=password, owner_password=password, algorithm="RC4-128")
    with path.open("wb") as fh:
        writer.write(fh)
    return path


def write_docx(path: Path, title: str, blocks: list[tuple[str, object]], core_title: str | None = None) -> Path:
    """A Word file: ``("title"|"h1"|"h2"|"p", text)`` paragraphs and ``("table", rows)`` tables, in order."""
    import docx

    doc = docx.Document()
    if core_title is not None:
        doc.core_properties.title = core_title
    if title:
        doc.add_heading(title, level=0)
    for kind, value in blocks:
        if kind == "table":
            rows = value  # type: ignore[assignment]
            table = doc.add_table(rows=len(rows), cols=len(rows[0]))  # type: ignore[arg-type]
            for r, row in enumerate(rows):  # type: ignore[arg-type]
                for c, cell in enumerate(row):
                    table.cell(r, c).text = cell
        elif kind in ("h1", "h2"):
            doc.add_heading(str(value), level=int(kind[1]))
        else:
            doc.add_paragraph(str(value))
    # python-docx stamps the save time into docProps/core.xml; a fixed time keeps the file (and its hash) stable
    import datetime as _dt

    doc.core_properties.created = doc.core_properties.modified = _dt.datetime(2026, 1, 1)
    doc.save(str(path))
    return path


# --- the handbook folder of tests/importers (one file of each kind, and files that cannot be read) ---

PDF_PAGE1 = ["Travel expense policy", "Claims are filed within 30 days after the trip ends."]
PDF_PAGE2 = ["第二章 住宿标准", "出差住宿费按城市等级报销，一线城市每晚不超过600元。"]
DOCX_TABLE = [["城市", "住宿标准（元/晚）"], ["北京", "600"], ["上海", "650"], ["成都", "450"]]
HTML = """<!doctype html><html><head><meta charset="utf-8"><title>Badge policy - Intranet</title></head>
<body><nav><a href="/">Home</a> | <a href="/it">IT</a> | Sign in</nav>
<div class="sidebar">Popular: canteen menu, parking</div>
<article><h1>Badge policy</h1>
<p>A lost badge is replaced by the front desk within two working days.</p>
<table><tr><th>Item</th><th>Fee (CNY)</th></tr><tr><td>Lost badge</td><td>50</td></tr>
<tr><td>Damaged badge</td><td>0</td></tr></table></article>
<footer>Copyright 2026 Lanxing</footer><script>track("badge")</script></body></html>"""
MARKDOWN = """---
title: 报销常见问题
owner: finance
---
# 报销 FAQ

发票抬头须为公司全称。

| 费用类型 | 上限 |
| --- | --- |
| 餐费 | 100元/天 |
| 交通 | 实报实销 |
"""


def make_folder(root: Path) -> Path:
    """``root/handbook``: four readable documents, four unreadable ones, three files that are no documents."""
    folder = root / "handbook"
    (folder / "intranet").mkdir(parents=True)
    (folder / "notes").mkdir()
    write_pdf(folder / "travel policy.pdf", [PDF_PAGE1, PDF_PAGE2], title="差旅费报销制度 Travel policy")
    write_docx(folder / "lodging.docx", "住宿标准", [("h1", "适用范围"), ("p", "本标准适用于全体员工的国内出差。"),
                                                     ("table", DOCX_TABLE), ("p", "超出标准的部分由个人承担。")])
    (folder / "intranet" / "badge.html").write_text(HTML, encoding="utf-8")
    (folder / "notes" / "faq.md").write_text(MARKDOWN, encoding="utf-8")
    # unreadable documents: each is skipped with its reason, the others imported
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog")
    write_encrypted_pdf(folder / "locked.pdf", [["secret salaries"]])
    (folder / "old.docx").write_bytes(b"this is not a zip file")
    (folder / "notes" / "gbk.md").write_bytes("# 旧文件\n编码是GBK。".encode("gbk"))
    # not documents
    (folder / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (folder / ".DS_Store").write_bytes(b"\0\0")
    (folder / "~$lodging.docx").write_bytes(b"lock")
    return folder
