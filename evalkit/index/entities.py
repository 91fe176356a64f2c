"""Entity extraction for the entity graph: normalisation, aliases, the extractors and the ``fast`` one.

An extractor is a function ``extract(chunk_text) -> (mentions, relations)``, chosen by
``mode`` from ``EXTRACTORS``. Two modes exist:

- ``fast`` (below) reads entities off the text itself, with no model and no network
  (the language rules are in ``evalkit.index.entity_rules``);
- ``llm`` (``evalkit.index.llm_entities``) asks a configured LLM, one JSON call per
  passage, for entities and typed, directed relations with an evidence span and a
  confidence; its names go through the same normalisation and alias table, so both
  modes make one node of one thing. At query time it finds entities with the ``fast``
  rules (no LLM call per question).

The ``fast`` extractor:

- Chinese (runs with CJK characters) through ``jieba.posseg`` part-of-speech tags: ``nr``
  person, ``ns`` place, ``nt`` organisation, ``nz`` other proper noun, plus noun
  compounds (two or three adjacent noun tokens, e.g. 主控+芯片) and company names ending
  in 有限公司/公司/集团 (a bracketed place such as （合肥） is kept inside).
- Latin script through a small rule-based chunker: capitalised multi-word names
  (``Orvanta Semiconductor Pte. Ltd.``), acronyms, code-like tokens (``LX-200 Pro``,
  ``E-4012``, ``retry.max_attempts``) and lower-case noun compounds (``lead time``).
  Number+unit tokens (``8GB``, ``2.2GHz``) and labels before a colon are not
  entities; a single capitalised word that starts a sentence is one only when the text
  also names it elsewhere.
- Names from the alias table (canonical names and their variants) wherever they occur.

Its relations are ``co_occurs`` (no typed relations): a pair of entities in the same
sentence gets ``sentence_weight`` per shared sentence; a pair that shares only the
chunk gets ``chunk_weight`` once.

Normalisation makes one node of spellings that differ in case, width, whitespace,
punctuation or a legal suffix: ``ACME Corp.``, ``Acme Corp`` and ``ACME`` all become
``acme``; ``岚屿微电子（合肥）有限公司`` becomes ``岚屿微电子``.
"""
from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.errors import UnknownNameError, did_you_mean
from evalkit.index.entity_rules import HAS_CJK, LEGAL_EN, LEGAL_ZH, chinese, english

# Bump when the fast extractor's output changes for the same input (part of the cache key).
FAST_VERSION = 1
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_NON_CJK_RUN = re.compile(f"[^{_CJK}（）()]+")
_HARD_END = re.compile(r"[。！？；!?;\n]+")
_SOFT_END = re.compile(r"(?<=[.])\s+(?=[A-Z0-9\"'(])")
_ABBREV = re.compile(r"\b(?:pte|ltd|co|inc|corp|mr|mrs|ms|dr|st|vs|no|jr|sr|e\.g|i\.e|u\.s)\.$", re.IGNORECASE)

_PLACE_BEFORE_LEGAL = re.compile(r"\([^()]{1,8}\)\s*(?=(?:股份)?有限(?:责任)?公司|集团)")
_PUNCT = re.compile(r"[^\w]|_")


def normalise(text: str, strip_legal: bool = True) -> str:
    """The matching form of a name: NFKC, case-folded, punctuation to spaces, legal suffix dropped.

    Tokens stay separated by single spaces (used for whole-word matching); the node id
    is this string without spaces (``ident``).
    """
    t = unicodedata.normalize("NFKC", text).casefold()
    if strip_legal:
        t = _PLACE_BEFORE_LEGAL.sub("", t)
    tokens = _PUNCT.sub(" ", t).split()
    if strip_legal:
        while len(tokens) > 1 and tokens[-1] in LEGAL_EN:
            tokens.pop()
        if tokens:
            for suffix in LEGAL_ZH:
                if tokens[-1].endswith(suffix) and len(tokens[-1]) - len(suffix) >= 2:
                    tokens[-1] = tokens[-1][: -len(suffix)]
                    break
    return " ".join(tokens)


def ident(key: str) -> str:
    """Node id of a normalised key (spaces removed: ``LX-200``, ``LX 200`` and ``LX200`` meet)."""
    return key.replace(" ", "")


