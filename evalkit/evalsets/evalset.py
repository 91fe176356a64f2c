"""The eval set file format: one JSON record per line, parsed and checked strictly.

An eval set is ``eval_sets/NAME.jsonl``; each line is one question::

    {"id": "fin-q-017", "question": "...", "relevant_doc_ids": ["fin-001"],
     "type": "single", "lang": "zh", "reference_answer": "...", "tags": ["finance"]}

Optional context (``parse_context``): ``history`` (earlier turns), ``tenant``,
``attributes`` (what metadata filters read) and ``gold_route``.

``relevant_doc_ids`` empty means the question is unanswerable, and then (and only
then) ``type`` must be ``unanswerable``. Graded judgements (TREC/BEIR qrels with grades
1/2/3) go in the optional ``relevance`` beside it, ``{"fin-001": 2, "fin-007": 1}``: one
positive integer grade per gold document, the same documents as ``relevant_doc_ids``
(judged non-relevant documents, grade 0, are left out). Without ``relevance`` every gold
document has grade 1; nDCG uses the grades as gains (see ``evalkit.metrics.retrieval``). Every problem raises one ``EvalSetError``
naming the file, the line and the field, e.g.
``eval_sets/demo_kb.jsonl:17: relevant_doc_ids: expected a list of document ids, got "fin-001"``.

This module knows the format only. Versions (the manifest, freezing, appending and
the tamper check) live in ``versions.py``, which builds on it.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evalkit.errors import EvalSetError, did_you_mean
from evalkit.evalsets.provenance import parse_generated
from evalkit.fileio import describe_unencodable, unencodable
from evalkit.index.corpus import Corpus
from evalkit.models.abstention import config_name
from evalkit.records import EvalRecord, EvalSetRef
from evalkit.text.abstention import AbstentionPatternError, compile_patterns

MAX_QUESTION_CHARS = 4000
"""Longest question a record may hold (a 5 MB question made the dense encoder run for minutes)."""
TYPES = ("single", "multi_hop", "comparison", "exact_term", "colloquial", "unanswerable")
REQUIRED_FIELDS = ("id", "question", "relevant_doc_ids", "type", "lang")
OPTIONAL_FIELDS = ("reference_answer", "tags", "relevance", "generated")  # generated: evalsets.provenance
CONTEXT_FIELDS = ("history", "tenant", "attributes", "gold_route")
"""Optional context of a question (conversation, tenancy, filter attributes, gold route): ``parse_context``."""
ROLES = ("user", "assistant")
FIELDS = REQUIRED_FIELDS + OPTIONAL_FIELDS + CONTEXT_FIELDS
EVAL_SETS_DIR = "eval_sets"
_LANG = re.compile(r"[a-z]{2,3}([-_][A-Za-z0-9]{2,8})*")
_VERSION_SUFFIX = re.compile(r"@([^/\\]*)$")

Numbered = list[tuple[int, EvalRecord]]
"""Records with the 1-based line number each came from (for error messages)."""


@dataclass
class EvalSet:
    """One pinned version of an eval set: its records, content hash and corpus.

    ``sha256`` is the hash of the bytes of the lines the version covers, so two runs
    with the same ``(name, version, sha256)`` asked exactly the same questions.
    ``corpus`` is set when the corpus was loaded (``load_eval_set(check_corpus=True)``).
    """

    name: str
    path: Path
    version: int
    sha256: str
    records: list[EvalRecord]
    corpus_path: Path
    manifest_path: Path
    corpus: Corpus | None = None
    warnings: list[str] = field(default_factory=list)  # e.g. a version frozen without a corpus hash
    abstention: AbstentionRules | None = None  # NAME.abstention.yaml beside the set, when present

    def __len__(self) -> int:
        return len(self.records)

    def ref(self) -> EvalSetRef:
        """The identity a run records: name, version, hash, size and (if loaded) corpus."""
        return EvalSetRef(name=self.name, version=self.version, sha256=self.sha256,
                          n_queries=len(self.records), path=str(self.path),
                          corpus=display_path(self.corpus_path) if self.corpus else "",
                          corpus_sha256=self.corpus.sha256 if self.corpus else "")


ABSTENTION_SUFFIX = ".abstention.yaml"


@dataclass(frozen=True)
class AbstentionRules:
    """An eval set's own refusal wordings, from ``eval_sets/NAME.abstention.yaml``::

        patterns: ["暂无该数据", "outside my remit"]   # answers that are refusals
        not_patterns: ["不提供住宿补贴"]               # answers that only look like refusals (or errors)
        model: none                                    # the learned stage: e5 (the default), or none

    Regular expressions, added to the defaults of :mod:`evalkit.text.abstention`; ``model`` names the
    learned second stage (:mod:`evalkit.models.abstention`) read after them, or ``none`` to read the
    rules alone; when absent, each answer source's own choice stands (the default: ``e5``). They
    are scoring options, not eval data: not part of the frozen hash, but recorded with
    every run (``sha256``).
    """

    patterns: tuple[str, ...] = ()
    not_patterns: tuple[str, ...] = ()
    path: str = ""
    sha256: str = ""
    model: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AbstentionRules:
        """The rules from their ``dataclasses.asdict`` form (what a Ray worker receives)."""
        return cls(**{**data, "patterns": tuple(data["patterns"]), "not_patterns": tuple(data["not_patterns"])})


def load_abstention_rules(eval_set_path: Path) -> AbstentionRules | None:
    """``NAME.abstention.yaml`` beside the eval set, validated; None when there is none."""
    path = Path(eval_set_path).with_name(Path(eval_set_path).stem + ABSTENTION_SUFFIX)
    if not path.is_file():
        return None
    raw = path.read_bytes()
    try:
        data = yaml.safe_load(raw.decode("utf-8")) or {}
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise EvalSetError(str(path), "", f"cannot read abstention rules ({exc})") from exc
    if not isinstance(data, dict):
        raise EvalSetError(str(path), "", "expected a mapping with 'patterns', 'not_patterns' and/or 'model'")
    for key in data:
        if key not in ("patterns", "not_patterns", "model"):
            raise EvalSetError(str(path), key, f"unknown key{did_you_mean(key, ('patterns', 'not_patterns', 'model'))}")
    model = data.get("model")
    if model is not None:
        try:
            model = config_name(model)
        except ValueError as exc:
            raise EvalSetError(str(path), "model", str(exc)) from exc
    out = {}
    for key in ("patterns", "not_patterns"):
        value = data.get(key) or []
        if not isinstance(value, list):
            raise EvalSetError(str(path), key, f"expected a list of regular expressions, got {type(value).__name__}")
        try:
            compile_patterns(value, key)
        except AbstentionPatternError as exc:
            raise EvalSetError(str(path), key, str(exc)) from exc
        out[key] = tuple(value)
    return AbstentionRules(out["patterns"], out["not_patterns"], str(path), hashlib.sha256(raw).hexdigest(), model)


def display_path(path: str | Path) -> str:
    """``path`` relative to the working directory when it lies under it, else absolute."""
    path = Path(path).resolve()
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path)


def resolve_spec(spec: str | Path) -> tuple[Path, int | None]:
    """Split ``PATH[@vN]`` or ``NAME[@vN]`` into the eval set file and the version asked for.

    A bare NAME (no folder, no ``.jsonl``) means ``eval_sets/NAME.jsonl`` under the
    working directory. The file must exist.
    """
    text, version = str(spec), None
    m = _VERSION_SUFFIX.search(text)
    if m:
        text, tag = text[: m.start()], m.group(1)
        vm = re.fullmatch(r"v([0-9]+)", tag)
        if not vm or int(vm.group(1)) < 1:
            raise EvalSetError(text, "", f"bad version '@{tag}': write @vN with N >= 1, e.g. {text}@v1")
        version = int(vm.group(1))
    path = Path(text)
    if not path.exists() and len(path.parts) == 1 and path.suffix != ".jsonl":
        path = Path(EVAL_SETS_DIR) / f"{text}.jsonl"
    if not path.is_file():
        folder = path.parent if path.parent.is_dir() else Path(EVAL_SETS_DIR)
        known = sorted(p.stem for p in folder.glob("*.jsonl")) if folder.is_dir() else []
        hint = did_you_mean(path.stem, known) if known else f"; no eval sets in {folder}/"
        raise EvalSetError(str(path), "", f"no such eval set file{hint}")
    return path, version


def split_lines(raw: bytes) -> list[bytes]:
    """The file's lines with their ``\\n`` endings kept (the last one may lack it)."""
    parts = raw.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def read_lines(path: Path, what: str = "eval set") -> list[bytes]:
    """Read a JSONL file as lines of bytes; a missing file raises ``EvalSetError``."""
    try:
        return split_lines(Path(path).read_bytes())
    except OSError as exc:
        raise EvalSetError(str(path), "", f"cannot read {what} ({exc.strerror})") from exc


