"""Shared work across variants: the one mechanism, keyed by what a computation actually read.

Variants of one invocation often repeat work: the same rewrite and retrieval before
different rerankers, the same channel searches before different fusion settings.
:class:`WorkMemo` computes such work once. There are two entry points, one store, one
switch (``evalkit run --no-share`` gives no memo at all) and one set of counters:

- **Node executions** (the engine): a node's result is stored under its *identity*
  (type, params, the variant context that changes outputs such as chunking and seed, and
  the node's own ``fingerprint()``) and the values of the state fields **it actually
  read**, as recorded by the state view the engine handed it. A later execution with the
  same identity reuses the result only when the current state holds the same values in
  every field that the earlier execution read (absent fields included). A node can only
  see the state through that view, so equal reads mean equal output: sharing never
  changes a number. Only successful executions are stored.
- **Shared parts** (``Node.shared``): a sub-computation a node declares in
  ``shared_parts(params)`` (a channel search inside ``retrieve``) keyed by the part's
  description, the variant context and its explicit inputs (the queries).

What the memo holds lives only as long as a variant still to run can reuse it: after each variant the
runner asks it to :meth:`WorkMemo.retain` the work whose static identity (from the configs alone:
:func:`evalkit.run.plan.work_keys`) a later variant has, and it forgets the rest.

``--dry-run`` (:mod:`evalkit.run.plan`) estimates the sharing with :func:`inputs_digest` and
the same identities, over the fields each node declares it may read, where each input is
the provenance of the value (which execution wrote it) instead of the value.

The trace marks a reused execution ``reused``; its LLM usage is replayed as cache hits and
its ``duration_ms`` is that of the execution it came from (``elapsed_ms`` is the real ~0),
so per-query tokens and latency do not depend on which variant ran first.
"""
from __future__ import annotations

import hashlib
import json
import pickle
import threading
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from evalkit.frozen import SCALARS, FrozenList
from evalkit.records import Hit

T = TypeVar("T")
ABSENT = "\x00absent"  # how a field that was not in the state is keyed (never a real value)


