"""The LLM question generator (``evalkit evalset generate --llm SPEC``): prompt, parse, check, keep.

For each attempt it takes the next source of the next requested type (round robin over
the types; each type's sources shuffled once with the seed):

- ``single``, ``colloquial``, ``unanswerable``: one window of consecutive sentences of a
  document (at most ``WINDOW_CHARS`` characters);
- ``multi_hop``, ``comparison``: two documents linked by an entity of the GraphRAG entity
  graph, each shown as the window around its first sentence naming that entity.

It sends the type's prompt (:mod:`evalkit.evalsets.gen_prompts`) through the one
``LLMClient`` (answer cache, deadline and retries of the spec, usage accounting under the
purpose ``evalset_generate``), reads the JSON, and keeps the item only when it passes
every check of :mod:`evalkit.evalsets.gen_checks`. Every attempt ends in exactly one
outcome: ``kept`` or one drop reason (``llm_<kind>`` for a call that failed: ``llm_timeout``,
``llm_bad_json``...; ``bad_item`` for JSON without the type's keys), so the counts add up
to the attempts. It stops at ``n`` kept items or when the sources run out.
"""
from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.cachestore import default_cache_root
from evalkit.evalsets import gen_checks
from evalkit.evalsets.gen_prompts import PROMPT_VERSION, PROMPTS, read_reply, render
from evalkit.evalsets.generate import MAX_ENTITY_DOCS, GenOptions, Item
from evalkit.evalsets.lang import guess_lang
from evalkit.index.chunking import with_defaults
from evalkit.index.corpus import Corpus
from evalkit.index.entities import split_sentences
from evalkit.index.resources import Resources
from evalkit.llm.base import LLMError

WINDOW_CHARS = 700
LLM_TYPES = tuple(PROMPTS)
PURPOSE = "evalset_generate"


@dataclass(frozen=True)
class Source:
    """What one attempt writes a question from: the passages shown and the documents they belong to."""

    passages: tuple[tuple[str, str], ...]  # (document id, text shown)
    entity: str = ""


@dataclass
class Outcome:
    """What the attempts came to: the kept items and, per reason, how many were dropped."""

    items: list[Item] = field(default_factory=list)
    dropped: Counter = field(default_factory=Counter)
    attempts: int = 0
    dedup: str = ""


def windows(text: str, limit: int = WINDOW_CHARS) -> list[str]:
    """The text cut into windows of whole consecutive sentences of at most ``limit`` characters."""
    out: list[str] = []
    current = ""
    for sentence in split_sentences(text):
        if current and len(current) + len(sentence) + 1 > limit:
            out.append(current)
            current = ""
        current = f"{current} {sentence}".strip() if current else sentence[:limit]
    return out + ([current] if current else [])


def single_sources(corpus: Corpus) -> list[Source]:
    """Every window of every document, in corpus order."""
    return [Source(((doc.id, w),)) for doc in corpus.documents for w in windows(doc.text)]


def window_naming(sentences: list[list[Any]], node: str, limit: int = WINDOW_CHARS) -> str:
    """The sentences from the one before the first that names ``node`` on, up to ``limit`` characters."""
    first = next((i for i, (_, ids) in enumerate(sentences) if node in ids), 0)
    return windows(" ".join(s for s, _ in sentences[max(0, first - 1):]), limit)[0]


def pair_sources(graph: Any) -> list[Source]:
    """One source per pair of documents sharing an entity (the rarest shared one), in id order."""
    best: dict[tuple[str, str], tuple[int, str]] = {}
    for node in sorted(graph.graph.nodes):
        docs = sorted(graph.graph.nodes[node]["docs"])
        if 2 <= len(docs) <= MAX_ENTITY_DOCS:
            for i in range(len(docs)):
                for j in range(i + 1, len(docs)):
                    key = (docs[i], docs[j])
                    if key not in best or (len(docs), node) < best[key]:
                        best[key] = (len(docs), node)
    out = []
    for (a, b), (_, node) in sorted(best.items()):
        shown = tuple((d, window_naming(graph.sentences.get(d, []), node)) for d in (a, b))
        if all(text for _, text in shown):
            out.append(Source(shown, graph.name(node)))
    return out


