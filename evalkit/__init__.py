"""evalkit: evaluate and compare variants of RAG pipelines built as module graphs.

Importing this package is cheap; heavy libraries (torch, sentence-transformers, faiss,
mlflow) load inside the functions that need them.
"""
__version__ = "0.1.0"