def node_identity(node_type: str, params: Any, context: Mapping[str, Any],
                  fingerprint: Mapping[str, Any] | None = None) -> str:
    """Type + parameters + variant context (+ fingerprint) of a node, as a short hash."""
    payload = json.dumps({"type": node_type, "params": params.model_dump(mode="json"), "context": context,
                          "fingerprint": fingerprint or {}}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def part_identity(part: Mapping[str, Any], context: Mapping[str, Any]) -> str:
    """Identity of a shared part (``Node.shared_parts``) in a variant context."""
    payload = json.dumps({"part": part, "context": context}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


Digest = tuple[Any, ...]
"""What :func:`inputs_digest` returns: a hashable key whose equality implies equal values."""


def inputs_digest(pairs: Iterable[tuple[str, Any]]) -> Digest | None:
    """A key for ``(field, value)`` pairs; None when a value cannot be pickled (then nothing is shared).

    The key is an exact, type-tagged rendering of the values (:func:`_key`), not a hash: two keys
    are equal only when the values are equal and of the same types, so a dict keyed by it cannot
    confuse two inputs. Rankings (lists of ``Hit``) and plain data cost one pass over their items;
    anything else is keyed by its pickle, as before.
    """
    try:
        return tuple((str(f), _key(v)) for f, v in pairs)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None


_SCALARS = (int, bool)


def _key(value: Any) -> Any:
    """An exact, hashable stand-in for ``value`` (see :func:`inputs_digest`).

    Strings and None stand for themselves; every other kind is a tuple whose first item names
    the kind, so ``1``, ``1.0``, ``True`` and ``"1"`` (equal or alike to ``==``) never share a key.
    Floats are keyed by their bits (``0.0`` and ``-0.0`` differ, as their pickles did).
    Containers must be exactly ``list``/``tuple``/``dict`` (a dict's key keeps its order) or one of
    the frozen lists (:class:`FrozenList`, :class:`SharedRanking`), and a
    ``Hit`` exactly a ``Hit`` with ``str`` ids and a ``float`` score; anything else, subclasses
    included, is keyed by its pickle.
    """
    kind = type(value)
    if kind is str or value is None:
        return value
    tags = _SEQUENCES.get(kind)
    if tags is not None:
        ranking = _ranking_key(value)
        if ranking is not None:
            return (tags[0], *ranking)
        return (tags[1], *(_key(v) for v in value))
    if kind is Hit:
        ranking = _ranking_key((value,))
        if ranking is not None:
            return ("hit", *ranking)
    if kind is dict:
        return ("dict", *((_key(k), _key(v)) for k, v in value.items()))
    if kind is float:
        return ("float", array("d", (value,)).tobytes())
    if kind in _SCALARS:
        return (kind.__name__, value)
    return ("pickle", pickle.dumps(value, protocol=4))


def _ranking_key(hits: Sequence[Any]) -> tuple[tuple[str, ...], tuple[str, ...], bytes] | None:
    """(ids, document ids, score bits) of a non-empty sequence of plain ``Hit`` s; None for anything else."""
    if not hits or not all(type(h) is Hit for h in hits):
        return None
    ids = tuple([h.id for h in hits])
    docs = tuple([h.doc_id for h in hits])
    scores = [h.score for h in hits]
    if all(type(s) is float for s in scores) and all(type(i) is str for i in ids) and \
            all(type(d) is str for d in docs):
        return ids, docs, array("d", scores).tobytes()
    return None


class SharedRanking(FrozenList):
    """A ranking (``Hit`` s, best first) that every variant of a sweep reads: a channel search the
    memo shares (``Retrieve.shared_parts``). Being frozen, the memo keeps it without a copy
    (:func:`detached`) and the trace's compact form of it is made once (:meth:`compacted`), not
    once per variant and query (made each time, with the copies, it was ~6% of what a fusion variant
    adds to a sweep: reports/scale.md, eighth pass)."""

    __slots__ = ("_compact",)

    def __init__(self, hits: Iterable[Hit] = ()) -> None:
        super().__init__(hits)
        if not all(isinstance(h, Hit) for h in self):
            raise TypeError("a SharedRanking holds Hits only")
        self._compact: FrozenList | None = None

    def compacted(self, compact: Callable[[Sequence[Any]], Any]) -> Any:
        """``compact(self)``, kept when it is a list (the whole ranking; a longer ranking's cut form,
        a dict, is made again each time): the same frozen list for every trace that writes it."""
        found = self._compact
        if found is None:
            made = compact(self)
            if type(made) is not list:
                return made
            # the triples frozen too: a record's writer may keep what it made of them (frozen_all_the_way)
            found = self._compact = FrozenList([FrozenList(t) if type(t) is list else t for t in made])
        return found


# a sequence's tags in a key: (a ranking of plain Hits, anything else); a frozen list is keyed apart from a list
_SEQUENCES: dict[type, tuple[str, str]] = {list: ("hits", "list"), tuple: ("hit-tuple", "tuple"),
                                           FrozenList: ("frozen-hits", "frozen-list"),
                                           SharedRanking: ("shared-hits", "shared-list")}


def detached(value: Any) -> Any:
    """``value`` with every list, tuple and dict inside it copied (leaves such as frozen ``Hit`` s shared).

    What the memo stores and hands out is detached from any query's state, so a later change
    to one query's containers cannot reach another variant through the memo. A
    :class:`SharedRanking` cannot change (and holds only ``Hit`` s), so it is kept as it is.
    """
    kind = type(value)
    if kind is list:  # leaves are kept without a call each: a ranking is a list of 100 frozen Hits
        return [v if type(v) in _LEAVES else detached(v) for v in value]
    if kind is dict:
        return {k: v if type(v) in _LEAVES else detached(v) for k, v in value.items()}
    if kind is tuple:
        return tuple(v if type(v) in _LEAVES else detached(v) for v in value)
    return value


_LEAVES = SCALARS | {Hit}  # immutable: shared, never copied


@dataclass(frozen=True)
class Stored:
    """A node execution that other variants may reuse: what it wrote, its LLM usage, its duration."""

    wrote: dict[str, Any]
    usage: Any
    duration_ms: float


class WorkMemo:
    """Results of node executions and shared parts, for the variants of one invocation."""

    def __init__(self) -> None:
        # identity -> [(fields read, {digest of their values: Stored})]
        self._nodes: dict[str, list[tuple[tuple[str, ...], dict[Digest, Stored]]]] = {}
        self._parts: dict[tuple[str, Digest], Any] = {}
        self._base: dict[str, str] = {}  # a node's identity -> its identity without the fingerprint (plan.work_keys)
        self._lock = threading.Lock()
        self.hits = self.misses = self.part_hits = self.part_misses = 0

    # --- node executions (the engine) ---------------------------------------------------------------
    def lookup(self, identity: str, state: Mapping[str, Any]) -> Stored | None:
        """A stored execution of ``identity`` whose recorded reads all equal ``state``'s values, or None."""
        with self._lock:
            candidates = list(self._nodes.get(identity, ()))
        for fields, table in candidates:
            digest = inputs_digest((f, state.get(f, ABSENT)) for f in fields)
            found = table.get(digest) if digest is not None else None
            if found is not None:
                with self._lock:
                    self.hits += 1
                return found
        with self._lock:
            self.misses += 1
        return None

    def store(self, identity: str, reads: Mapping[str, Any], stored: Stored) -> None:
        """Keep an execution that read ``reads`` (field -> value, ``ABSENT`` for a missing field)."""
        fields = tuple(sorted(reads))
        digest = inputs_digest((f, reads[f]) for f in fields)
        if digest is None:
            return
        with self._lock:
            tables = self._nodes.setdefault(identity, [])
            for known, table in tables:
                if known == fields:
                    table.setdefault(digest, stored)
                    return
            tables.append((fields, {digest: stored}))

    # --- shared parts (Node.shared) -----------------------------------------------------------------
    def shared(self, identity: str, inputs: Any, compute: Callable[[], T]) -> T:
        """``compute()`` once per (part identity, inputs); unpicklable inputs are never shared."""
        digest = inputs_digest([("inputs", inputs)])
        if digest is None:
            return compute()
        key = (identity, digest)
        with self._lock:
            if key in self._parts:
                self.part_hits += 1
                return self._parts[key]
        value = compute()
        with self._lock:
            self.part_misses += 1
            return self._parts.setdefault(key, value)

    def has(self, identity: str, inputs: Any) -> bool:
        """Whether :meth:`shared` holds a value for (part identity, inputs); counts nothing."""
        digest = inputs_digest([("inputs", inputs)])
        with self._lock:
            return digest is not None and (identity, digest) in self._parts

    # --- what later variants can still reuse -------------------------------------------------------
    def note_node(self, identity: str, base: str) -> None:
        """Record that node executions stored under ``identity`` have the static identity ``base`` (see :meth:`retain`)."""
        with self._lock:
            self._base[identity] = base

    def retain(self, keys: WorkKeys) -> None:
        """Forget the stored work no variant still to run can reuse: node executions whose static identity, and
        shared parts whose identity, is not in ``keys`` (:func:`evalkit.run.plan.work_keys` of those variants).

        A reuse needs an equal identity, so nothing that could be reused is dropped: the counters and every
        output stay as they were. What was stored under an identity of unknown origin is kept. Without it the
        memo held every variant's node results to the end of the run (the 100k deploy gate: 4.3 GB at the
        last variant, 3.9 GB with it; docs/scaling.md)."""
        with self._lock:
            for identity in [i for i, base in self._base.items() if base not in keys.nodes]:
                self._nodes.pop(identity, None)
                del self._base[identity]
            for key in [k for k in self._parts if k[0] in keys.known_parts and k[0] not in keys.parts]:
                del self._parts[key]

    def stats(self) -> dict[str, int]:
        """Counters for the summary and for tests that compare them with the dry-run estimate."""
        with self._lock:
            return {"node_hits": self.hits, "node_misses": self.misses, "part_hits": self.part_hits,
                    "part_misses": self.part_misses}


@dataclass(frozen=True)
class WorkKeys:
    """The static identities of some variants' work: node identities without their fingerprint (``nodes``), the
    identities of the parts they share (``parts``), and of every part any variant of the run shares
    (``known_parts``: :meth:`WorkMemo.retain` keeps parts of unknown origin)."""

    nodes: frozenset[str]
    parts: frozenset[str]
    known_parts: frozenset[str]
