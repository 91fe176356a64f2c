"""The ``llm`` extraction mode: entities and typed, directed relations read by an LLM.

One JSON call per passage, through ``LLMClient(spec, cache_root, purpose="graph_extract")``
(``chat_json``: robust parsing, one corrective retry; the content-addressed cache makes a
rebuild free). The prompt lists the configured entity and relation types and asks for
facts the passage states, canonical names (no pronouns), and per relation an evidence
span copied from the passage and a confidence in [0, 1]. The reply is checked, not
trusted:

- names go through the same normalisation and alias table as the ``fast`` mode
  (``ACME Corp.``, ``Acme`` and an alias variant are one node); pronouns, names shorter
  than ``min_chars`` and self-loops are dropped (``relations_dropped_invalid``), so is
  a relation type outside ``relation_types`` (``relations_dropped_type``); an entity type
  outside ``entity_types`` becomes ``other``;
- a relation below ``min_confidence`` (or without a usable confidence) is dropped
  (``relations_dropped_low_confidence``); one in the grey zone ``[min_confidence,
  full_confidence)`` is kept with weight ``grey_weight``, or its confidence when that is
  unset; at or above ``full_confidence`` it weighs 1.0;
- a relation whose evidence span is not in the passage (compared after normalisation:
  case, width, punctuation and spacing may differ, words may not) is dropped
  (``relations_dropped_unstated``); so is an entity the passage never names and no kept
  relation supports (``entities_dropped_unstated``).

A passage whose call fails (HTTP error after the client's retries, no JSON after the
corrective retry, a JSON object without ``entities``/``relations`` lists) is counted in
``llm_failures`` and adds no relations; the build goes on. A configuration error (a
missing API key variable) stops it. ``stats`` after ``extract_all`` holds the counters
plus LLM calls, cache hits and tokens (in + out), which the graph's ``meta`` reports.

Query-time entity finding (``mentions``) uses the ``fast`` rules: no LLM call per
question. Graph YAML::

    graph:
      mode: llm
      llm: {backend: openai, base_url: http://localhost:8000/v1, model: qwen2.5-7b-instruct,
            api_key_env: OPENAI_API_KEY, max_tokens: 1024}
      entity_types: [organization, person, product, component, location]
      relation_types: [supplies, made_by, part_of, uses, located_in, works_for]
      min_confidence: 0.5
      full_confidence: 0.8
      aliases: {Acme Corp: [ACME, 艾克美]}
"""
from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from evalkit.index.entities import (
    AliasTable,
    FastExtractor,
    Mention,
    Relation,
    find_keys,
    ident,
    normalise,
    split_sentences,
)
from evalkit.llm.base import LLMError, LLMSpec
from evalkit.llm.registry import backend_info, require_model
from evalkit.llm.usage import Usage, usage_scope

logger = logging.getLogger(__name__)

VERSION = 1         # bump when the checking / mapping of replies changes the graph
PROMPT_VERSION = 1  # bump when the prompt's wording or example changes
PURPOSE = "graph_extract"
DEFAULT_ENTITY_TYPES = ("organization", "person", "product", "component", "location", "event")
DEFAULT_RELATION_TYPES = ("supplies", "made_by", "part_of", "uses", "located_in", "works_for", "owns",
                          "related_to")
PRONOUNS = frozenset(["it", "its", "they", "them", "their", "he", "him", "his", "she", "her", "we", "us", "our", "i",
                      "me", "you", "this", "that", "these", "those", "the company", "the firm", "the product",
                      "他", "她", "它", "他们", "她们", "它们", "我们", "你们", "该公司", "本公司", "其", "此", "该"])
# failures that a re-run may not repeat (an unusable reply or a rejected request would come back the same)
DETERMINISTIC_FAILURES = frozenset({"bad_json", "client_error"})
_CONFIDENCE_WORDS = {"high": 0.9, "medium": 0.65, "moderate": 0.65, "low": 0.3}
_TYPE_SEP = re.compile(r"[\s\-/]+")

