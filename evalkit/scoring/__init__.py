"""Score outputs produced outside evalkit: TREC / JSONL runs and answers files (``evalkit score``).

    from evalkit.scoring import score_run, write_scored
    scored = score_run("bm25.final.run", "eval_sets/demo_kb.jsonl@v1", name="my_bm25")
    write_scored(scored, RunOptions(output=Path("results/my_bm25.json"), mlflow=False))

``evalkit/runfile.py`` reads ranked lists, ``answers.py`` answers (evalkit JSONL, ragas
``EvaluationDataset``, parquet, datasets folders); ``rankings.py`` scores ranked lists and
``scorer.py`` answers, with the runner's own scoring function, into a ``Scored``
(``scored.py``), which ``writing.py`` writes with the runner's own writers. Names are
imported on first use, so ``evalkit.scoring.answers`` alone stays cheap.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {"ANSWER_FIELDS": "evalkit.scoring.answers", "ANSWER_FORMATS": "evalkit.scoring.answers",
            "RAGAS_COLUMNS": "evalkit.scoring.answers", "content_sha256": "evalkit.scoring.answers",
            "detect_abstention": "evalkit.scoring.answers", "read_answers": "evalkit.scoring.answers",
            "RUN_FORMATS": "evalkit.runfile", "read_run": "evalkit.runfile",
            "Scored": "evalkit.scoring.scored", "score_answers": "evalkit.scoring.scorer",
            "score_run": "evalkit.scoring.rankings", "write_scored": "evalkit.scoring.writing"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'evalkit.scoring' has no attribute {name!r}")
