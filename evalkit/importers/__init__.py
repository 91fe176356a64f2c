"""Importers: external retrieval data turned into an evalkit corpus plus a frozen eval set.

    from evalkit.importers import BeirFiles, import_beir
    result = import_beir(BeirFiles.from_folder("data/scifact"), "scifact", "eval_sets")
    result.eval_set_path, result.version["sha256"]

``formats.py`` reads the files (JSONL/TSV queries, BEIR or TREC qrels, any of them
gzipped); ``beir.py`` finds them in a BEIR folder, checks them against each other and
writes the corpus and the frozen eval set.
"""
from evalkit.importers.beir import (
                                    BeirFiles,
                                    ImportFormatError,
                                    ImportResult,
                                    Qrels,
                                    import_beir,
                                    iter_corpus,
                                    output_paths,
                                    read_qrels,
                                    read_queries,
)

__all__ = ["BeirFiles", "ImportFormatError", "ImportResult", "Qrels", "import_beir", "iter_corpus", "output_paths",
           "read_qrels", "read_queries"]
