"""``evalkit import docs``: PDF, Word, HTML and Markdown files the test writes, to a corpus.

The folder (``handbook``, :func:`docfiles.make_folder`) holds one file of each kind, Chinese
and English, with a table in the Word, HTML and Markdown files and two pages in the PDF, plus
files that cannot be read (a damaged PDF, a password-protected PDF, a .docx that is not one, a
GBK-encoded Markdown file) and files that are not documents (an image, a hidden file, a Word
lock file).
"""
from __future__ import annotations

import csv
import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from docfiles import PDF_PAGE1, PDF_PAGE2, make_folder

from evalkit.cli import cli
from evalkit.errors import EvalkitError
from evalkit.extras import MissingExtraError
from evalkit.importers.doc_readers import DocReadError
from evalkit.importers.docs import doc_id, import_docs, read_document
from evalkit.index.chunking import chunk_corpus, with_defaults
from evalkit.index.corpus import load_corpus


@pytest.fixture()
def imported(tmp_path):
    folder = make_folder(tmp_path)
    result = import_docs(folder, "handbook", tmp_path / "eval_sets")
    docs = {d["id"]: d for d in map(json.loads, result.corpus_path.read_text(encoding="utf-8").splitlines())}
    return folder, result, docs


def test_each_format_becomes_one_document_with_its_title(imported):
    _, result, docs = imported
    assert list(docs) == ["intranet/badge.html", "lodging.docx", "notes/faq.md", "travel_policy.pdf"]  # path order
    assert {i: d["title"] for i, d in docs.items()} == {
        "intranet/badge.html": "Badge policy",            # the article's <h1>, not the <title> with "- Intranet"
        "lodging.docx": "住宿标准",                         # the Title paragraph
        "notes/faq.md": "报销常见问题",                      # front matter wins over the first heading
        "travel_policy.pdf": "差旅费报销制度 Travel policy",  # the PDF's /Title
    }
    assert {i: d["metadata"]["format"] for i, d in docs.items()} == {
        "intranet/badge.html": "html", "lodging.docx": "docx", "notes/faq.md": "markdown", "travel_policy.pdf": "pdf"}
    assert docs["travel_policy.pdf"]["metadata"]["source"] == "travel policy.pdf"  # the id has no space, the source does
    assert result.by_format == {"html": 1, "docx": 1, "markdown": 1, "pdf": 1} and result.n_documents == 4
    assert "title: " not in docs["notes/faq.md"]["text"]  # front matter left out of the text
    load_corpus(result.corpus_path)  # the corpus format's own checks


def test_pdf_pages_are_in_metadata_and_map_chunks_to_pages(imported):
    _, result, docs = imported
    pdf = docs["travel_policy.pdf"]
    text, starts = pdf["text"], pdf["metadata"]["page_starts"]
    assert pdf["metadata"]["pages"] == 2 and result.n_pages == 2
    # each page's lines begin where page_starts says (recomputed from the lines the test wrote)
    assert starts == [0, text.index(PDF_PAGE2[0])] and text.startswith(PDF_PAGE1[0])
    assert text[starts[1]:] == "\n".join(PDF_PAGE2)
    passages = chunk_corpus(load_corpus(result.corpus_path), with_defaults({"method": "fixed", "size": 40,
                                                                            "overlap": 0}))
    for unit in (u for u in passages.units if u.doc_id == "travel_policy.pdf"):
        expected = sorted({1 if i < starts[1] else 2 for i in range(unit.start, unit.end)})
        assert passages.pages(unit.id) == expected, unit
    assert {tuple(passages.pages(u.id)) for u in passages.units if u.doc_id == "travel_policy.pdf"} == {(1,), (2,)}
    assert passages.pages("lodging.docx#0") == []  # no pages: Word has no fixed layout


