"""``evalkit import beir`` and ``evalkit.importers.beir``: both input layouts, formats, errors.

Fixture (written fresh into tmp_path by each test):
  corpus   d1, d2, d3 (d3 has no title and an extra field)
  queries  q1 -> d1 (rel 1) and d2 (rel 0)        relevant: d1
           q2 -> d2 (rel 2), d3 (rel 1)            relevant: d2, d3 (graded counts as relevant)
           q3 -> d3 (rel 0) only                   no relevant document: skipped by default
           q4    not in the qrels (another split)  never imported
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import EvalkitError
from evalkit.evalsets import load_eval_set
from evalkit.importers import BeirFiles, ImportFormatError, import_beir, read_qrels, read_queries

DOCS = [
    {"_id": "d1", "title": "Aspirin", "text": "Aspirin lowers fever."},
    {"_id": "d2", "title": "Statins", "text": "Statins lower cholesterol.", "metadata": {"year": 2001}},
    {"_id": "d3", "title": None, "text": "Vitamin D and bones.", "structured": False},
]
QUERIES = [("q1", "Does aspirin lower fever?"), ("q2", "What lowers cholesterol?"), ("q3", "Is vitamin D toxic?"),
           ("q4", "Unjudged question?")]
JUDGEMENTS = [("q1", "d1", 1), ("q1", "d2", 0), ("q2", "d2", 2), ("q2", "d3", 1), ("q3", "d3", 0)]


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def write_beir_folder(root: Path) -> Path:
    """The standard BEIR layout: corpus.jsonl, queries.jsonl, qrels/test.tsv (with header)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text(jsonl(DOCS), encoding="utf-8")
    (root / "queries.jsonl").write_text(jsonl([{"_id": q, "text": t} for q, t in QUERIES]), encoding="utf-8")
    (root / "qrels").mkdir(exist_ok=True)
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{r}\n" for q, d, r in JUDGEMENTS), encoding="utf-8")
    return root


def write_anserini_files(root: Path) -> BeirFiles:
    """Anserini-style files: corpus JSONL, queries TSV.gz, TREC qrels."""
    root.mkdir(parents=True, exist_ok=True)
    corpus = root / "corpus.derived.jsonl"
    corpus.write_text(jsonl(DOCS), encoding="utf-8")
    queries = root / "topics.test.tsv.gz"
    with gzip.open(queries, "wt", encoding="utf-8") as fh:
        fh.write("".join(f"{q}\t{t}\n" for q, t in QUERIES))
    qrels = root / "qrels.test.txt"
    qrels.write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in JUDGEMENTS), encoding="utf-8")
    return BeirFiles(corpus=corpus, queries=queries, qrels=qrels)


def invoke(*args: str):
    return CliRunner().invoke(cli, ["import", "beir", *args])


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# ------------------------------------------------------------------------------------ happy paths


def test_beir_folder_through_the_cli(tmp_path: Path) -> None:
    src = write_beir_folder(tmp_path / "tiny")
    out = tmp_path / "sets"
    result = invoke(str(src), "--out-dir", str(out))
    assert result.exit_code == 0, result.output
    # --name defaults to the folder's name
    records = read_jsonl(out / "tiny.jsonl")
    assert records == [
        {"id": "q1", "question": "Does aspirin lower fever?", "relevant_doc_ids": ["d1"], "type": "single",
         "lang": "en", "tags": ["beir", "tiny"]},
        # graded qrels (d2 judged 2) keep their grades; a query judged all 1 stays binary, as before
        {"id": "q2", "question": "What lowers cholesterol?", "relevant_doc_ids": ["d2", "d3"], "type": "single",
         "lang": "en", "tags": ["beir", "tiny"], "relevance": {"d2": 2, "d3": 1}},
    ]
    assert "graded    1 queries have relevance grades other than 1" in result.output
    docs = read_jsonl(out / "corpora" / "tiny.jsonl")
    assert docs[0] == {"id": "d1", "title": "Aspirin", "text": "Aspirin lowers fever.", "metadata": {}}
    assert docs[1]["metadata"] == {"year": 2001}
    assert docs[2] == {"id": "d3", "title": "", "text": "Vitamin D and bones.", "metadata": {"structured": False}}
    # counts reported: q3 (no positive judgement) and q4 (not in the qrels) skipped
    assert "2 records, frozen as v1" in result.output
    assert "skipped   1 queries the qrels do not mention" in result.output
    assert "skipped   1 judged queries without a relevant document" in result.output
    # frozen v1, loadable by a run, gold ids checked against the written corpus
    es = load_eval_set(f"{out / 'tiny.jsonl'}@v1")
    assert es.version == 1 and len(es.records) == 2 and es.corpus is not None and len(es.corpus) == 3
    manifest = json.loads((out / "tiny.manifest.json").read_text())
    assert manifest["corpus"] == "corpora/tiny.jsonl"


