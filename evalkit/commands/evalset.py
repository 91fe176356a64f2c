"""``evalkit evalset``: validate, freeze, append to and summarise eval sets.

Thin wrappers over ``evalkit.evalsets``; an ``EvalSetError`` becomes one clear line
and exit code 1.
"""
from __future__ import annotations

import json
from typing import Any

import click

from evalkit.commands import user_errors


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def evalset() -> None:
    """Validate, freeze, append to and summarise eval sets.

    An eval set is eval_sets/NAME.jsonl, one question per line. It only grows:
    `freeze` records the current lines as version N in eval_sets/NAME.manifest.json,
    and a frozen line may never change again, so `--eval-set NAME.jsonl@vN` always
    means the same questions. To fix a frozen record, append a corrected one with a
    new id.

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
    from evalkit.evalsets import freeze as freeze_
    from evalkit.evalsets import resolve_spec

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
    from evalkit.evalsets import append as append_
    from evalkit.evalsets import resolve_spec

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
    from evalkit.evalsets import check

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
    from evalkit.evalsets import stats as stats_

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