def test_tables_become_markdown_rows(imported):
    _, result, docs = imported
    assert "| 城市 | 住宿标准（元/晚） |\n| --- | --- |\n| 北京 | 600 |\n| 上海 | 650 |\n| 成都 | 450 |" \
        in docs["lodging.docx"]["text"]
    assert docs["lodging.docx"]["text"].startswith("# 住宿标准\n\n# 适用范围\n\n本标准适用于全体员工的国内出差。")
    assert "| Item | Fee (CNY) |\n| --- | --- |\n| Lost badge | 50 |\n| Damaged badge | 0 |" \
        in docs["intranet/badge.html"]["text"]
    assert {i: d["metadata"]["tables"] for i, d in docs.items()} == {
        "intranet/badge.html": 1, "lodging.docx": 1, "notes/faq.md": 1, "travel_policy.pdf": 0}
    assert result.n_tables == 3


def test_html_keeps_the_main_content_only(imported):
    _, _, docs = imported
    text = docs["intranet/badge.html"]["text"]
    assert "A lost badge is replaced by the front desk within two working days." in text
    for boilerplate in ("Sign in", "canteen menu", "Copyright", "track("):
        assert boilerplate not in text, boilerplate


def test_chinese_html_without_article_drops_navigation_and_keeps_the_table(tmp_path):
    folder = tmp_path / "zh"
    folder.mkdir()
    (folder / "p.html").write_bytes("""<html><head><title>差旅费报销制度 - 内网</title></head><body>
<div class="nav"><a href="/">首页</a> 登录</div><div class="content"><h1>差旅费报销制度</h1>
<p>员工须在出差结束后30天内提交报销单。</p><table><tr><th>城市</th><th>标准</th></tr><tr><td>北京</td><td>600</td></tr>
</table></div><div id="footer">版权所有 澜星科技</div></body></html>""".encode())  # UTF-8 without a <meta charset>
    result = import_docs(folder, "zh", tmp_path / "out")
    doc = json.loads(result.corpus_path.read_text(encoding="utf-8"))
    assert doc["title"] == "差旅费报销制度"
    assert doc["text"] == ("# 差旅费报销制度\n\n员工须在出差结束后30天内提交报销单。\n\n"
                           "| 城市 | 标准 |\n| --- | --- |\n| 北京 | 600 |")


def test_unreadable_files_are_named_skipped_and_listed(imported, tmp_path):
    folder, result, _ = imported
    problems = {Path(s.file).name: s.problem for s in result.skipped}
    assert set(problems) == {"broken.pdf", "locked.pdf", "old.docx", "gbk.md"}
    assert "not a readable PDF" in problems["broken.pdf"]
    assert "encrypted with a password" in problems["locked.pdf"] and "qpdf --decrypt" in problems["locked.pdf"]
    assert "not a readable Word .docx file" in problems["old.docx"]
    assert "not UTF-8" in problems["gbk.md"] and "iconv" in problems["gbk.md"]
    with result.skipped_report.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    assert result.skipped_report == tmp_path / "eval_sets" / "corpora" / "handbook.skipped.tsv"
    assert {Path(r["file"]).name: r["problem"] for r in rows} == problems
    assert result.ignored == {".png": 1}  # the hidden file and the Word lock file are not counted


def test_cli_names_each_skipped_file_and_imports_the_rest(tmp_path, monkeypatch):
    folder = make_folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(cli, ["import", "docs", str(folder), "--name", "handbook"])
    assert res.exit_code == 0, res.output
    for name in ("broken.pdf", "locked.pdf", "old.docx", "gbk.md"):
        assert f"skipped   {folder / name if name != 'gbk.md' else folder / 'notes' / name}: " in res.output
    assert "eval_sets/corpora/handbook.jsonl: 4 documents (1 docx, 1 html, 1 markdown, 1 pdf); 2 PDF pages, 3 tables" \
        in res.output
    assert "ignored   1 file(s) of other kinds (.png: 1)" in res.output and "Traceback" not in res.output
    again = CliRunner().invoke(cli, ["import", "docs", str(folder), "--name", "handbook"])
    assert again.exit_code == 1 and "already exists" in again.output and "--force" in again.output


def test_a_file_that_cannot_be_opened_is_a_clear_error(tmp_path, monkeypatch):
    path = tmp_path / "a.md"
    path.write_text("# A\n\ntext", encoding="utf-8")

    def denied(self):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", denied)
    with pytest.raises(DocReadError, match=r"cannot read the file \(Permission denied\); check its permissions"):
        read_document(path, "a.md", "a.md")


