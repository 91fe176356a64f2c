"""``Results``: a finished run in a notebook, over the same files and analysis code as the CLI.

    results = evalkit.evaluate("eval_sets/demo_kb.jsonl@v1", ["graph_configs/bm25.yaml"])
    results.summary                   # DataFrame: one row per variant, one column per metric
    results.to_pandas()               # one row per (variant, query), every per-query metric a column
    print(results.compare("bm25", "bm25_okapi"))   # what `evalkit compare` prints
    results.report("results/demo.report.html")      # what `evalkit report` writes

Nothing here computes a number of its own: ``to_pandas`` is ``evalkit export``'s table,
``compare`` runs ``evalkit compare``'s paired tests, ``report`` builds ``evalkit report``'s
pages, all over the run's ``per_query.jsonl`` files.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.analysis.compare import VariantRef, compare_variants
from evalkit.analysis.report import comparison_table
from evalkit.analysis.run_report import build_report, default_paths, write_report
from evalkit.analysis.runs import LoadedRun, load_run
from evalkit.errors import EvalkitError
from evalkit.interop.export import to_dataframe

if TYPE_CHECKING:
    import pandas as pd

    from evalkit.analysis.compare import Comparison
    from evalkit.records import QueryResult

VariantSpec = str | tuple["Results", str]
SUMMARY_COUNTS = ("n_queries", "n_failed", "n_excluded", "seconds")


class Results:
    """A finished run (summary JSON + per-variant ``per_query.jsonl``), loaded lazily."""

    def __init__(self, run: LoadedRun):
        self.run = run

    @property
    def path(self) -> Path | None:
        """The summary JSON, when the run came from files."""
        return self.run.summary_path

    @property
    def variants(self) -> list[str]:
        return self.run.variant_names

    @property
    def eval_set(self) -> Any:
        """The eval set identity the run recorded (``EvalSetRef``: name, version, sha256...)."""
        return self.run.summary.eval_set

    @property
    def summary(self) -> pd.DataFrame:
        """Variant metrics: one row per variant (index), one column per metric, then the counts."""
        import pandas as pd

        rows = {name: {**v.metrics, **{c: getattr(v, c) for c in SUMMARY_COUNTS}}
                for name, v in self.run.summary.variants.items()}
        df = pd.DataFrame.from_dict(rows, orient="index")
        df.index.name = "variant"
        return df

    def results(self, variant: str) -> list[QueryResult]:
        """The per-query records of one variant (``QueryResult``), in eval-set order."""
        return self.run.results(variant)

    def to_pandas(self, variants: Sequence[str] | None = None) -> pd.DataFrame:
        """One row per (variant, query), every per-query metric a column (``evalkit export``'s table)."""
        return to_dataframe(self.run, variants)

    def compare(self, *variants: VariantSpec, metrics: Sequence[str] | None = None, resamples: int = 10_000,
                confidence: float = 0.95, correction: str = "holm", alpha: float = 0.05,
                seed: int = 0) -> Comparison:
        """Paired comparison of variants, the first the reference (``evalkit compare``'s tests).

        A variant is a name of this run, or ``(other_results, name)`` for a variant of another
        run of the same eval set (a scored system beside a graph variant, say). ``print()``
        the result for the CLI's table; ``.to_dict()`` has every number.
        """
        if len(variants) < 2:
            raise EvalkitError("compare needs at least two variants, e.g. results.compare('bm25', 'hybrid_rrf')")
        refs = []
        for spec in variants:
            owner, name = (self, spec) if isinstance(spec, str) else spec
            owner.run.variant(name)  # unknown name: error with did-you-mean
            label = name if owner is self else f"{owner.run.label}:{name}"
            refs.append(VariantRef(label, owner.run, name))
        return compare_variants(refs, metrics, n_resamples=resamples, confidence=confidence, seed=seed,
                                correction=correction, alpha=alpha)

    def report(self, path: str | Path | None = None, variants: Sequence[str] | None = None,
               resamples: int = 2000, seed: int = 0) -> tuple[Path, Path]:
        """Write ``evalkit report``'s HTML page to ``path`` (and its Markdown twin beside it, ``.md``)."""
        built = build_report(self.run, list(variants) if variants else None, n_resamples=resamples, seed=seed)
        html, md = default_paths(self.run)
        if path is not None:
            html = Path(path)
            md = html.with_suffix(".md")
        return write_report(built, html, md)

    def __repr__(self) -> str:
        return f"Results({self.run.source!r})\n{comparison_table(self.run.summary)}"


def load_results(path: str | Path, tracking_uri: str | None = None) -> Results:
    """Open any finished run: a summary JSON, its results folder, or an MLflow run id (with ``tracking_uri``)."""
    return Results(load_run(path, tracking_uri))
