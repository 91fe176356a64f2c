"""Built-in node families, one module each; ``evalkit.nodes.builtin`` imports them all, which registers them.

Importing this package (or one family) loads no other family: ``node_types()``
(:mod:`evalkit.graph.node`) imports ``builtin`` when a graph is built or checked, and a
reader of finished records (``evalkit score --run``) never does.

| type | module | reads -> writes |
|---|---|---|
| ``retrieve`` | ``retrieve.py`` | queries -> retrieved, channel_hits |
| ``rerank`` | ``rerank.py`` | question, retrieved -> reranked, rerank_scores, rerank_model |
| ``guard`` | ``guard.py`` | reranked -> guard_triggered, guard_reason, guard_threshold, evidence, outcome |
| ``graph_local`` | ``graph_retrieve.py`` | queries -> retrieved, channel_hits, graph_entities, graph_evidence |
| ``graph_global`` | ``graph_retrieve.py`` | queries -> retrieved, channel_hits, graph_communities |
| ``agent_scheduler`` | ``scheduler.py`` | question, queries -> retrieved, scheduler_class, scheduler_reason, scheduler_source, tool_hits, tool_stats (llm_fallback) |
| ``generate`` | ``generate.py`` | question, evidence (evidence_text, graph_evidence) -> answer, citations, used_documents, invalid_citations, abstained, answer_evidence, generator, outcome |
| ``fallback`` | ``generate.py`` | -> the fixed "no reliable evidence" answer, outcome fallback |
| ``intent_router`` | ``router.py`` | question -> route, route_reason, route_source (llm_fallback) |
| ``query_rewrite`` | ``rewrite.py`` | question, attempt, reflection -> attempt (+1), queries, rewrite, sub_queries, rewrite_source, rewrite_reason, rewrite_history, rewrite_futile (llm_fallback) |
| ``grade`` | ``grade.py`` | question, retrieved/reranked, attempt -> evidence, graded, relevant_ratio, grade_decision, grade_reason, reflection, grade_method (llm_fallback) |
| ``self_check`` | ``self_check.py`` | question, answer, answer_evidence, attempt -> self_check_passed, self_check_decision, self_check_reason, self_check_claims, reflection (llm_fallback) |
| ``http`` / ``http_generate`` | ``external.py`` | the ``send`` fields -> the mapped rankings / + the answer fields; http_call (external_failure) |
| ``python`` / ``python_generate`` | ``external.py`` | the declared ``reads`` -> the declared ``writes`` / + the answer fields |
| ``mmr`` | ``evidence.py`` | question, a ranking (field) -> the same ranking, diversified |
| ``reorder`` | ``evidence.py`` | a ranking (field, default evidence) -> the same, best at both ends |
| ``compress`` | ``compress.py`` | question, evidence (graph_evidence) -> evidence, evidence_text, compression (graph_evidence) |
| ``sql`` | ``sql.py`` | question -> route, route_reason, route_source, sql, retrieved, evidence, evidence_text, evidence_texts (llm_fallback) |
| ``input_filter`` | ``safety.py`` | question -> safety_blocked, safety (llm_fallback) |
| ``moderate`` | ``safety.py`` | answer -> safety_blocked, safety (llm_fallback) |
| ``answer_each`` | ``plan.py`` | question, a ranking (sub_queries) -> the generate fields, plan (llm_fallback) |

Every node and parameter is documented in ``docs/nodes.md``.
"""
