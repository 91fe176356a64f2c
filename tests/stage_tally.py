"""Counting the learned abstention stage's findings on a labelled split, robust to the e5 engine's last digits.

The e5 engine's vectors differ in their last digits between CPUs (docs/demo.md, "The same code, another machine"):
a reply whose probability sits within :data:`ENGINE_NOISE` of the threshold it is read at may be read either way on
another machine (r31-058: p 0.8987 on one machine, at least 0.9 on another). A split's counts equal what was
recorded when some reading of exactly those replies gives them; every other reply must be read as it was.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path

from evalkit.models import abstention as stage
from evalkit.text.abstention import detect_abstention

ENGINE_NOISE = 0.005
"""How far from its threshold a reply's probability must be for every machine to read it alike (the one move
measured between two machines' engines: at least 0.0013, r31-058; this bound is ~4x that)."""


@dataclass(frozen=True, eq=False)
class Tally:
    """(true positives, false positives, false negatives) of "abstained" on one language of a split, read here,
    and the replies within :data:`ENGINE_NOISE` of their threshold (id, gold label, p, threshold)."""

    here: tuple[int, int, int]
    borderline: tuple[tuple[str, bool, float, float], ...] = ()

    def readings(self) -> set[tuple[int, int, int]]:
        """Every count some reading of the borderline replies gives."""
        out = set()
        for flips in itertools.product((False, True), repeat=len(self.borderline)):
            tp, fp, fn = self.here
            for (_, gold, p, threshold), flip in zip(self.borderline, flips, strict=True):
                if not flip:
                    continue
                now = p >= threshold  # read here as abstained: the flip reads it as an answer, and the other way
                if gold:
                    tp, fn = (tp - 1, fn + 1) if now else (tp + 1, fn - 1)
                else:
                    fp += -1 if now else 1
            out.add((tp, fp, fn))
        return out

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Tally):
            return self.here == other.here and self.borderline == other.borderline
        return isinstance(other, tuple) and tuple(other) in self.readings()

    def __hash__(self) -> int:
        return hash((self.here, self.borderline))

    def __repr__(self) -> str:
        near = ", ".join(f"{i} p={p:.4f} vs {t} ({'abstained' if g else 'answered'})" for i, g, p, t in self.borderline)
        return f"{self.here}" + (f" (near the threshold: {near})" if near else "")


def _threshold(row: dict, question: bool) -> float | None:
    """The threshold the stage reads ``row``'s reply at, or None when it does not read it (as stage.detect)."""
    finding = detect_abstention(row["answer"], finish_reason=row.get("finish_reason"))
    return stage.read_at(stage.learned("e5"), finding, row["answer"], question=row.get("question") if question else None)


def tally(path: Path, question: bool = False) -> dict[str, Tally]:
    """Per language, the stage's counts on the split at ``path`` (with each row's question when ``question``)."""
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    out = {}
    for lang in ("en", "zh"):
        tp = fp = fn = 0
        near = []
        for r in (r for r in rows if r["lang"] == lang):
            gold = r["label"] == "abstained"
            pred = stage.detect(r["answer"], model="e5", finish_reason=r.get("finish_reason"),
                                question=r.get("question") if question else None).abstained
            tp, fp, fn = tp + (pred and gold), fp + (pred and not gold), fn + (gold and not pred)
            threshold = _threshold(r, question)
            if threshold is not None:
                p = stage.probability("e5", r["answer"])
                if abs(p - threshold) < ENGINE_NOISE:
                    near.append((r["id"], gold, p, threshold))
        out[lang] = Tally((tp, fp, fn), tuple(near))
    return out
