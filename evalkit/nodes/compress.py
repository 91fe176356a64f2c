"""The ``compress`` node: keep the evidence sentences most relevant to the question, within a budget.

Extractive context compression. The first ``evidence_k`` passages of ``evidence_from`` are
split into sentences (``evalkit.text.sentences``; the passage text as the generator would
show it, title included); with ``graph_evidence: true`` each graph triple (``graph_evidence``
lines) is one more unit. Every unit is scored by the ``embedder`` cosine of the question
(as a query) and the unit (as a passage; vectors from the shared embedding cache). Units
are then taken best first (ties: the better-ranked passage, then the earlier sentence)
while they fit the ``budget``: ``unit: chars`` counts characters, ``unit: tokens`` the
tokens of ``tokenizer`` (``evalkit.index.tokens``), summed over the kept units. A unit
that does not fit is skipped and smaller ones are still tried. When not even the best unit
fits, it is kept cut to the budget, so the generator is never left with nothing.

Writes ``evidence`` (the passages that kept at least one sentence, in their original
order; ``keep_empty: true`` keeps them all), ``evidence_text`` (passage id -> its kept
sentences in document order, joined by a space; ``generate`` shows this text instead of
the passage), and ``compression`` (budget, unit, size before and after, and per passage
the sentences kept and the sentences cut, so what the generator never saw is on record);
with ``graph_evidence: true`` also ``graph_evidence`` (the kept triples, in their order).
Judges still check answers against the whole passages (``answer_evidence`` comes from
``generate``), which contain everything that was shown.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from evalkit.graph.node import Node, NodeParams, register_node
from evalkit.graph.schema import (
    COMPRESSION,
    EVIDENCE,
    EVIDENCE_TEXT,
    GRAPH_EVIDENCE,
    QUESTION,
    RERANKED,
    RETRIEVED,
    Contract,
    Role,
)
from evalkit.models.embedders import ModelSpec
from evalkit.nodes.generate import parse_triples, triple_text
from evalkit.text.sentences import sentence_spans

_FIELDS = {"evidence": EVIDENCE, "reranked": RERANKED, "retrieved": RETRIEVED}


class CompressParams(NodeParams):
    evidence_from: Literal["evidence", "reranked", "retrieved"] = Field(
        default="evidence", description="the ranking whose first evidence_k passages are compressed")
    evidence_k: int = Field(default=5, ge=1, description="passages compressed (set it to the generator's "
                            "evidence_k)")
    budget: int = Field(default=1000, ge=1, description="total size of the kept sentences (and triples)")
    unit: Literal["chars", "tokens"] = Field(default="chars", description="what budget counts: characters, "
                                             "or tokens of tokenizer")
    tokenizer: str | ModelSpec = Field(default="e5", description="unit: tokens: the embedder whose tokenizer "
                                       "counts (e5, minilm, {name: sentence-transformers, path: ...})")
    embedder: str | ModelSpec = Field(default="e5", description="scores each sentence by its cosine with "
                                      "the question")
    graph_evidence: bool = Field(default=False, description="also compress the graph triples of "
                                 "graph_evidence (when present): they compete for the same budget")
    keep_empty: bool = Field(default=False, description="keep passages all of whose sentences were cut in "
                             "evidence (shown with empty text); false: drop them")
    max_recorded: int = Field(default=20, ge=0, description="cut sentences recorded per passage in compression")

    @model_validator(mode="after")
    def _tokenizer_known(self) -> CompressParams:
        if self.unit == "tokens":
            from evalkit.index.tokens import COUNTERS

            name = ModelSpec.of(self.tokenizer).name
            if name not in COUNTERS:
                from evalkit.errors import did_you_mean

                raise ValueError(f"tokenizer: no tokenizer for '{name}'{did_you_mean(name, COUNTERS)}")
        return self


@register_node
class Compress(Node[CompressParams]):
    type = "compress"
    role = Role.TRANSFORM
    reads = (QUESTION, EVIDENCE)
    writes = (EVIDENCE, EVIDENCE_TEXT, COMPRESSION)
    optional_writes = (GRAPH_EVIDENCE,)
    Params = CompressParams

    @classmethod
    def contract(cls, params: CompressParams) -> Contract:
        source = _FIELDS[params.evidence_from]
        graph = frozenset({GRAPH_EVIDENCE}) if params.graph_evidence else frozenset()
        return Contract(frozenset({QUESTION, source}), graph, frozenset(cls.writes), graph)

    def __init__(self, name: str, params: CompressParams, resources: Any = None):
        super().__init__(name, params, resources)
        self.passages = resources.passages()
        self.embedder = resources.embedder(ModelSpec.of(params.embedder))
        self.counter = None
        if params.unit == "tokens":
            from evalkit.index.tokens import token_counter

            self.counter = token_counter(params.tokenizer)

    def size(self, text: str) -> int:
        return len(text) if self.counter is None else self.counter.count(text)

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        p = self.params
        hits = list(state[_FIELDS[p.evidence_from]])[: p.evidence_k]
        texts = [self.passages.text(h.id) for h in hits]
        sentences = [[t[s:e] for s, e in sentence_spans(t)] for t in texts]
        lines = list(state.get(GRAPH_EVIDENCE) or []) if p.graph_evidence else []
        triples = {line: triple_text(*parsed[0][:3]) for line in lines if (parsed := parse_triples([line]))}
        # units: (passage index or -1 for a triple, position, text); ties: passage rank, then position
        units = [(i, j, s) for i, sents in enumerate(sentences) for j, s in enumerate(sents)]
        units += [(-1, j, triples[line]) for j, line in enumerate(lines) if line in triples]
        kept = self._select(state[QUESTION], units)
        out_text: dict[str, str] = {}
        record = []
        evidence = []
        for i, (h, sents) in enumerate(zip(hits, sentences)):
            keep = [j for j in range(len(sents)) if (i, j) in kept]
            out_text[h.id] = " ".join(kept[(i, j)] for j in keep)
            cut = [s for j, s in enumerate(sents) if (i, j) not in kept]
            record.append({"id": h.id, "doc_id": h.doc_id, "kept": len(keep), "cut": len(cut),
                           "cut_sentences": cut[: p.max_recorded]})
            if keep or p.keep_empty:
                evidence.append(h)
        before = sum(self.size(t) for _, _, t in units)
        after = sum(self.size(t) for t in kept.values())
        written: dict[str, Any] = {EVIDENCE: evidence, EVIDENCE_TEXT: {h.id: out_text[h.id] for h in evidence}}
        compression: dict[str, Any] = {"budget": p.budget, "unit": p.unit, "before": before, "after": after,
                                       "passages": record}
        if p.graph_evidence:
            kept_lines = [line for j, line in enumerate(lines) if (-1, j) in kept]
            written[GRAPH_EVIDENCE] = kept_lines
            compression["triples_kept"] = len(kept_lines)
            compression["triples_cut"] = [line for line in lines if line not in kept_lines][: p.max_recorded]
        written[COMPRESSION] = compression
        return written

    def _select(self, question: str, units: list[tuple[int, int, str]]) -> dict[tuple[int, int], str]:
        """(passage index, position) -> kept text: best units first while they fit the budget."""
        if not units:
            return {}
        q = self.embedder.encode_queries([question])[0].astype(np.float64)
        cos = self.embedder.encode_passages([t for _, _, t in units]).astype(np.float64) @ q
        order = sorted(range(len(units)), key=lambda k: (-round(float(cos[k]), 6),
                                                         units[k][0] if units[k][0] >= 0 else 1 << 30, units[k][1]))
        kept: dict[tuple[int, int], str] = {}
        room = self.params.budget
        for k in order:
            i, j, text = units[k]
            n = self.size(text)
            if n <= room:
                kept[(i, j)] = text
                room -= n
        if not kept:  # not even the best unit fits: keep it, cut to the budget
            i, j, text = units[order[0]]
            end = self.params.budget if self.counter is None else self.counter.prefix_chars(text, self.params.budget)
            kept[(i, j)] = text[:end]
        return kept
