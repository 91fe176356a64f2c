"""Reading finished runs (never re-running graphs): compare, calibrate, gate, report.

| module | concern |
|---|---|
| ``runs`` | load a run: summary JSON, results folder, or MLflow run id |
| ``reading`` | what ``compare``, ``gate`` and ``report`` keep of each per-query record (rankings to depth 20) |
| ``direction`` | which way is better, per metric name (defined once) |
| ``stats`` | paired bootstrap CI, sign-flip permutation p, Holm / Benjamini-Hochberg |
| ``pairing`` | per-query metric values, pairing queries, eval-set compatibility |
| ``compare``, ``fusion_diag`` | ``evalkit compare``: paired tests; hybrid fusion diagnostics |
| ``calibrate``, ``guard_config`` | ``evalkit calibrate``: guard thresholds; calibrated configs |
| ``gate`` | ``evalkit gate``: non-inferiority for CI, with refusals and exit codes |
| ``report``, ``concerns`` | the run's tables printed by ``evalkit run``; which concern a metric belongs to |
| ``report_data``, ``report_queries``, ``report_html``, ``run_report`` | ``evalkit report``: numbers, per-query views, jinja2 rendering (``templates/``) |
| ``figures``, ``artifacts``, ``tables`` | PNG figures, MLflow artifact logging, console tables (rich) |
"""
