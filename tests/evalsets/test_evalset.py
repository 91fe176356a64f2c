"""Eval set format, versions, tamper check, append and stats (library API)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from evalkit.errors import EvalSetError
from evalkit.evalsets import append, check, freeze, load_eval_set, read_manifest, stats, validate
from evalkit.evalsets import versions as versions_mod

# corpus: d1..d4
DOCS = [{"id": f"d{i}", "title": f"doc {i}", "text": f"text of document {i}"} for i in range(1, 5)]
# three records: single (d1), comparison (d1, d2), unanswerable
RECORDS = [
    {"id": "q1", "question": "What is in doc 1?", "relevant_doc_ids": ["d1"], "type": "single", "lang": "en",
     "tags": ["basics"]},
    {"id": "q2", "question": "文档一和文档二有何不同?", "relevant_doc_ids": ["d1", "d2"], "type": "comparison",
     "lang": "zh", "reference_answer": "它们不同", "tags": ["basics", "zh"]},
    {"id": "q3", "question": "What is the moon made of?", "relevant_doc_ids": [], "type": "unanswerable", "lang": "en"},
]


def jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(versions_mod, "_now", lambda: "2026-11-29T12:00:00Z")


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with eval_sets/demo.jsonl (3 records, unfrozen) and its corpus."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "eval_sets" / "corpora").mkdir(parents=True)
    (tmp_path / "eval_sets" / "corpora" / "demo.jsonl").write_text(jsonl(DOCS), encoding="utf-8")
    (tmp_path / "eval_sets" / "demo.jsonl").write_text(jsonl(RECORDS), encoding="utf-8")
    return tmp_path


@pytest.fixture
def frozen(ws: Path) -> Path:
    """The demo set frozen once (v1 = 3 lines); returns its path."""
    freeze("eval_sets/demo.jsonl", corpus="eval_sets/corpora/demo.jsonl", description="demo")
    return ws / "eval_sets" / "demo.jsonl"


def write_set(ws: Path, lines: list[str]) -> str:
    (ws / "eval_sets" / "demo.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return "eval_sets/demo.jsonl"


def rec(**changes: object) -> str:
    base = {"id": "q9", "question": "Q?", "relevant_doc_ids": ["d1"], "type": "single", "lang": "en"}
    base.update(changes)
    return json.dumps({k: v for k, v in base.items() if v is not ...}, ensure_ascii=False)


# --- format ---------------------------------------------------------------------------

def test_valid_set_parses_into_records(ws: Path) -> None:
    result = check("eval_sets/demo.jsonl")
    assert [r.id for r in result.records] == ["q1", "q2", "q3"]
    q2 = result.records[1]
    assert q2.relevant_doc_ids == ("d1", "d2") and q2.tags == ("basics", "zh")
    assert q2.reference_answer == "它们不同"
    assert not result.records[2].answerable


def test_error_names_file_line_and_field(ws: Path) -> None:
    path = write_set(ws, [rec(id="a"), rec(id="b", relevant_doc_ids="fin-001")])
    with pytest.raises(EvalSetError) as err:
        validate(path)
    assert str(err.value) == 'eval_sets/demo.jsonl:2: relevant_doc_ids: expected a list of document ids, got "fin-001"'


@pytest.mark.parametrize("line, expected", [
    ("not json", ":1: not valid JSON"),
    ("[1, 2]", ":1: each line must be a JSON object"),
    (rec(relevent_doc_ids=["d1"]), ":1: relevent_doc_ids: unknown field; did you mean 'relevant_doc_ids'?"),
    (rec(lang=...), ":1: lang: missing required field"),
    (rec(id=""), ":1: id: expected a non-empty string"),
    (rec(question="   "), ":1: question: expected a non-empty string"),
    (rec(relevant_doc_ids=["d1", 3]), ":1: relevant_doc_ids: expected document ids"),
    (rec(relevant_doc_ids=["d1", "d1"]), ":1: relevant_doc_ids: 'd1' is listed twice"),
    (rec(type="multihop"), ":1: type: unknown type \"multihop\"; did you mean 'multi_hop'?"),
    (rec(type="unanswerable"), ":1: type: type is 'unanswerable' but relevant_doc_ids lists 1 document"),
    (rec(relevant_doc_ids=[]), ":1: type: relevant_doc_ids is empty, which marks the question unanswerable"),
    (rec(lang="English"), ":1: lang: expected a language code"),
    (rec(tags="x"), ":1: tags: expected a list of non-empty strings"),
    (rec(reference_answer=3), ":1: reference_answer: expected a string"),
    ("", ":1: blank line"),
    # a key given twice in one line: json.loads silently kept the last one
    (rec(id="a")[:-1] + ', "id": "b"}', ":1: id: key 'id' appears twice in this record"),
    ('{"id": "a", "question": "q?", "relevant_doc_ids": ["d1"], "type": "single", "lang": "en", '
     '"relevance": {"d1": 1, "d1": 3}}', ":1: relevance: key 'd1' appears twice in this record"),
])
def test_format_errors(ws: Path, line: str, expected: str) -> None:
    path = write_set(ws, [line])
    with pytest.raises(EvalSetError) as err:
        validate(path)
    assert f"eval_sets/demo.jsonl{expected}" in str(err.value)


def test_duplicate_id_names_first_line(ws: Path) -> None:
    path = write_set(ws, [rec(id="a"), rec(id="b"), rec(id="a")])
    with pytest.raises(EvalSetError, match=r"demo.jsonl:3: id: duplicate id 'a' \(first used on line 1\)"):
        validate(path)


def test_missing_gold_ids_are_all_listed_with_lines(frozen: Path) -> None:
    with frozen.open("a", encoding="utf-8") as fh:
        fh.write(rec(id="x1", relevant_doc_ids=["d1", "d77"]) + "\n" + rec(id="x2", relevant_doc_ids=["zz"]) + "\n")
    with pytest.raises(EvalSetError) as err:
        validate(frozen)
    msg = str(err.value)
    assert "2 gold document id(s) not in corpus eval_sets/corpora/demo.jsonl" in msg
    assert "line 4: 'd77'" in msg and "line 5: 'zz'" in msg


# --- freeze -----------------------------------------------------------------------------

def test_first_freeze_needs_corpus(ws: Path) -> None:
    with pytest.raises(EvalSetError, match="first freeze needs the corpus"):
        freeze("eval_sets/demo.jsonl")
    assert not (ws / "eval_sets" / "demo.manifest.json").exists()


def test_freeze_writes_manifest(frozen: Path) -> None:
    text = (frozen.parent / "demo.manifest.json").read_text(encoding="utf-8")
    data = json.loads(text)
    assert list(data) == ["name", "corpus", "description", "versions", "line_sha256"]
    assert data["name"] == "demo" and data["corpus"] == "corpora/demo.jsonl" and data["description"] == "demo"
    raw = frozen.read_bytes()
    # the corpus content hash, recomputed by hand: sha256 of sorted "id<TAB>fingerprint" lines, a fingerprint being
    # 16 hex of the sha256 of the document's sorted-key JSON {metadata, text, title}
    docs = [json.loads(x) for x in (frozen.parent / "corpora" / "demo.jsonl").read_text(encoding="utf-8").splitlines()]
    prints = {d["id"]: hashlib.sha256(json.dumps({"metadata": d.get("metadata") or {}, "text": d["text"],
                                                   "title": d.get("title") or ""}, ensure_ascii=False,
                                                  separators=(",", ":")).encode()).hexdigest()[:16] for d in docs}
    content = hashlib.sha256("".join(f"{k}\t{prints[k]}\n" for k in sorted(prints)).encode()).hexdigest()
    assert data["versions"] == [{"version": 1, "lines": 3, "sha256": hashlib.sha256(raw).hexdigest(),
                                 "created": "2026-11-29T12:00:00Z", "corpus_content_sha256": content}]
    assert json.loads((frozen.parent / f"demo.corpus-{content[:16]}.json").read_text()) == dict(sorted(prints.items()))
    assert data["line_sha256"] == [hashlib.sha256(line + b"\n").hexdigest()[:16] for line in raw.split(b"\n")[:3]]
    assert text.startswith("{\n  \"name\"")


def test_freeze_with_nothing_new_is_an_error(frozen: Path) -> None:
    with pytest.raises(EvalSetError, match="nothing to freeze: version 1 already covers all 3 lines"):
        freeze(frozen)


def test_freeze_adds_missing_final_newline(ws: Path) -> None:
    path = ws / "eval_sets" / "demo.jsonl"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    entry = freeze(path, corpus="eval_sets/corpora/demo.jsonl")
    assert path.read_bytes().endswith(b"}\n") and entry["lines"] == 3


def test_freeze_validates_first(ws: Path) -> None:
    write_set(ws, [rec(id="a", relevant_doc_ids=["nope"])])
    with pytest.raises(EvalSetError, match="line 1: 'nope'"):
        freeze("eval_sets/demo.jsonl", corpus="eval_sets/corpora/demo.jsonl")
    assert read_manifest(ws / "eval_sets" / "demo.jsonl") is None


def test_freeze_cannot_switch_corpus(frozen: Path, ws: Path) -> None:
    (ws / "other.jsonl").write_text(jsonl(DOCS), encoding="utf-8")
    with frozen.open("a", encoding="utf-8") as fh:
        fh.write(rec(id="q4") + "\n")
    with pytest.raises(EvalSetError, match="tied to corpus eval_sets/corpora/demo.jsonl"):
        freeze(frozen, corpus="other.jsonl")
    assert freeze(frozen, corpus="eval_sets/corpora/demo.jsonl")["version"] == 2


# --- tamper check -----------------------------------------------------------------------

def _frozen_twice(frozen: Path) -> None:
    for i in (4, 5):
        with frozen.open("a", encoding="utf-8") as fh:
            fh.write(rec(id=f"q{i}", question=f"question {i}") + "\n")
        freeze(frozen)


def test_edited_line_is_named_with_its_version(frozen: Path) -> None:
    _frozen_twice(frozen)
    lines = frozen.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[3] = lines[3].replace("question 4", "question four")
    frozen.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(EvalSetError) as err:
        validate(frozen)
    msg = str(err.value)
    assert "line 4 changed since version 2 was frozen" in msg
    assert "restore it, or append a corrected record with a new id" in msg


def test_reordered_lines_are_detected(frozen: Path) -> None:
    lines = frozen.read_text(encoding="utf-8").splitlines(keepends=True)
    frozen.write_text(lines[1] + lines[0] + lines[2], encoding="utf-8")
    with pytest.raises(EvalSetError, match="line 1 changed since version 1 was frozen .*what was line 2"):
        load_eval_set(frozen)


def test_deleted_lines_are_detected(frozen: Path) -> None:
    lines = frozen.read_text(encoding="utf-8").splitlines(keepends=True)
    frozen.write_text(lines[0] + lines[2], encoding="utf-8")
    with pytest.raises(EvalSetError, match="line 2 changed since version 1"):
        validate(frozen)
    frozen.write_text(lines[0] + lines[1], encoding="utf-8")
    with pytest.raises(EvalSetError, match="line 3 deleted since version 1 was frozen"):
        validate(frozen)


def test_line_ending_change_is_explained(frozen: Path) -> None:
    frozen.write_bytes(frozen.read_bytes().replace(b"\n", b"\r\n"))
    with pytest.raises(EvalSetError, match="line 1 changed since version 1 was frozen .only its line ending changed"):
        validate(frozen)


def test_manifest_hash_edit_is_detected(frozen: Path) -> None:
    mpath = frozen.parent / "demo.manifest.json"
    data = json.loads(mpath.read_text())
    data["versions"][0]["sha256"] = "0" * 64
    mpath.write_text(json.dumps(data))
    with pytest.raises(EvalSetError, match="demo.manifest.json: versions: version 1 records sha256"):
        load_eval_set(frozen)


def test_malformed_manifest_is_an_error(frozen: Path) -> None:
    (frozen.parent / "demo.manifest.json").write_text("{not json")
    with pytest.raises(EvalSetError, match="demo.manifest.json: cannot read manifest"):
        validate(frozen)


def test_unfrozen_lines_are_checked_but_allowed(frozen: Path) -> None:
    with frozen.open("a", encoding="utf-8") as fh:
        fh.write(rec(id="q4", question=RECORDS[0]["question"]) + "\n")
    warnings = validate(frozen)
    assert any("line 4 is not frozen yet" in w for w in warnings)
    assert any("line 4: same question as line 1" in w for w in warnings)
    assert len(load_eval_set(frozen).records) == 3
    with frozen.open("a", encoding="utf-8") as fh:
        fh.write('{"id": "broken"\n')
    with pytest.raises(EvalSetError, match=":5: not valid JSON"):
        validate(frozen)
    assert len(load_eval_set(frozen).records) == 3  # a run pins v1; an unfinished line does not block it


def test_never_frozen_set_validates_with_a_warning(ws: Path) -> None:
    assert any("not frozen yet" in w for w in validate("eval_sets/demo.jsonl"))


# --- load_eval_set ------------------------------------------------------------------------

def test_load_needs_a_frozen_version(ws: Path) -> None:
    with pytest.raises(EvalSetError, match="run `evalkit evalset freeze demo"):
        load_eval_set("eval_sets/demo.jsonl")


def test_load_latest_and_pinned_versions(frozen: Path) -> None:
    _frozen_twice(frozen)
    latest = load_eval_set("eval_sets/demo.jsonl")
    v1 = load_eval_set("eval_sets/demo.jsonl@v1")
    assert (latest.version, len(latest.records)) == (3, 5)
    assert (v1.version, len(v1.records)) == (1, 3)
    assert v1.sha256 == hashlib.sha256(b"".join(frozen.read_bytes().splitlines(keepends=True)[:3])).hexdigest()
    assert load_eval_set("demo@v2").version == 2  # bare NAME resolves under eval_sets/
    assert v1.corpus_path == (frozen.parent / "corpora" / "demo.jsonl").resolve()
    assert v1.manifest_path.name == "demo.manifest.json"


def test_load_unknown_version_or_bad_suffix(frozen: Path) -> None:
    with pytest.raises(EvalSetError, match="no version 7; recorded versions: v1"):
        load_eval_set("eval_sets/demo.jsonl@v7")
    with pytest.raises(EvalSetError, match="bad version '@latest': write @vN"):
        load_eval_set("eval_sets/demo.jsonl@latest")
    with pytest.raises(EvalSetError, match="no such eval set file; did you mean 'demo'"):
        load_eval_set("demp")


def test_ref_records_identity_and_corpus(frozen: Path) -> None:
    es = load_eval_set(frozen)
    ref = es.ref()
    assert (ref.name, ref.version, ref.sha256, ref.n_queries) == ("demo", 1, es.sha256, 3)
    assert ref.corpus == "eval_sets/corpora/demo.jsonl" and len(ref.corpus_sha256) == 64
    bare = load_eval_set(frozen, check_corpus=False).ref()
    assert bare.corpus == "" and bare.corpus_sha256 == ""


def test_load_checks_gold_ids_against_corpus(frozen: Path) -> None:
    corpus = frozen.parent / "corpora" / "demo.jsonl"
    corpus.write_text(jsonl(DOCS[1:]), encoding="utf-8")  # d1 removed from the corpus
    with pytest.raises(EvalSetError, match=r"changed since v1 was frozen: 1 removed \(d1\)"):
        load_eval_set(frozen)  # the corpus check comes first: it says why the gold id is gone
    assert load_eval_set(frozen, check_corpus=False).version == 1


# --- append -------------------------------------------------------------------------------

def test_append_adds_records_without_freezing(frozen: Path, ws: Path) -> None:
    before = frozen.read_bytes()
    new = ws / "new.jsonl"
    new.write_text(rec(id="q4") + "\n\n" + rec(id="q5", relevant_doc_ids=["d3", "d4"], type="multi_hop"),
                   encoding="utf-8")
    assert append("demo", new) == 2
    after = frozen.read_bytes()
    assert after.startswith(before) and after.endswith(b"\n") and after.count(b"\n") == 5
    assert read_manifest(frozen).latest["lines"] == 3
    assert freeze("demo")["lines"] == 5


def test_append_keeps_existing_bytes_when_last_line_lacks_newline(frozen: Path, ws: Path) -> None:
    with frozen.open("a", encoding="utf-8") as fh:
        fh.write(rec(id="q4"))  # unfrozen, no newline
    (ws / "new.jsonl").write_text(rec(id="q5") + "\n", encoding="utf-8")
    append(frozen, ws / "new.jsonl")
    assert [json.loads(x)["id"] for x in frozen.read_text(encoding="utf-8").splitlines()][-2:] == ["q4", "q5"]


@pytest.mark.parametrize("lines, expected", [
    ([rec(id="q5"), rec(id="q1")], r"new.jsonl:2: id: id 'q1' is already used on line 1 of eval_sets/demo.jsonl"),
    ([rec(id="q5"), rec(id="q5")], r"new.jsonl:2: id: duplicate id 'q5'"),
    ([rec(id="q5"), rec(id="q6", relevant_doc_ids=["d9"])], r"new.jsonl: relevant_doc_ids: .*line 2: 'd9'"),
    ([rec(id="q5"), rec(id="q6", tpye="single")], r"new.jsonl:2: tpye: unknown field; did you mean 'type'\?"),
])
def test_append_is_all_or_nothing(frozen: Path, ws: Path, lines: list[str], expected: str) -> None:
    before = frozen.read_bytes()
    (ws / "new.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(EvalSetError, match=expected):
        append("eval_sets/demo.jsonl", "new.jsonl")
    assert frozen.read_bytes() == before


def test_append_missing_records_file(frozen: Path) -> None:
    with pytest.raises(EvalSetError, match="nope.jsonl: cannot read records file"):
        append(frozen, "nope.jsonl")


def test_append_needs_a_frozen_set(ws: Path) -> None:
    (ws / "new.jsonl").write_text(rec(id="q5") + "\n", encoding="utf-8")
    with pytest.raises(EvalSetError, match="not frozen yet"):
        append("demo", "new.jsonl")


# --- stats --------------------------------------------------------------------------------

def test_stats_counts(frozen: Path) -> None:
    with frozen.open("a", encoding="utf-8") as fh:
        fh.write(rec(id="q4", relevant_doc_ids=["d1", "d2", "d3"], type="multi_hop", tags=["hard"]) + "\n")
    s = stats("demo")
    assert (s["version"], s["lines"], s["unfrozen"], s["records"]) == (1, 4, 1, 4)
    assert s["by_type"]["single"] == 1 and s["by_type"]["multi_hop"] == 1 and s["by_type"]["exact_term"] == 0
    assert s["by_lang"] == {"en": 3, "zh": 1}
    assert s["by_tag"] == {"basics": 2, "hard": 1, "zh": 1}
    assert s["gold_per_question"] == {"min": 1, "mean": 2.0, "max": 3}
    assert (s["answerable"], s["unanswerable"], s["with_reference_answer"]) == (3, 1, 1)
    assert s["versions"][0]["lines"] == 3
    pinned = stats("demo@v1")
    assert (pinned["records"], pinned["unfrozen"]) == (3, 0)


TURN = {"role": "user", "content": "Hotel cap in tier-1 cities?"}


@pytest.mark.parametrize("line, expected", [
    (rec(history="earlier"), ':1: history: expected a list of turns'),
    (rec(history=[TURN, {"role": "bot", "content": "hi"}]), ':1: history[1].role: expected one of user, assistant, '
                                                            'got "bot"'),
    (rec(history=[{"role": "user", "content": " "}]), ":1: history[0].content: expected a non-empty string"),
    (rec(history=[{**TURN, "time": 3}]), ":1: history[0]: expected {\"role\": ..., \"content\": ...} (nothing else)"),
    (rec(tenant=""), ":1: tenant: expected a non-empty string"),
    (rec(tenant=7), ":1: tenant: expected a non-empty string, got 7"),
    (rec(gold_route=["vector"]), ":1: gold_route: expected a non-empty string"),
    (rec(attributes=["dept"]), ":1: attributes: expected an object"),
    (rec(attributes={"dept": {"name": "hr"}}), ":1: attributes.dept: expected a string, number, boolean or null"),
    (rec(tennant="acme"), ":1: tennant: unknown field; did you mean 'tenant'?"),
])
def test_context_field_errors(ws: Path, line: str, expected: str) -> None:
    path = write_set(ws, [line])
    with pytest.raises(EvalSetError) as err:
        validate(path)
    assert f"eval_sets/demo.jsonl{expected}" in str(err.value)


def test_context_fields_parse_and_count(ws: Path) -> None:
    from evalkit.evalsets import stats

    path = write_set(ws, [rec(id="a", history=[TURN, {"role": "assistant", "content": "750."}], tenant="acme",
                              attributes={"dept": "finance", "level": 3, "remote": False, "as_of": None},
                              gold_route="vector"), rec(id="b")])
    validate(path)
    s = stats(path)
    assert (s["with_history"], s["with_gold_route"], s["by_tenant"]) == (1, 1, {"acme": 1})
