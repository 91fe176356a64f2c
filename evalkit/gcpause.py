"""Python's cyclic garbage collector kept off what a long loop keeps: the query loop's inputs and results, parsed records.

:func:`long_lived_frozen` freezes what lives to the end of a loop (``gc.freeze``) and yields
``keep``, which freezes what is alive after each step; :func:`gc_paused` turns the collector
off while records are parsed. Both were in :mod:`evalkit.runstore`, which still offers them.
"""
from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def long_lived_frozen(enabled: bool = True) -> Iterator[Callable[[], None]]:
    """Keep Python's cyclic garbage collector off what lives to the end of a query loop; yields ``keep``.

    The corpus, the indexes' id lists, the loaded models and earlier variants' results are
    millions of objects that live to the end of the run; every full collection the loop's
    allocations trigger walked all of them (in a sweep's extra variants, fusion spent three
    times its own work in collections: reports/scale.md, Sweeps). ``gc.freeze`` moves them to
    a generation the collector skips; ``gc.unfreeze`` puts them back afterwards, so nothing
    stays exempt. The loop's own results (a trace is ~1,000 containers) live to the end of the
    variant too: ``keep()``, called after each finished query, freezes what is alive then (one
    O(1) splice), so collections do not walk the results kept so far again and again (at 300
    queries per variant they took 0.6 of 4.6 s of a sweep's CPU, 17 full collections, and grew
    with the number of queries; now 0.03 s). Objects the loop creates and drops are collected
    as usual (a cycle still alive when a query ends waits for the unfreeze). A process that has
    frozen objects itself (``gc.get_freeze_count() > 0``) is left alone.

    ``compare``, ``gate`` and ``report`` run inside one too: the per-query records they read
    (:func:`read_rows` with ``hold``) join the frozen generation as each file is read.
    """
    if not enabled or gc.get_freeze_count() > 0:
        yield _no_keep
        return
    gc.freeze()
    _KEEP.append(gc.freeze)
    try:
        yield gc.freeze
    finally:
        _KEEP.pop()
        gc.unfreeze()


def _no_keep() -> None:
    return None


_KEEP: list[Callable[[], None]] = []
"""``keep`` of the :func:`long_lived_frozen` open now (none outside one: then nothing is frozen)."""




@contextlib.contextmanager
def gc_paused(hold: bool = False) -> Iterator[None]:
    """The cyclic garbage collector off while JSON records are parsed (or built into objects), then back.

    Parsed records are trees (no reference cycles, nothing for it to free), but with it on, every
    700 new containers start a collection, and the older generations are walked again and again as
    the parsed records pile up: 10,000 records of 10 KB took 3.3 s with it, 0.7 s without.

    ``hold``: the objects are kept to the end (a loaded run's records, which ``compare``, ``gate`` and
    ``report`` read to the last line): inside :func:`long_lived_frozen` they join its frozen generation,
    so later collections no longer walk ~250 objects per record (8 x 10,000 records: 5 s of
    ``compare``, 9 s of ``report``). Outside one (a notebook) nothing is frozen.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if hold and _KEEP:
            _KEEP[-1]()
        if was:
            gc.enable()
