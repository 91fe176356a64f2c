"""Embedders and rerankers behind small interfaces, with a content-addressed embedding cache."""
