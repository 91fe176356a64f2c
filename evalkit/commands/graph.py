"""``evalkit graph``: check graph configs, or print one as the loader sees it."""
from __future__ import annotations

from pathlib import Path

import click

from evalkit.errors import ConfigError
from evalkit.graph import node_types
from evalkit.graph.sweep import load_variants


@click.group("graph")
def graph() -> None:
    """Inspect graph configs without running them (no models load)."""


@graph.command("check")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
def check(paths: tuple[Path, ...]) -> None:
    """Validate graph configs: node types, parameters, edges, routes, reachability of 'end'.

    Exits non-zero at the first invalid file, naming the line and the path inside it.
    """
    for p in paths:
        try:
            configs = load_variants(p)
        except ConfigError as exc:
            raise click.ClickException(str(exc)) from exc
        if len(configs) == 1:
            cfg = configs[0]
            click.echo(f"ok  {p}  ({cfg.name}: {len(cfg.nodes)} nodes, {len(cfg.routes)} conditional routes)")
        else:
            click.echo(f"ok  {p}  ({len(configs)} variants: {', '.join(c.name for c in configs)})")


@graph.command("show")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def show(path: Path) -> None:
    """Print a config with every default filled in, as YAML (what a run will use).

    A sweep file prints every variant it expands to, as YAML documents separated by ---.
    """
    try:
        configs = load_variants(path)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    types = node_types()
    docs = []
    for cfg in configs:
        for spec in cfg.nodes.values():
            spec["params"] = types[spec["type"]].Params(**spec["params"]).model_dump(mode="json")
        docs.append(cfg.to_yaml())
    click.echo("---\n".join(docs), nl=False)
