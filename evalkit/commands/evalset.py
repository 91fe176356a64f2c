"""``evalkit evalset``: validate, freeze, append to and summarise eval sets.

Thin wrappers over ``evalkit.evalsets``; an ``EvalSetError`` becomes one clear line
and exit code 1.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import click

from evalkit.analysis.review_page import render_review_page
from evalkit.commands import user_errors
from evalkit.errors import EvalSetError, did_you_mean
from evalkit.evalsets import append as append_
from evalkit.evalsets import check, read_manifest, resolve_spec
from evalkit.evalsets import freeze as freeze_
from evalkit.evalsets import stats as stats_
from evalkit.evalsets.gen_run import append_lines, generate_eval_set
from evalkit.evalsets.generate import GEN_TYPES, TEMPLATE_TYPES, GenOptions
from evalkit.evalsets.review import page_lines, pending, read_decisions, review_records
from evalkit.index.corpus import load_corpus


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def evalset() -> None:
    """Validate, freeze, append to, summarise, generate and review eval sets.

    An eval set is eval_sets/NAME.jsonl, one question per line. It only grows:
    `freeze` records the current lines as version N in eval_sets/NAME.manifest.json,
    and a frozen line may never change again, so `--eval-set NAME.jsonl@vN` always
    means the same questions. To fix a frozen record, append a corrected one with a
    new id.

    No set yet? `generate` writes candidate questions from your corpus and `review`
    lets a person keep, edit or drop each.

    \b
    Typical life of a set:
      evalkit evalset validate eval_sets/demo_kb.jsonl
      evalkit evalset freeze demo_kb --corpus eval_sets/corpora/demo_kb.jsonl
      evalkit evalset append demo_kb new_questions.jsonl
      evalkit evalset freeze demo_kb
      evalkit evalset stats demo_kb
    """


@evalset.command()
@click.argument("name_or_path", metavar="NAME_OR_PATH")
@click.option("--corpus", type=click.Path(dir_okay=False), default=None,
              help="Corpus JSONL the gold ids refer to. Required by the first freeze; later freezes "
                   "may repeat it but never change it.")
@click.option("--description", default=None,
              help="What the eval set is for, in one line (kept in the manifest; replaces the old one).")
@user_errors
def freeze(name_or_path: str, corpus: str | None, description: str | None) -> None:
    """Freeze the current lines as a new, immutable version.

    The new version covers every line of NAME_OR_PATH (NAME means
    eval_sets/NAME.jsonl) and records the content hash of the corpus. All lines
    are validated first: format, unique ids, and gold ids present in the corpus.
    With no new lines, a new version is recorded only if the corpus content
    changed (or the latest version was frozen without a corpus hash).
    """
    path, _ = resolve_spec(name_or_path)
    entry = freeze_(name_or_path, corpus=corpus, description=description)
    click.echo(f"Froze {path} v{entry['version']}: {entry['lines']} lines, sha256 {entry['sha256']}, "
               f"corpus content sha256 {entry['corpus_content_sha256'][:16]}")
    click.echo(f"Pin it in a run with: --eval-set {path}@v{entry['version']}")


@evalset.command()
@click.argument("name_or_path", metavar="NAME_OR_PATH")
@click.argument("records_file", metavar="FILE", type=click.Path(exists=True, dir_okay=False))
@user_errors
def append(name_or_path: str, records_file: str) -> None:
    """Append the records of a JSONL file to an eval set.

    The records of FILE go to the end of NAME_OR_PATH. Every record is checked
    first (format, an id the set does not use yet, gold ids in the set's corpus);
    if one fails, nothing is appended. The new records stay unfrozen until the
    next `evalkit evalset freeze`.
    """
    path, _ = resolve_spec(name_or_path)
    n = append_(name_or_path, records_file)
    click.echo(f"Appended {n} record(s) to {path} (unfrozen). Freeze them with: evalkit evalset freeze {path}")


@evalset.command()
@click.argument("path", metavar="NAME_OR_PATH")
@user_errors
def validate(path: str) -> None:
    """Check an eval set and its frozen versions.

    Checks the whole file: frozen lines untouched, every record well-formed, the
    corpus unchanged since the latest version was frozen (changed, added and
    removed documents are named), gold ids in the corpus named by the manifest. Prints OK with the latest version,
    its line count and hash, then any warnings (unfrozen lines, duplicate
    questions). Exits 1 on the first error.
    """
    result = check(path)
    if result.manifest is None:
        click.echo(f"OK {result.path}: {result.lines} lines, not frozen yet")
    else:
        latest = result.manifest.latest
        extra = f" (+{result.unfrozen} unfrozen)" if result.unfrozen else ""
        click.echo(f"OK {result.path}: v{latest['version']}, {latest['lines']} lines{extra}, "
                   f"sha256 {latest['sha256']}")
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)


@evalset.command()
@click.argument("path", metavar="NAME_OR_PATH[@vN]")
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON (for scripts) instead of a table.")
@user_errors
def stats(path: str, as_json: bool) -> None:
    """Count questions by type, language and tag.

    Also gold documents per answerable question and the recorded versions.
    NAME_OR_PATH covers every line, unfrozen ones included; NAME_OR_PATH@vN covers
    exactly that version.
    """
    data = stats_(path)
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    click.echo("\n".join(format_stats(data)))


def format_stats(data: dict[str, Any]) -> list[str]:
    """The lines of the human-readable ``stats`` table."""
    version = f"v{data['version']}" if data["version"] else "not frozen"
    gold = data["gold_per_question"]
    out = [f"{data['path']}  ({version}, {data['lines']} lines"
           + (f", {data['unfrozen']} unfrozen)" if data["unfrozen"] else ")"),
           f"records: {data['records']}  answerable: {data['answerable']}  unanswerable: {data['unanswerable']}"
           f"  with reference answer: {data['with_reference_answer']}"]
    if gold["min"] is not None:
        out.append(f"gold docs per answerable question: min {gold['min']}  mean {gold['mean']:.2f}  max {gold['max']}")
    for title, counts in (("type", data["by_type"]), ("lang", data["by_lang"]), ("tag", data["by_tag"])):
        if not counts:
            continue
        width = max(len(title), *(len(k) for k in counts))
        out += ["", f"{title:<{width}}  count", f"{'-' * width}  -----"]
        out += [f"{k:<{width}}  {v:>5}" for k, v in counts.items()]
    if data["versions"]:
        out += ["", "version  lines  created               sha256"]
        out += [f"{'v' + str(e['version']):<7}  {e['lines']:>5}  {e['created']:<20}  {e['sha256'][:16]}"
                for e in data["versions"]]
    return out


def _types(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...] | None:
    """``--types single,multi_hop`` -> a tuple of known generated-question types."""
    if value is None:
        return None
    names = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
    for name in names:
        if name not in GEN_TYPES:
            raise click.BadParameter(f"unknown type '{name}'{did_you_mean(name, GEN_TYPES)}; "
                                     f"choose from {', '.join(GEN_TYPES)}")
    if not names:
        raise click.BadParameter(f"name at least one of {', '.join(GEN_TYPES)}")
    return names


@evalset.command()
@click.option("--corpus", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Corpus JSONL (id, title, text) to write questions from.")
@click.option("--name", required=True, help="Eval set to append to: NAME means eval_sets/NAME.jsonl (created when "
                                            "missing); a path ending in .jsonl is used as given.")
@click.option("--n", "n", type=click.IntRange(1, 100_000), default=200, show_default=True,
              help="Questions to keep (fewer when the corpus or the attempts run out).")
@click.option("--llm", "llm", type=click.Path(exists=True, dir_okay=False), default=None,
              help="LLM spec YAML (backend, model, base_url...): write questions with it. Without it the offline, "
                   "deterministic template generator (template/v1) runs.")
@click.option("--lang", type=click.Choice(["auto", "en", "zh"]), default="auto", show_default=True,
              help="Language of the questions: auto follows each passage's language.")
@click.option("--types", callback=_types, default=None,
              help="Comma-separated question types: single, multi_hop, comparison, colloquial, unanswerable. "
                   "Default: all five with --llm; single,multi_hop (what the templates make) without.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed: the same seed gives the same questions.")
@click.option("--embedder", default=None,
              help="With --llm: embedder (e5, minilm) that finds near-duplicate questions, through the embedding "
                   "cache. Without it near-duplicates are found lexically (character 3-grams).")
@user_errors
def generate(corpus: str, name: str, n: int, llm: str | None, lang: str, types: tuple[str, ...] | None, seed: int,
             embedder: str | None) -> None:
    """Generate questions from your own corpus and append them to an eval set.

    Each line gets relevant_doc_ids (the passages it was written from), a
    reference_answer, a type, its language and `generated` provenance (generator,
    parameters, a fingerprint of each source document). The lines stay unfrozen: review
    them (`evalkit evalset review NAME`), then `evalkit evalset freeze`.

    \b
    Example (offline, template/v1):
      evalkit evalset generate --corpus eval_sets/corpora/demo_kb.jsonl --name my_kb --n 50
    """
    chosen = types or (GEN_TYPES if llm else TEMPLATE_TYPES)
    result = generate_eval_set(corpus, name, GenOptions(n=n, types=tuple(chosen), lang=lang, seed=seed), llm=llm,
                               embedder=embedder)
    for line in generation_summary(result, corpus):
        click.echo(line)


def generation_summary(result: Any, corpus: str) -> list[str]:
    """The lines ``generate`` prints: what was appended, by type and language, and what was dropped and why."""
    lines = result.appended
    state = "new, unfrozen" if result.created else "unfrozen"
    out = [f"Appended {len(lines)} question(s) written by {result.generator} from {corpus} to {result.path} ({state})"
           if lines else f"No question appended to {result.path}: " + (
               "no sentence of the corpus names an entity and states a value (an amount with its unit, a share, a "
               "year, a date); try --llm" if result.generator == "template/v1" and not result.attempts else
               "every attempt was dropped (see below)" if result.attempts else "nothing new to write")]
    if lines:
        by_type = Counter(x["type"] for x in lines)
        by_lang = Counter(x["lang"] for x in lines)
        out.append("by type: " + ", ".join(f"{k} {v}" for k, v in sorted(by_type.items()))
                   + "; by language: " + ", ".join(f"{k} {v}" for k, v in sorted(by_lang.items())))
    if result.skipped_types:
        out.append(f"not written by {result.generator}: {', '.join(result.skipped_types)} (these need --llm)")
    dropped = sum(result.dropped.values())
    out.append(f"attempts: {result.attempts}, kept: {len(lines)}, dropped: {dropped}"
               + (" (" + ", ".join(f"{k} {v}" for k, v in sorted(result.dropped.items())) + ")" if dropped else ""))
    if result.dedup:
        out.append(f"near-duplicates found by: {result.dedup}")
    if result.usage:
        u = result.usage
        out.append(f"LLM: {int(u.get('calls', 0))} call(s), {int(u.get('cache_hits', 0))} from the cache, "
                   f"{int(u.get('tokens_in', 0))} tokens in, {int(u.get('tokens_out', 0))} out, "
                   f"{int(u.get('failures', 0))} failed")
    out.append(f"Next: evalkit evalset review {result.path}  (keep, edit or drop each), then "
               f"evalkit evalset freeze {result.path}" + ("" if not result.created else f" --corpus {corpus}"))
    return out


@evalset.command()
@click.argument("name_or_path", metavar="NAME_OR_PATH")
@click.option("--apply", "apply_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="The decisions file the review page saved: append one line per decision, then freeze.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the review page (default: NAME.review.html beside the set).")
@click.option("--corpus", type=click.Path(exists=True, dir_okay=False), default=None,
              help="The corpus, when the set was never frozen (a frozen set names its own).")
@click.option("--no-freeze", is_flag=True, help="With --apply: append the decisions but leave them unfrozen.")
@user_errors
def review(name_or_path: str, apply_file: str | None, out: Path | None, corpus: str | None, no_freeze: bool) -> None:
    """Review generated questions in a browser: keep, edit or drop each.

    Without --apply: writes an HTML page (offline, self-contained) of every generated
    line not reviewed yet, with its source documents. "Save decisions" there downloads
    NAME.decisions.json. With --apply FILE: each decision becomes one appended line (a
    copy under a new id, recording the decision and the line it replaces); the reviewed
    lines and dropped ones stop counting as questions, and the set is frozen as a new
    version. Nothing already in the file is edited.

    \b
    Example:
      evalkit evalset review my_kb
      evalkit evalset review my_kb --apply my_kb.decisions.json
    """
    path, version = resolve_spec(name_or_path)
    if version is not None:
        raise click.ClickException(f"{path}: review works on the whole file, not one version: drop '@v{version}'")
    set_corpus = _set_corpus(path, corpus)
    if apply_file is None:
        lines = page_lines(pending(path), set_corpus)
        page = out or path.with_name(path.stem + ".review.html")
        page.write_text(render_review_page(lines, eval_set=path.stem, file_name=f"{path.stem}.decisions.json"),
                        encoding="utf-8")
        click.echo(f"wrote {len(lines)} generated question(s) to review: {page}")
        click.echo(f"then: evalkit evalset review {name_or_path} --apply {path.stem}.decisions.json")
        return
    decisions = read_decisions(apply_file)
    new = review_records(path, decisions, apply_file)
    if not new:
        click.echo(f"{apply_file}: no decisions; nothing appended")
        return
    append_lines(path, new, set_corpus)
    counts = {d: sum(1 for x in new if x["generated"]["review"]["decision"] == d) for d in ("keep", "edit", "drop")}
    click.echo(f"Appended {len(new)} review line(s) to {path}: kept {counts['keep']}, edited {counts['edit']}, "
               f"dropped {counts['drop']}")
    if no_freeze:
        click.echo(f"Unfrozen; freeze them with: evalkit evalset freeze {path}")
        return
    entry = freeze_(path, corpus=corpus)
    click.echo(f"Froze {path} v{entry['version']}: {entry['lines']} lines, sha256 {entry['sha256']}")


def _set_corpus(path: Path, corpus: str | None) -> Any:
    """The set's corpus: the one its manifest names, else ``--corpus``; an error when neither is known."""
    manifest = read_manifest(path)
    if manifest is not None:
        return load_corpus(manifest.corpus_path)
    if corpus is None:
        raise EvalSetError(str(path), "", "never frozen, so it names no corpus: pass --corpus PATH (the corpus the "
                           "questions were generated from)")
    return load_corpus(corpus)