@dataclass
class LLMGenerator:
    """Writes and checks questions with an LLM; see the module docstring."""

    client: Any  # evalkit.llm.LLMClient
    judge: Any  # a claim judge: make_judge("offline")
    search: Callable[[str, int], list[tuple[str, str]]]  # BM25 over the corpus: (question, k) -> [(id, text)]
    dedup: gen_checks.Dedup

    def run(self, corpus: Corpus, options: GenOptions, graph: Any, seen_questions: list[str]) -> Outcome:
        rng = random.Random(options.seed)
        singles, pairs = single_sources(corpus), pair_sources(graph)
        pools = {}
        for kind in options.types:
            pool = list(pairs if PROMPTS[kind].passages == 2 else singles)
            rng.shuffle(pool)
            pools[kind] = iter(pool)
        for q in seen_questions:
            self.dedup.add(q)
        out = Outcome(dedup=self.dedup.method)
        while len(out.items) < options.n and pools:
            for kind in list(pools):
                source = next(pools[kind], None)
                if source is None:
                    del pools[kind]
                    continue
                out.attempts += 1
                item, reason = self.attempt(kind, source, options.lang)
                if item is None:
                    out.dropped[reason] += 1
                    continue
                out.items.append(item)
                self.dedup.add(item.question)
                if len(out.items) == options.n:
                    break
        return out

    def attempt(self, kind: str, source: Source, lang: str) -> tuple[Item | None, str]:
        """One question of type ``kind`` from ``source``: (the item, "") or (None, why it was dropped)."""
        lang = guess_lang(" ".join(t for _, t in source.passages)) if lang == "auto" else lang
        system, user = render(kind, lang, source.passages, source.entity)
        try:
            value, _ = self.client.chat_json(user, system=system, expect=dict)
        except LLMError as e:
            return None, f"llm_{e.kind}"
        reply, _problem = read_reply(kind, value)
        if reply is None:
            return None, "bad_item"
        question, answer = reply["question"], reply["answer"]
        copied, share = gen_checks.copies(question, source.passages)
        if copied:
            return None, copied
        docs = tuple(d for d, _ in source.passages)
        checks: dict[str, Any] = {"copy_share": share}
        if kind == "unanswerable":
            found = gen_checks.answerable_somewhere(self.judge, self.search, question, [answer])
            if found is not None:
                return None, "answerable_in_corpus"
            checks["bm25_top_k_supporting"] = 0
        else:
            reason, note = gen_checks.support(self.judge, question, answer, source.passages)
            if reason is not None:
                return None, reason
            checks["support"] = note
        if self.dedup.is_duplicate(question):
            return None, "near_duplicate"
        checks["dedup"] = self.dedup.method
        gold = () if kind == "unanswerable" else docs
        extra = {"formal_question": reply["formal_question"]} if "formal_question" in reply else {}
        extra.update({"attribute": reply["attribute"]} if "attribute" in reply else {})
        return Item(question, answer, gold, kind, lang, kind, sources=docs, checks={**checks, **extra}), ""


def bm25_search(corpus: Corpus, cache_root: Any = None) -> Callable[[str, int], list[tuple[str, str]]]:
    """``search(question, k)``: the BM25 top ``k`` passages of the corpus (fixed chunks), as (id, text)."""
    resources = Resources(corpus, Path(cache_root) if cache_root else default_cache_root())
    chunking = with_defaults({"method": "fixed"})
    state: dict[str, Any] = {}

    def search(question: str, k: int) -> list[tuple[str, str]]:
        if not state:
            state["index"] = resources.bm25_index("auto", chunking, 0.9, 0.4, "lucene")
            state["passages"] = resources.passages(chunking)
        return [(pid, state["passages"].text(pid)) for pid, _ in state["index"].search(question, k)]

    return search


GENERATOR = PROMPT_VERSION
