"""Reading finished runs (never re-running graphs): compare, calibrate, gate, report.

| module | concern |
|---|---|
| ``runs`` | load a run: summary JSON, results folder, or MLflow run id |
| ``direction`` | which way is better, per metric name (defined once) |
| ``stats`` | paired bootstrap CI, sign-flip permutation p, Holm / Benjamini-Hochberg |
| ``pairing`` | per-query metric values, pairing queries, eval-set compatibility |
| ``compare``, ``fusion_diag`` | ``evalkit compare``: paired tests; hybrid fusion diagnostics |
| ``calibrate``, ``guard_config`` | ``evalkit calibrate``: guard thresholds; calibrated configs |
| ``gate`` | ``evalkit gate``: non-inferiority for CI, with refusals and exit codes |
| ``report`` | the run comparison table printed by ``evalkit run`` |
| ``report_data``, ``report_html``, ``run_report`` | ``evalkit report``: HTML + Markdown report |
| ``figures``, ``artifacts``, ``tables`` | PNG figures, MLflow artifact logging, text tables |
"""
