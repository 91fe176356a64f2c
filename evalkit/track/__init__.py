"""MLflow logging of one eval invocation: a parent run, one child run per variant, one trace per query.

Modules, one concept each: ``names`` (MLflow's key rules), ``secrets`` (masking before
anything is logged), ``store`` (store, experiment, run life cycle, stale runs),
``payloads`` (what each run holds), ``traces`` (per-query traces and assessments),
``plots`` (figures), ``mlflow_log`` (the logging steps), ``background`` (the worker
process that logs beside the query loop). Importing this package is cheap: mlflow,
pandas and matplotlib load inside the functions that use them.
"""
from evalkit.track.mlflow_log import InvocationLogger, log_invocation
from evalkit.track.names import mlflow_metric_name
from evalkit.track.payloads import VariantLog
from evalkit.track.secrets import mask_secrets
from evalkit.track.store import default_tracking_uri, ui_hint

__all__ = ["InvocationLogger", "VariantLog", "default_tracking_uri", "log_invocation", "mask_secrets",
           "mlflow_metric_name", "ui_hint"]
