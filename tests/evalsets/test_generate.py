"""`evalkit evalset generate` without an LLM (template/v1), the `generated` field, and `evalkit evalset review`.

The tiny corpus below: three Chinese documents that share the entity 澜星科技员工, two
of them stating one attribute (days of paid leave a year), two English ones that share
LanLink and state one attribute (session hours), one English document alone. Its values
(10 天, 5 天, 750 元, 12 hours, 8 hours, 2024, 3 days...) are what the templates ask for.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import EvalSetError
from evalkit.evalsets import freeze, load_eval_set
from evalkit.evalsets.corpus_identity import doc_fingerprint
from evalkit.evalsets.evalset import parse_records, read_lines
from evalkit.evalsets.generate import ask, blank, find_values
from evalkit.evalsets.lang import guess_lang

DOCS = [
    ("hr-leave", "年假制度", "澜星科技员工入职满一年后每年享有 10 天带薪年假。年假须在次年一季度内休完。"),
    ("hr-sick", "病假制度", "澜星科技员工每年享有 5 天带薪病假。"),
    ("hr-travel", "差旅制度", "澜星科技员工去一线城市出差，每晚住宿标准不超过 750 元。本制度自2026年1月1日起执行。"),
    ("it-vpn", "VPN Guide", "The LanLink client keeps a session open for 12 hours. The LanLink client replaced SecureTunnel "
                           "in 2024."),
    ("it-gateway", "LanLink Gateway", "The LanLink gateway keeps a session open for 8 hours."),
    ("it-laptop", "Laptop Policy", "Laptops are refreshed every 48 months. Broken laptops are repaired by the IT desk within 3 days."),
]
TEXT = {d: t for d, _, t in DOCS}
CHROMIUM = shutil.which("chromium")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpora" / "tiny.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps({"id": i, "title": t, "text": x}, ensure_ascii=False) + "\n" for i, t, x in DOCS),
                    encoding="utf-8")
    return path


def _run(*args: str) -> str:
    res = CliRunner().invoke(cli, list(args))
    assert res.exit_code == 0, res.output + repr(res.exception)
    return res.output


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def _generate(corpus: Path, path: Path, *extra: str) -> tuple[str, list[dict]]:
    out = _run("evalset", "generate", "--corpus", str(corpus), "--name", str(path), *extra)
    return out, _lines(path)


# ------------------------------------------------------------------------------------ values
@pytest.mark.parametrize(("sentence", "lang", "value", "asked", "blanked"), [
    ("每晚住宿标准不超过 750 元", "zh", "750 元", "每晚住宿标准不超过 多少元", "每晚住宿标准不超过 ____元"),
    ("本制度自2026年1月1日起执行", "zh", "2026年1月1日", "本制度自什么时候起执行", "本制度自____起执行"),
    ("2025 年投产", "zh", "2025", "哪一 年投产", "____ 年投产"),
    ("达成率 106.9%", "zh", "106.9%", "达成率 百分之多少", "达成率 ____"),
    ("sessions expire after 12 hours.", "en", "12 hours", "sessions expire after how many hours.",
     "sessions expire after ____hours."),
    ("replaced SecureTunnel in 2024.", "en", "2024", "replaced SecureTunnel in which year.",
     "replaced SecureTunnel in ____."),
    ("a limit of CNY 30,000 per month", "en", "CNY 30,000", "a limit of how much per month", "a limit of ____ per month"),
])
def test_values_and_the_question_words_that_ask_for_them(sentence, lang, value, asked, blanked):
    found = find_values(sentence)
    assert [v.text(sentence) for v in found] == [value]
    assert ask(sentence, found[0], lang) == asked
    assert blank(sentence, found[0]) == blanked


def test_a_sentence_without_a_value_gives_none():
    assert find_values("年假须在次年一季度内休完") == [] and find_values("Section 4.2 applies") == []


# -------------------------------------------------------------------------------- templates
def test_template_set_is_deterministic_and_points_to_its_sources(corpus: Path, tmp_path: Path):
    out, lines = _generate(corpus, tmp_path / "a.jsonl", "--n", "20")
    _, again = _generate(corpus, tmp_path / "b.jsonl", "--n", "20")
    assert lines == again  # same seed, same set, same order
    parse_records("a.jsonl", read_lines(tmp_path / "a.jsonl"))  # every line is a valid record
    assert {x["type"] for x in lines} == {"single", "multi_hop"} and {x["lang"] for x in lines} == {"zh", "en"}
    for x in lines:
        gen = x["generated"]
        assert gen["generator"] == "template/v1" and gen["params"]["seed"] == 0 and gen["params"]["n"] == 20
        assert x["lang"] == guess_lang(x["question"]) and x["tags"] == ["generated", gen["pattern"]]
        assert gen["sources"] == {d: doc_fingerprint(t, TEXT[d], {}) for d, t, _ in DOCS if d in x["relevant_doc_ids"]}
        golds = [TEXT[d] for d in x["relevant_doc_ids"]]
        if gen["pattern"] == "cloze":  # the blanked value is stated in the gold document, the rest of the sentence too
            assert x["reference_answer"] in golds[0] and "____" in x["question"]
        elif gen["pattern"] == "wh":  # the answer is the gold document's sentence itself
            assert x["reference_answer"] in golds[0] and "____" not in x["question"]
        else:  # two_hop: one sentence of each gold document, linked by an entity both name
            assert x["type"] == "multi_hop" and len(golds) == 2
            entity = re.search(r"关于“(.+?)”|About (.+?):", x["question"]).group(1, 2)
            name = next(e for e in entity if e)
            assert all(name.casefold() in g.casefold() for g in golds)
    by_type = Counter(x["type"] for x in lines)
    by_lang = Counter(x["lang"] for x in lines)
    assert f"Appended {len(lines)} question(s) written by template/v1" in out and "(new, unfrozen)" in out
    assert f"by type: multi_hop {by_type['multi_hop']}, single {by_type['single']}" in out
    assert f"by language: en {by_lang['en']}, zh {by_lang['zh']}" in out
    pairs = {tuple(x["relevant_doc_ids"]) for x in lines if x["type"] == "multi_hop"}
    # linked only where both documents state the same attribute: 750 元 a night is not days of leave
    assert pairs == {("it-gateway", "it-vpn"), ("hr-leave", "hr-sick")}


def test_another_seed_another_draw_and_lang_filter(corpus: Path, tmp_path: Path):
    _, a = _generate(corpus, tmp_path / "a.jsonl", "--n", "4")
    _, b = _generate(corpus, tmp_path / "b.jsonl", "--n", "4", "--seed", "3")
    assert [x["id"] for x in a] != [x["id"] for x in b]
    _, zh = _generate(corpus, tmp_path / "zh.jsonl", "--lang", "zh")
    assert zh and {x["lang"] for x in zh} == {"zh"}


def test_generating_into_a_frozen_set_appends_new_questions_only(corpus: Path, tmp_path: Path):
    path = tmp_path / "kb.jsonl"
    _generate(corpus, path, "--n", "3")
    freeze(path, corpus=str(corpus))
    out, lines = _generate(corpus, path, "--n", "3", "--seed", "1")
    assert len(lines) == 6 and len({x["id"] for x in lines}) == 6
    assert "Appended 3 question(s)" in out and "(unfrozen)" in out
    other = tmp_path / "other.jsonl"
    other.write_text(corpus.read_text(encoding="utf-8"), encoding="utf-8")
    res = CliRunner().invoke(cli, ["evalset", "generate", "--corpus", str(other), "--name", str(path)])
    assert res.exit_code == 1 and "tied to corpus" in res.output and len(_lines(path)) == 6


def test_types_the_templates_cannot_write_are_named(corpus: Path, tmp_path: Path):
    res = CliRunner().invoke(cli, ["evalset", "generate", "--corpus", str(corpus), "--name", str(tmp_path / "x.jsonl"),
                                   "--types", "unanswerable,colloquial"])
    assert res.exit_code == 1 and "need an LLM: pass --llm" in res.output
    out, _ = _generate(corpus, tmp_path / "y.jsonl", "--types", "single,comparison")
    assert "not written by template/v1: comparison (these need --llm)" in out


def test_a_bad_generated_field_names_the_line_and_the_field(tmp_path: Path):
    good = {"id": "g1", "question": "q?", "relevant_doc_ids": ["d"], "type": "single", "lang": "en"}
    for gen, where in (({"params": {}}, "generated.generator"), ({"generator": "x", "sorces": {}}, "generated.sorces"),
                       ({"generator": "x", "review": {"of": "g0", "decision": "maybe"}}, "generated.review.decision")):
        path = tmp_path / "bad.jsonl"
        path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "id": "g2", "generated": gen}) + "\n")
        with pytest.raises(EvalSetError, match=rf"bad.jsonl:2: {re.escape(where)}: "):
            parse_records(str(path), read_lines(path))


# ----------------------------------------------------------------------------------- review
def _review_set(corpus: Path, tmp_path: Path) -> tuple[Path, list[dict]]:
    path = tmp_path / "kb.jsonl"
    _generate(corpus, path, "--n", "5")
    freeze(path, corpus=str(corpus))
    return path, _lines(path)


def test_review_decisions_become_a_new_version_without_editing_a_line(corpus: Path, tmp_path: Path):
    path, lines = _review_set(corpus, tmp_path)
    before = path.read_bytes()
    out = _run("evalset", "review", str(path))
    page = tmp_path / "kb.review.html"
    assert f"wrote {len(lines)} generated question(s) to review: {page}" in out and page.exists()
    decisions = tmp_path / "kb.decisions.json"
    ids = [x["id"] for x in lines]
    decisions.write_text(json.dumps({"eval_set": "kb", "decisions": [
        {"id": ids[0], "decision": "keep"}, {"id": ids[1], "decision": "drop", "note": "unclear"},
        {"id": ids[2], "decision": "edit", "question": "How long do LanLink sessions last?",
         "reference_answer": "12 hours."}]}), encoding="utf-8")
    out = _run("evalset", "review", str(path), "--apply", str(decisions))
    assert "Appended 3 review line(s)" in out and "kept 1, edited 1, dropped 1" in out and "Froze" in out and " v2:" in out
    assert path.read_bytes().startswith(before)  # appended, nothing edited
    new = _lines(path)[len(lines):]
    assert [x["id"] for x in new] == [f"{i}-r1" for i in ids[:3]]
    assert [x["generated"]["review"] for x in new] == [{"of": ids[0], "decision": "keep"},
                                                       {"of": ids[1], "decision": "drop", "note": "unclear"},
                                                       {"of": ids[2], "decision": "edit"}]
    assert new[2]["question"] == "How long do LanLink sessions last?" and new[2]["lang"] == "en"
    latest = [r.id for r in load_eval_set(str(path)).records]
    assert latest == ids[3:] + [f"{ids[0]}-r1", f"{ids[2]}-r1"]  # reviewed lines and the drop no longer count
    assert [r.id for r in load_eval_set(f"{path}@v1").records] == ids  # v1 still means what it meant
    stats = json.loads(_run("evalset", "stats", str(path), "--json"))
    assert stats["records"] == len(latest) and stats["lines"] == len(lines) + 3
    # the page now offers only what is left to review
    assert f"wrote {len(lines) - 3} generated question(s)" in _run("evalset", "review", str(path))


def test_bad_decisions_are_clear_errors_and_append_nothing(corpus: Path, tmp_path: Path):
    path, lines = _review_set(corpus, tmp_path)
    before = path.read_bytes()
    cases = [
        ({"decisions": [{"id": lines[0]["id"], "decision": "maybe"}]}, "decisions[0].decision: expected one of keep"),
        ({"decisions": [{"id": "nope", "decision": "keep"}]}, "decisions[0].id: 'nope' is not a line of the set"),
        ({"decisions": [{"id": lines[0]["id"], "decision": "edit", "question": " "}]}, "decisions[0].question:"),
        ({"decisions": [{"id": lines[0]["id"], "decision": "keep"}, {"id": lines[0]["id"], "decision": "drop"}]},
         "is decided twice"),
        ({"rows": []}, "decisions: expected"),
    ]
    for data, message in cases:
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(data), encoding="utf-8")
        res = CliRunner().invoke(cli, ["evalset", "review", str(path), "--apply", str(bad)])
        assert res.exit_code == 1 and message in res.output, res.output
    assert path.read_bytes() == before


def test_a_review_line_must_follow_the_line_it_reviews(tmp_path: Path):
    rec = {"id": "g2", "question": "q?", "relevant_doc_ids": ["d"], "type": "single", "lang": "en",
           "generated": {"generator": "template/v1", "review": {"of": "g9", "decision": "keep"}}}
    path = tmp_path / "kb.jsonl"
    path.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    res = CliRunner().invoke(cli, ["evalset", "validate", str(path)])
    assert res.exit_code == 1 and "kb.jsonl:1: generated.review.of: 'g9' is not the id of an earlier line" in res.output


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (Debian: apt-get install -y chromium)")
def test_the_review_page_renders_offline(corpus: Path, tmp_path: Path):
    path, lines = _review_set(corpus, tmp_path)
    _run("evalset", "review", str(path))
    page = tmp_path / "kb.review.html"
    assert "http://" not in page.read_text(encoding="utf-8")  # no external asset
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
           f"--user-data-dir={tmp_path / 'profile'}", "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
           "--virtual-time-budget=5000", "--dump-dom", page.as_uri() + "#fresh"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert f'data-ready="{len(lines)}"' in dom and f"0 / {len(lines)} decided" in dom
    assert all(x["id"] in dom for x in lines)
    export = re.search(r'<textarea id="export"[^>]*>(.*?)</textarea>', dom, re.DOTALL).group(1)
    import html

    assert json.loads(html.unescape(export)) == {"eval_set": "kb", "decisions": []}


@pytest.mark.parametrize(("raw", "cleaned"), [
    ("6.2 信息安全部负责事件的分级", "信息安全部负责事件的分级"),
    ("四、提交时限：电子发票须在开具之日起 90 天内提交报销", "电子发票须在开具之日起 90 天内提交报销"),
    ("- 银牌：年度采购额不低于 150 万元", "银牌：年度采购额不低于 150 万元"),
    ("A: Within 30 days after the trip ends.", "Within 30 days after the trip ends."),
    ("Standard lead time: 16 weeks", "Standard lead time: 16 weeks"),
])
def test_list_markers_and_short_headings_are_cut_from_sentences(raw, cleaned):
    from evalkit.evalsets.generate import clean

    assert clean(raw) == cleaned


def test_two_facts_are_parallel_only_when_they_state_the_same_kind_of_value():
    from evalkit.evalsets.generate import Fact, parallel

    def fact(sentence: str) -> Fact:
        return Fact("d", "t", sentence, ("e",), find_values(sentence)[0], guess_lang(sentence))

    a, b = fact("Standard lead time: 16 weeks"), fact("Standard lead time: 10 weeks")
    grams = lambda s: {s.casefold().replace(" ", "")[i:i + 3] for i in range(len(s.replace(" ", "")) - 2)}  # noqa: E731
    ga, gb = grams(a.sentence), grams(b.sentence)
    assert parallel(a, b) == len(ga & gb) / len(ga | gb) > 0.2
    assert parallel(a, fact("Standard lead time: 16 days")) == 0.0  # another unit
    assert parallel(a, fact("Standard lead time ends in 2026.")) == 0.0  # another kind of value


def test_a_corpus_without_facts_writes_nothing_and_says_why(tmp_path: Path):
    corpus = tmp_path / "plain.jsonl"
    corpus.write_text(json.dumps({"id": "d1", "title": "Notes", "text": "We like tea. The office is bright."}) + "\n",
                      encoding="utf-8")
    out = _run("evalset", "generate", "--corpus", str(corpus), "--name", str(tmp_path / "x.jsonl"))
    assert "No question appended" in out and "names an entity and states a value" in out
    assert not (tmp_path / "x.jsonl").exists()
