"""Import HotpotQA in the HippoRAG layout: a questions JSON plus a pooled corpus JSON.

``hotpotqa_train.json`` holds questions (``_id``, ``question``, ``answer``,
``supporting_facts`` as [title, sentence index], ``type`` bridge|comparison, ``level``);
``hotpotqa_train_corpus.json`` maps a title to its sentences. A document is the title
plus its sentences joined; the gold documents of a question are the unique titles of its
supporting facts (two per question). Retrieval is over the pooled corpus.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from evalkit.evalsets import freeze
from evalkit.importers.registry import register_importer

FILES = ("hotpotqa_train.json", "hotpotqa_train_corpus.json")


@register_importer("hotpotqa", summary="HotpotQA in the HippoRAG layout (questions JSON + pooled corpus JSON); "
                   "library only, used by benchmarks/")
def import_hotpotqa(data_dir: str | Path, out_dir: str | Path, name: str = "hotpotqa_100") -> Path:
    """Write ``out_dir/corpora/NAME.jsonl`` and ``out_dir/NAME.jsonl`` (frozen v1); returns the eval set path.

    ``out_dir`` is replaced on every call (a scratch import, never the repository).
    """
    data_dir, folder = Path(data_dir), Path(out_dir)
    questions = json.loads((data_dir / FILES[0]).read_text(encoding="utf-8"))
    corpus = json.loads((data_dir / FILES[1]).read_text(encoding="utf-8"))
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "corpora").mkdir(parents=True)
    corpus_path = folder / "corpora" / f"{name}.jsonl"
    with corpus_path.open("w", encoding="utf-8") as fh:
        for title, sentences in corpus.items():
            fh.write(json.dumps({"id": title, "title": title, "text": "".join(sentences).strip()},
                                ensure_ascii=False) + "\n")
    set_path = folder / f"{name}.jsonl"
    with set_path.open("w", encoding="utf-8") as fh:
        for q in questions:
            gold = list(dict.fromkeys(t for t, _ in q["supporting_facts"]))
            qtype = "multi_hop" if q["type"] == "bridge" else "comparison"
            fh.write(json.dumps({"id": q["_id"], "question": q["question"], "relevant_doc_ids": gold, "type": qtype,
                                 "lang": "en", "reference_answer": q["answer"],
                                 "tags": ["hotpotqa", q["type"], q["level"]]}, ensure_ascii=False) + "\n")
    freeze(set_path, corpus=str(corpus_path), description="HotpotQA 100 (HippoRAG subset), scratch import")
    return set_path
