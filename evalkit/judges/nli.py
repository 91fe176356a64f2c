"""The ``nli`` judge: claim support by a sequence-classification model kept in a local folder.

What it is for: relation-level checking without a model server. Users point
``--judge nli --judge-model FOLDER`` (or ``judge_options: {model: FOLDER}``) at a Hugging
Face model folder they downloaded once (an MNLI-style DeBERTa / RoBERTa cross-encoder, a
MiniCheck checker, an HHEM-style scorer). evalkit never downloads: the folder must hold
``config.json``, the weights and the tokenizer files, and is loaded with
``local_files_only=True``. A folder that ships its own Python code (``config.json``
``auto_map``, e.g. Vectara HHEM-2.1-open) is refused unless ``trust_remote_code: true``.

Per answer: claims are the answer's sentences (:func:`evalkit.text.claims.split_claims`);
premises are windows of up to ``window_sentences`` evidence sentences, one every
``window_stride`` sentences (:func:`evalkit.judges.nli_rules.evidence_windows`); every
(window, claim) pair is scored, ``batch_size`` pairs per forward pass, truncated to the
model's length (the premise is cut, never the claim); the best window decides
(:func:`evalkit.judges.nli_rules.decide`; the rule and the three kinds are documented
there and in docs/judges.md). Each reason names the window and the probability
("entailment 0.93 in doc-3 sentences 2-4").

Scores are cached by content in ``<cache root>/nli.sqlite``: key = the model's fingerprint
(a hash of every file in the folder: config, tokenizer, weights) + the pair's text + the
input settings (max length, input format). The cache holds the model's probabilities, not
verdicts, so changing a threshold re-decides from the cache without running the model;
thresholds are in the judge's ``identity`` (the tag on a run's results) instead.
Deterministic: eval mode, ``torch.no_grad``, ``threads`` fixes torch's thread count.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalkit.errors import EvalkitError
from evalkit.judges.base import JudgeResult, JudgeSetupError
from evalkit.judges.nli_rules import Labels, Scores, Thresholds, Window, decide, evidence_windows, read_labels
from evalkit.models.nli import NLICache, model_fingerprint, pair_key
from evalkit.text.claims import split_claims

__all__ = ["VERSION", "NLIJudge", "NLIOptions", "make_nli_judge", "options_from_path", "parse_options"]

VERSION = 1  # bump when windows, the verdict rule or the reasons change verdicts
FILE_NAME = "nli.sqlite"


class NLIOptions(BaseModel):
    """Options of the ``nli`` judge (``judge_options`` in configs, a YAML for ``--judge-model``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(description="the local model folder (config.json, weights, tokenizer files)")
    kind: Literal["three_way", "binary", "score"] | None = Field(
        default=None, description="three_way (MNLI-style), binary (MiniCheck-style), score (HHEM-style); "
                                  "default: from config.json (3+ labels, 2 labels, 1 label)")
    labels: dict[str, int | str] | None = Field(
        default=None, description="roles to output indexes or label names, for LABEL_0-style folders: "
                                  "{entailment: 0, neutral: 1, contradiction: 2} or {supported: 1}")
    entailment_threshold: float = Field(default=0.5, ge=0, le=1, description="three_way: supported at or above")
    contradiction_threshold: float = Field(default=0.5, ge=0, le=1, description="three_way: unsupported at or above")
    support_threshold: float = Field(default=0.5, ge=0, le=1, description="binary/score: supported at or above")
    low_threshold: float = Field(default=0.5, ge=0, le=1, description="binary/score: 'low' at or below")
    binary_low_is_unsupported: bool = Field(
        default=False, description="binary/score: a low probability is unsupported (default: unverified)")
    window_sentences: int = Field(default=3, ge=1, description="sentences per evidence window")
    window_stride: int = Field(default=2, ge=1, description="a window starts every this many sentences")
    batch_size: int = Field(default=16, ge=1, description="pairs per forward pass")
    max_length: int | None = Field(default=None, ge=8, description="tokens per pair (default: the tokenizer's, "
                                                                   "at most 512)")
    input_format: Literal["pair", "eos_joined"] = Field(
        default="pair", description="pair: tokenizer(premise, claim); eos_joined: premise + eos token + claim "
                                    "as one text (MiniCheck's RoBERTa / DeBERTa input)")
    trust_remote_code: bool = Field(default=False, description="run Python code shipped in the folder (HHEM-2.1)")
    threads: int | None = Field(default=None, ge=1, description="torch CPU threads (process-wide)")
    cache: Literal["off", "read-write", "replay-only"] = Field(
        default="read-write", description="the score cache: replay-only fails on a miss instead of running the model")

    def thresholds(self) -> Thresholds:
        return Thresholds(self.entailment_threshold, self.contradiction_threshold, self.support_threshold,
                          self.low_threshold, self.binary_low_is_unsupported)


def parse_options(options: Mapping[str, Any], where: str = "nli judge") -> NLIOptions:
    """``NLIOptions`` from a dict; errors name the option and what is wrong (never a traceback)."""
    if not options.get("model"):
        raise JudgeSetupError(f"{where} needs a model folder: --judge-model PATH, or judge_options: {{model: PATH}}")
    try:
        opts = NLIOptions(**options)
    except ValidationError as exc:
        problems = "; ".join(f"option '{'.'.join(str(p) for p in e['loc'])}': {e['msg']}" for e in exc.errors())
        raise JudgeSetupError(f"{where}: {problems}") from None
    if opts.low_threshold > opts.support_threshold:
        raise JudgeSetupError(f"{where}: low_threshold ({opts.low_threshold}) is above support_threshold "
                              f"({opts.support_threshold})")
    if opts.window_stride > opts.window_sentences:
        raise JudgeSetupError(f"{where}: window_stride ({opts.window_stride}) is larger than window_sentences "
                              f"({opts.window_sentences}): sentences between windows would never be read")
    return opts


def options_from_path(path: str | Path) -> dict[str, Any]:
    """``--judge-model PATH``: a model folder -> ``{model: PATH}``; a YAML file -> its options
    (a relative ``model`` is read from the YAML file's folder)."""
    p = Path(path).expanduser()
    if p.is_file() and p.suffix in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise JudgeSetupError(f"{p}: not valid YAML ({exc})") from None
        if not isinstance(data, dict):
            raise JudgeSetupError(f"{p}: expected a mapping of NLI judge options (model: FOLDER, ...)")
        if isinstance(data.get("model"), str) and not Path(data["model"]).expanduser().is_absolute():
            data["model"] = str((p.parent / Path(data["model"]).expanduser()).resolve())
        return data
    return {"model": str(p.resolve()) if p.exists() else str(p)}


def _folder(model: str) -> Path:
    path = Path(model).expanduser()
    if not path.is_dir():
        hint = (f" ('{model}' looks like a Hugging Face hub name: evalkit never downloads; fetch it once with "
                f"`huggingface-cli download {model} --local-dir FOLDER` and give FOLDER)"
                if not path.is_absolute() and model.count("/") == 1 and not path.parent.exists() else "")
        raise JudgeSetupError(f"NLI model folder not found: {path}{hint}")
    if not (path / "config.json").is_file():
        raise JudgeSetupError(f"NLI model folder {path} has no config.json: not a Hugging Face model folder "
                              "(give the folder that holds config.json, the weights and the tokenizer files)")
    return path


def _read_config(path: Path) -> dict[str, Any]:
    try:
        data = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise JudgeSetupError(f"{path / 'config.json'}: cannot be read as JSON ({exc})") from None
    if not isinstance(data, dict):
        raise JudgeSetupError(f"{path / 'config.json'}: expected a JSON object")
    return data


Scorer = Callable[[list[tuple[str, str]]], np.ndarray]
"""Scores a batch of (premise, claim) pairs: one row of probabilities per pair (see ``NLIJudge``)."""


class NLIJudge:
    """Claim verdicts from a local NLI / fact-checking model (see the module docstring).

    ``scorer`` replaces the model (tests): a function from a batch of pairs to rows of
    probabilities in the model's output order (softmax / sigmoid already applied).
    """

    def __init__(self, options: NLIOptions, cache_root: str | Path | None = None, scorer: Scorer | None = None):
        self.options = opts = options
        self.folder = _folder(opts.model)
        config = _read_config(self.folder)
        remote = bool(config.get("auto_map"))
        if remote and not opts.trust_remote_code:
            raise JudgeSetupError(f"NLI model folder {self.folder} ships its own Python code (config.json auto_map: "
                                  f"{', '.join(sorted(config['auto_map']))}); evalkit runs it only with the option "
                                  "trust_remote_code: true (read the code first)")
        self.labels: Labels = read_labels(config, kind=opts.kind, labels=opts.labels, where=str(self.folder),
                                          has_predict=remote)
        self.fingerprint = model_fingerprint(self.folder)
        self.thresholds = opts.thresholds()
        self.model_id = f"{self.folder.name}@{self.fingerprint}"
        # what shapes the model's output row (the cache key besides the pair): the transform (kind) and the input
        self._settings = f"{self.labels.kind}:max_len={opts.max_length or 'auto'}:input={opts.input_format}"
        self.identity = (f"nli:v{VERSION}:{self.model_id}:{self.labels.describe()}:{self.thresholds.describe()}:"
                         f"win={opts.window_sentences}/{opts.window_stride}:max_len={opts.max_length or 'auto'}:"
                         f"input={opts.input_format}")
        self._scorer = scorer
        self._lock = threading.Lock()
        self.cache: NLICache | None = None
        if opts.cache != "off":
            from evalkit.llm.cache import cache_path

            self.cache = NLICache(cache_path(cache_root).with_name(FILE_NAME))
        self.forward_calls = 0   # batches the model ran (cache hits run none)
        self.pairs_scored = 0    # pairs the model scored

    def _model(self) -> Scorer:
        if self._scorer is None:
            from evalkit.models.nli import load_scorer
            from evalkit.models.store import MODELS

            o = self.options
            key = ("nli", str(self.folder.resolve()), self.fingerprint, o.trust_remote_code, o.max_length,
                   o.input_format, self.labels, o.threads)
            self._scorer = MODELS.get(key, lambda: load_scorer(self.folder, self.labels, o))
        return self._scorer

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[Scores]:
        """Scores of each (premise, claim) pair: from the cache, else from the model in batches."""
        keys = [pair_key(p, c, self._settings) for p, c in pairs]
        known = self.cache.get_many(self.model_id, sorted(set(keys))) if self.cache else {}
        todo = list(dict.fromkeys(k for k in keys if k not in known))
        if todo and self.options.cache == "replay-only":
            raise JudgeSetupError(f"replay-only NLI cache {self.cache.path if self.cache else ''} has no score for "
                                  f"{len(todo)} pair(s) of model {self.model_id}; run once with cache: read-write")
        wanted = set(todo)
        first = {k: pair for k, pair in zip(keys, pairs) if k in wanted}
        fresh: dict[str, list[float]] = {}
        scorer = self._model() if todo else None
        for i in range(0, len(todo), self.options.batch_size):
            batch = todo[i:i + self.options.batch_size]
            with self._lock:
                rows = np.asarray(scorer([first[k] for k in batch]), dtype=np.float64)  # type: ignore[misc]
                self.forward_calls += 1
                self.pairs_scored += len(batch)
            fresh.update((k, [float(x) for x in row]) for k, row in zip(batch, rows.reshape(len(batch), -1)))
        if fresh and self.cache and self.options.cache == "read-write":
            self.cache.put_many(self.model_id, fresh)
        known.update(fresh)
        return [self._scores(known[k]) for k in keys]

    def _scores(self, row: list[float]) -> Scores:
        lab = self.labels
        if lab.kind == "three_way":
            return Scores(row[lab.entailment], row[lab.contradiction])  # type: ignore[index]
        return Scores(row[lab.supported] if lab.kind == "binary" else row[0])  # type: ignore[index]

    def verdicts(self, claims: Sequence[str], evidence: Sequence[tuple[str, str]]) -> list[Any]:
        """A verdict per claim against ``evidence`` = [(passage id, text), ...] (for cascades too)."""
        wins: list[Window] = evidence_windows(evidence, self.options.window_sentences, self.options.window_stride)
        scores = self.probabilities([(w.text, c) for c in claims for w in wins])
        n = len(wins)
        return [decide(c, wins, scores[i * n:(i + 1) * n], self.labels.kind, self.thresholds)
                for i, c in enumerate(claims)]

    def judge(self, question: str, answer: str, evidence: Sequence[tuple[str, str]]) -> JudgeResult:
        """Judge each sentence of ``answer`` against ``evidence``; a model failure is ``JudgeResult.error``."""
        claims = split_claims(answer or "")
        try:
            return JudgeResult(self.verdicts(claims, evidence))
        except EvalkitError:  # setup (a replay-only cache miss): the user's to fix, not a verdict
            raise
        except Exception as exc:  # noqa: BLE001 - a model failure is counted, never a verdict
            return JudgeResult(error=f"nli model {self.model_id} failed: {type(exc).__name__}: {str(exc)[:200]}")


def make_nli_judge(cache_root: str | Path | None = None, **options: Any) -> NLIJudge:
    """The ``nli`` judge from keyword options (``model`` = the local folder; see :class:`NLIOptions`).

    The model is loaded here (once per process, :data:`evalkit.models.store.MODELS`), so a folder
    transformers cannot load fails before any pipeline work, not on every answer.
    """
    judge = NLIJudge(parse_options(options), cache_root=cache_root)
    judge._model()
    return judge

