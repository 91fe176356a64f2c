"""Write and freeze the English questions of demo_kb v1 as an eval set of their own (run from the repo root).

    python eval_sets/tools/english_subset.py /tmp/llmgen        # -> /tmp/llmgen/demo_kb_en.jsonl, frozen as v1
    python eval_sets/tools/english_subset.py /tmp/llmgen 34     # the first 34 in file order + every unanswerable one

It is the input of the one-off SmolLM2 generation behind ``eval_sets/demo_llm_answers.jsonl``
(graph_configs/mechanisms/rag_smollm2.yaml says how it was made). The lines are demo_kb's own,
byte for byte, over demo_kb's corpus, so the answers score against ``eval_sets/demo_kb.jsonl@v1``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

SOURCE = Path("eval_sets/demo_kb.jsonl")
VERSION = 1
LANG = "en"


def english_lines(source: Path = SOURCE, version: int = VERSION, lang: str = LANG,
                  first: int | None = None) -> list[str]:
    """The lines of ``source`` (those frozen in ``version``) whose question is in ``lang``, in file order;
    with ``first``, only the first ``first`` of them plus every unanswerable one (demo_kb lists those last)."""
    from evalkit.evalsets import load_eval_set

    records = [r for r in load_eval_set(f"{source}@v{version}").records if r.lang == lang]
    kept = {r.id for i, r in enumerate(records) if first is None or i < first or r.type == "unanswerable"}
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    return [line for line in lines if line.strip() and json.loads(line)["id"] in kept]


def main(folder: Path, first: int | None = None) -> Path:
    """Write ``folder/demo_kb_en.jsonl`` (``demo_kb_en<first>.jsonl`` with ``first``) and freeze it over
    demo_kb's corpus; return its path."""
    from evalkit.evalsets import freeze

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"demo_kb_en{first or ''}.jsonl"
    path.write_text("".join(english_lines(first=first)), encoding="utf-8")
    freeze(path, corpus=str(Path("eval_sets/corpora/demo_kb.jsonl").resolve()),
           description=f"the '{LANG}' questions of {SOURCE} v{VERSION}")
    return path


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: python eval_sets/tools/english_subset.py FOLDER [FIRST]")
    print(main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) == 3 else None))
