"""Corpus, chunking, tokenisation, dense and BM25 indexes, and the on-disk index cache."""
