"""evalkit's error hierarchy: every user-facing error says where (file, line, field) and what to do."""
from __future__ import annotations

import difflib
from collections.abc import Iterable


class EvalkitError(Exception):
    """Base class of errors caused by user input; the CLI prints them without a traceback."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A ' did you mean ...?' suffix, or a list of the valid choices when nothing is close."""
    choices = sorted(str(c) for c in choices)
    close = difflib.get_close_matches(str(word), choices, n=1, cutoff=0.6)
    if close:
        return f"; did you mean '{close[0]}'?"
    return f"; valid choices: {', '.join(choices)}" if choices else ""


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