def parse_records(file: str, lines: list[bytes], first_line: int = 1,
                  skip_blank: bool = False) -> Numbered:
    """Parse and check every line; ids must be unique. Returns ``(line number, record)`` pairs.

    Blank lines are an error in an eval set (each line is one record, and lines are
    what versions count) but may be skipped in a file of records to append.
    """
    out: Numbered = []
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(lines, start=first_line):
        try:
            text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise EvalSetError(file, "", f"not valid UTF-8 (byte {exc.start})", line=lineno) from exc
        if not text.strip():
            if skip_blank:
                continue
            raise EvalSetError(file, "", "blank line: every line must be one JSON record; remove it", line=lineno)
        record = parse_record(file, lineno, text)
        if record.id in seen:
            raise EvalSetError(file, "id", f"duplicate id '{record.id}' (first used on line {seen[record.id]}); "
                               "give this record a new id", line=lineno)
        seen[record.id] = lineno
        out.append((lineno, record))
    return out


def parse_record(file: str, lineno: int, text: str) -> EvalRecord:
    """Turn one JSON line into an ``EvalRecord``, or raise naming the line and the field."""
    def fail(where: str, message: str) -> EvalSetError:
        return EvalSetError(file, where, message, line=lineno)

    twice: list[tuple[str, int]] = []  # (key, id of the object holding it twice): json.loads keeps the last silently

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) < len(items):
            keys = [k for k, _ in items]
            twice.append((next(k for k in keys if keys.count(k) > 1), id(out)))
        return out

    try:
        obj = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise fail("", f"not valid JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(obj, dict):
        raise fail("", f"each line must be a JSON object, got {_show(obj)}")
    bad = unencodable(obj) if "\\u" in text else None  # only a \u escape can spell a lone surrogate
    if bad:
        raise fail(bad[0], describe_unencodable(bad))
    if twice:
        key, holder = twice[0]
        field = key if holder == id(obj) else next((k for k, v in obj.items() if id(v) == holder), "")
        raise fail(field, f"key '{key}' appears twice in this record; JSON would keep only the last: keep one")
    for key in obj:
        if key not in FIELDS:
            raise fail(key, f"unknown field{did_you_mean(key, FIELDS)}")
    for key in REQUIRED_FIELDS:
        if key not in obj:
            raise fail(key, "missing required field")
    rid, question, gold, rtype, lang = (obj[k] for k in REQUIRED_FIELDS)
    if not isinstance(rid, str) or not rid.strip():
        raise fail("id", f"expected a non-empty string, got {_show(rid)}")
    if not isinstance(question, str) or not question.strip():
        raise fail("question", f"expected a non-empty string, got {_show(question)}")
    if len(question) > MAX_QUESTION_CHARS:
        raise fail("question", f"{len(question):,} characters, more than the {MAX_QUESTION_CHARS:,} a question may have "
                   f"(record '{rid}'); a question this long is usually a pasted document: shorten it")
    if not isinstance(gold, list):
        raise fail("relevant_doc_ids", f"expected a list of document ids, got {_show(gold)}")
    for doc_id in gold:
        if not isinstance(doc_id, str) or not doc_id:
            raise fail("relevant_doc_ids", f"expected document ids (non-empty strings), got {_show(doc_id)}")
    twice = [d for d, n in Counter(gold).items() if n > 1]
    if twice:
        raise fail("relevant_doc_ids", f"'{twice[0]}' is listed twice; list each gold document once")
    if rtype not in TYPES:
        raise fail("type", f"unknown type {_show(rtype)}{did_you_mean(str(rtype), TYPES)}")
    if not gold and rtype != "unanswerable":
        raise fail("type", f"relevant_doc_ids is empty, which marks the question unanswerable, but type is "
                   f"'{rtype}'; set type to 'unanswerable' or list its gold documents")
    if gold and rtype == "unanswerable":
        raise fail("type", f"type is 'unanswerable' but relevant_doc_ids lists {len(gold)} document(s); "
                   "empty the list or pick another type")
    if not isinstance(lang, str) or not _LANG.fullmatch(lang):
        raise fail("lang", f"expected a language code such as \"zh\" or \"en\", got {_show(lang)}")
    answer = obj.get("reference_answer")
    if answer is not None and not isinstance(answer, str):
        raise fail("reference_answer", f"expected a string, got {_show(answer)}")
    tags = obj.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags):
        raise fail("tags", f"expected a list of non-empty strings, got {_show(obj.get('tags'))}")
    relevance = _relevance(obj, gold, fail) if "relevance" in obj else None
    generated = parse_generated(obj["generated"], fail) if "generated" in obj else None
    return EvalRecord(id=rid, question=question, relevant_doc_ids=tuple(gold), type=rtype, lang=lang,
                      reference_answer=answer, tags=tuple(tags), relevance=relevance, generated=generated,
                      **parse_context(obj, fail))