SYSTEM = """You extract a knowledge graph from one passage: the entities it names and the relations it states between them.
Entity types: {entity_types}
Relation types: {relation_types}
Rules:
- Only facts the passage itself states. No outside knowledge, no guesses, nothing implied.
- Name every entity by its full name as the passage writes it (e.g. "Borealis Semiconductor", not "the company", "it" or "they"). Resolve pronouns to the entity they refer to. Keep the passage's language; do not translate names.
- A relation reads "source <type> target" (e.g. source "KS-9 chip", type "made_by", target "Borealis Semiconductor"). Use only the relation types listed.
- "evidence": copy, word for word, the shortest part of the passage that states the relation.
- "confidence": a number from 0 to 1, how clearly the passage states the relation.
Reply with only a JSON object:
{{"entities": [{{"name": "...", "type": "..."}}], "relations": [{{"source": "...", "type": "...", "target": "...", "evidence": "...", "confidence": 0.9}}]}}

Example
Passage: The ZX-100 gateway uses the KS-9 chip. It is assembled in Oslo.
{{"entities": [{{"name": "ZX-100 gateway", "type": "product"}}, {{"name": "KS-9 chip", "type": "component"}}, {{"name": "Oslo", "type": "location"}}], "relations": [{{"source": "ZX-100 gateway", "type": "uses", "target": "KS-9 chip", "evidence": "The ZX-100 gateway uses the KS-9 chip", "confidence": 0.95}}, {{"source": "ZX-100 gateway", "type": "located_in", "target": "Oslo", "evidence": "It is assembled in Oslo", "confidence": 0.6}}]}}"""


class UnusableReply(ValueError):
    """The LLM answered with JSON that is no extraction."""


def _types(values: Sequence[str]) -> list[str]:
    return [t for t in (_type_name(v) for v in values) if t]


def _type_name(value: Any) -> str:
    """``Made By`` / ``made-by`` / ``made_by`` -> ``made_by``."""
    return _TYPE_SEP.sub("_", str(value).strip().casefold()).strip("_") if isinstance(value, str) else ""


