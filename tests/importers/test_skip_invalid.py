"""A bad gold id stops an import with a short message; --skip-invalid drops such rows and lists them."""
from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import did_you_mean
from evalkit.evalsets import load_eval_set
from evalkit.importers import BeirFiles, ImportFormatError, import_beir
from evalkit.interop.importers import import_dataset, import_ragas

REPO = Path(__file__).resolve().parents[2]
SCIFACT = REPO.parent / "shared" / "datasets" / "scifact" / "corpus.derived.jsonl"


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def report(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


@pytest.fixture
def thousand(tmp_path: Path) -> tuple[Path, Path]:
    """1,000 documents with numeric ids (as in SciFact) and 600 questions; line 417's gold id is the word 'What'."""
    rng = random.Random(0)
    ids = [str(rng.randrange(10**6, 10**8)) for _ in range(1000)]
    corpus = jsonl(tmp_path / "corpus.jsonl", [{"id": i, "text": f"abstract {i}"} for i in ids])
    rows = [{"id": f"q{n:04d}", "question": f"question {n}?", "relevant_doc_ids": [rng.choice(ids)]}
            for n in range(1, 601)]
    rows[416]["relevant_doc_ids"] = ["What"]
    rows[500]["relevant_doc_ids"] = [ids[7] + "x", ids[3]]
    rows[550]["type"] = "singel"
    return jsonl(tmp_path / "qa.jsonl", rows), corpus


def test_a_bad_gold_id_gives_a_short_message(tmp_path: Path, thousand):
    qa, corpus = thousand
    with pytest.raises(ImportFormatError) as info:
        import_dataset(qa, "qa", tmp_path / "out", corpus=corpus)
    msg = str(info.value)
    assert msg.startswith(f"{qa}:417: relevant_doc_ids: 1 gold id(s) not in the corpus {corpus}, first 'What'")
    assert "--skip-invalid" in msg and len(msg) < 300  # it used to list all 1,000 valid ids
    assert not (tmp_path / "out").exists()


def test_did_you_mean_names_a_few_close_ids_never_all():
    ids = [f"{n:08d}" for n in range(5000)]
    assert did_you_mean("What", ids) == "; none of the 5000 valid choices is close"
    assert did_you_mean("0000123x", ids, n=3).count("'") == 6  # three suggestions
    assert did_you_mean("rerankr", ["rerank", "retrieve"]) == "; did you mean 'rerank'?"
    assert did_you_mean("zzz", ["a", "b"]) == "; valid choices: a, b"


def test_skip_invalid_drops_and_lists_rows(tmp_path: Path, thousand):
    qa, corpus = thousand
    result = import_dataset(qa, "qa", tmp_path / "out", corpus=corpus, skip_invalid=True)
    assert result.n_records == 597 and result.n_skipped == 3
    assert result.skipped_report == tmp_path / "out" / "qa.skipped.tsv"
    rows = report(result.skipped_report)
    assert {r["file"] for r in rows} == {str(qa)}
    assert rows[0]["value"] == "What" and "gold id not in the corpus" in rows[0]["problem"]
    assert "did you mean" in rows[1]["problem"]  # an id with an 'x' appended: close ids suggested
    es = load_eval_set(f"{result.eval_set_path}@v1")
    assert len(es.records) == 597 and {"q0417", "q0501", "q0551"}.isdisjoint(r.id for r in es.records)
    assert "skipped   3 invalid row(s)" in "\n".join(result.lines())


def test_skip_report_lines_for_every_problem_kind(tmp_path: Path, thousand):
    qa, corpus = thousand
    import_dataset(qa, "qa", tmp_path / "out", corpus=corpus, skip_invalid=True)
    rows = report(tmp_path / "out" / "qa.skipped.tsv")
    assert [(r["line"], r["field"], r["value"]) for r in rows] == [
        ("417", "relevant_doc_ids", "What"),
        ("501", "relevant_doc_ids", json.loads(qa.read_text().splitlines()[500])["relevant_doc_ids"][0]),
        ("551", "type", "singel")]


def test_the_cli_flag_and_a_real_corpus(tmp_path: Path):
    if not SCIFACT.is_file():
        pytest.skip(f"{SCIFACT} not present (shared datasets); the synthetic case above covers the logic")
    ids = [json.loads(line)["_id"] for line in SCIFACT.read_text(encoding="utf-8").splitlines()]
    corpus = jsonl(tmp_path / "corpus.jsonl", [{"id": i, "text": "x"} for i in ids])
    rng = random.Random(1)
    rows = [{"question": f"What does study {n} show?", "relevant_doc_ids": [rng.choice(ids)]} for n in range(600)]
    rows[416]["relevant_doc_ids"] = ["What"]
    qa = jsonl(tmp_path / "qa.jsonl", rows)
    runner = CliRunner()
    failed = runner.invoke(cli, ["import", "dataset", str(qa), "--corpus", str(corpus), "--name", "qa",
                                 "--out-dir", str(tmp_path / "out")])
    assert failed.exit_code == 1 and len(failed.output) < 400, failed.output  # 5,183 ids: 50 KB before
    ok = runner.invoke(cli, ["import", "dataset", str(qa), "--corpus", str(corpus), "--name", "qa",
                             "--out-dir", str(tmp_path / "out"), "--skip-invalid"])
    assert ok.exit_code == 0, ok.output
    assert "599 records from 600 rows" in ok.output and "qa.skipped.tsv" in ok.output
    assert [r["line"] for r in report(tmp_path / "out" / "qa.skipped.tsv")] == ["417"]


def test_ragas_rows_with_bad_contexts_are_skipped(tmp_path: Path):
    rows = [{"user_input": "q1?", "reference_contexts": ["ctx one"], "reference": "a"},
            {"user_input": "q2?", "reference_contexts": "not a list", "reference": "b"},
            {"user_input": "q3?", "reference_contexts": ["ctx three"], "reference": "c"}]
    src = jsonl(tmp_path / "ragas.jsonl", rows)
    with pytest.raises(ImportFormatError, match=r"ragas.jsonl:2: reference_contexts: expected a list"):
        import_ragas(src, "rg", tmp_path / "out")
    result = import_ragas(src, "rg", tmp_path / "out", skip_invalid=True)
    assert result.n_records == 2 and [r["line"] for r in report(result.skipped_report)] == ["2"]


def _beir(tmp_path: Path, qrels: str) -> BeirFiles:
    corpus = jsonl(tmp_path / "corpus.jsonl", [{"_id": "d1", "text": "a"}, {"_id": "d2", "text": "b"}])
    queries = jsonl(tmp_path / "queries.jsonl", [{"_id": "q1", "text": "one"}, {"_id": "q2", "text": "two"}])
    (tmp_path / "qrels.tsv").write_text(qrels, encoding="utf-8")
    return BeirFiles(corpus, queries, tmp_path / "qrels.tsv")


def test_beir_skip_invalid(tmp_path: Path):
    files = _beir(tmp_path, "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\tgone\t1\nq2\td2\t1\nq9\td1\t1\n")
    with pytest.raises(ImportFormatError, match="judged query id.*'q9'.*--skip-invalid"):
        import_beir(files, "b", tmp_path / "out")
    result = import_beir(files, "b", tmp_path / "out", skip_invalid=True)
    assert result.n_records == 1 and result.n_skipped == 2
    assert [(r["line"], r["field"], r["value"]) for r in report(result.skipped_report)] == [
        ("5", "query-id", "q9"), ("3", "corpus-id", "gone")]
    assert [r.id for r in load_eval_set(f"{result.eval_set_path}@v1").records] == ["q1"]
    # a clean re-import removes the stale report
    clean = _beir(tmp_path, "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    again = import_beir(clean, "b", tmp_path / "out", force=True, skip_invalid=True)
    assert again.n_skipped == 0 and not (tmp_path / "out" / "b.skipped.tsv").exists()
