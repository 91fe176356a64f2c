"""MLflow logging of one eval invocation: a parent run, one child run per variant, one trace per query.

Modules, one concept each: ``names`` (MLflow's key rules), ``secrets`` (masking before
anything is logged), ``store`` (store, experiment, run life cycle, stale runs),
``payloads`` (what each run holds), ``traces`` (per-query traces and assessments),
``plots`` (figures), ``mlflow_log`` (the logging steps), ``background`` (the worker
process that logs beside the query loop). Importing this package is cheap: each name below
loads its module on first use, and mlflow, pandas and matplotlib load inside the functions
that use them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit.lazy import lazy_exports

if TYPE_CHECKING:
    from evalkit.track.mlflow_log import InvocationLogger, log_invocation
    from evalkit.track.names import mlflow_metric_name
    from evalkit.track.payloads import VariantLog
    from evalkit.track.secrets import mask_secrets
    from evalkit.track.store import default_tracking_uri, ui_hint

_EXPORTS = {**dict.fromkeys(("InvocationLogger", "log_invocation"), "evalkit.track.mlflow_log"),
            "mlflow_metric_name": "evalkit.track.names", "VariantLog": "evalkit.track.payloads",
            "mask_secrets": "evalkit.track.secrets",
            **dict.fromkeys(("default_tracking_uri", "ui_hint"), "evalkit.track.store")}

__all__ = ["InvocationLogger", "VariantLog", "default_tracking_uri", "log_invocation", "mask_secrets",
           "mlflow_metric_name", "ui_hint"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
