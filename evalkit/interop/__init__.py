"""Interoperability: finished runs out to other tools, other tools' data in as evalkit eval sets.

    from evalkit.interop import export_trec, to_dataframe, import_dataset, import_ragas

``export.py`` writes TREC run/qrels files and a per-query table (pandas, parquet,
CSV); ``importers.py`` reads Hugging Face ``datasets`` saved to disk, parquet and
JSONL files (with a column mapping) and ragas-style samples, and writes an evalkit
corpus plus a frozen eval set. pandas, pyarrow and datasets load inside the
functions that use them.
"""
from evalkit.interop.export import (
                                       export_run,
                                       export_trec,
                                       to_dataframe,
                                       trec_qrels_lines,
                                       trec_run_lines,
                                       write_table,
)
from evalkit.interop.importers import (
                                       ColumnMap,
                                       InteropImportResult,
                                       import_dataset,
                                       import_ragas,
                                       parse_mapping,
                                       read_rows,
)

__all__ = ["ColumnMap", "InteropImportResult", "export_run", "export_trec", "import_dataset", "import_ragas",
           "parse_mapping", "read_rows", "to_dataframe", "trec_qrels_lines", "trec_run_lines", "write_table"]
