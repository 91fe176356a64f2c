"""The extractive generator's fast paths change no answer (issue 34): every question of the demo eval set, answered
from its gold documents and three others (as the generate node gives them, and again in another order) with the
sharing of evalkit.text.memo on and off, gives the same answer, citations and abstention finding. The e5 model is
replaced by a fixed vector per text (the scoring around it is what is compared; no model is loaded)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import evalkit.llm.extractive as extractive
from evalkit.llm.base import LLMSpec
from evalkit.nodes.generate import parse_citations
from evalkit.text.abstention import detect_abstention
from evalkit.text.memo import clear_caches, sharing

REPO = Path(__file__).resolve().parents[2]


class _Vectors:
    """A stand-in for the cached e5 embedder: a fixed unit vector per (role, text)."""

    def _vec(self, role: str, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(f"{role}\0{text}".encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(16).astype(np.float32)
        return v / np.linalg.norm(v)

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return np.vstack([self._vec("query", t) for t in texts])

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        return np.vstack([self._vec("passage", t) for t in texts])


def _inputs() -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    docs = [json.loads(line) for line in (REPO / "eval_sets" / "corpora" / "demo_kb.jsonl").read_text(
        encoding="utf-8").splitlines() if line.strip()]
    text = {d["id"]: d["text"] for d in docs}
    ids = sorted(text)
    out = []
    for i, q in enumerate(map(json.loads, (REPO / "eval_sets" / "demo_kb.jsonl").read_text(encoding="utf-8").splitlines())):
        chosen = list(dict.fromkeys([*q["relevant_doc_ids"], *(ids[(i * 7 + k) % len(ids)] for k in range(3))]))
        evidence = tuple((d, text[d]) for d in chosen)
        out += [(q["question"], evidence), (q["question"], evidence[::-1])]
    return out


def _answers(backend: Any, inputs: list[tuple[str, tuple[tuple[str, str], ...]]], fresh: bool) -> list[Any]:
    out = []
    for question, evidence in inputs:
        if fresh:
            clear_caches()
        answer = backend.answer(question, evidence)
        out.append((answer, parse_citations(answer, [(d, d) for d, _ in evidence]),
                    detect_abstention(answer, finish_reason="stop").to_dict()))
    return out


def test_every_answer_is_the_same_with_and_without_the_fast_paths(monkeypatch, tmp_path):
    monkeypatch.setattr(extractive, "_embedder", lambda root: _Vectors())
    backend = extractive.ExtractiveBackend(LLMSpec(backend="extractive"), cache_root=tmp_path)
    inputs = _inputs()
    assert len(inputs) >= 240
    clear_caches()
    fast = _answers(backend, inputs, fresh=False)
    with sharing(False):
        slow = _answers(backend, inputs, fresh=True)
    assert fast == slow
    assert len({a for a, _, _ in fast}) > 100 and all(cited for _, (cited, _), _ in fast)


@pytest.mark.parametrize("evidence", [(), (("d1", "   "),)])
def test_no_evidence_is_insufficient_either_way(monkeypatch, tmp_path, evidence):
    monkeypatch.setattr(extractive, "_embedder", lambda root: _Vectors())
    backend = extractive.ExtractiveBackend(LLMSpec(backend="extractive"), cache_root=tmp_path)
    with sharing(False):
        slow = backend.answer("q", evidence)
    assert backend.answer("q", evidence) == slow == extractive.INSUFFICIENT_EVIDENCE
