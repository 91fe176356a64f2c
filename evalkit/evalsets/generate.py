"""Eval sets from your own corpus: ``evalkit evalset generate``.

What it is for: the first thing a team without an eval set needs is one. This module
turns a corpus into candidate questions, each with its gold documents
(``relevant_doc_ids``: the passages it was written from), a ``reference_answer``, a
``type`` and a ``lang``, and the provenance a reviewer needs (``generated``:
:mod:`evalkit.evalsets.provenance`). Two generators exist:

- ``template/v1`` (the default, offline, deterministic): rules over the corpus itself.
  A sentence that names an entity (the GraphRAG entity graph's ``fast`` extractor) and
  states a value (an amount with its unit, a share, a year, a date) becomes a cloze
  question ("____ 元") or a wh-question ("多少元", "哪一年", "什么时候"; "how many days",
  "which year", "when"), in the sentence's language. Two documents that share an entity
  in the entity graph give a two-hop question that asks one value of each. Same corpus
  and seed: the same questions, in the same order.
- ``llm/v1`` (``--llm``): an LLM writes each question type from prompts
  (:mod:`evalkit.evalsets.gen_prompts`), and every item is checked before it is kept
  (:mod:`evalkit.evalsets.gen_llm`).

Template questions are what they are: readable, answerable from their gold passages,
but closer to the passage wording than a person writes (measured in
``benchmarks/evalset_generation.py``). Review them (``evalkit evalset review``).
"""
from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.cachestore import default_cache_root
from evalkit.evalsets.corpus_identity import doc_fingerprint
from evalkit.evalsets.lang import guess_lang
from evalkit.index.chunking import with_defaults
from evalkit.index.corpus import Corpus
from evalkit.index.entity_graph import GraphSpec
from evalkit.index.resources import Resources

TEMPLATE = "template/v1"
GEN_TYPES = ("single", "multi_hop", "comparison", "colloquial", "unanswerable")
TEMPLATE_TYPES = ("single", "multi_hop")
MIN_SENTENCE, MAX_SENTENCE = 10, 180  # characters of a sentence a template question is made from
MAX_ENTITY_DOCS = 4  # an entity in more documents than this is too common to link two of them


@dataclass(frozen=True)
class GenOptions:
    """What ``generate`` was asked for: how many, which types, which language, which seed."""

    n: int = 200
    types: tuple[str, ...] = GEN_TYPES
    lang: str = "auto"
    seed: int = 0

    def params(self) -> dict[str, Any]:
        return {"n": self.n, "types": list(self.types), "lang": self.lang, "seed": self.seed}


@dataclass(frozen=True)
class Item:
    """One generated question before it becomes an eval-set line."""

    question: str
    reference_answer: str
    relevant_doc_ids: tuple[str, ...]
    type: str
    lang: str
    pattern: str  # cloze, wh, two_hop (template); the prompt's type (llm)
    sources: tuple[str, ...] = ()  # the documents it was written from (gold, or the look-alikes of an unanswerable)
    checks: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        """A stable id: the same question over the same gold documents always gets the same one."""
        blob = json.dumps([self.question, list(self.relevant_doc_ids)], ensure_ascii=False)
        return "g-" + hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]

    def to_line(self, corpus: Corpus, generator: str, params: dict[str, Any], model: str = "") -> dict[str, Any]:
        """The eval-set record, with ``generated`` provenance (source fingerprints from ``corpus``)."""
        sources = {d: doc_fingerprint(corpus.by_id[d].title, corpus.by_id[d].text, corpus.by_id[d].metadata)
                   for d in (self.sources or self.relevant_doc_ids)}
        gen: dict[str, Any] = {"generator": generator, "params": params, "sources": sources, "pattern": self.pattern}
        if model:
            gen["model"] = model
        if self.checks:
            gen["checks"] = self.checks
        return {"id": self.id, "question": self.question, "relevant_doc_ids": list(self.relevant_doc_ids),
                "type": self.type, "lang": self.lang, "reference_answer": self.reference_answer,
                "tags": ["generated", self.pattern], "generated": gen}


# ------------------------------------------------------------------------------------ values
@dataclass(frozen=True)
class ValueRule:
    """A kind of value a sentence may state, and how a question asks for it in each language."""

    name: str
    pattern: re.Pattern[str]
    ask: dict[str, str]  # lang -> the question words; "{unit}" is the value's unit


