"""A finished run as ragas ``EvaluationDataset`` files: one JSONL per variant.

    from evalkit.interop.ragas_export import export_ragas
    export_ragas("results/demo_kb.json", "results/demo_kb.ragas")   # <variant>.jsonl, one sample per query

Each line is a ragas ``SingleTurnSample`` (ragas 0.4: ``EvaluationDataset.from_jsonl`` reads
it as is):

* ``user_input``: the question; ``reference``: the eval set's reference answer, when it has one;
* ``response``: the answer, for a variant that generates (left out for a retrieval-only one);
* ``retrieved_contexts``: the texts of the passages the answer was judged against, in the
  order shown (chunked as the variant chunked the corpus); for a retrieval-only variant,
  the texts of the top ``top_k`` documents of the final ranking;
* ``retrieved_context_ids``: the document id of each of those passages, one per passage (a
  document with two passages is named twice), so ``evalkit score --answers`` reads the
  same evidence back and ranks each document once;
* ``reference_context_ids``: the eval set's gold document ids (answerable questions).

Two evalkit columns ride along (ragas ignores keys it does not know): ``id``, the query id,
and ``error``, the message of a query that failed. Scored back with ``evalkit score
--answers FILE --eval-set SET@vN``, every answer metric of every query is the run's (a test
checks it on the demo); the retrieval metrics are those of the evidence passages' documents,
since a ragas sample holds no longer ranking.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.analysis.labels import passage_texts
from evalkit.errors import EvalkitError
from evalkit.index.corpus import load_corpus
from evalkit.interop.export import _load, _variants

if TYPE_CHECKING:
    from evalkit.analysis.runs import LoadedRun

TOP_K = 5  # documents a retrieval-only variant's sample carries as its contexts


def ragas_rows(run: LoadedRun, variant: str, top_k: int = TOP_K) -> list[dict[str, Any]]:
    """The ragas samples of one variant of ``run``, one per query, in the eval set's order."""
    rows = run.rows(variant)
    generates = any(r.get("generation") for r in rows)
    passages = passage_texts(run, variant) if generates else {}
    documents = _document_texts(run) if not generates else {}
    out = []
    for r in rows:
        sample: dict[str, Any] = {"id": r["query_id"], "user_input": r.get("question") or ""}
        generation = r.get("generation") or {}
        if generates:
            evidence = generation.get("evidence") or []
            sample["response"] = generation.get("answer") or ""
            sample["retrieved_contexts"] = [_text(passages, e[0], run, r["query_id"]) for e in evidence]
            sample["retrieved_context_ids"] = [str(e[1]) for e in evidence]
        else:
            top = [str(d["doc_id"]) for d in (r.get("reranked") or r.get("retrieved") or [])[:top_k]]
            sample["retrieved_contexts"] = [_text(documents, d, run, r["query_id"]) for d in top]
            sample["retrieved_context_ids"] = top
        reference = generation.get("reference_answer") or r.get("reference_answer")
        if reference:
            sample["reference"] = reference
        if r.get("gold_doc_ids"):
            sample["reference_context_ids"] = [str(d) for d in r["gold_doc_ids"]]
        if r.get("error") and r.get("outcome") == "failed":
            sample["error"] = f"{r['error'].get('type', 'Error')}: {r['error'].get('message', '')}"
        out.append(sample)
    return out


def export_ragas(run: str | Path | LoadedRun, out_dir: str | Path, variants: Sequence[str] | None = None,
                 tracking_uri: str | None = None) -> list[Path]:
    """Write ``<variant>.jsonl`` (ragas samples) for every variant of ``run`` into ``out_dir``."""
    from evalkit.fileio import write_atomic

    loaded = _load(run, tracking_uri)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in _variants(loaded, variants):
        path = out / f"{name}.jsonl"
        text = "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in ragas_rows(loaded, name))
        write_atomic(path, text, hint="choose another --output folder")
        written.append(path)
    return written


def _document_texts(run: LoadedRun) -> dict[str, str]:
    path = run.summary.eval_set.corpus
    if not path or not Path(path).is_file():
        raise EvalkitError(f"{run.source}: the corpus of this run ({path or 'not recorded'}) was not found; a ragas "
                           "sample needs the passage texts: restore the corpus file, then export again")
    return {d.id: (f"{d.title}\n{d.text}" if d.title else d.text) for d in load_corpus(path).documents}


def _text(texts: dict[str, str], key: str, run: LoadedRun, query_id: str) -> str:
    text = texts.get(key)
    if not text:
        raise EvalkitError(f"{run.source}: query '{query_id}': no text for passage '{key}' (the corpus changed "
                           "since the run?); a ragas sample needs every passage's text")
    return text
