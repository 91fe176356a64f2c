"""Interoperability: finished runs out to other tools, other tools' data in as evalkit eval sets.

    from evalkit.interop import export_trec, to_dataframe, import_dataset, import_ragas

``export.py`` writes TREC run/qrels files and a per-query table (pandas, parquet,
CSV). The importers (Hugging Face ``datasets`` saved to disk, parquet and JSONL files
with a column mapping, ragas-style samples) live in :mod:`evalkit.importers` with the
BEIR importer, and are re-exported here. pandas, pyarrow and datasets load inside the
functions that use them.
"""
from evalkit.importers.dataset import (
                                       ColumnMap,
                                       InteropImportResult,
                                       import_dataset,
                                       import_ragas,
                                       parse_mapping,
                                       read_rows,
)
from evalkit.interop.export import (
                                       export_run,
                                       export_trec,
                                       to_dataframe,
                                       trec_qrels_lines,
                                       trec_run_lines,
                                       write_table,
)

__all__ = ["ColumnMap", "InteropImportResult", "export_run", "export_trec", "import_dataset", "import_ragas",
           "parse_mapping", "read_rows", "to_dataframe", "trec_qrels_lines", "trec_run_lines", "write_table"]