def _relevance(obj: dict[str, Any], gold: list[str], fail: Any) -> dict[str, int]:
    """The ``relevance`` grades of a record: positive integers over exactly its ``relevant_doc_ids``."""
    grades = obj["relevance"]
    if not isinstance(grades, dict):
        raise fail("relevance", f"expected an object {{doc id: grade}}, e.g. {{\"fin-001\": 2}}, got {_show(grades)}")
    for doc_id, grade in grades.items():
        if isinstance(grade, bool) or not isinstance(grade, int) or grade < 1:
            raise fail("relevance", f"grade of '{doc_id}' must be a positive integer (1, 2, 3...), got {_show(grade)}; "
                       "leave judged non-relevant documents (grade 0) out")
    missing = [d for d in gold if d not in grades]
    extra = [d for d in grades if d not in gold]
    if missing or extra:
        what = (f"'{missing[0]}' is in relevant_doc_ids but has no grade" if missing
                else f"'{extra[0]}' has a grade but is not in relevant_doc_ids")
        raise fail("relevance", f"{what}; relevance grades exactly the gold documents")
    return {d: grades[d] for d in gold}


def parse_context(obj: dict[str, Any], fail: Any) -> dict[str, Any]:
    """The optional context fields of a record (``CONTEXT_FIELDS``), checked; ``fail(field, message)`` raises.

    ``history``: a list of ``{"role": "user"|"assistant", "content": "..."}`` turns, oldest first.
    ``tenant`` and ``gold_route``: non-empty strings. ``attributes``: an object whose values are
    strings, numbers, booleans or null (what metadata filters compare with).
    """
    out: dict[str, Any] = {}
    history = obj.get("history")
    if history is not None:
        if not isinstance(history, list):
            raise fail("history", "expected a list of turns {\"role\": \"user\", \"content\": ...}, "
                       f"got {_show(history)}")
        turns = []
        for i, turn in enumerate(history):
            where = f"history[{i}]"
            if not isinstance(turn, dict) or set(turn) != {"role", "content"}:
                raise fail(where, f"expected {{\"role\": ..., \"content\": ...}} (nothing else), got {_show(turn)}")
            if turn["role"] not in ROLES:
                raise fail(f"{where}.role", f"expected one of {', '.join(ROLES)}, got {_show(turn['role'])}")
            if not isinstance(turn["content"], str) or not turn["content"].strip():
                raise fail(f"{where}.content", f"expected a non-empty string, got {_show(turn['content'])}")
            turns.append({"role": turn["role"], "content": turn["content"]})
        out["history"] = tuple(turns)
    for key in ("tenant", "gold_route"):
        value = obj.get(key)
        if value is not None:
            if not isinstance(value, str) or not value.strip():
                raise fail(key, f"expected a non-empty string, got {_show(value)}")
            out[key] = value
    attributes = obj.get("attributes")
    if attributes is not None:
        if not isinstance(attributes, dict):
            raise fail("attributes", f"expected an object such as {{\"dept\": \"finance\"}}, got {_show(attributes)}")
        for k, v in attributes.items():
            if v is not None and not isinstance(v, (str, int, float, bool)):
                raise fail(f"attributes.{k}", f"expected a string, number, boolean or null, got {_show(v)}")
        out["attributes"] = dict(attributes)
    return out