def test_anserini_files_trec_qrels_and_gzipped_tsv_queries(tmp_path: Path) -> None:
    files = write_anserini_files(tmp_path / "data")
    out = tmp_path / "sets"
    result = invoke("--corpus", str(files.corpus), "--queries", str(files.queries), "--qrels", str(files.qrels),
                    "--name", "sf", "--out-dir", str(out), "--lang", "en-GB")
    assert result.exit_code == 0, result.output
    assert "(tsv)" in result.output and "(trec)" in result.output
    records = read_jsonl(out / "sf.jsonl")
    assert [(r["id"], r["relevant_doc_ids"], r["lang"]) for r in records] == [
        ("q1", ["d1"], "en-GB"), ("q2", ["d2", "d3"], "en-GB")]


def test_same_records_from_both_layouts(tmp_path: Path) -> None:
    a = import_beir(BeirFiles.from_folder(write_beir_folder(tmp_path / "a")), "x", tmp_path / "out_a")
    b = import_beir(write_anserini_files(tmp_path / "b"), "x", tmp_path / "out_b")
    assert a.version["sha256"] == b.version["sha256"]
    assert (tmp_path / "out_a/corpora/x.jsonl").read_bytes() == (tmp_path / "out_b/corpora/x.jsonl").read_bytes()


def test_gzip_detected_by_content_not_name(tmp_path: Path) -> None:
    path = tmp_path / "queries.jsonl"  # gzip bytes behind a plain name
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(jsonl([{"_id": "q1", "text": "one"}]))
    assert read_queries(path) == ({"q1": "one"}, "jsonl")


def test_gzipped_beir_folder_files_are_found(tmp_path: Path) -> None:
    src = write_beir_folder(tmp_path / "tiny")
    for name in ("corpus.jsonl", "queries.jsonl"):
        data = (src / name).read_bytes()
        (src / name).unlink()
        with gzip.open(src / f"{name}.gz", "wb") as fh:
            fh.write(data)
    files = BeirFiles.from_folder(src)
    assert files.corpus.name == "corpus.jsonl.gz" and files.queries.name == "queries.jsonl.gz"
    assert import_beir(files, "tiny", tmp_path / "out").n_records == 2


def test_tsv_queries_header_is_skipped_and_text_after_first_tab_kept(tmp_path: Path) -> None:
    path = tmp_path / "q.tsv"
    path.write_text("_id\ttext\nq1\tword\twith a tab\n", encoding="utf-8")
    assert read_queries(path) == ({"q1": "word with a tab"}, "tsv")


def test_beir_qrels_without_header_and_integer_floats(tmp_path: Path) -> None:
    path = tmp_path / "qrels.tsv"
    path.write_text("q1\td1\t1.0\nq1\td2\t0\n", encoding="utf-8")
    qrels = read_qrels(path)
    assert qrels.format == "beir-tsv" and qrels.judgements == {"q1": {"d1": 1, "d2": 0}}
    assert qrels.positive("q1") == ["d1"]


def test_keep_unanswerable(tmp_path: Path) -> None:
    src = write_beir_folder(tmp_path / "tiny")
    result = import_beir(BeirFiles.from_folder(src), "tiny", tmp_path / "out", keep_unanswerable=True)
    records = read_jsonl(tmp_path / "out" / "tiny.jsonl")
    assert result.n_unanswerable_kept == 1 and result.n_unjudged == 1
    assert records[-1] == {"id": "q3", "question": "Is vitamin D toxic?", "relevant_doc_ids": [],
                           "type": "unanswerable", "lang": "en", "tags": ["beir", "tiny"]}


def test_refuses_to_overwrite_unless_force(tmp_path: Path) -> None:
    src = write_beir_folder(tmp_path / "tiny")
    out = tmp_path / "sets"
    assert invoke(str(src), "--out-dir", str(out)).exit_code == 0
    first = (out / "tiny.manifest.json").read_text()
    again = invoke(str(src), "--out-dir", str(out))
    assert again.exit_code == 1
    assert "eval set 'tiny' already exists" in again.output and "--force" in again.output
    assert (out / "tiny.manifest.json").read_text() == first
    # --force replaces the set: a fresh v1 (not v2), same content hash
    forced = invoke(str(src), "--out-dir", str(out), "--force")
    assert forced.exit_code == 0, forced.output
    manifest = json.loads((out / "tiny.manifest.json").read_text())
    assert [v["version"] for v in manifest["versions"]] == [1]
    assert manifest["versions"][0]["sha256"] == json.loads(first)["versions"][0]["sha256"]


