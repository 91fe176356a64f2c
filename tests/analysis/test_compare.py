"""evalkit compare: paired tests on synthetic runs (numbers checkable by hand) and on a real run."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.analysis.compare import (
    compare_variants,
    format_comparison,
    resolve_variants,
)
from evalkit.analysis.pairing import DifferentEvalSetsError, TamperedEvalSetError
from evalkit.analysis.runs import load_run
from evalkit.cli import cli
from evalkit.errors import EvalkitError

from .conftest import qr, write_run


def _variants() -> dict[str, list]:
    """30 answerable + 4 unanswerable queries.

    hit@5: A misses q00-q11, B hits everything  -> B wins 12, ties 18 (exact p = 2/4096)
    ndcg@10: identical                          -> every query a tie, p = 1
    faithfulness (judged, every query incl. unanswerable): A 0.5, B 0.5 (+0.1 on q30-q33)
    hallucinated (lower is better): A 0.2 everywhere, B 0.1 on the first 20 queries
    """
    a, b = [], []
    for i in range(34):
        qid, gold = f"q{i:02d}", ([f"d{i}"] if i < 30 else [])
        ra = {"hit@5": float(i >= 12), "ndcg@10": 0.5} if gold else {}
        rb = {"hit@5": 1.0, "ndcg@10": 0.5} if gold else {}
        ra.update(faithfulness=0.5, hallucinated=0.2)
        rb.update(faithfulness=0.6 if i >= 30 else 0.5, hallucinated=0.1 if i < 20 else 0.2)
        a.append(qr(qid, gold, ra))
        b.append(qr(qid, gold, rb))
    return {"A": a, "B": b}


@pytest.fixture
def synthetic(tmp_path: Path) -> Path:
    return write_run(tmp_path, "syn", _variants())


def test_paired_comparison_numbers(synthetic: Path):
    run = load_run(synthetic)
    c = compare_variants(resolve_variants([run], "A,B"), n_resamples=10_000, seed=0)
    t = {x.metric: x for x in c.tests}
    assert list(t) == ["hit@5", "ndcg@10", "faithfulness", "hallucinated"]
    hit = t["hit@5"]
    assert hit.n == 30 and (hit.wins, hit.ties, hit.losses) == (12, 18, 0)
    assert hit.diff == pytest.approx(12 / 30) and hit.p == pytest.approx(2 / 4096)
    assert 0 < hit.ci_low < hit.diff < hit.ci_high <= 0.7
    assert hit.verdict(0.05) == "better"
    assert t["ndcg@10"].p == 1.0 and t["ndcg@10"].verdict(0.05) == "n.s." and t["ndcg@10"].ci_low == 0.0
    assert t["faithfulness"].n == 34                          # judged metric: unanswerable queries count
    h = t["hallucinated"]
    assert not h.higher_is_better and h.diff < 0 and (h.wins, h.losses) == (20, 0) and h.verdict(0.05) == "better"
    # Holm over the four tests: hallucinated (20 flips, p = 1/10001) x 4, then hit@5 x 3
    assert h.p == pytest.approx(1 / 10_001) and h.p_adjusted == pytest.approx(4 * h.p)
    assert hit.p_adjusted == pytest.approx(3 * hit.p)
    text = format_comparison(c)
    assert "hallucinated (lower=better)" in text and "12/18/0" in text and "real differences: hit@5 better" in text


def test_bh_correction_and_metric_selection(synthetic: Path):
    run = load_run(synthetic)
    c = compare_variants(resolve_variants([run], "A,B"), ["hit@5", "ndcg@10"], correction="bh")
    assert [x.metric for x in c.tests] == ["hit@5", "ndcg@10"]
    assert c.tests[0].p_adjusted == pytest.approx(2 * c.tests[0].p)
    with pytest.raises(EvalkitError, match="did you mean 'hit@5'"):
        compare_variants(resolve_variants([run], "A,B"), ["hit@6"])


def test_result_does_not_depend_on_record_order(tmp_path: Path):
    v = _variants()
    first = compare_variants(resolve_variants([load_run(write_run(tmp_path, "x", v))], "A,B"), n_resamples=2000)
    shuffled = {k: random.Random(4).sample(rows, len(rows)) for k, rows in v.items()}
    again = compare_variants(resolve_variants([load_run(write_run(tmp_path, "y", shuffled))], "A,B"), n_resamples=2000)
    assert [(t.ci_low, t.ci_high, t.p) for t in first.tests] == [(t.ci_low, t.ci_high, t.p) for t in again.tests]


def test_several_runs_and_refusals(tmp_path: Path):
    v = _variants()
    one = load_run(write_run(tmp_path, "one", {"A": v["A"]}))
    two = load_run(write_run(tmp_path, "two", {"A": v["B"]}))
    refs = resolve_variants([one, two], "1:A,two:A")
    assert [r.label for r in refs] == ["one:A", "two:A"]
    assert compare_variants(refs, ["hit@5"]).tests[0].wins == 12
    with pytest.raises(EvalkitError, match="in 2 runs; write RUN:A"):
        resolve_variants([one, two], "A,A")
    other = load_run(write_run(tmp_path, "other", {"A": v["B"]}, es_name="another"))
    with pytest.raises(DifferentEvalSetsError, match="different eval sets"):
        compare_variants(resolve_variants([one, other], "one:A,other:A"))
    v2 = load_run(write_run(tmp_path, "v2", {"A": v["B"]}, version=2, sha="b" * 64))
    with pytest.raises(DifferentEvalSetsError, match="different versions"):
        compare_variants(resolve_variants([one, v2], "one:A,v2:A"))
    forged = load_run(write_run(tmp_path, "forged", {"A": v["B"]}, sha="f" * 64))
    with pytest.raises(TamperedEvalSetError, match="record different hashes"):
        compare_variants(resolve_variants([one, forged], "one:A,forged:A"))
    edited = [qr(r.query_id, r.gold_doc_ids, r.metrics, question="edited?" if r.query_id == "q03" else None)
              for r in v["B"]]
    changed = load_run(write_run(tmp_path, "changed", {"A": edited}))
    with pytest.raises(TamperedEvalSetError, match="q03"):
        compare_variants(resolve_variants([one, changed], "one:A,changed:A"))


def test_cli_on_a_real_run(tiny, tmp_path: Path):
    out = tmp_path / "cmp.json"
    res = CliRunner().invoke(cli, ["compare", str(tiny["run"]), "--variants", "bm25,bm25_plain,hybrid_weighted",
                                   "--resamples", "2000", "--json", str(out)])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())  # prose lines are wrapped to the width
    assert "bm25_plain vs bm25" in text and "hybrid_weighted vs bm25" in text
    assert "Holm correction over 8 tests" in text
    assert "fusion diagnostics: hybrid_weighted" in text and "5-fold CV" in text
    assert "the run's first variant" not in text                   # --variants named the reference
    assert all(len(line) <= 120 for line in res.output.splitlines())
    data = json.loads(out.read_text())
    assert {t["variant"] for t in data["tests"]} == {"bm25_plain", "hybrid_weighted"}
    assert all(t["n"] == 12 for t in data["tests"])               # 12 answerable queries
    sweep = data["fusion"][0]["sweep"]
    assert sweep["reproduced_top20"] == sweep["queries"] == 12      # re-fusing the trace reproduces the run


def test_in_a_notebook_the_reference_note_comes_once_and_before_the_table(synthetic: Path):
    # a notebook: neither stream is a TTY and stderr may be shown after stdout; the note must not be
    # printed there, only at the head of the comparison, above its table
    res = CliRunner().invoke(cli, ["compare", str(synthetic), "--resamples", "200"])
    assert res.exit_code == 0, res.output
    assert "the run's first variant" not in res.stderr
    lines = res.stdout.splitlines()
    note = next(i for i, line in enumerate(lines) if "the run's first variant" in line)
    table = next(i for i, line in enumerate(lines) if line.split()[:1] == ["metric"])
    assert note < table and sum("the run's first variant" in line for line in lines) == 1


def test_cli_errors_name_the_fix(tiny):
    res = CliRunner().invoke(cli, ["compare", str(tiny["run"]), "--variants", "bm25,bm26"])
    assert res.exit_code != 0 and "did you mean 'bm25'" in str(res.exception)
    res = CliRunner().invoke(cli, ["compare", str(tiny["run"]), "--variants", "bm25"])
    assert res.exit_code == 2 and "at least two variants (only 'bm25' given)" in res.output   # a usage error


def test_query_ids_behind_wins_ties_losses(synthetic: Path, tmp_path: Path):
    # hand count (see _variants): hit@5 B wins q00-q11, ties q12-q29; hallucinated (lower=better) B wins q00-q19
    c = compare_variants(resolve_variants([load_run(synthetic)], "A,B"), n_resamples=500)
    t = {x.metric: x for x in c.tests}
    assert t["hit@5"].win_ids == [f"q{i:02d}" for i in range(12)] and t["hit@5"].loss_ids == []
    assert t["hit@5"].tie_ids == [f"q{i:02d}" for i in range(12, 30)]
    assert t["hallucinated"].win_ids == [f"q{i:02d}" for i in range(20)]
    assert t["faithfulness"].win_ids == ["q30", "q31", "q32", "q33"]
    for x in c.tests:                                           # the ids add up to the counts
        assert (len(x.win_ids), len(x.tie_ids), len(x.loss_ids)) == (x.wins, x.ties, x.losses)
    # A against B: every win becomes a loss
    back = {x.metric: x for x in compare_variants(resolve_variants([load_run(synthetic)], "B,A"), n_resamples=500).tests}
    assert back["hit@5"].loss_ids == t["hit@5"].win_ids and back["hit@5"].win_ids == []
    out = tmp_path / "c.json"
    res = CliRunner().invoke(cli, ["compare", str(synthetic), "--variants", "A,B", "--resamples", "500",
                                   "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert "hit@5: wins (12) q00 q01" in res.output and "ties 18 queries (ids in --json)" in res.output
    assert "faithfulness: wins (4) q30 q31 q32 q33; losses (0) -" in res.output
    data = {d["metric"]: d for d in json.loads(out.read_text())["tests"]}
    assert data["hit@5"]["win_ids"] == t["hit@5"].win_ids and data["hit@5"]["tie_ids"] == t["hit@5"].tie_ids


def test_reference_is_named_or_announced(synthetic: Path, tmp_path: Path):
    res = CliRunner().invoke(cli, ["compare", str(synthetic), "--resamples", "200"])
    assert res.exit_code == 0, res.output
    assert "reference: A, the run's first variant (not chosen by you" in " ".join(res.output.split())
    res = CliRunner().invoke(cli, ["compare", str(synthetic), "--reference", "B", "--resamples", "200"])
    assert res.exit_code == 0 and "A vs B (reference)" in res.output and "first variant" not in res.output
    res = CliRunner().invoke(cli, ["compare", str(synthetic), "--variants", "A,B", "--reference", "B",
                                   "--resamples", "200"])
    assert res.exit_code == 0 and "A vs B (reference)" in res.output
    one = write_run(tmp_path, "one", {"A": _variants()["A"]})
    res = CliRunner().invoke(cli, ["compare", str(one)])          # a one-variant run: nothing to compare
    assert res.exit_code == 2 and "Usage:" in res.output and "only 'A' given" in res.output
    res = CliRunner().invoke(cli, ["compare", str(synthetic), "--columns", "verdikt"])
    assert res.exit_code == 2 and "did you mean 'verdict'" in res.output


def test_columns_choose_and_width_fits(synthetic: Path):
    res = CliRunner().invoke(cli, ["compare", str(synthetic), "--variants", "A,B", "--resamples", "200",
                                   "--columns", "diff,verdict"])
    assert res.exit_code == 0, res.output
    header = next(line for line in res.output.splitlines() if line.startswith("metric"))
    assert header.split() == ["metric", "diff", "verdict"]
