"""evalkit's error hierarchy: every user-facing error says where (file, line, field) and what to do."""
from __future__ import annotations

import difflib
from collections.abc import Iterable


class EvalkitError(Exception):
    """Base class of errors caused by user input; the CLI prints them without a traceback."""


class ParamError(EvalkitError):
    """A node parameter refused when the node is built (it needs the corpus or a model to check).

    ``param`` is its path inside the node's ``params`` (``filters``); ``problem`` says what is
    wrong. Building a graph turns it into a :class:`ConfigError` naming the config file, the
    line and ``nodes.NAME.params.PARAM``.
    """

    def __init__(self, message: str, param: str | None = None, problem: str | None = None):
        super().__init__(message)
        self.param, self.problem = param, problem or message


MAX_LISTED = 12
"""At most this many valid choices are listed when none is close (a corpus has thousands of ids)."""


def did_you_mean(word: str, choices: Iterable[str], n: int = 1) -> str:
    """A '; did you mean ...?' suffix naming up to ``n`` close choices; when none is close, the
    valid choices if there are at most :data:`MAX_LISTED`, else only how many there are."""
    choices = sorted(str(c) for c in choices)
    close = difflib.get_close_matches(str(word), choices, n=n, cutoff=0.6)
    if close:
        quoted = [f"'{c}'" for c in close]
        return f"; did you mean {quoted[0] if len(quoted) == 1 else ', '.join(quoted[:-1]) + ' or ' + quoted[-1]}?"
    if not choices:
        return ""
    if len(choices) <= MAX_LISTED:
        return f"; valid choices: {', '.join(choices)}"
    return f"; none of the {len(choices)} valid choices is close"


class LocatedError(EvalkitError):
    """An error in a file: names the file, the line (when known) and the path inside it."""

    def __init__(self, file: str, where: str, message: str, line: int | None = None):
        self.file, self.where, self.line, self.message = file, where, line, message
        loc = f"{file}:{line}" if line else file
        super().__init__(f"{loc}: {where}: {message}" if where else f"{loc}: {message}")


class ConfigError(LocatedError):
    """A graph config that cannot be loaded: unknown node type or parameter, bad edge..."""


class EvalSetError(LocatedError):
    """An eval set or corpus record that is malformed, or a version that was tampered with."""


class IndexMismatchError(EvalkitError):
    """A query-side model that differs from the one the index was built with."""


class UnknownNameError(EvalkitError, ValueError):
    """A name that no registry knows (LLM backend, embedder, reranker, tokenizer...); says the valid ones."""


class ModelSetupError(EvalkitError):
    """A model that cannot be set up as configured: a missing local folder or package, a loaded model
    that is not the one its cache identity names."""
