"""How ``retrieve`` runs and keeps a channel search: one batch for a run's questions, and the shared result.

``SearchBatch`` searches every prepared question of a channel in one call the first time one is needed
(see ``Retrieve.prepare``); ``Searched`` is what the work memo keeps of one channel search (rankings,
milliseconds, fusion columns), so every variant that runs the same search reads the same objects.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import cached_property

from evalkit.graph.memo import SharedRanking
from evalkit.nodes.fusion import Columns
from evalkit.records import Hit


class SearchBatch:
    """One channel's search for a run's questions, done in one call the first time one is needed.

    ``skip(q)`` says a question's result is already shared by another variant: it is left out
    of the batch (and searched alone if asked for after all).
    """

    def __init__(self, questions: list[str], search: Callable[[list[str]], list[list[Hit]]],
                 skip: Callable[[str], bool]):
        self.questions, self.search, self.skip = questions, search, skip
        self.found: dict[str, list[Hit]] = {}
        self.ms: dict[str, float] = {}  # each question's share of the batch's wall time
        self.done = False
        self.lock = threading.Lock()

    def __contains__(self, question: str) -> bool:
        return question in self.questions

    def timed_hits(self, question: str) -> tuple[list[list[Hit]], float]:
        """``([hits of question], milliseconds)``: the shape :func:`timed` gives a query's search."""
        with self.lock:
            if not self.done:
                todo = [q for q in self.questions if not self.skip(q)]
                found, ms = timed(self.search, todo)
                self.found.update(zip(todo, found))
                self.ms.update((q, ms / len(todo)) for q in todo)
                self.done = True
            if question not in self.found:
                found, self.ms[question] = timed(self.search, [question])
                self.found[question] = found[0]
            return [self.found[question]], self.ms[question]


class Searched:
    """A channel search as a shared part keeps it: its rankings and milliseconds, and the rankings as
    fusion's :class:`Columns`, built on first use (a variant that fuses two rankings), then read by
    every variant that fuses the same search."""

    def __init__(self, lists: list[list[Hit]], ms: float):
        # frozen: every variant's state and trace hold these very lists (evalkit.graph.memo.SharedRanking)
        self.lists: list[list[Hit]] = [SharedRanking(r) for r in lists]
        self.ms = ms

    @cached_property
    def columns(self) -> list[Columns]:
        return [Columns.of(r) for r in self.lists]


def searched(compute: Callable[[], tuple[list[list[Hit]], float]]) -> Searched:
    return Searched(*compute())


def timed(search: Callable[[list[str]], list[list[Hit]]], queries: list[str]) -> tuple[list[list[Hit]], float]:
    """A channel search's rankings and its wall time in milliseconds."""
    t0 = time.perf_counter()
    found = search(queries)
    return found, (time.perf_counter() - t0) * 1000.0

