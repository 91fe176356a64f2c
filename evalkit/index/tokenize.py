"""Tokenisation for BM25 that is right for Chinese and for English, and for text mixing both.

``auto`` (the default) splits text into runs of CJK characters and runs of everything
else: CJK runs go through jieba's word segmentation, the rest through a regex word
splitter that keeps codes whole (``E-4012``, ``retry.max_attempts``, ``LX-200``) and
also emits their parts, lower-cases, drops English stop words and Porter-stems. ``en``
applies only the English path and ``zh`` only jieba (with lower-casing). ``whitespace``
is a plain split, for tests.

A tokenizer's ``identity`` names everything that changes its output (the part of the
BM25 index cache key that is not the corpus or the chunking).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from evalkit.errors import UnknownNameError

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_RUNS = re.compile(f"([{_CJK}]+)|([^{_CJK}]+)")
_WORD = re.compile(r"[A-Za-z0-9]+(?:[-_./][A-Za-z0-9]+)*")
_PART = re.compile(r"[A-Za-z0-9]+")
_POSSESSIVE = re.compile(r"['\u2019]s\b")
_CJK_TOKEN = re.compile(f"[{_CJK}A-Za-z0-9]")

# A standard English stop-word list (the Lucene/Anserini English analyzer's 33 words).
STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these "
    "they this to was will with".split()
)

MODES = ("auto", "en", "zh", "whitespace")
# Part of every identity: bump when the output for the same settings changes, so token
# caches built by an older version are not reused (v2: parts of codes are stemmed;
# v3: possessive 's dropped and empty stems skipped, as Lucene's English analyzer does).
VERSION = 3


@lru_cache(maxsize=1)
def _stemmer() -> Callable[[str], str]:
    """Porter stemming, cached. One snowball stemmer per thread: a stemmer keeps its word in
    instance state, so sharing one between query threads raised IndexError and returned wrong
    stems (tests/index/test_tokenize.py)."""
    import threading

    import snowballstemmer

    local = threading.local()
    cache: dict[str, str] = {}

    def run(word: str) -> str:
        out = cache.get(word)
        if out is None:
            stem = getattr(local, "stem", None)
            if stem is None:
                stem = local.stem = snowballstemmer.stemmer("porter")
            out = cache[word] = stem.stemWord(word)
        return out

    return run


@lru_cache(maxsize=1)
def _jieba() -> Callable[[str], list[str]]:
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba.lcut


def _english(text: str, stem: bool, stopwords: bool) -> list[str]:
    out: list[str] = []
    stemmer = _stemmer() if stem else None
    for m in _WORD.finditer(_POSSESSIVE.sub("", text.lower())):
        word = m.group(0)
        parts = _PART.findall(word)
        # a code (E-4012, retry.max_attempts) is kept whole and unstemmed; its parts are
        # stemmed like any word, so a query in words ("max attempts") matches them
        words = [(w, True) for w in parts] if len(parts) == 1 else [(word, False), *((w, True) for w in parts)]
        for w, stemmable in words:
            if stopwords and w in STOPWORDS:
                continue
            term = stemmer(w) if stemmer and stemmable else w
            if term:
                out.append(term)
    return out


def _chinese(text: str) -> list[str]:
    return [t.lower() for t in _jieba()(text) if _CJK_TOKEN.search(t)]


class Tokenizer:
    """Turns text into BM25 terms. Build with ``Tokenizer(mode, stem=True, stopwords=True)``."""

    def __init__(self, mode: str = "auto", stem: bool = True, stopwords: bool = True):
        if mode not in MODES:
            raise UnknownNameError(f"unknown tokenizer '{mode}'; valid: {', '.join(MODES)}")
        self.mode, self.stem, self.stopwords = mode, stem, stopwords

    @property
    def identity(self) -> str:
        parts = [f"tok={self.mode}/v{VERSION}"]
        if self.mode in ("auto", "en"):
            parts.append(f"porter={self.stem}:stop={self.stopwords}")
        if self.mode in ("auto", "zh"):
            import importlib.metadata as md

            parts.append(f"jieba={md.version('jieba')}")
        return ",".join(parts)

    def __call__(self, text: str) -> list[str]:
        if self.mode == "whitespace":
            return text.lower().split()
        if self.mode == "en":
            return _english(text, self.stem, self.stopwords)
        if self.mode == "zh":
            return _chinese(text)
        out: list[str] = []
        for cjk, other in _RUNS.findall(text):
            out.extend(_chinese(cjk) if cjk else _english(other, self.stem, self.stopwords))
        return out
