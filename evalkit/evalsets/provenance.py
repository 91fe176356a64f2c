"""Where a generated question came from, and what a reviewer decided about it.

A line written by ``evalkit evalset generate`` carries one extra, optional field,
``generated``, beside the usual ones::

    "generated": {"generator": "template/v1", "params": {"seed": 0, "n": 200, ...},
                  "sources": {"fin-004": "3f0c9a1e5b7d2c44"}, "pattern": "wh"}

``generator`` names what wrote the line (``template/v1``: the offline rules of
:mod:`evalkit.evalsets.generate`; ``llm/v1``: an LLM through :mod:`evalkit.evalsets.gen_llm`,
whose identity is in ``model``); ``params`` the options it ran with; ``sources`` one
fingerprint per source document (:func:`evalkit.evalsets.corpus_identity.doc_fingerprint`,
16 hex characters), so a reader can tell whether the passage a question was written from
changed since.

A review never edits a line (the file is append-only). ``evalkit evalset review --apply``
appends one line per decision whose ``generated.review`` is ``{"of": ID, "decision":
"keep" | "edit" | "drop"}``: the reviewed line ``ID`` stops counting as a question from
that version on (:func:`effective_records`), the new line takes its place, and a ``drop``
line counts as no question at all. Older versions keep their lines as they were.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalkit.errors import EvalSetError, did_you_mean

FIELD = "generated"
KEYS = ("generator", "params", "sources", "model", "pattern", "checks", "review")
DECISIONS = ("keep", "edit", "drop")

Fail = Callable[[str, str], EvalSetError]


def parse_generated(value: Any, fail: Fail) -> dict[str, Any]:
    """Check a record's ``generated`` object (see the module docstring); ``fail(field, message)`` raises."""
    if not isinstance(value, dict):
        raise fail(FIELD, f"expected an object such as {{\"generator\": \"template/v1\"}}, got {type(value).__name__}")
    for key in value:
        if key not in KEYS:
            raise fail(f"{FIELD}.{key}", f"unknown key{did_you_mean(key, KEYS)}")
    gen = value.get("generator")
    if not isinstance(gen, str) or not gen.strip():
        raise fail(f"{FIELD}.generator", "expected the name of what wrote the line, e.g. \"template/v1\"")
    for key in ("params", "checks"):
        if key in value and not isinstance(value[key], dict):
            raise fail(f"{FIELD}.{key}", f"expected an object, got {type(value[key]).__name__}")
    sources = value.get("sources", {})
    if not isinstance(sources, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in sources.items()):
        raise fail(f"{FIELD}.sources", "expected an object {document id: fingerprint}")
    for key in ("model", "pattern"):
        if key in value and not isinstance(value[key], str):
            raise fail(f"{FIELD}.{key}", f"expected a string, got {type(value[key]).__name__}")
    if "review" in value:
        _check_review(value["review"], fail)
    return dict(value)


def _check_review(review: Any, fail: Fail) -> None:
    where = f"{FIELD}.review"
    if not isinstance(review, dict) or not isinstance(review.get("of"), str) or not review["of"]:
        raise fail(where, "expected {\"of\": ID of the reviewed line, \"decision\": keep|edit|drop}")
    if review.get("decision") not in DECISIONS:
        raise fail(f"{where}.decision", f"expected one of {', '.join(DECISIONS)}, got {review.get('decision')!r}")
    unknown = [k for k in review if k not in ("of", "decision", "note")]
    if unknown:
        raise fail(f"{where}.{unknown[0]}", "unknown key (a review holds of, decision and note)")


def review_of(record: Any) -> dict[str, Any] | None:
    """The ``generated.review`` of a record (an ``EvalRecord``), or None."""
    gen = getattr(record, "generated", None)
    return gen.get("review") if isinstance(gen, dict) else None


def effective_records(file: str, numbered: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    """The records that count as questions: reviewed lines and ``drop`` decisions left out.

    ``numbered`` are ``(line, EvalRecord)`` pairs in file order. A review naming an id
    that no earlier line has is an error naming its line.
    """
    seen: set[str] = set()
    replaced: set[str] = set()
    dropped: set[str] = set()
    for lineno, record in numbered:
        review = review_of(record)
        if review is not None:
            if review["of"] not in seen:
                raise EvalSetError(file, f"{FIELD}.review.of", f"'{review['of']}' is not the id of an earlier line; "
                                   "a review line follows the line it reviews", line=lineno)
            replaced.add(review["of"])
            if review["decision"] == "drop":
                dropped.add(record.id)
        seen.add(record.id)
    return [(n, r) for n, r in numbered if r.id not in replaced and r.id not in dropped]
