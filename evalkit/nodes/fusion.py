"""Rank fusion: combining several rankings of passages into one.

Both methods are pure functions over lists of ``Hit`` (best first) and return a new
list sorted by fused score, ties broken by passage id (ascending), so the result never
depends on the order the channels ran in.

RRF (Cormack, Clarke and Buettcher, SIGIR 2009)::

    rrf(d) = sum_c  w_c / (k + rank_c(d))        rank is 1-based; k defaults to 60

A passage missing from channel c contributes nothing from c.

Weighted sum of normalised scores::

    ws(d) = sum_c  w_c * norm_c(score_c(d))

``norm`` is ``minmax`` ((s - min) / (max - min) over channel c's returned list; all 1.0
when every score is equal) or ``zscore`` ((s - mean) / std; all 0.0 when std is 0).
A passage missing from channel c gets ``missing``: ``min`` (the lowest normalised score
channel c returned: "as good as its worst hit", the default) or ``zero`` (0.0; for
min-max that equals ``min``, for z-score it means "average").
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from evalkit.records import Hit, round6


def _sorted(scores: dict[str, float], doc_of: dict[str, str], limit: int | None) -> list[Hit]:
    """The fused ranking, best first (ties by passage id); only its first ``limit`` hits are built."""
    order = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return [Hit(pid, doc_of[pid], s) for pid, s in (order if limit is None else order[:limit])]


@dataclass(frozen=True)
class Columns:
    """One ranking as columns: passage ids, their documents and scores (None when they are not
    numbers), and whether every id is unique. This is what fusion reads of a ranking; a channel
    search shared by a sweep's variants computes it once (``nodes/retrieve.py``), so each variant
    does not walk the same hits again (reading 200 cold ``Hit`` s cost more than fusing them)."""

    ids: tuple[str, ...]
    docs: tuple[str, ...]
    scores: np.ndarray | None
    unique: bool
    # the _Union of this ranking with others (keyed by their identity), made by the first variant
    # that fuses them and read by the rest: the union depends on the rankings only, not on weights
    unions: dict[tuple[int, ...], tuple[tuple[Columns, ...], _Union]] = field(
        default_factory=dict, compare=False, repr=False)
    # the scores normalised by each method, likewise made once and read by every variant (read-only arrays)
    normed: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, ranking: Sequence[Hit]) -> Columns:
        ids = tuple([h.id for h in ranking])
        scores: np.ndarray | None = None
        try:
            scores = _frozen(np.asarray([h.score for h in ranking], dtype=np.float64))  # shared by every variant
        except (TypeError, ValueError):
            pass  # not numbers: weighted fusion takes its general path, which says so
        return cls(ids, tuple([h.doc_id for h in ranking]), scores, len(set(ids)) == len(ids))

    @classmethod
    def of_items(cls, items: Sequence[Sequence[object]]) -> Columns:
        """:meth:`of` the ranking ``[Hit(str(p), str(d), float(s)) for p, d, s in items]`` (a trace's channel list)
        without making its hits; a score that is not a number raises as that ``Hit`` would."""
        ids = tuple([str(item[0]) for item in items])
        scores = _frozen(np.asarray([float(item[2]) for item in items], dtype=np.float64))  # type: ignore[arg-type]
        return cls(ids, tuple([str(item[1]) for item in items]), scores, len(set(ids)) == len(ids))

    def normalised(self, norm: str) -> np.ndarray:
        """:func:`normalise` of the scores (which must be numbers), computed once per method."""
        found = self.normed.get(norm)
        if found is None:
            assert self.scores is not None, "normalised() needs numeric scores"
            found = self.normed[norm] = _frozen(normalise(self.scores, norm))
        return found


def _columns(rankings: Sequence[Sequence[Hit]], columns: Sequence[Columns] | None) -> list[Columns] | None:
    """The columns of one or two rankings (``columns`` when the caller has them), or None for more."""
    if len(rankings) > 2:
        return None
    if columns is None:
        return [Columns.of(r) for r in rankings]
    if len(columns) != len(rankings) or any(len(c.ids) != len(r) for c, r in zip(columns, rankings)):
        raise ValueError("columns do not describe the rankings given")
    return list(columns)


@dataclass(frozen=True)
class _Union:
    """Fusion's array form of one or two rankings: each hit's position in the union of their passage
    ids (``positions``, one array per ranking), the ids in first-seen order, each id's document, and
    each id's place in id order (``by_id``, for ties). Read-only: every variant fusing the same
    rankings reads the same one."""

    positions: tuple[np.ndarray, ...]
    ids: list[str]
    doc_of: dict[str, str]
    by_id: np.ndarray

    @classmethod
    def of(cls, columns: Sequence[Columns]) -> _Union:
        union = list(dict.fromkeys(chain.from_iterable(c.ids for c in columns)))
        index = dict(zip(union, range(len(union))))
        positions = tuple(_frozen(np.fromiter(map(index.__getitem__, c.ids), dtype=np.intp, count=len(c.ids)))
                          for c in columns)
        doc_of: dict[str, str] = {}
        for c in columns:  # a later channel's document wins, as in the general path
            doc_of.update(zip(c.ids, c.docs))
        by_id = np.empty(len(union), dtype=np.intp)
        by_id[sorted(range(len(union)), key=union.__getitem__)] = np.arange(len(union))
        return cls(positions, union, doc_of, _frozen(by_id))


def _frozen(a: np.ndarray) -> np.ndarray:
    """``a``, made read-only: arrays shared by a sweep's variants must not be changed by one of them."""
    a.flags.writeable = False
    return a


def _two_channels(columns: list[Columns] | None) -> _Union | None:
    """The array form of one or two rankings (made once per set of rankings: :attr:`Columns.unions`);
    None (use the general path) for more channels, or a passage listed twice in one channel.

    Why only two: a sum of two floats is rounded once, so numpy's ``a + b`` equals ``math.fsum([a, b])``
    bit for bit (and ``0.0 + a`` is ``a``); with three or more terms the order of additions would
    change the last bit, which fsum exists to prevent. A hybrid retriever (dense + BM25) is the
    common case, and in a sweep of fusion settings every variant pays for it.
    """
    if columns is None or not all(c.unique for c in columns):
        return None
    if not columns:
        return _Union.of(columns)
    first, rest = columns[0], tuple(columns[1:])
    key = tuple(map(id, rest))
    cached = first.unions.get(key)
    if cached is not None and all(a is b for a, b in zip(cached[0], rest)):
        return cached[1]
    union = _Union.of(columns)
    if all(c is not first for c in rest):  # (holding itself would make a reference cycle)
        first.unions[key] = (rest, union)  # holding ``rest`` keeps their ids from being reused
    return union


def _sorted_array(total: np.ndarray, union: _Union, limit: int | None) -> list[Hit] | None:
    """:func:`_sorted` for scores held in an array (``total[i]`` is ``union.ids[i]``'s); None when a score
    is not finite (NaN, infinity, overflow), which the general path handles (fsum raises or propagates)."""
    best = _best_array(total, union, limit)
    if best is None:
        return None
    chosen, scores = best
    return Hit.many(chosen, [union.doc_of[i] for i in chosen], scores)


def _best_array(total: np.ndarray, union: _Union, limit: int | None) -> tuple[list[str], np.ndarray] | None:
    """The passage ids :func:`_sorted_array` ranks first and their scores, without a ``Hit``; None likewise."""
    if not np.isfinite(total).all():
        return None
    total = total + 0.0  # fsum never returns -0.0; 0.0 + x leaves every other value as it is
    order = np.lexsort((union.by_id, -total))  # best score first, ties by passage id: _sorted's key
    picked = (order if limit is None else order[:limit]).tolist()
    ids = union.ids
    return [ids[i] for i in picked], total[picked]


def _weighted_total(columns: Sequence[Columns], union: _Union, weights: Sequence[float], norm: str,
                    missing: str) -> np.ndarray:
    """The fused score of every passage of ``union``: the weighted sum of the channels' normalised scores."""
    total = np.zeros(len(union.ids))
    for c, pos, w in zip(columns, union.positions, weights):
        n = c.normalised(norm)
        column = np.full(len(union.ids), float(n.min()) if len(n) and missing == "min" else 0.0)
        column[pos] = n
        with np.errstate(all="ignore"):  # a non-finite sum goes to the general path
            total += w * column
    return total


def weighted_documents(columns: Sequence[Columns], weights: Sequence[float], norm: str = "minmax",
                       missing: str = "min", limit: int | None = None) -> list[tuple[str, float]] | None:
    """The document ranking of :func:`weighted`'s best ``limit`` passages (each document's first passage, its
    score rounded as records write it: ``Hit.by_document``) from the rankings' columns, without building a
    ``Hit``. None where :func:`weighted` would take its general path (more than two channels, a passage listed
    twice, scores that are not numbers or a sum that is not finite): call it then."""
    found = weighted_documents_grid(columns, [weights], norm, missing, limit)
    return None if found is None else found[0]


def weighted_documents_grid(columns: Sequence[Columns], grid: Sequence[Sequence[float]], norm: str = "minmax",
                            missing: str = "min", limit: int | None = None, documents: int | None = None
                            ) -> list[list[tuple[str, float]] | None] | None:
    """:func:`weighted_documents` for each weight vector of ``grid`` over the same rankings, in one pass of arrays:
    what a sweep of weights reads (``evalkit.analysis.fusion_diag``). Each weight's sums are made in the order
    :func:`_weighted_total` makes them, so each ranking is the one :func:`weighted` returns; an item is None
    where that weight's sum is not finite, the whole result None where the rankings take the general path.
    ``documents``: only the first that many documents of each ranking (what a metric cut at k reads)."""
    if missing not in ("min", "zero"):
        raise ValueError(f"unknown missing-score rule '{missing}'; valid: min, zero")
    numbers = len(columns) <= 2 and all(c.scores is not None for c in columns)
    union = _two_channels(list(columns)) if numbers else None
    if union is None or any(len(w) != len(columns) for w in grid) or not grid:
        return None
    n = len(union.ids)
    total = np.zeros((len(grid), n))
    for j, (c, pos) in enumerate(zip(columns, union.positions)):
        scores = c.normalised(norm)
        column = np.full(n, float(scores.min()) if len(scores) and missing == "min" else 0.0)
        column[pos] = scores
        with np.errstate(all="ignore"):  # a non-finite sum is that weight's None
            total += np.array([float(w[j]) for w in grid])[:, None] * column
    finite = np.asarray(np.isfinite(total).all(axis=1))
    total = np.where(finite[:, None], total, 0.0) + 0.0  # as _best_array: fsum never returns -0.0
    in_id_order = np.empty_like(union.by_id)
    in_id_order[union.by_id] = np.arange(n)
    # best first, ties by passage id (a stable sort of the columns in id order): _best_array's lexsort, per weight
    order = in_id_order[np.argsort(-total[:, in_id_order], axis=1, kind="stable")]
    picked = order if limit is None else order[:, :limit]
    # each document's first passage in each weight's ranking (Hit.by_document), for every weight at once
    number: dict[str, int] = {}
    doc_of = union.doc_of
    docs = np.fromiter((number.setdefault(doc_of[i], len(number)) for i in union.ids), dtype=np.intp, count=n)[picked]
    by_doc = np.argsort(docs, axis=1, kind="stable")  # a document's passages in ranking order
    first = np.ones(docs.shape, dtype=bool)
    sorted_docs = np.take_along_axis(docs, by_doc, axis=1)
    first[:, 1:] = sorted_docs[:, 1:] != sorted_docs[:, :-1]
    kept: np.ndarray = np.empty_like(first)
    np.put_along_axis(kept, by_doc, first, axis=1)
    kept &= finite[:, None]
    if documents is not None:
        kept &= np.cumsum(kept, axis=1) <= documents
    names = list(number)
    doc_names = [names[d] for d in docs[kept].tolist()]
    rounded = round6(np.take_along_axis(total, picked, axis=1)[kept])
    out: list[list[tuple[str, float]] | None] = []
    start = 0
    for ok, count in zip(finite.tolist(), kept.sum(axis=1).tolist()):
        out.append(list(zip(doc_names[start:start + count], rounded[start:start + count])) if ok else None)
        start += count
    return out


def _check(rankings: Sequence[Sequence[Hit]], weights: Sequence[float]) -> None:
    if len(rankings) != len(weights):
        raise ValueError(f"{len(rankings)} rankings but {len(weights)} weights")


def rrf(rankings: Sequence[Sequence[Hit]], weights: Sequence[float], k: int = 60,
        limit: int | None = None, columns: Sequence[Columns] | None = None) -> list[Hit]:
    """Weighted reciprocal rank fusion of ``rankings`` (see the module docstring); the best ``limit``
    passages (None: all), exactly the first ``limit`` of the full fused ranking. ``columns``: the
    rankings' :class:`Columns`, when the caller has them."""
    _check(rankings, weights)
    if k < 0:
        raise ValueError("RRF k must be >= 0")
    fast = _two_channels(_columns(rankings, columns))
    if fast is not None:
        total = np.zeros(len(fast.ids))
        with np.errstate(all="ignore"):  # a non-finite sum goes to the general path below
            for pos, w in zip(fast.positions, weights):
                total[pos] += w / (k + np.arange(1, len(pos) + 1, dtype=np.float64))
        fused = _sorted_array(total, fast, limit)
        if fused is not None:
            return fused
    parts: dict[str, list[float]] = {}
    doc_of = {}
    for ranking, w in zip(rankings, weights):
        for rank, hit in enumerate(ranking, start=1):
            parts.setdefault(hit.id, []).append(w / (k + rank))
            doc_of[hit.id] = hit.doc_id
    # fsum is exactly rounded, so the sum (and any tie) does not depend on the channel order
    return _sorted({pid: math.fsum(p) for pid, p in parts.items()}, doc_of, limit)


def normalise(values: Sequence[float] | np.ndarray, norm: str) -> np.ndarray:
    """Min-max or z-score normalisation of one channel's scores."""
    v = np.asarray(values, dtype=np.float64)
    if len(v) == 0:
        return v
    if norm == "minmax":
        span = v.max() - v.min()
        return np.ones_like(v) if span == 0 else (v - v.min()) / span
    if norm == "zscore":
        std = v.std()
        return np.zeros_like(v) if std == 0 else (v - v.mean()) / std
    raise ValueError(f"unknown normalisation '{norm}'; valid: minmax, zscore")


def weighted(rankings: Sequence[Sequence[Hit]], weights: Sequence[float], norm: str = "minmax",
             missing: str = "min", limit: int | None = None, columns: Sequence[Columns] | None = None
             ) -> list[Hit]:
    """Weighted sum of per-channel normalised scores (see the module docstring); the best ``limit``
    passages (None: all), exactly the first ``limit`` of the full fused ranking. ``columns``: the
    rankings' :class:`Columns`, when the caller has them."""
    _check(rankings, weights)
    if missing not in ("min", "zero"):
        raise ValueError(f"unknown missing-score rule '{missing}'; valid: min, zero")
    cols = _columns(rankings, columns)
    fast = _two_channels(cols) if cols is not None and all(c.scores is not None for c in cols) else None
    if fast is not None and cols is not None:
        fused = _sorted_array(_weighted_total(cols, fast, weights, norm, missing), fast, limit)
        if fused is not None:  # else a sum that is not finite: the general path below
            return fused
    normed: list[dict[str, float]] = []
    floors: list[float] = []
    doc_of = {}
    for ranking in rankings:
        n = normalise([h.score for h in ranking], norm)
        normed.append({h.id: float(x) for h, x in zip(ranking, n)})
        floors.append(float(n.min()) if len(n) and missing == "min" else 0.0)
        doc_of.update({h.id: h.doc_id for h in ranking})
    # fsum: exactly rounded, so the result does not depend on the channel order (see rrf)
    scores = {pid: math.fsum([w * ch.get(pid, floor) for ch, w, floor in zip(normed, weights, floors)])
              for pid in doc_of}
    return _sorted(scores, doc_of, limit)


FUSION_METHODS = {"rrf": rrf, "weighted": weighted}
