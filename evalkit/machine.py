"""Where a run was computed: the CPU and the numeric stack, kept in the run summary.

A dense model's float arithmetic takes different kernels on different CPUs (AVX2, AVX-512,
AMX) and library versions, so one run repeated elsewhere can differ in the last digits of a
dense score, and now and then in the order of two near-tied passages (the demo's dense
figures moved in the 3rd-4th decimal between two machines: ``docs/demo.md``). evalkit cannot
make that vanish. It records where each run was made (:func:`environment`), and ``compare``
and ``gate`` say when the two runs they pair were made on different CPUs or stacks
(:func:`environment_notes`), so a difference of that size is not read as the change's effect.
No host name, user or path is recorded.
"""
from __future__ import annotations

import platform
import subprocess
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from evalkit import __version__

KERNEL_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16",
                "amx_tile", "amx_bf16", "neon", "asimd")
"""CPU features that decide which float kernels numpy, torch and faiss run (the ones present are recorded)."""

LIBRARIES = ("numpy", "torch", "faiss-cpu", "sentence-transformers", "transformers", "bm25s")
"""Packages whose versions can change a score (an absent one is left out); evalkit's own is added as ``evalkit``
(from ``evalkit.__version__``: the distribution is named ``evalkit-ragraph``, see pyproject.toml)."""


def _cpuinfo() -> tuple[str, list[str]]:
    """(CPU model name, the :data:`KERNEL_FLAGS` it has), from /proc/cpuinfo where there is one."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor() or platform.machine(), []
    model = ""
    flags: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "cpu model", "hardware") and not model:
            model = value.strip()
        elif key in ("flags", "features") and not flags:
            flags = set(value.split())
    return model or platform.processor() or platform.machine(), [f for f in KERNEL_FLAGS if f in flags]


def environment() -> dict[str, Any]:
    """The CPU model, its kernel-relevant features, the Python and the versions of :data:`LIBRARIES`."""
    cpu, flags = _cpuinfo()
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    versions["evalkit"] = __version__
    return {"cpu": cpu, "cpu_flags": flags, "machine": platform.machine(), "python": platform.python_version(),
            "libraries": versions}


def environment_notes(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None,
                      labels: tuple[str, str]) -> list[str]:
    """A note when two runs were made on different CPUs or stacks ([] when alike or not recorded)."""
    diff = environment_difference(a, b, labels)
    if not diff:
        return []
    return [f"{labels[0]} and {labels[1]} were computed on different machines or stacks ({diff}): "
            "dense scores can differ in their last digits for that alone, so a difference of that size is not "
            "the change's effect; run both on one machine to compare like with like"]


def environment_difference(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None,
                           labels: tuple[str, str]) -> str:
    """What differs between two environments, in words ("" when alike or either is not recorded)."""
    if not a or not b:
        return ""
    diffs = []
    if a.get("cpu") != b.get("cpu"):
        diffs.append(f"CPU {a.get('cpu')!r} vs {b.get('cpu')!r}")
    if a.get("cpu_flags") != b.get("cpu_flags"):
        only_a = sorted(set(a.get("cpu_flags") or []) - set(b.get("cpu_flags") or []))
        only_b = sorted(set(b.get("cpu_flags") or []) - set(a.get("cpu_flags") or []))
        diffs.append("CPU features " + "; ".join(
            f"only {label}: {', '.join(fl)}" for label, fl in ((labels[0], only_a), (labels[1], only_b)) if fl))
    libs_a, libs_b = a.get("libraries") or {}, b.get("libraries") or {}
    changed = [f"{n} {libs_a.get(n, '-')} vs {libs_b.get(n, '-')}" for n in sorted(set(libs_a) | set(libs_b))
               if libs_a.get(n) != libs_b.get(n)]
    if changed:
        diffs.append(", ".join(changed))
    return "; ".join(diffs)


def environment_tags(env: Mapping[str, Any]) -> dict[str, str]:
    """:func:`environment` as flat MLflow tags (``environment.cpu``, ``environment.lib.numpy``...)."""
    tags = {f"environment.{k}": str(env[k]) for k in ("cpu", "machine", "python") if env.get(k)}
    if env:
        tags["environment.cpu_flags"] = ",".join(env.get("cpu_flags") or [])
    tags.update({f"environment.lib.{name}": str(v) for name, v in (env.get("libraries") or {}).items()})
    return tags


def environment_from_tags(tags: Mapping[str, str]) -> dict[str, Any]:
    """The inverse of :func:`environment_tags` ({} when a run logged none)."""
    if "environment.cpu" not in tags:
        return {}
    flags = tags.get("environment.cpu_flags", "")
    return {"cpu": tags["environment.cpu"], "cpu_flags": flags.split(",") if flags else [],
            "machine": tags.get("environment.machine", ""), "python": tags.get("environment.python", ""),
            "libraries": {k[len("environment.lib."):]: v for k, v in tags.items() if k.startswith("environment.lib.")}}


def git_commit() -> str | None:
    """The commit of the evalkit checkout that computed a run (None outside a git checkout)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or None if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None
