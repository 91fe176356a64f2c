"""A document's fingerprint is the SHA-256 of one canonical JSON text; the direct writer
(:func:`evalkit.evalsets.corpus_identity.canonical_json`, issue 34) must give exactly the text
``json.dumps`` gives, or every frozen eval set would read its unchanged corpus as changed."""
from __future__ import annotations

import hashlib
import json
import random

import pytest

from evalkit.evalsets.corpus_identity import canonical_json, doc_fingerprint

ODD = ["", "plain", 'quote " and \\ back', "tab\there\nnewline\r", "\x00\x01\x1f\x7f", "中文 文档", "é\u2028\u2029",
       "emoji 🙂", "\ud800 lone", "</script>", "a" * 500]


def reference(title, text, metadata) -> str:
    return json.dumps({"title": title, "text": text, "metadata": metadata}, sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))


@pytest.mark.parametrize("metadata", [{}, {"b": 1, "a": [1.5, None, True]}, {"z": {"y": "中", "x": 10**30}},
                                      {"k": float("inf")}])
def test_canonical_json_is_json_dumps_character_for_character(metadata):
    rng = random.Random(34)
    for _ in range(300):
        title, text = rng.choice(ODD), "".join(rng.choice(ODD) for _ in range(rng.randint(0, 4)))
        assert canonical_json(title, text, metadata) == reference(title, text, metadata)


def test_fingerprint_is_the_sha256_of_that_text():
    want = hashlib.sha256(reference("T", "body 中", {}).encode("utf-8")).hexdigest()[:16]
    assert doc_fingerprint("T", "body 中", {}) == want
    assert doc_fingerprint("T", "body 中", {"a": 1}) != want
