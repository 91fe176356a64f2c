"""``evalkit evalset review``: a person keeps, edits or drops each generated question.

What it is for: generated questions are candidates until someone has read them. The
review page (the page machinery of ``evalkit label``: :func:`evalkit.analysis.label_page.render_page`)
shows each generated line that is still in force (not reviewed yet) with its source
documents; the reviewer keeps it, edits its question or reference answer, or drops it,
and "Save decisions" downloads ``NAME.decisions.json``::

    {"eval_set": "my_kb", "decisions": [{"id": "g-1a2b...", "decision": "edit",
      "question": "...", "reference_answer": "...", "note": "..."}]}

``evalkit evalset review NAME --apply NAME.decisions.json`` turns each decision into one
appended line (never an edit of the reviewed one): a copy of the reviewed record under
the id ``ID-r1`` (``-r2``... when taken) whose ``generated.review`` is ``{"of": ID,
"decision": ...}``, with the edited text for ``edit``. From then on the reviewed line no
longer counts as a question, and a ``drop`` line does not either
(:func:`evalkit.evalsets.provenance.effective_records`); the set is then frozen as a new
version, so earlier versions still mean what they meant.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalkit.errors import EvalSetError
from evalkit.evalsets.evalset import parse_records, read_lines
from evalkit.evalsets.lang import guess_lang
from evalkit.evalsets.provenance import DECISIONS, effective_records
from evalkit.index.corpus import Corpus

DECISION_KEYS = ("id", "decision", "question", "reference_answer", "note")


def pending(path: Path) -> list[tuple[dict[str, Any], Any]]:
    """(raw JSON, record) of every generated line of the set still in force and not a review itself."""
    lines = read_lines(path)
    numbered = parse_records(str(path), lines)
    out = []
    for lineno, record in effective_records(str(path), numbered):
        if record.generated is not None and "review" not in record.generated:
            out.append((json.loads(lines[lineno - 1]), record))
    return out


def page_lines(items: list[tuple[dict[str, Any], Any]], corpus: Corpus | None) -> list[dict[str, Any]]:
    """What the page shows of each line: the record, its source documents' text, empty decision fields."""
    out = []
    for _raw, record in items:
        docs = list(record.generated.get("sources") or record.relevant_doc_ids)
        evidence = [{"doc_id": d, "title": corpus.by_id[d].title if corpus and d in corpus else "",
                     "text": corpus.by_id[d].text if corpus and d in corpus else "(not in the corpus)"}
                    for d in docs]
        out.append({"id": record.id, "question": record.question, "reference_answer": record.reference_answer or "",
                    "type": record.type, "lang": record.lang, "relevant_doc_ids": list(record.relevant_doc_ids),
                    "generator": record.generated.get("generator", ""), "pattern": record.generated.get("pattern", ""),
                    "evidence": evidence, "decision": None, "note": "",
                    "edited": {"question": record.question, "reference_answer": record.reference_answer or ""}})
    return out


def read_decisions(file: str | Path) -> list[dict[str, Any]]:
    """The decisions of a page's file; a bad entry raises naming the file, the entry and the field."""
    name = str(file)
    try:
        data = json.loads(Path(file).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EvalSetError(name, "", f"cannot read the decisions file ({exc}); save it again from the review page") \
            from exc
    if not isinstance(data, dict) or not isinstance(data.get("decisions"), list):
        raise EvalSetError(name, "decisions", "expected {\"eval_set\": NAME, \"decisions\": [...]} as the review "
                           "page saves it")
    out = []
    for i, d in enumerate(data["decisions"]):
        where = f"decisions[{i}]"
        if not isinstance(d, dict) or not isinstance(d.get("id"), str):
            raise EvalSetError(name, f"{where}.id", "expected an object with the id of a reviewed line")
        if d.get("decision") not in DECISIONS:
            raise EvalSetError(name, f"{where}.decision", f"expected one of {', '.join(DECISIONS)}, "
                               f"got {d.get('decision')!r}")
        for key in ("question", "reference_answer", "note"):
            if key in d and not isinstance(d[key], str):
                raise EvalSetError(name, f"{where}.{key}", f"expected a string, got {type(d[key]).__name__}")
        if d["decision"] == "edit" and not (d.get("question") or "").strip():
            raise EvalSetError(name, f"{where}.question", f"'{d['id']}' is edited but its question is empty: "
                               "write the question, or drop the line")
        unknown = [k for k in d if k not in DECISION_KEYS]
        if unknown:
            raise EvalSetError(name, f"{where}.{unknown[0]}", f"unknown key; a decision holds {', '.join(DECISION_KEYS)}")
        out.append(d)
    return out


def review_records(path: Path, decisions: list[dict[str, Any]], file: str = "decisions") -> list[dict[str, Any]]:
    """One new line per decision (see the module docstring); an id that is not a pending generated line is an error."""
    open_items = {rec.id: raw for raw, rec in pending(path)}
    taken = {r.id for _, r in parse_records(str(path), read_lines(path))}
    out = []
    seen: set[str] = set()
    for i, d in enumerate(decisions):
        rid = d["id"]
        if rid in seen:
            raise EvalSetError(file, f"decisions[{i}].id", f"'{rid}' is decided twice; keep one decision")
        if rid not in open_items:
            why = "was reviewed already" if rid in taken else "is not a line of the set"
            raise EvalSetError(file, f"decisions[{i}].id", f"'{rid}' {why}; review the lines the page of "
                               f"`evalkit evalset review {path.stem}` shows now")
        seen.add(rid)
        line = dict(open_items[rid])
        k = 1
        while f"{rid}-r{k}" in taken:
            k += 1
        line["id"] = f"{rid}-r{k}"
        taken.add(line["id"])
        if d["decision"] == "edit":
            line["question"] = d["question"].strip()
            if guess_lang(line["question"]) != guess_lang(open_items[rid]["question"]):  # rewritten in another language
                line["lang"] = guess_lang(line["question"])
            if "reference_answer" in d:
                line["reference_answer"] = d["reference_answer"].strip()
        review = {"of": rid, "decision": d["decision"]}
        if (d.get("note") or "").strip():
            review["note"] = d["note"].strip()
        line["generated"] = {**line["generated"], "review": review}
        out.append(line)
    return out