def _confidence(value: Any) -> float | None:
    """A number in [0, 1] (``0.9``, ``"0.9"``, ``90`` meaning 90%, ``"high"``); None when unusable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        word = value.strip().casefold().rstrip("%")
        if word in _CONFIDENCE_WORDS:
            return _CONFIDENCE_WORDS[word]
        try:
            value = float(word)
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
        return None
    if value > 1:
        value = value / 100 if value <= 100 else None
    return None if value is None else float(value)


def _name(value: Any) -> str:
    if isinstance(value, Mapping):
        value = value.get("name") or value.get("entity") or ""
    return " ".join(value.split()) if isinstance(value, str) else ""


class LLMExtractor:
    """``llm`` mode: one JSON extraction call per passage (see the module docstring)."""

    mode = "llm"

    def __init__(self, spec: LLMSpec, aliases: AliasTable | None = None, *,
                 entity_types: Sequence[str] = DEFAULT_ENTITY_TYPES,
                 relation_types: Sequence[str] = DEFAULT_RELATION_TYPES, min_confidence: float = 0.5,
                 full_confidence: float = 0.8, grey_weight: float | None = None, max_chars: int = 4000,
                 strip_legal_suffixes: bool = True, min_chars: int = 2, noun_compounds: bool = True,
                 cache_root: Path | None = None, client: Any = None):
        self.spec, self.cache_root, self._client = spec, cache_root, client
        self.aliases = aliases or AliasTable(strip_legal=strip_legal_suffixes)
        self.entity_types, self.relation_types = _types(entity_types), _types(relation_types)
        self.min_confidence, self.full_confidence, self.grey_weight = min_confidence, full_confidence, grey_weight
        self.max_chars, self.strip_legal, self.min_chars = max_chars, strip_legal_suffixes, min_chars
        self.fast = FastExtractor(self.aliases, noun_compounds=noun_compounds,
                                  strip_legal_suffixes=strip_legal_suffixes, min_chars=min_chars)
        self.system = SYSTEM.format(entity_types=", ".join(self.entity_types) or "any",
                                    relation_types=", ".join(self.relation_types) or "any (short snake_case verbs)")
        self.stats: dict[str, Any] = {}

    @property
    def client(self) -> Any:
        """The LLM client, built at first use (loading a cached graph or linking a query needs none)."""
        if self._client is None:
            from evalkit.llm.client import LLMClient

            self._client = LLMClient(self.spec, self.cache_root, purpose=PURPOSE)
        return self._client

    @property
    def identity(self) -> str:
        """Extractor and prompt versions, LLM identity and sampling settings (part of the graph's cache key)."""
        return (f"llm/v{VERSION}:prompt=v{PROMPT_VERSION}:[{self.client.identity}]:max_tokens={self.spec.max_tokens}"
                f":seed={self.spec.seed}:t={self.spec.temperature}:max_chars={self.max_chars}"
                f"|query:{self.fast.identity}")

    def mentions(self, text: str) -> list[Mention]:
        """Entities of a query, found with the ``fast`` rules (no LLM call)."""
        return self.fast.mentions(text)

    def __call__(self, text: str) -> tuple[list[Mention], list[Relation]]:
        return self.extract_all([text])[0]

    def extract_all(self, texts: Sequence[str]) -> list[tuple[list[Mention], list[Relation]]]:
        """Mentions and relations of every passage, in order; ``stats`` sums the counters and LLM usage."""
        workers = max(1, min(self.spec.concurrency, len(texts))) if backend_info(self.spec.backend).concurrent else 1
        if workers == 1:
            results = [self._one(t) for t in texts]
        else:
            with ThreadPoolExecutor(workers, thread_name_prefix="graph-llm") as pool:
                results = list(pool.map(self._one, texts))
        counts: Counter = Counter()
        usage = Usage()
        for _, _, c, u in results:
            counts.update(c)
            usage.add(u)
        self.stats = {"llm_calls": usage.calls, "llm_cache_hits": usage.cache_hits,
                      "llm_tokens": usage.tokens_in + usage.tokens_out, "llm_tokens_in": usage.tokens_in,
                      "llm_tokens_out": usage.tokens_out, "llm_retries": usage.retries,
                      **{k: counts.get(k, 0) for k in ("llm_failures", "llm_failures_transient", "relations_kept",
                                                       "relations_grey", "relations_dropped_low_confidence",
                                                       "relations_dropped_unstated", "relations_dropped_type",
                                                       "relations_dropped_invalid", "entities_dropped_unstated")}}
        if counts["llm_failures"]:
            logger.warning("entity graph (llm mode): %d of %d passages failed (%d transient); they add no relations",
                           counts["llm_failures"], len(texts), counts["llm_failures_transient"])
        return [(m, r) for m, r, _, _ in results]

    def _one(self, text: str) -> tuple[list[Mention], list[Relation], Counter, Any]:
        """One passage, in its own usage scope: (mentions, relations, counters, usage)."""
        shown = text[: self.max_chars]
        with usage_scope() as scope:
            try:
                value, _ = self.client.chat_json(f"Passage:\n{shown}", system=self.system, expect=dict)
                mentions, relations, counts = self.parse(value, shown)
            except LLMError as e:
                if e.kind == "config":
                    raise  # a missing API key or model name: every passage would fail the same way
                transient = e.kind not in DETERMINISTIC_FAILURES
                logger.debug("graph llm extraction failed (%s): %s", e.kind, e)
                mentions, relations = [], []
                counts = Counter(llm_failures=1, llm_failures_transient=int(transient))
            except (ValueError, TypeError, AttributeError) as e:  # JSON, but not an extraction
                logger.debug("graph llm extraction unusable: %s: %s", type(e).__name__, e)
                mentions, relations, counts = [], [], Counter(llm_failures=1)
        usage = Usage()
        for u in scope.values():
            usage.add(u)
        return mentions, relations, counts, usage

    def parse(self, value: Mapping[str, Any], text: str) -> tuple[list[Mention], list[Relation], Counter]:
        """Checked mentions and relations from one reply (``UnusableReply`` when it is no extraction)."""
        ents, rels = value.get("entities"), value.get("relations")
        if not isinstance(ents, list) and not isinstance(rels, list):
            raise UnusableReply("the reply has no 'entities' or 'relations' list")
        counts: Counter = Counter()
        spaced_text = normalise(text, strip_legal=False)
        spaced_sents = [normalise(s, strip_legal=False) for s in split_sentences(text)]
        labels: dict[str, str] = {}
        names: dict[str, dict[str, str]] = {}  # node id -> {surface: key}, in reply order
        for e in ents if isinstance(ents, list) else []:
            node = self._node(_name(e))
            if node is None:
                continue
            nid, surface, key = node
            names.setdefault(nid, {}).setdefault(surface, key)
            label = _type_name(e.get("type") or e.get("label")) if isinstance(e, Mapping) else ""
            if nid not in labels or labels[nid] == "other":
                labels[nid] = label if label and (label in self.entity_types or not self.entity_types) else "other"
        relations: list[Relation] = []
        anchors: dict[str, set[int]] = {}
        for r in rels if isinstance(rels, list) else []:
            if not isinstance(r, Mapping):
                counts["relations_dropped_invalid"] += 1
                continue
            src = self._node(_name(r.get("source") or r.get("head") or r.get("subject")))
            dst = self._node(_name(r.get("target") or r.get("tail") or r.get("object")))
            rel = _type_name(r.get("type") or r.get("relation") or r.get("predicate"))
            if src is None or dst is None or not rel or src[0] == dst[0]:
                counts["relations_dropped_invalid"] += 1
                continue
            if rel == "co_occurs" or (self.relation_types and rel not in self.relation_types):
                counts["relations_dropped_type"] += 1
                continue
            conf = _confidence(r.get("confidence"))
            if conf is None or conf < self.min_confidence:
                counts["relations_dropped_low_confidence"] += 1
                continue
            evidence = " ".join(str(r.get("evidence") or "").split())
            spaced_ev = normalise(evidence, strip_legal=False)
            if len(ident(spaced_ev)) < 2 or not find_keys(spaced_text, [spaced_ev]):
                counts["relations_dropped_unstated"] += 1
                continue
            if conf >= self.full_confidence:
                weight = 1.0
            else:
                weight = self.grey_weight if self.grey_weight is not None else conf
                counts["relations_grey"] += 1
            counts["relations_kept"] += 1
            sentence = next((i for i, s in enumerate(spaced_sents) if find_keys(s, [spaced_ev])), -1)
            relations.append(Relation(src[0], dst[0], rel, round(weight, 6), int(sentence >= 0), evidence,
                                      round(conf, 4)))
            for nid, surface, key in (src, dst):
                names.setdefault(nid, {}).setdefault(surface, key)
                labels.setdefault(nid, "other")
                anchors.setdefault(nid, set()).add(max(sentence, 0))
        mentions: list[Mention] = []
        for nid in sorted(names):
            where: dict[int, tuple[str, str]] = {}  # sentence -> the first spelling found in it
            for surface, key in names[nid].items():
                forms = sorted({key, normalise(surface, strip_legal=False)})
                for i, sent in enumerate(spaced_sents):
                    if i not in where and find_keys(sent, forms):
                        where[i] = (surface, key)
            first = next(iter(names[nid].items()))
            for i in anchors.get(nid, ()):
                where.setdefault(i, first)
            if not where:
                counts["entities_dropped_unstated"] += 1
                continue
            mentions += [Mention(surface, nid, key, labels.get(nid, "other"), i)
                         for i, (surface, key) in sorted(where.items())]
        mentions.sort(key=lambda m: (m.sentence, m.id))
        return mentions, relations, counts

    def _node(self, name: str) -> tuple[str, str, str] | None:
        """(node id, surface, key) of an entity name; None for a pronoun or a name too short to be one."""
        if not name or normalise(name, strip_legal=False) in PRONOUNS:
            return None
        key = normalise(name, self.strip_legal)
        nid = self.aliases.resolve(ident(key))
        if len(nid) < self.min_chars or nid.isdigit():
            return None
        return nid, name, key

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def llm_key(spec: LLMSpec) -> dict[str, Any]:
    """What of an LLM spec changes extractions (the graph's cache key): never the API key variable,
    timeouts, retries or concurrency."""
    return {"identity": spec.identity(), "temperature": spec.temperature, "max_tokens": spec.max_tokens,
            "seed": spec.seed}


def make_llm_extractor(params: Mapping[str, Any], aliases: AliasTable, cache_root: Path | None = None) -> LLMExtractor:
    """The ``llm`` extractor for ``GraphSpec`` parameters (``params["llm"]``: an ``LLMSpec`` or its dict)."""
    llm = params.get("llm")
    if llm is None:
        raise ValueError(NEEDS_LLM)
    spec = llm if isinstance(llm, LLMSpec) else LLMSpec(**dict(llm))
    if problem := needs_model(spec):
        raise ValueError(problem)
    keep = ("entity_types", "relation_types", "min_confidence", "full_confidence", "grey_weight", "max_chars",
            "strip_legal_suffixes", "min_chars", "noun_compounds")
    return LLMExtractor(spec, aliases, cache_root=cache_root, **{k: params[k] for k in keep if k in params})


NEEDS_LLM = ("extraction mode 'llm' needs an LLM: set 'llm' in the graph spec (graph: {mode: llm, llm: {backend: "
             "openai, base_url: ..., model: ...}} or llm: {backend: local}), or use mode: fast")


def needs_model(spec: LLMSpec) -> str:
    """Why ``spec`` cannot extract entities (its backend is not a language model), or ``""``."""
    return require_model(spec.backend, "extraction mode 'llm' (its 'llm')")
