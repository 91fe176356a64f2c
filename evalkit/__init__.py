"""evalkit: evaluate and compare variants of RAG pipelines built as module graphs.

From Python (see README "From Python")::

    import evalkit
    results = evalkit.evaluate("eval_sets/demo_kb.jsonl@v1", ["graph_configs/bm25.yaml"], mlflow=False)
    results.summary, results.to_pandas(), results.compare("a", "b"), results.report("r.html")
    evalkit.score(eval_set=..., run="my.trec", name="mine", output="results/mine.json")
    evalkit.load_results("results/demo_kb.json")

Importing this package is cheap: the names above load on first use, and heavy libraries
(torch, sentence-transformers, faiss, mlflow) inside the functions that need them.
"""
from __future__ import annotations

from evalkit.lazy import lazy_exports

__version__ = "0.1.0"

_LAZY = {"evaluate": "evalkit.api", "score": "evalkit.api", "load_results": "evalkit.results",
         "Results": "evalkit.results"}

__all__ = ["Results", "__version__", "evaluate", "load_results", "score"]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