_ZH_UNITS = r"万元|亿元|元|个工作日|工作日|天|小时|分钟|秒|个月|周|年|人|次|趟|家|台|名|项|GB|MB|TB|Mbps|ms|%"
_EN_UNITS = (r"days?|business days|hours?|minutes?|seconds?|months?|weeks?|years?|people|users|devices|employees|"
              r"requests|times|GB|MB|TB|Mbps|ms")
VALUE_RULES: tuple[ValueRule, ...] = (
    ValueRule("date", re.compile(r"(?:19|20)\d{2}年\d{1,2}月\d{1,2}日|(?:January|February|March|April|May|June|"
                                 r"July|August|September|October|November|December) \d{1,2}, (?:19|20)\d{2}|"
                                 r"\b(?:19|20)\d{2}-\d{2}-\d{2}\b"), {"zh": "什么时候", "en": "when"}),
    ValueRule("year", re.compile(r"(?<![\d.])(?:19|20)\d{2}(?=\s?年(?!\d))|\b(?:in|since|from|until) (?:19|20)\d{2}\b"),
              {"zh": "哪一", "en": "which year"}),
    ValueRule("percent", re.compile(r"(?<![\d.])\d+(?:\.\d+)?\s?%"), {"zh": "百分之多少", "en": "what percentage"}),
    ValueRule("money", re.compile(r"(?:CNY|RMB|USD|EUR|\$|¥)\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:million|k))?"),
              {"zh": "多少钱", "en": "how much"}),
    ValueRule("amount", re.compile(rf"(?<![\d.A-Za-z-])\d[\d,]*(?:\.\d+)?\s?(?:{_ZH_UNITS})(?![A-Za-z])|"
                                   rf"\b\d[\d,]*(?:\.\d+)?\s(?:{_EN_UNITS})\b"),
              {"zh": "多少{unit}", "en": "how many {unit}"}),
)
_NUMBER = re.compile(r"[\d,.]+")


@dataclass(frozen=True)
class Value:
    """A value found in a sentence: where, what kind, and its unit (empty when it has none)."""

    start: int
    end: int
    rule: ValueRule
    unit: str

    def text(self, sentence: str) -> str:
        return sentence[self.start:self.end]


def find_values(sentence: str) -> list[Value]:
    """The values a sentence states, in order, none overlapping (the first rule that matches wins)."""
    taken: list[Value] = []
    for rule in VALUE_RULES:
        for m in rule.pattern.finditer(sentence):
            start, end = m.span()
            if rule.name == "year" and not sentence[start].isdigit():  # "in 2026": the year only
                start = end - 4
            if any(start < v.end and v.start < end for v in taken):
                continue
            unit = _NUMBER.sub("", sentence[start:end]).strip() if rule.name == "amount" else ""
            taken.append(Value(start, end, rule, unit))
    return sorted(taken, key=lambda v: v.start)


def ask(sentence: str, value: Value, lang: str) -> str:
    """The sentence with ``value`` replaced by the question words of its kind (``750元`` -> ``多少元``)."""
    words = value.rule.ask[lang].format(unit=value.unit)
    if value.rule.name == "year" and lang == "zh":
        words = "哪一"  # the 年 after the year stays: 哪一年
    return (sentence[:value.start] + words + sentence[value.end:]).strip()


def blank(sentence: str, value: Value) -> str:
    """The sentence with ``value`` blanked out; its unit stays (``750元`` -> ``____元``)."""
    keep = value.unit if value.rule.name == "amount" else ""
    return (sentence[:value.start] + "____" + keep + sentence[value.end:]).strip()


# -------------------------------------------------------------------------------- templates
_END = "。.！!？?；;，,：: "


def _wh_question(title: str, sentence: str, value: Value, lang: str) -> str:
    body = ask(sentence, value, lang).rstrip(_END)
    if lang == "zh":
        return f"根据《{title}》，{_ZH_GAP.sub('', body)}？"
    return f'According to "{title}", {body}?'


def _cloze_question(title: str, sentence: str, value: Value, lang: str) -> str:
    body = blank(sentence, value).rstrip(_END)
    body = _ZH_GAP.sub("", body) if lang == "zh" else body
    return f"填空（据《{title}》）：{body}。" if lang == "zh" else f'Fill in the blank (from "{title}"): {body}.'


