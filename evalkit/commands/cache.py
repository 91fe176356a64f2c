"""``evalkit cache``: list, verify and clear what evalkit keeps in its cache folder."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from evalkit.cachedir import KINDS, check, entries, human_age, human_size, parse_age, remove
from evalkit.cachestore import default_cache_root

KIND_HELP = "Only entries of this kind (repeatable); evalkit cache list shows each entry's kind."


def _root(cache: Path | None) -> Path:
    return cache if cache is not None else default_cache_root()


cache_option = click.option(
    "--cache", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="The cache folder. Default: $EVALKIT_CACHE when set, else .evalkit_cache in the current folder "
         "(the folder evalkit run and evalkit demo use).")


def _kinds_option(fn: Callable[..., Any]) -> Callable[..., Any]:

    return click.option("--kind", "kinds", multiple=True, type=click.Choice(list(KINDS)), help=KIND_HELP)(fn)


@click.group("cache")
def cache() -> None:
    """See, check and empty evalkit's cache (indexes, embeddings, LLM answers).

    \b
    The cache is derived data: evalkit rebuilds any entry that is missing or
    damaged (a warning names the file) and the numbers stay the same. Clearing
    costs time (indexes, embeddings) or model calls (llm: paid answers).
    Location: $EVALKIT_CACHE, else .evalkit_cache/ in the current folder.
    \b
    Examples:
      evalkit cache list                      # what is there, how big, how old
      evalkit cache verify                    # exit 1 when an entry is bad
      evalkit cache verify --fix              # ... and delete the bad ones
      evalkit cache clear --kind dense        # drop every faiss index
      evalkit cache clear --older-than 30d    # drop what was not rebuilt for a month
    """


@cache.command("list")
@cache_option
@_kinds_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per entry (kind, key, path, bytes, age_s).")
def list_(cache: Path | None, kinds: tuple[str, ...], as_json: bool) -> None:
    """List the cache's entries: kind, key, size and age (time since last written).

    \b
    Kinds: bm25tok/bm25/dense/graph are index folders under indexes/ (key: a
    hash of what they were built from; meta.json inside says what); embeddings
    and llm are sqlite files; leftover is what a killed build left behind.
    """
    root = _root(cache)
    found = entries(root, list(kinds))
    if as_json:
        for e in found:
            click.echo(json.dumps({"kind": e.kind, "key": e.key, "path": str(e.path), "bytes": e.size,
                                   "age_s": round(e.age_s(), 1)}, ensure_ascii=False))
        return
    if not found:
        click.echo(f"{root}: no cache entries" + (f" of kind {', '.join(kinds)}" if kinds else ""))
        return
    rows = [(e.kind, e.key, human_size(e.size), human_age(e.age_s())) for e in found]
    widths = [max(len(r[i]) for r in [("kind", "key", "size", "age"), *rows]) for i in range(4)]
    click.echo(f"{'kind':<{widths[0]}}  {'key':<{widths[1]}}  {'size':>{widths[2]}}  {'age':>{widths[3]}}")
    for r in rows:
        click.echo(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:>{widths[2]}}  {r[3]:>{widths[3]}}")
    total = sum(e.size for e in found)
    by_kind = {k: sum(1 for e in found if e.kind == k) for k in KINDS if any(e.kind == k for e in found)}
    click.echo(f"{_count(len(found))}, {human_size(total)} in {root} "
               f"({', '.join(f'{n} {k}' for k, n in by_kind.items())})")


@cache.command("verify")
@cache_option
@_kinds_option
@click.option("--fix", is_flag=True, help="Delete every bad entry (the next run rebuilds it).")
@click.pass_context
def verify(ctx: click.Context, cache: Path | None, kinds: tuple[str, ...], fix: bool) -> None:
    """Check every entry; print the bad ones and exit 1 if there are any.

    \b
    Index folders: every file against the size and checksum in its meta.json.
    sqlite files: sqlite's integrity_check, and each answer or vector against
    its own checksum.
    Eval sets frozen from rows: their manifest. Leftovers: unfinished builds
    over an hour old and damaged files set aside are bad. Runs verify the
    entries they load anyway; this checks all of them at once, e.g. in CI or
    after a disk problem. With --fix the bad entries are deleted and the exit
    code is 0.
    """
    root = _root(cache)
    found = entries(root, list(kinds))
    bad = [(e, problem) for e in found if (problem := check(e)) is not None]
    for e, problem in bad:
        click.echo(f"bad  {e.kind:<9} {e.key}: {problem}" + ("  -> deleted" if fix else ""))
        if fix:
            remove(e)
    click.echo(f"{_count(len(found))} checked in {root}: {len(found) - len(bad)} good, {len(bad)} bad"
               + ("" if not bad or fix else "; delete them with evalkit cache verify --fix (they are rebuilt "
                                           "when next needed)"))
    ctx.exit(1 if bad and not fix else 0)


@cache.command("clear")
@cache_option
@_kinds_option
@click.option("--older-than", "older_than", metavar="AGE", default=None,
              help="Only entries not written for this long: 30m, 12h, 7d, 2w.")
@click.option("--dry-run", is_flag=True, help="Print what would be deleted; delete nothing.")
def clear(cache: Path | None, kinds: tuple[str, ...], older_than: str | None, dry_run: bool) -> None:
    """Delete cache entries: all of them, or those of --kind and/or --older-than.

    \b
    Every entry is rebuilt when next needed: indexes and embeddings cost time,
    llm entries cost model calls (and a replay-only run needs them), so
    "--kind llm" deserves a second thought. Do not clear a cache another run
    is using at the same moment.
    """
    try:
        min_age = parse_age(older_than) if older_than is not None else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--older-than") from None
    root = _root(cache)
    chosen = [e for e in entries(root, list(kinds)) if min_age is None or e.age_s() >= min_age]
    for e in chosen:
        click.echo(f"{'would delete' if dry_run else 'deleted'}  {e.kind:<9} {e.key}  ({human_size(e.size)})")
        if not dry_run:
            remove(e)
    click.echo(f"{'would free' if dry_run else 'freed'} {human_size(sum(e.size for e in chosen))} "
               f"({_count(len(chosen))}) in {root}")


def _count(n: int) -> str:
    return f"{n} entry" if n == 1 else f"{n} entries"
