"""What a variant's reflection-loop counts mean, in one sentence under the agentic table.

The seed design asks to record how often reflection rescued a failed retrieval and to
simplify the pipeline when that number stays low. The counts (:mod:`evalkit.metrics.agentic`)
say it only to a reader who knows the definitions; this module says it in words, per
looping variant (a variant with ``loop_rate``), from the variant's own aggregate counts:

* looped L = ``rescued`` + ``harmed`` + ``futile`` + ``loop_undetermined`` (every looped
  query is exactly one of them);
* the first attempt found the gold in N of M: ``n_first_attempt_hits`` of
  ``n_first_attempt_queries`` (answerable queries, hit@5 of attempt 1); M - N are the
  first-attempt misses, the queries a loop could rescue by finding new documents;
* L = 0: the loop never ran (the eval set does not exercise it);
* rescued = 0 with L > 0: the loop never rescued a query: consider removing it;
* rescued > 0: how many, ``rescued_new_docs`` of them among the first-attempt misses, and
  the harm beside it (a loop that harms as many as it rescues does not pay).
"""
from __future__ import annotations

from collections.abc import Mapping

from evalkit.records import RunSummary


def _n(metrics: Mapping[str, float], name: str) -> int:
    return int(round(metrics.get(name) or 0.0))


def _first_attempt(metrics: Mapping[str, float]) -> str:
    """``"the first attempt already found the gold in N of M answerable queries"`` (empty when unknown)."""
    if not metrics.get("n_first_attempt_queries"):
        return ""
    return (f"the first attempt already found the gold in {_n(metrics, 'n_first_attempt_hits')} of "
            f"{_n(metrics, 'n_first_attempt_queries')} answerable queries")


def loop_reading(name: str, metrics: Mapping[str, float]) -> str | None:
    """The sentence for one variant (module docstring); None when the variant has no loop."""
    if "loop_rate" not in metrics:
        return None
    rescued, harmed, futile, unknown = (_n(metrics, k) for k in ("rescued", "harmed", "futile", "loop_undetermined"))
    looped = rescued + harmed + futile + unknown
    first = _first_attempt(metrics)
    undetermined = f", {unknown} undetermined" if unknown else ""
    if looped == 0:
        return (f"{name}: the loop never ran here: every query passed its gate on the first attempt"
                f"{f' ({first})' if first else ''}; this eval set does not exercise the loop")
    if rescued == 0:
        return (f"{name}: reflection never rescued a query here: it looped on {looped} ({futile} futile, "
                f"{harmed} harmed{undetermined}){f'; {first}' if first else ''}; consider removing the loop")
    misses = ""
    if metrics.get("n_first_attempt_queries"):
        n_miss = _n(metrics, "n_first_attempt_queries") - _n(metrics, "n_first_attempt_hits")
        misses = f"{_n(metrics, 'rescued_new_docs')} of the {n_miss} first-attempt misses found their gold later; "
    verdict = ": it harmed as many as it rescued, the loop does not pay" if harmed >= rescued else ""
    return (f"{name}: reflection rescued {rescued} of the {looped} queries it looped on ({misses}harmed {harmed}, "
            f"futile {futile}{undetermined}){verdict}")


def loop_readings(summary: RunSummary) -> list[str]:
    """One sentence per looping variant of the run, in the run's variant order."""
    lines = (loop_reading(name, v.metrics) for name, v in summary.variants.items())
    return [line for line in lines if line]