@dataclass(frozen=True)
class Fact:
    """A sentence of a document that names an entity and states a value."""

    doc_id: str
    title: str
    sentence: str
    entities: tuple[str, ...]
    value: Value
    lang: str


_ENUMERATOR = re.compile(r"^(?:[QA][:：]\s*|[-•*·]\s*|(?:[一二三四五六七八九十]+、|\(?\d+(?:\.\d+)*[.)、]?\s+|\d+(?:\.\d+)+)"
                         r"(?:[^：:，,。\s]{1,8}：)?)\s*")  # a bullet's label ("- 银牌：") is kept: it says what the item is
_ZH_GAP = re.compile(r"\s+(?=多少|什么时候|哪一|百分之|____)|(?<=____)\s+|(?<=哪一)\s+")  # "入职前 1 个" -> "入职前多少个"


def clean(sentence: str) -> str:
    """A sentence without its list marker and short heading ("6.2 ", "四、提交时限：", "- ")."""
    return _ENUMERATOR.sub("", sentence.strip(), count=1).strip()


def facts(corpus: Corpus, sentences: dict[str, list[list[Any]]], lang: str = "auto") -> list[Fact]:
    """Every (sentence, first value) of the corpus whose sentence names an entity, in corpus order.

    ``sentences`` is the entity graph's ``{passage id: [[sentence, [entity ids]], ...]}``
    over one passage per document. ``lang`` other than ``auto`` keeps sentences of that language.
    """
    out = []
    for doc in corpus.documents:
        for raw, entities in sentences.get(doc.id, []):
            sentence = clean(raw)
            if not (MIN_SENTENCE <= len(sentence) <= MAX_SENTENCE) or not entities:
                continue
            values = find_values(sentence)
            s_lang = guess_lang(sentence)
            if not values or s_lang not in ("zh", "en") or (lang != "auto" and s_lang != lang):
                continue
            out.append(Fact(doc.id, doc.title or doc.id, sentence, tuple(entities), values[0], s_lang))
    return out


def single_items(fact: Fact) -> list[Item]:
    """The cloze and the wh-question of one fact."""
    answer = fact.value.text(fact.sentence)
    return [Item(_cloze_question(fact.title, fact.sentence, fact.value, fact.lang), answer, (fact.doc_id,),
                 "single", fact.lang, "cloze"),
            Item(_wh_question(fact.title, fact.sentence, fact.value, fact.lang), fact.sentence, (fact.doc_id,),
                 "single", fact.lang, "wh")]


def two_hop_item(entity: str, a: Fact, b: Fact) -> Item:
    """A question that asks one value of each of two documents that share ``entity``."""
    qa = ask(a.sentence, a.value, a.lang).rstrip(_END)
    qb = ask(b.sentence, b.value, b.lang).rstrip(_END)
    if a.lang == "zh":
        qa, qb = _ZH_GAP.sub("", qa), _ZH_GAP.sub("", qb)
        question = f"关于“{entity}”：根据《{a.title}》，{qa}？根据《{b.title}》，{qb}？"
    else:
        question = f'About {entity}: according to "{a.title}", {qa}? And according to "{b.title}", {qb}?'
    return Item(question, f"{a.sentence} {b.sentence}", (a.doc_id, b.doc_id), "multi_hop", a.lang, "two_hop")


LABEL_RANK = {"org": 0, "code": 0, "name": 1, "acronym": 1, "proper": 2, "person": 2, "place": 2, "alias": 0}
"""How specific an entity label is (lower: better at linking two documents); others (``compound``) rank 3."""
PARALLEL_SIM = 0.2
"""Least character-3-gram Jaccard of two linked sentences: below it, two facts that merely share a word
(之日起, USD, 福利) were glued into one question (9 of 11 such questions read in the demo sample were
not worth keeping; benchmarks/evalset_generation.py)."""


def _grams(text: str) -> set[str]:
    t = re.sub(r"\s+", "", text.casefold())
    return {t[i:i + 3] for i in range(max(1, len(t) - 2))}


def parallel(a: Fact, b: Fact) -> float:
    """How alike two facts are as statements of one attribute: 0 unless they state the same kind of value
    (and unit), else the character-3-gram Jaccard of their sentences."""
    if (a.value.rule.name, a.value.unit, a.lang) != (b.value.rule.name, b.value.unit, b.lang):
        return 0.0
    ga, gb = _grams(a.sentence), _grams(b.sentence)
    return len(ga & gb) / len(ga | gb)