def test_reimport_of_an_unchanged_folder_gives_the_same_corpus(tmp_path):
    folder = make_folder(tmp_path)
    first = import_docs(folder, "h", tmp_path / "a").corpus_path.read_bytes()
    again = import_docs(folder, "h", tmp_path / "a", force=True).corpus_path.read_bytes()
    moved = shutil.copytree(folder, tmp_path / "elsewhere" / "copy")  # other location, same relative paths
    elsewhere = import_docs(moved, "h", tmp_path / "b").corpus_path.read_bytes()
    assert first == again == elsewhere


def test_ids_are_the_relative_paths_made_safe_and_collisions_get_a_hash(tmp_path):
    folder = tmp_path / "f"
    folder.mkdir()
    for name in ("a b.md", "a_b.md", "c#1.md"):
        (folder / name).write_text(f"# {name}\n\nbody", encoding="utf-8")
    docs = [json.loads(line) for line in
            import_docs(folder, "f", tmp_path / "out").corpus_path.read_text(encoding="utf-8").splitlines()]
    ids = [d["id"] for d in docs]
    assert doc_id("x y/z#2 .pdf") == "x_y/z_2_.pdf"
    assert ids[2] == "c_1.md" and ids[0].startswith("a_b.md~") and ids[1].startswith("a_b.md~") and len(set(ids)) == 3
    import hashlib
    assert ids[0] == "a_b.md~" + hashlib.sha256(b"a b.md").hexdigest()[:8]


def test_nothing_readable_is_an_error_that_writes_nothing(tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "x.png").write_bytes(b"png")
    with pytest.raises(EvalkitError, match="nothing to import; no PDF, Word"):
        import_docs(folder, "e", tmp_path / "out")
    (folder / "bad.pdf").write_bytes(b"garbage")
    with pytest.raises(EvalkitError, match=r"all 1 document file\(s\) were unreadable: .*bad.pdf: not a readable PDF"):
        import_docs(folder, "e", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_missing_extra_names_the_install_command(tmp_path, monkeypatch):
    folder = make_folder(tmp_path)
    monkeypatch.setitem(sys.modules, "pypdf", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'evalkit-ragraph\[docs\]'"):
        import_docs(folder, "h", tmp_path / "out")
    res = CliRunner().invoke(cli, ["import", "docs", str(folder), "--name", "h", "--out-dir", str(tmp_path / "o")])
    assert res.exit_code == 1 and "pip install 'evalkit-ragraph[docs]'" in res.output and "Traceback" not in res.output


def test_a_file_name_that_is_not_utf8_is_skipped_not_a_crash(tmp_path):
    import os

    folder = tmp_path / "names"
    folder.mkdir()
    (folder / "ok.md").write_text("# ok\n\nbody", encoding="utf-8")
    try:
        (Path(os.fsdecode(os.fsencode(folder) + b"/bad\xff.md"))).write_bytes(b"# bad\n\nbody")
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    result = import_docs(folder, "n", tmp_path / "out")
    assert result.n_documents == 1
    (skipped,) = result.skipped
    assert skipped.file.endswith("bad\ufffd.md") and "not valid UTF-8" in skipped.problem and "rename" in skipped.problem
    assert "bad\ufffd.md" in result.skipped_report.read_text(encoding="utf-8")


def test_broken_characters_from_a_parser_are_replaced_not_a_crash(tmp_path, monkeypatch):
    from evalkit.importers import doc_readers
    from evalkit.importers.doc_readers import ParsedDoc

    monkeypatch.setitem(doc_readers.READERS, ".md", lambda data, stem: ParsedDoc("t\ud800", "a\udcffb", "markdown"))
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "x.md").write_text("x", encoding="utf-8")
    doc = json.loads(import_docs(folder, "s", tmp_path / "out").corpus_path.read_text(encoding="utf-8"))
    assert (doc["title"], doc["text"]) == ("t?", "a?b")
