"""MLflow logging of one eval invocation: a parent run, one child run per variant.

Importing this package is cheap: mlflow and matplotlib load inside the functions that
use them.
"""
from evalkit.track.mlflow_log import (
    VariantLog,
    default_tracking_uri,
    log_invocation,
    mask_secrets,
    mlflow_metric_name,
)

__all__ = ["VariantLog", "default_tracking_uri", "log_invocation", "mask_secrets", "mlflow_metric_name"]
