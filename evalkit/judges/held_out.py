"""What each version of the offline judge did on multi-document answers written blind to its rules.

The answers table's note and the demo quote :data:`HELD_OUT`; ``tests/judges/test_multidoc_blind.py``
recomputes it from the data; ``reports/judges.md`` and ``docs/judges.md`` (Limits) tell the history
the comment below keeps in short.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HELD_OUT", "HeldOut"]


@dataclass(frozen=True)
class HeldOut:
    """What this version of the judge did on cases written blind to its rules (the report's note on it).

    ``tests/judges/data/judge_multidoc_held_out.jsonl``, the sets in :attr:`sets`: multi-document
    answers, each scenario with three correct wordings (most compute values from the passages) and
    one planted error, written by helpers that had read neither the judge, its tests nor any case
    set, and measured once, after this version's rules were final (``benchmarks/judge_held_out.py``).
    Sets measured for an earlier version are development data for the next one.
    ``tests/judges/test_multidoc_blind.py`` recomputes every count.
    """

    sets: tuple[str, ...]  # the sets of judge_multidoc_held_out.jsonl written blind to this version
    flagged: int  # correct answers marked unsupported ...
    unverified: int  # ... and unverified ...
    n_correct: int  # ... of this many
    caught: int  # planted errors marked unsupported ...
    caught_unverified: int  # ... and unverified ...
    n_wrong: int  # ... of this many

    @property
    def false_alarm(self) -> float:
        return self.flagged / self.n_correct

    @property
    def recall(self) -> float:
        return self.caught / self.n_wrong


# G, H and I were measured once each, 2026-12-04, on v13's final rules (69 of 216 correct answers flagged, 26 of
# 72 errors caught); v14 and v15 used them as development data (62 flagged, 26 caught). K and L were written blind
# for v16 and measured once after its first rule (a value a list gives to another item, rows.py): 33 of 144
# flagged, 15 of 48 caught, as v15 (their passages are prose); v16's later fixes were found on them (28 flagged
# since). M was written blind for v16 (2026-12-06) and measured once, after its rules were final (v15 on M: 16
# flagged, 5 caught; v17: 13 flagged, 5 caught, development data). N was written blind for v17 (2026-12-06) and
# measured once, after its rules were final (v16 on N: the same 9 flagged and 7 caught); O was written blind for
# v18 the same day and measured once after its rules were final: 18 flagged, 10 caught (v17 on O: 19 flagged, 11
# caught). v19 is v18 with one fix the test suite asked for after that measurement (a brand before its trade, 汀岚通信,
# stays a name): on O one more catch, made through the same tagger artefact (卡里 read as a name). v20 is v19 with one
# fix found on the abstention splits (2026-12-06): a sentence that opens about the speaker and turns to an assertion
# ("I couldn't find the history, but the policy does not allow remote work") is checked (it was "about the speaker").
# v21 (the same day): of such a sentence only the part that asserts is read for values ("I couldn't find the 2024
# figure, but ..." was unsupported for the 2024 it could not find); every labelled set's worst verdicts as v20's.
# P and Q were written blind for v21 by two fresh writers (2026-12-06) and measured once with its rules (v20 on them:
# the same, answer for answer): 39 flagged, 15 caught. v22 (2026-12-07) counts a date from a stated date by a
# duration under a week in whole days, or by whole years or months, where no evidence sentence states another date
# for the claim's clause. R and S were written blind by two more fresh writers (2026-12-07), imported unread before
# v22 and measured once with it (v21 on them: the same, answer for answer). v23 (2026-12-07) reaches a plain
# figure in two steps where the answer states an operand in its unit and the fit is specific (:mod:`.reach`, step 8),
# and reads two Chinese digits side by side as no number (周六一次 was 61). T and U were written blind by two fresh
# writers (2026-12-07), imported unread before v23 and measured once with it (v22 on them: 28 flagged, 14 caught;
# on R and S v23 flags 24, v22 26). v24 (2026-12-07) reads a plain amount written more precisely than any value
# of its unit in the evidence ("You owe $229.75.") as computed: unverified (:func:`.counter.finer_than_evidence`).
# V and W were written blind by two fresh writers (2026-12-07), imported unread before v24 and measured once with it
# (v23 on them: 46 flagged, 15 caught; on T and U v24 flags 25, v23 27). v25 is v24 with two readings of the
# answer's own arithmetic found in W's false alarms after that measurement: a discount in 折 (2400元×8.5折＝2040元)
# and a date counted forward (4 March 2024 + 10 weeks = 13 May 2024) are no wrong sums; on V and W two fewer
# flagged (v24: 37), on every other labelled answer the same verdicts. v26 (2026-12-07, developed on A-W): in an
# answer that computes, such a finer figure is computed even where an evidence clause states another value for it
# ("每箱9,931.6元" against "每箱180元"); a percentage is never read as finer (99.9% availability is quoted, not
# computed). X and Y were written blind by two fresh writers (2026-12-07), imported unread before v26 and measured
# once with it (v23, the session's start, on them: 30 flagged, 19 caught; v26: 23 flagged, 17 caught). v27 is v26
# with one condition the test suite asked for after that measurement (an invented "CNY 987,654" limit, the demo's
# reflection test, had become unverified): a plain figure is read as computed only when there is something to
# compute from, the user's own values in the question or another value of its unit in the answer; on X and Y one
# more flagged, on A-W ten more, catches unchanged. Z and AA were written blind by two fresh writers (2026-12-07,
# fifth session), imported unread and measured once with v27, whose rules that session left as they were; AB and AC
# likewise (2026-12-08): 22 flagged, 13 caught. v28 (2026-12-08) cancels a negator right before a word that
# negates by meaning ("not waived", 不免收); on every labelled answer it changed two verdicts, none on Z-AC. AD and AE
# were written blind by two more fresh writers, launched before that change, imported unread and measured once
# with v28 (v27 on them: the same, answer for answer): 26 flagged, 10 caught. Z to AE together are v28's figure.
HELD_OUT = HeldOut(sets=("Z", "AA", "AB", "AC", "AD", "AE"), flagged=75, unverified=353, n_correct=432, caught=36,
                   caught_unverified=107, n_wrong=144)
