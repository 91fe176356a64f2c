"""Built-in node families, one module each; importing this package registers them.

| type | module | reads -> writes |
|---|---|---|
| ``retrieve`` | ``retrieve.py`` | queries -> retrieved, channel_hits |
| ``rerank`` | ``rerank.py`` | question, retrieved -> reranked, rerank_scores, rerank_model |
| ``guard`` | ``guard.py`` | reranked -> guard_triggered, guard_reason, guard_threshold, evidence, outcome |
| ``generate`` | ``generate.py`` | question, evidence -> answer, citations, used_documents, invalid_citations, abstained, answer_evidence, generator, outcome |
| ``fallback`` | ``generate.py`` | -> the fixed "no reliable evidence" answer, outcome fallback |
"""
from evalkit.nodes import generate, guard, rerank, retrieve  # noqa: F401
