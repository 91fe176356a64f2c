"""Versioned, append-only eval sets: ``eval_sets/NAME.jsonl`` plus its manifest.

    from evalkit.evalsets import load_eval_set
    es = load_eval_set("eval_sets/demo_kb.jsonl@v2")   # or "demo_kb" for the latest version
    es.records, es.ref()                               # the questions; the identity a run records

``evalset.py`` holds the record format and its checks; ``versions.py`` the manifest,
``freeze``, ``append`` and the tamper check that keeps frozen versions immutable.
"""
from evalkit.evalsets.evalset import TYPES, EvalSet, resolve_spec
from evalkit.evalsets.manifest import Manifest, read_manifest
from evalkit.evalsets.versions import (
                                       CheckResult,
                                       append,
                                       check,
                                       freeze,
                                       load_eval_set,
                                       stats,
                                       validate,
)

__all__ = ["TYPES", "EvalSet", "CheckResult", "Manifest", "append", "check", "freeze", "load_eval_set",
           "read_manifest", "resolve_spec", "stats", "validate"]
