"""The pure parts of ``benchmarks/deploy_gate_scale.py`` (issue 34): its corpus, Heaps fit, variants and
record check. The benchmark itself loads two models and takes minutes, so it is not run here."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from benchfiles import load_benchmark

_data = load_benchmark("deploy_gate_data")
bilingual_corpus, comparable, heaps_fit = _data.bilingual_corpus, _data.comparable, _data.heaps_fit
record_differences, variants = _data.record_differences, _data.variants

VOCAB = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "lambda", "sigma",
         "[CLS]", "##ing", "a1", "资", "料", "库", "文", "档", "检", "索"]


def test_corpus_is_seeded_bilingual_and_its_queries_come_from_their_gold_passage():
    a = bilingual_corpus(200, 40, seed=5, vocab=VOCAB, sizes=(3000, 2000))
    assert a == bilingual_corpus(200, 40, seed=5, vocab=VOCAB, sizes=(3000, 2000))  # deterministic
    assert a != bilingual_corpus(200, 40, seed=6, vocab=VOCAB, sizes=(3000, 2000))
    assert set(a["langs"]) == {"en", "zh"} and 0.15 < a["langs"].count("zh") / 200 < 0.45  # 30% Chinese
    for q, lang, g in zip(a["queries"], a["query_langs"], a["gold"]):
        passage = a["texts"][g]
        assert lang == a["langs"][g]
        if lang == "en":  # 6 words of the gold passage, in its order
            words = q.split()
            assert len(words) == 6 and all(w in passage.split() for w in words)
            assert not any(ch in passage for ch in "资料库文档检索")
        else:  # Chinese: no spaces, every character from the passage
            assert " " not in q and " " not in passage and set(q) <= set(passage)


def test_heaps_fit_recovers_a_known_growth():
    # token i (0-based, over the whole stream) is w<floor(sqrt(i))>: after n tokens sqrt(n) distinct, V = 1 * n^0.5
    texts = [" ".join(f"w{math.isqrt(i)}" for i in range(s, s + 100)) for s in range(0, 100 * 400, 100)]
    k, beta = heaps_fit(texts)
    assert beta == pytest.approx(0.5, abs=0.01) and k == pytest.approx(1.0, rel=0.1)
    with pytest.raises(ValueError):
        heaps_fit(["one"])


def test_the_eight_variants_are_valid_configs_of_the_kinds_the_issue_names():
    from evalkit.graph import config_from_dict

    configs = [config_from_dict(v) for v in variants()]
    assert [c.name for c in configs] == ["bm25", "dense_hnsw", "hybrid_rrf", "hybrid_weighted", "rrf_rerank_guard",
                                         "rag_rrf_extractive", "rag_bm25_extractive", "agentic_grade"]
    types = {c.name: {n["type"] for n in v["nodes"].values()} for c, v in zip(configs, variants())}
    assert types["rrf_rerank_guard"] >= {"rerank", "guard"} and "grade" in types["agentic_grade"]
    assert all("generate" in types[n] for n in ("rag_rrf_extractive", "rag_bm25_extractive", "agentic_grade"))
    assert variants()[1]["nodes"]["retrieve"]["params"]["dense"]["index"] == "hnsw"
    assert [v["name"] for v in variants(["hybrid_rrf", "bm25"])] == ["hybrid_rrf", "bm25"]
    with pytest.raises(SystemExit, match="unknown variant"):
        variants(["nope"])


def test_record_check_ignores_clocks_reuse_and_cache_hits_and_finds_any_other_difference(tmp_path: Path):
    rec = {"query_id": "q1", "metrics": {"hit@5": 1.0, "loop_ms": 0.18}, "usage": {"generate": {"cache_hits": 0}},
           "trace": [{"node": "r", "started_at": 1.0, "duration_ms": 3.0, "reused": True}]}
    later = {**rec, "metrics": {"hit@5": 1.0, "loop_ms": 0.16}, "usage": {"generate": {"cache_hits": 1}},
             "trace": [{"node": "r", "started_at": 9.0, "duration_ms": 5.0, "reused": False}]}
    worse = {**rec, "metrics": {"hit@5": 0.0, "loop_ms": 0.18}}
    assert comparable(rec) == comparable(later) != comparable(worse)
    files = {}
    for name, rows in {"a": [rec, {**rec, "query_id": "q2"}], "b": [later, {**rec, "query_id": "q2"}],
                       "c": [worse, {**rec, "query_id": "q3"}]}.items():
        files[name] = tmp_path / f"{name}.jsonl"
        files[name].write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert record_differences(files["a"], files["b"]) == (2, [])
    assert record_differences(files["a"], files["c"]) == (3, ["q1", "q2", "q3"])  # q2 and q3: present in one only


def _scale_module() -> Any:
    """``benchmarks/deploy_gate_scale.py`` (it imports deploy_gate_data from its folder)."""
    return load_benchmark("deploy_gate_scale")


def test_the_stage_timers_wrap_functions_that_exist_and_put_them_back():
    """The timers patch evalkit's own functions by name: a module or function that moved (the record store
    went from evalkit.run.store to evalkit.runstore) broke the benchmark at its first stage, after minutes of
    encoding. Loads the benchmark module by path (it imports deploy_gate_data from its folder)."""
    mod = _scale_module()
    from evalkit import runstore

    before = runstore.VariantStore.append
    with mod.stage_timers() as stages:
        assert runstore.VariantStore.append is not before  # wrapped while timing
        assert stages is not None
    assert runstore.VariantStore.append is before


def test_the_warm_run_takes_exactly_the_variants_with_a_generate_node():
    """The untimed warm run caches the extractive generator's e5 vectors; it must run every variant that
    generates (else the timed run is cold for it) and no other (a retrieval-only variant would only cost)."""
    mod = _scale_module()
    from evalkit.graph import config_from_dict

    configs = [config_from_dict(v) for v in variants()]
    assert [c.name for c in mod.generating(configs)] == ["rag_rrf_extractive", "rag_bm25_extractive",
                                                         "agentic_grade"]
    assert mod.generating([c for c in configs if c.name in ("bm25", "rrf_rerank_guard")]) == []


def test_the_variants_run_from_yaml_files_as_a_users_do(tmp_path: Path):
    """The timed run reads the variants from YAML files (so that compare finds their configs, and prints the
    weight sweep a user's run gets): each file reads back as the config it was written from."""
    mod = _scale_module()
    from evalkit.graph import config_from_dict

    paths = mod.config_files(tmp_path / "configs", None, write=True)
    loaded = mod.load_configs(paths)
    expected = [config_from_dict(v) for v in variants()]
    assert [c.name for c in loaded] == [c.name for c in expected] and len(loaded) == 8
    assert [c.to_dict() for c in loaded] == [c.to_dict() for c in expected]
    assert all(c.source == str(p) for c, p in zip(loaded, paths, strict=True))


def test_a_measured_process_reports_its_own_peak_rss_not_the_one_of_the_process_that_started_it(tmp_path: Path):
    """ru_maxrss of a started process counts its parent's pages (every command of the first version of the
    benchmark 'peaked' at the setup's RSS); the benchmark's processes write their own VmHWM."""
    mod = _scale_module()
    bench = str(Path(__file__).resolve().parents[2] / "benchmarks")
    held = bytearray(300 * 1024 * 1024)  # this process: +300 MB
    held[::4096] = b"x" * len(held[::4096])
    code = ("import atexit, sys; sys.path.insert(0, sys.argv[1]); from scale_common import write_peak_rss; "
            "atexit.register(write_peak_rss, sys.argv[2]); x = bytearray(int(sys.argv[3]) * 1024 * 1024); "
            "x[::4096] = b'x' * len(x[::4096]); sys.exit(int(sys.argv[4]))")
    peaks = {}
    for mb, rc in ((0, 0), (200, 3)):
        got = mod.own_process(["-c", code, bench, str(tmp_path / f"{mb}.peak"), str(mb), str(rc)], tmp_path / "log")
        assert got[0] == rc and got[1] > 0 and got[2] > 0  # exit code, wall, CPU
        peaks[mb] = float((tmp_path / f"{mb}.peak").read_text(encoding="utf-8"))
    assert peaks[0] < 150 < 200 < peaks[200] < 350, peaks
    assert len(held) == 300 * 1024 * 1024