@dataclass(frozen=True)
class Mention:
    """One entity occurrence: surface text, node id, spaced key, label, sentence index."""

    surface: str
    id: str
    key: str
    label: str
    sentence: int


@dataclass(frozen=True)
class Relation:
    """An edge between two node ids: type, weight, and how many sentences support it.

    Typed relations (``llm`` mode) also carry the passage words that state them
    (``evidence``) and the extractor's ``confidence``.
    """

    source: str
    target: str
    type: str
    weight: float
    sentences: int = 0
    evidence: str = ""
    confidence: float | None = None


Extractor = Callable[[str], tuple[list[Mention], list[Relation]]]


class AliasTable:
    """``{canonical: [variant, ...]}`` from config: every variant's id maps to the canonical id."""

    def __init__(self, aliases: Mapping[str, Iterable[str]] | None = None, strip_legal: bool = True):
        self.raw = {str(k): sorted(str(v) for v in vs) for k, vs in sorted((aliases or {}).items())}
        self.strip_legal = strip_legal
        self.canonical: dict[str, str] = {}  # variant id -> canonical id
        self.names: dict[str, str] = {}      # canonical id -> display name
        owner: dict[str, str] = {}
        for canon, variants in self.raw.items():
            cid = ident(normalise(canon, strip_legal))
            if not cid:
                raise ValueError(f"alias canonical name {canon!r} is empty after normalisation")
            self.names[cid] = canon
            for v in [canon, *variants]:
                vid = ident(normalise(v, strip_legal))
                if not vid:
                    raise ValueError(f"alias {v!r} (of {canon!r}) is empty after normalisation")
                if owner.get(vid, canon) != canon:
                    raise ValueError(f"alias {v!r} is listed under both {owner[vid]!r} and {canon!r}; keep one")
                owner[vid] = canon
                self.canonical[vid] = cid
        # spaced keys to look for in text, longest first (a longer name wins an overlap)
        self.patterns = sorted({normalise(v, strip_legal) for c, vs in self.raw.items() for v in [c, *vs]},
                               key=lambda k: (-len(k), k))

    def resolve(self, node_id: str) -> str:
        return self.canonical.get(node_id, node_id)

    def sha256(self) -> str:
        return hashlib.sha256(json.dumps(self.raw, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def __bool__(self) -> bool:
        return bool(self.raw)


def find_keys(spaced_text: str, keys: Iterable[str]) -> list[tuple[int, int, str]]:
    """Non-overlapping occurrences of normalised ``keys`` in normalised text, longest first.

    A key with Latin letters or digits must match whole tokens; a CJK key may match
    inside a CJK run (Chinese has no spaces). Returns (start, end, key), by start.
    """
    taken: list[tuple[int, int, str]] = []
    for key in keys:
        if not key:
            continue
        start = spaced_text.find(key)
        while start >= 0:
            end = start + len(key)
            ok = not (_latin_edge(key[0]) and start > 0 and _latin_edge(spaced_text[start - 1])) and \
                not (_latin_edge(key[-1]) and end < len(spaced_text) and _latin_edge(spaced_text[end]))
            if ok and all(end <= s or start >= e for s, e, _ in taken):
                taken.append((start, end, key))
            start = spaced_text.find(key, start + 1)
    return sorted(taken)


def _latin_edge(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def split_sentences(text: str) -> list[str]:
    """Sentences of a chunk: split at 。！？；!?; and newlines, and at '. ' before a capital.

    A period after an abbreviation (``Pte.``, ``Co.``, ``Dr.``) does not end a sentence.
    """
    out: list[str] = []
    for line in _HARD_END.split(text):
        start = len(out)
        for piece in _SOFT_END.split(line):
            piece = piece.strip()
            if not piece:
                continue
            if len(out) > start and _ABBREV.search(out[-1]):
                out[-1] = f"{out[-1]} {piece}"
            else:
                out.append(piece)
    return out


# ---------------------------------------------------------------------------- the fast extractor
class FastExtractor:
    """``fast`` mode: mentions from the text itself, ``co_occurs`` relations by sentence and chunk."""

    mode = "fast"

    def __init__(self, aliases: AliasTable | None = None, sentence_weight: float = 1.0, chunk_weight: float = 0.3,
                 noun_compounds: bool = True, strip_legal_suffixes: bool = True, min_chars: int = 2):
        self.aliases = aliases or AliasTable(strip_legal=strip_legal_suffixes)
        self.sentence_weight, self.chunk_weight = sentence_weight, chunk_weight
        self.compounds, self.strip_legal, self.min_chars = noun_compounds, strip_legal_suffixes, min_chars

    @property
    def identity(self) -> str:
        return f"fast/v{FAST_VERSION},jieba={md.version('jieba')}"

    def mentions(self, text: str) -> list[Mention]:
        """Entity mentions in ``text``, in sentence order, aliases resolved to canonical ids."""
        found: list[Mention] = []
        initial: list[Mention] = []
        for si, sent in enumerate(split_sentences(text)):
            raw: list[tuple[str, str, int]] = []
            if HAS_CJK.search(sent):
                raw += chinese(sent, si, self.compounds)
            cjk = HAS_CJK.search(sent) is not None
            for m in _NON_CJK_RUN.finditer(sent):
                raw += english(m.group(0), si, m.start() == 0 and not cjk, self.compounds)
            if self.aliases:
                spaced = normalise(sent, strip_legal=False)
                raw += [(spaced[s:e], "alias", si) for s, e, _ in find_keys(spaced, self.aliases.patterns)]
            seen: set[str] = set()
            for surface, label, _ in raw:
                key = normalise(surface, self.strip_legal)
                nid = self.aliases.resolve(ident(key))
                if len(nid) < self.min_chars or nid.isdigit() or nid in seen:
                    continue
                seen.add(nid)
                (initial if label == "initial" else found).append(Mention(surface.strip(), nid, key, label, si))
        # a capitalised word that only starts a sentence is a name if the text names it elsewhere too
        named = {m.id for m in found}
        found += [Mention(m.surface, m.id, m.key, "name", m.sentence) for m in initial if m.id in named]
        return sorted(found, key=lambda m: m.sentence)

    def __call__(self, text: str) -> tuple[list[Mention], list[Relation]]:
        mentions = self.mentions(text)
        by_sentence: dict[int, set[str]] = {}
        for m in mentions:
            by_sentence.setdefault(m.sentence, set()).add(m.id)
        shared: dict[tuple[str, str], int] = {}
        for ids in by_sentence.values():
            ordered = sorted(ids)
            for a in range(len(ordered)):
                for b in range(a + 1, len(ordered)):
                    shared[(ordered[a], ordered[b])] = shared.get((ordered[a], ordered[b]), 0) + 1
        found = sorted({m.id for m in mentions})
        relations = []
        for a in range(len(found)):
            for b in range(a + 1, len(found)):
                n = shared.get((found[a], found[b]), 0)
                weight = n * self.sentence_weight if n else self.chunk_weight
                if weight > 0:
                    relations.append(Relation(found[a], found[b], "co_occurs", weight, n))
        return mentions, relations


def _fast(params: Mapping[str, Any], aliases: AliasTable, cache_root: Path | None = None) -> FastExtractor:
    return FastExtractor(aliases, params["sentence_weight"], params["chunk_weight"], params["noun_compounds"],
                         params["strip_legal_suffixes"], params["min_chars"])


def _llm(params: Mapping[str, Any], aliases: AliasTable, cache_root: Path | None = None) -> Any:
    # imported here: the llm mode's module (and the LLM client it builds) only when asked for
    from evalkit.index.llm_entities import make_llm_extractor

    return make_llm_extractor(params, aliases, cache_root)


# mode -> factory(params, aliases, cache_root) -> extractor
EXTRACTORS: dict[str, Callable[..., Any]] = {"fast": _fast, "llm": _llm}
# mode -> why it cannot be used yet (none today)
PLANNED_MODES: dict[str, str] = {}


def make_extractor(mode: str, params: Mapping[str, Any], aliases: AliasTable, cache_root: Path | None = None) -> Any:
    """The extractor for ``mode`` (raises ``ValueError`` naming the valid modes).

    ``cache_root`` is where an ``llm`` extractor keeps its LLM answer cache (default:
    ``$EVALKIT_CACHE``); ``fast`` ignores it.
    """
    if mode in PLANNED_MODES:
        raise UnknownNameError(PLANNED_MODES[mode])
    if mode not in EXTRACTORS:
        raise UnknownNameError(f"unknown extraction mode '{mode}'{did_you_mean(mode, EXTRACTORS)}")
    return EXTRACTORS[mode](params, aliases, cache_root)