def check_gold_ids(file: str, records: Numbered, corpus: Corpus) -> None:
    """Raise one error listing every gold id (with its line) that the corpus lacks."""
    missing = [(lineno, d) for lineno, r in records for d in r.relevant_doc_ids if d not in corpus]
    if not missing:
        return
    by_line: dict[int, list[str]] = {}
    for lineno, d in missing:
        by_line.setdefault(lineno, []).append(f"'{d}'{_close_id(d, corpus)}")
    listing = "; ".join(f"line {n}: {', '.join(ids)}" for n, ids in by_line.items())
    raise EvalSetError(file, "relevant_doc_ids", f"{len(missing)} gold document id(s) not in corpus "
                       f"{display_path(Path(corpus.path))}: {listing}")


def duplicate_questions(records: Numbered) -> list[str]:
    """Warnings for questions asked twice (same text after whitespace and case folding)."""
    first: dict[str, int] = {}
    out = []
    for lineno, r in records:
        key = " ".join(r.question.split()).casefold()
        if key in first:
            out.append(f"line {lineno}: same question as line {first[key]} ('{r.id}')")
        else:
            first[key] = lineno
    return out


def record_stats(records: list[EvalRecord]) -> dict[str, Any]:
    """Counts by type, lang and tag, and gold documents per answerable question."""
    answerable = [len(r.relevant_doc_ids) for r in records if r.answerable]
    by_type = Counter(r.type for r in records)
    tags = Counter(t for r in records for t in r.tags)
    return {
        "records": len(records),
        "answerable": len(answerable),
        "unanswerable": len(records) - len(answerable),
        "with_reference_answer": sum(1 for r in records if r.reference_answer),
        "with_history": sum(1 for r in records if r.history),
        "with_gold_route": sum(1 for r in records if r.gold_route),
        "by_tenant": dict(sorted(Counter(r.tenant for r in records if r.tenant).items())),
        "by_type": {t: by_type[t] for t in TYPES},
        "by_lang": dict(sorted(Counter(r.lang for r in records).items())),
        "by_tag": dict(sorted(tags.items(), key=lambda kv: (-kv[1], kv[0]))),
        "gold_per_question": {
            "min": min(answerable) if answerable else None,
            "mean": round(sum(answerable) / len(answerable), 3) if answerable else None,
            "max": max(answerable) if answerable else None,
        },
    }


MAX_ID_SUGGESTIONS = 3
SUGGEST_UP_TO = 20000  # difflib over a bigger corpus is slow; the id alone is then enough


def close_ids(doc_id: str, ids: Collection[str]) -> str:
    """`` (did you mean 'a', 'b' or 'c'?)`` for an unknown document id: at most 3 close ids, never the whole list."""
    if len(ids) > SUGGEST_UP_TO:
        return ""
    hint = did_you_mean(doc_id, ids, n=MAX_ID_SUGGESTIONS)
    return f" ({hint[2:]})" if hint.startswith("; did you mean") else ""


def _close_id(doc_id: str, corpus: Corpus) -> str:
    return close_ids(doc_id, corpus.by_id)


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."

