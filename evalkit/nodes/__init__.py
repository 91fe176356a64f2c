"""Built-in node families, one module each; importing this package registers them.

| type | module | reads -> writes |
|---|---|---|
| ``retrieve`` | ``retrieve.py`` | queries -> retrieved, channel_hits |
| ``rerank`` | ``rerank.py`` | question, retrieved -> reranked, rerank_scores, rerank_model |
| ``guard`` | ``guard.py`` | reranked -> guard_triggered, guard_reason, guard_threshold, evidence, outcome |
"""
from evalkit.nodes import guard, rerank, retrieve  # noqa: F401