def test_split_option_picks_the_qrels_file(tmp_path: Path) -> None:
    src = write_beir_folder(tmp_path / "tiny")
    (src / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq4\td1\t1\n", encoding="utf-8")
    result = import_beir(BeirFiles.from_folder(src, split="dev"), "tiny_dev", tmp_path / "out")
    assert [r["id"] for r in read_jsonl(tmp_path / "out" / "tiny_dev.jsonl")] == ["q4"]
    assert result.n_unjudged == 3


# ------------------------------------------------------------------------------------ usage errors


def test_missing_split_lists_the_splits_found(tmp_path: Path) -> None:
    src = write_beir_folder(tmp_path / "tiny")
    result = invoke(str(src), "--split", "train", "--out-dir", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert "no qrels for split 'train' (splits found: test)" in result.output


def test_files_without_folder_need_all_three_and_a_name(tmp_path: Path) -> None:
    files = write_anserini_files(tmp_path / "data")
    result = invoke("--corpus", str(files.corpus), "--out-dir", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "missing: --queries, --qrels" in result.output
    result = invoke("--corpus", str(files.corpus), "--queries", str(files.queries), "--qrels", str(files.qrels))
    assert result.exit_code == 2
    assert "--name" in result.output


@pytest.mark.parametrize("name", ["../up", "a/b", "x@v1", "set.jsonl", ""])
def test_bad_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(EvalkitError, match="bad eval set name"):
        import_beir(write_anserini_files(tmp_path / "d"), name, tmp_path / "out")


def test_bad_lang_is_refused_before_writing(tmp_path: Path) -> None:
    with pytest.raises(EvalkitError, match="bad language code 'English'"):
        import_beir(write_anserini_files(tmp_path / "d"), "x", tmp_path / "out", lang="English")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------ malformed input
# Each case: which file to break, its new content, and the "file:line: message" expected.

def _break(files: BeirFiles, kind: str, text: str) -> Path:
    path = getattr(files, kind)
    path.unlink()
    path = path.with_name(path.name.removesuffix(".gz"))  # write plain text (gzip is detected by content)
    path.write_text(text, encoding="utf-8")
    return path


MALFORMED = [
    ("corpus", jsonl(DOCS[:1]) + '{"_id": "d2", "text": "cut\n', ":2: not valid JSON"),
    ("corpus", jsonl(DOCS[:1]) + '["d2", "t"]\n', ":2: each line must be a JSON object"),
    ("corpus", jsonl(DOCS[:2]) + '{"_id": "d3", "title": "x"}\n', ":3: text: document 'd3' has no 'text' string"),
    ("corpus", jsonl(DOCS) + '{"_id": "d1", "text": "again"}\n',
     ":4: _id: duplicate document id 'd1' (first on line 1)"),
    ("corpus", '{"text": "no id"}\n', ":1: _id: missing or empty document id"),
    ("corpus", "d1\tAspirin\n", ":1: the corpus must be JSONL"),
    ("queries", "q1\tone\nq2 no tab here\n", ":2: expected 'id<TAB>text'"),
    ("queries", "q1\tone\nq1\tagain\n", ":2: duplicate query id 'q1' (first on line 1)"),
    ("queries", '{"_id": "q1", "text": "one"}\n{"_id": "q2"}\n', ":2: text: query 'q2' has no text"),
    ("qrels", "q1 0 d1 1\nq2 0 d2\n", ":2: expected 4 columns (qid iter docid rel, the format of line 1), got 3"),
    ("qrels", "q1 0 d1 1\nq2 0 d2 high\n", ":2: relevance must be an integer, got 'high'"),
    ("qrels", "q1 0 d1 1\nq1 0 d1 0\n", ":2: query 'q1', document 'd1' judged 0 here but 1 on line 1"),
    ("qrels", "q1 d1\n", ":1: unknown qrels format"),
    ("qrels", "q1 0 d1 1\nq9 0 d2 1\n", ":2: 1 judged query id(s) not in"),
    ("qrels", "q1 0 d1 1\nq2 0 d404 1\n", ":2: 1 relevant document id(s) not in the corpus"),
    ("qrels", "q1 0 d2 0\n", ": no query has a relevant document"),
]


@pytest.mark.parametrize("kind,text,expected", MALFORMED, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(MALFORMED)])
def test_malformed_input_names_file_and_line(tmp_path: Path, kind: str, text: str, expected: str) -> None:
    files = write_anserini_files(tmp_path / "data")
    broken = _break(files, kind, text)
    setattr(files, kind, broken)
    out = tmp_path / "out"
    with pytest.raises(ImportFormatError) as info:
        import_beir(files, "x", out)
    assert str(info.value).startswith(str(broken))
    assert expected in str(info.value)
    # nothing written, not even a partial corpus
    assert not out.exists() or not any(p.is_file() for p in out.rglob("*"))


def test_malformed_input_through_the_cli_is_one_line(tmp_path: Path) -> None:
    files = write_anserini_files(tmp_path / "data")
    _break(files, "qrels", "q1 0 d1 1\nq2 0 d2 x\n")
    result = invoke("--corpus", str(files.corpus), "--queries", str(files.queries), "--qrels", str(files.qrels),
                    "--name", "x", "--out-dir", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert result.output.strip() == f"Error: {files.qrels}:2: relevance must be an integer, got 'x'"


def test_bad_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "q.tsv"
    path.write_bytes(b"q1\tone\nq2\t\xff\xfe bad\n")
    with pytest.raises(ImportFormatError, match=r"q\.tsv:2: not valid UTF-8"):
        read_queries(path)


def test_truncated_gzip_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "q.tsv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("".join(f"q{i}\tquestion number {i}\n" for i in range(2000)))
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ImportFormatError, match="corrupt or truncated gzip"):
        read_queries(path)
