"""Memos of text analyses: one switch for the sharing added for speed, and one way to clear every cache.

What it is for: the offline judge reads the same texts many times (three calls per generated
answer: the answer against its evidence, then each claim against its own citations; passages
that queries and variants share), and some analyses used to be redone for every value or
claim (the numbers stated in every passage, the 6-letter prefixes of a window's terms). The
analyses that are pure functions of their arguments are computed once and reused:

- :func:`shared` marks such a function (``functools.lru_cache``, bounded) and, while
  :func:`sharing` is off, calls it afresh every time;
- :func:`enabled` tells code with a faster exact path (the part-of-speech decoder of
  :mod:`evalkit.text.postag`, the prefix index of :func:`evalkit.text.lexicon.term_found`, the
  skipped clarification scan of :func:`evalkit.text.refusal_rules.refusal_spans`, the early return
  of :func:`evalkit.text.dates.find_dates` on a text that spells no date, a claim's atoms built on
  its evidence reading in :func:`evalkit.text.values.extract_atoms`, the word and Chinese-run memos
  of :mod:`evalkit.text.tokenize`) whether to take it, so the path from before the sharing stays runnable;
- :func:`clear_caches` empties every text cache of :mod:`evalkit.text` and
  :mod:`evalkit.judges` (loaders of models and word lists excepted): a first sight of every text.

``tests/judges/test_sharing.py`` judges every case of the judge data sets with the sharing on
and off (every cache cleared before each call) and compares every verdict, reason and figure
(``test_text_sharing.py``, ``test_abstention_sharing.py`` and ``tests/llm/test_extractive_sharing.py``
do the same for the tokens, dates and atoms, the abstention findings and the extractive answers);
``benchmarks/judge_speed.py --compare`` times both.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache, wraps
from typing import Any, TypeVar, cast

__all__ = ["clear_caches", "enabled", "shared", "sharing"]

F = TypeVar("F", bound=Callable[..., Any])
_ON = [True]
_PACKAGES = ("evalkit.text", "evalkit.judges")


def enabled() -> bool:
    """Whether the sharing is on (the default)."""
    return _ON[0]


@contextmanager
def sharing(on: bool) -> Iterator[None]:
    """Within the block, the sharing is ``on`` (or off: every :func:`shared` function computes afresh)."""
    before, _ON[0] = _ON[0], on
    try:
        yield
    finally:
        _ON[0] = before


def shared(maxsize: int) -> Callable[[F], F]:
    """Decorator: cache a pure function of hashable arguments (at most ``maxsize`` results), while the
    sharing is on."""
    def wrap(f: F) -> F:
        cached = lru_cache(maxsize=maxsize)(f)

        @wraps(f)
        def call(*args: Any, **kwargs: Any) -> Any:
            return cached(*args, **kwargs) if _ON[0] else f(*args, **kwargs)

        call.cache_clear = cached.cache_clear  # type: ignore[attr-defined]  # as lru_cache's, for clear_caches
        call.cache_info = cached.cache_info  # type: ignore[attr-defined]
        return cast(F, call)
    return wrap


def clear_caches() -> int:
    """Empty the text caches of every loaded module of :mod:`evalkit.text` and :mod:`evalkit.judges`
    (not the one-entry loaders: tokenizers, jieba, word lists); the number of caches emptied."""
    n = 0
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(_PACKAGES):
            continue
        for f in list(vars(module).values()):
            info = getattr(f, "cache_info", None)
            if callable(info) and getattr(f, "__module__", None) == name and info().maxsize not in (None, 1):
                f.cache_clear()
                n += 1
    return n
