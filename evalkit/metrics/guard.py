"""The guard's abstention rates, registered here (computed in :func:`evalkit.run.summarise.variant_metrics`).

``abstain_rate_answerable``: share of answerable queries the guard stopped (false abstentions);
``abstain_rate_unanswerable``: share of unanswerable queries it stopped (correct abstentions). Per
query they are indicators (:func:`evalkit.analysis.pairing.per_query_values`). Variants with a
guard node only.
"""
from __future__ import annotations

from evalkit.metrics.catalog import NamedMetric, register_metrics

register_metrics(
    "retrieval",
    NamedMetric("abstain_rate_answerable", "lower", "share", "share of answerable queries the guard stopped "
                "(false abstentions)", header="guard(ans)"),
    NamedMetric("abstain_rate_unanswerable", "higher", "share", "share of unanswerable queries the guard stopped "
                "(correct abstentions)", header="guard(unans)"),
    source=__name__,
)