def pairs(graph: Any, by_doc: dict[str, list[Fact]]) -> list[tuple[str, Fact, Fact]]:
    """(entity name, fact of A, fact of B): at most one per pair of documents A < B sharing an entity.

    Both facts must name the shared entity and state the same attribute: the same kind of
    value and unit, in sentences at least ``PARALLEL_SIM`` alike (:func:`parallel`), so the
    question asks one thing of two documents (a policy and its successor, two suppliers'
    lead times). Per document pair the most alike facts win, then the most specific entity
    (in the fewest documents, then by ``LABEL_RANK``, then the longest name). Entities in more
    than ``MAX_ENTITY_DOCS`` documents are too common to link by.
    """
    best: dict[tuple[str, str], tuple[tuple[float, int, int, int, str], str, Fact, Fact]] = {}
    for node in sorted(graph.graph.nodes):
        data = graph.graph.nodes[node]
        docs = sorted(data["docs"])
        if not 2 <= len(docs) <= MAX_ENTITY_DOCS:
            continue
        rank = (len(docs), LABEL_RANK.get(data["label"], 3), -len(data["name"]), node)
        naming = {d: [f for f in by_doc.get(d, []) if node in f.entities] for d in docs}
        for i, da in enumerate(docs):
            for db in docs[i + 1:]:
                scored = [(parallel(fa, fb), fa, fb) for fa in naming[da] for fb in naming[db]]
                if not scored:
                    continue
                sim, fa, fb = max(scored, key=lambda t: t[0])
                key = (-sim, *rank)
                if sim >= PARALLEL_SIM and ((da, db) not in best or key < best[(da, db)][0]):
                    best[(da, db)] = (key, graph.name(node), fa, fb)
    return [(name, fa, fb) for _, (_, name, fa, fb) in sorted(best.items())]


def entity_graph(corpus: Corpus, cache_root: Path | None = None) -> Any:
    """The GraphRAG entity graph (``fast`` mode) over one passage per document, built or loaded from the cache."""
    resources = Resources(corpus, Path(cache_root) if cache_root else default_cache_root())
    return resources.graph_index(GraphSpec(), with_defaults({"method": "document", "prepend_title": False}))


def template_items(corpus: Corpus, options: GenOptions, graph: Any, taken: Iterable[str] = ()) -> list[Item]:
    """Up to ``options.n`` template questions, spread evenly over the requested template types.

    Deterministic: candidates are listed in corpus order, shuffled with ``options.seed``,
    and one question is made per sentence (a cloze or a wh-question, alternately).
    Questions whose id is in ``taken`` (already in the set) are passed over.
    """
    rng = random.Random(options.seed)
    found = facts(corpus, graph.sentences, options.lang)
    pools: dict[str, list[Item]] = {}
    if "single" in options.types:
        singles = [single_items(f)[i % 2] for i, f in enumerate(found)]
        rng.shuffle(singles)
        pools["single"] = singles
    if "multi_hop" in options.types:
        by_doc: dict[str, list[Fact]] = {}
        for f in found:
            by_doc.setdefault(f.doc_id, []).append(f)
        hops = [two_hop_item(e, a, b) for e, a, b in pairs(graph, by_doc)]
        rng.shuffle(hops)
        pools["multi_hop"] = hops
    return take_round_robin(pools, options.n, taken)


def take_round_robin(pools: dict[str, list[Item]], n: int, taken: Iterable[str] = ()) -> list[Item]:
    """Take items from the pools in turn (type order as given) until ``n``, skipping repeated ids and
    questions and the ids in ``taken``; a pool that runs dry leaves its share to the others."""
    out: list[Item] = []
    seen: set[str] = set(taken)
    iters = {k: iter(v) for k, v in pools.items()}
    while len(out) < n and iters:
        for kind in list(iters):
            item = next((x for x in iters[kind] if x.id not in seen and x.question not in seen), None)
            if item is None:
                del iters[kind]
                continue
            seen.update((item.id, item.question))
            out.append(item)
            if len(out) == n:
                break
    return out


def unsupported_types(types: Iterable[str], supported: Sequence[str]) -> list[str]:
    """The requested types a generator cannot make (reported, never silently ignored)."""
    return [t for t in types if t not in supported]
