"""``evalkit evalset generate`` end to end: pick the generator, make the items, append them.

The lines go to ``eval_sets/NAME.jsonl`` (or the path given) through the append path of
:mod:`evalkit.evalsets.versions` when the set is frozen, so every line is checked (format,
new ids, gold ids in the set's corpus) before anything is written, and stays unfrozen
until ``evalkit evalset freeze``. A set that does not exist yet is created unfrozen; its
first ``freeze --corpus`` ties it to the corpus. A question already in the set (same id:
same question over the same gold documents) is not appended twice.
"""
from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.cachestore import default_cache_root
from evalkit.errors import EvalSetError
from evalkit.evalsets import gen_checks
from evalkit.evalsets.evalset import EVAL_SETS_DIR, check_gold_ids, display_path, parse_records, read_lines
from evalkit.evalsets.gen_llm import GENERATOR, LLM_TYPES, PURPOSE, LLMGenerator, bm25_search
from evalkit.evalsets.generate import (
    TEMPLATE,
    TEMPLATE_TYPES,
    GenOptions,
    Item,
    entity_graph,
    template_items,
    unsupported_types,
)
from evalkit.evalsets.manifest import manifest_path_for, read_manifest
from evalkit.evalsets.versions import append
from evalkit.index.corpus import Corpus, load_corpus
from evalkit.judges import make_judge
from evalkit.llm import LLMClient, LLMSpec, usage_scope


@dataclass
class GenerateResult:
    """What ``generate_eval_set`` did, for the command to print (and tests to check)."""

    path: Path
    generator: str
    appended: list[dict[str, Any]]
    created: bool
    attempts: int
    dropped: Counter = field(default_factory=Counter)
    dedup: str = ""
    skipped_types: list[str] = field(default_factory=list)
    usage: dict[str, float] | None = None


def eval_set_path(name: str, out_dir: str | Path = EVAL_SETS_DIR) -> Path:
    """``NAME`` -> ``eval_sets/NAME.jsonl``; a path (with a folder or ``.jsonl``) is taken as given."""
    p = Path(name)
    if p.suffix == ".jsonl" or len(p.parts) > 1:
        return p
    return Path(out_dir) / f"{name}.jsonl"


def existing_records(path: Path) -> list[Any]:
    """The records already in the set (none when it does not exist yet)."""
    return [r for _, r in parse_records(str(path), read_lines(path))] if path.exists() else []


def append_lines(path: Path, lines: list[dict[str, Any]], corpus: Corpus) -> None:
    """Append records to the set: through ``versions.append`` when it is frozen, else checked here.

    Either way every line is validated first and nothing is written if one fails.
    """
    payload = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)
    if manifest_path_for(path).exists():
        fd, tmp = tempfile.mkstemp(suffix=".jsonl", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(payload)
            append(path, tmp)
        finally:
            os.unlink(tmp)
        return
    old = read_lines(path) if path.exists() else []
    new = payload.encode("utf-8").splitlines(keepends=True)
    numbered = parse_records(str(path), old + new)  # format and unique ids over the whole file
    check_gold_ids(str(path), numbered[len(old):], corpus)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as fh:
        if old and not old[-1].endswith(b"\n"):
            fh.write(b"\n")
        fh.write(payload.encode("utf-8"))


def _check_corpus_matches(path: Path, corpus_path: Path) -> None:
    manifest = read_manifest(path) if path.exists() else None
    if manifest is not None and manifest.corpus_path != corpus_path.resolve():
        raise EvalSetError(str(path), "corpus", f"this eval set is tied to corpus {display_path(manifest.corpus_path)}, "
                           f"not {corpus_path}: generate from that corpus, or into a new set (another --name)")


def generate_eval_set(corpus_path: str | Path, name: str, options: GenOptions, *, llm: str | Path | None = None,
                      embedder: str | None = None, out_dir: str | Path = EVAL_SETS_DIR,
                      cache_root: Path | None = None) -> GenerateResult:
    """Generate questions from ``corpus_path`` and append them to the eval set ``name`` (see the module docstring)."""
    corpus_path = Path(corpus_path)
    corpus = load_corpus(corpus_path)
    path = eval_set_path(name, out_dir)
    _check_corpus_matches(path, corpus_path)
    old = existing_records(path)
    graph = entity_graph(corpus, cache_root)
    params = {**options.params(), "corpus": corpus_path.name}
    if llm is None:
        skipped = unsupported_types(options.types, TEMPLATE_TYPES)
        if len(skipped) == len(options.types):
            raise EvalSetError(str(path), "types", f"{TEMPLATE} writes {' and '.join(TEMPLATE_TYPES)} questions; "
                               f"{', '.join(skipped)} need an LLM: pass --llm llm.yaml")
        items = template_items(corpus, options, graph, {r.id for r in old})
        result = GenerateResult(path, TEMPLATE, [], not path.exists(), attempts=len(items), skipped_types=skipped)
        model = ""
    else:
        items, result, model = _llm_items(corpus, options, graph, llm, embedder, [r.question for r in old],
                                          cache_root, path)
    taken = {r.id for r in old}
    fresh: list[Item] = []
    for item in items:
        if item.id in taken:
            result.dropped["already_in_set"] += 1
            continue
        taken.add(item.id)
        fresh.append(item)
    lines = [item.to_line(corpus, result.generator, params, model) for item in fresh]
    if lines:
        append_lines(path, lines, corpus)
    result.appended = lines
    return result


def _llm_items(corpus: Corpus, options: GenOptions, graph: Any, llm: str | Path, embedder: str | None,
               seen: list[str], cache_root: Path | None, path: Path) -> tuple[list[Item], GenerateResult, str]:
    skipped = unsupported_types(options.types, LLM_TYPES)
    if skipped:
        raise EvalSetError(str(path), "types", f"unknown question type(s) {', '.join(skipped)}; "
                           f"choose from {', '.join(LLM_TYPES)}")
    root = Path(cache_root) if cache_root else default_cache_root()
    spec = LLMSpec.from_yaml(llm)
    embed, label = None, ""
    if embedder:
        from evalkit.index.resources import Resources
        from evalkit.models.embedders import ModelSpec

        embed, label = Resources(corpus, root).embedder(ModelSpec.of(embedder)).encode_queries, embedder
    client = LLMClient(spec, root, purpose=PURPOSE)
    try:
        gen = LLMGenerator(client, make_judge("offline"), bm25_search(corpus, root), gen_checks.Dedup(embed, label))
        with usage_scope() as totals:
            outcome = gen.run(corpus, options, graph, seen)
        model = client.identity
    finally:
        client.close()
    usage = totals.get(PURPOSE)
    result = GenerateResult(path, GENERATOR, [], not path.exists(), attempts=outcome.attempts,
                            dropped=outcome.dropped, dedup=outcome.dedup,
                            usage=usage.to_dict() if usage is not None else None)
    return outcome.items, result, model
