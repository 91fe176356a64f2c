"""What every claim-support judge returns, the interface it implements, and the registry.

A judge reads a question, an answer and the evidence passages the answer was written
from, splits the answer into claims and gives each claim one of four verdicts:

- ``supported``: the evidence states it;
- ``unsupported``: the evidence speaks against it, and the reason names how (another
  value for the same thing, a flipped negation, a number, date or name found nowhere in
  the evidence or the question and not reachable by a general derivation);
- ``unverified``: the judge could not decide (a derived or rescaled value, a value the
  evidence states about something else, a paraphrase it cannot match). Honest, and never
  counted as a hallucination; a model judge may decide it later (``offline+llm``);
- ``not_checkable``: nothing a judge can check ("Yes.", "Hope this helps"); never
  counted as supported. A judge that fails (an LLM timeout, a
malformed reply) says so in :attr:`JudgeResult.error`: a failure never turns silently
into a verdict.

Backends register a factory in :data:`JUDGES` under the name users write, with
``@register_judge(name, calls_model=..., model_folder=...)`` (``offline`` here; ``llm``, ``nli``
and ``ragas`` in :mod:`evalkit.judges`; plugins through ``EVALKIT_PLUGINS``), and are built
with :func:`make_judge`. Other packages ask :func:`calls_model` / :func:`takes_model_folder`,
never a judge's name.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, get_args

from evalkit.errors import EvalkitError, did_you_mean
from evalkit.plugins import load_plugins

__all__ = [
    "JUDGES",
    "JUDGE_INFO",
    "JudgeInfo",
    "VERDICTS",
    "ClaimVerdict",
    "Judge",
    "JudgeResult",
    "UnknownJudgeError",
    "Verdict",
    "calls_model",
    "judge_parts",
    "judges",
    "make_judge",
    "register_judge",
    "takes_model_folder",
]

Verdict = Literal["supported", "unsupported", "unverified", "not_checkable"]
VERDICTS: tuple[str, ...] = get_args(Verdict)


@dataclass
class ClaimVerdict:
    """A judge's verdict on one claim (one answer sentence), with the reason in words."""

    claim: str
    verdict: Verdict
    reason: str
    evidence_id: str | None = None  # the passage that decided the verdict (supports it, or was compared)
    evidence_ids: list[str] = field(default_factory=list)  # every passage the claim is grounded in
    stage: str | None = None  # which judge of a cascade decided it (``offline``, ``llm``); None: a single judge
    escalated: bool = False   # a cascade sent it to its second judge (if that failed, ``stage`` is the first)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}; got '{self.verdict}'")


@dataclass
class JudgeResult:
    """All claim verdicts for one answer, or the error that stopped the judge."""

    claims: list[ClaimVerdict] = field(default_factory=list)
    error: str | None = None

    @property
    def n_supported(self) -> int:
        return sum(c.verdict == "supported" for c in self.claims)

    @property
    def n_unsupported(self) -> int:
        return sum(c.verdict == "unsupported" for c in self.claims)

    @property
    def n_unverified(self) -> int:
        return sum(c.verdict == "unverified" for c in self.claims)

    @property
    def n_not_checkable(self) -> int:
        return sum(c.verdict == "not_checkable" for c in self.claims)

    @property
    def n_checkable(self) -> int:
        """Claims the judge looked at and could say something of: supported, unsupported or unverified."""
        return self.n_supported + self.n_unsupported + self.n_unverified

    @property
    def unsupported(self) -> bool | None:
        """Whether any claim is unsupported (the answer-level label); None when the judge failed."""
        return None if self.error is not None else self.n_unsupported > 0

    @property
    def unverified(self) -> bool | None:
        """Whether the answer has an unverified claim and no unsupported one; None when the judge failed."""
        return None if self.error is not None else (self.n_unverified > 0 and self.n_unsupported == 0)

    def to_dict(self) -> dict[str, Any]:
        return {"claims": [asdict(c) for c in self.claims], "error": self.error}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JudgeResult:
        return cls(claims=[ClaimVerdict(**c) for c in data.get("claims", [])], error=data.get("error"))


class Judge(Protocol):
    """A claim-support judge. ``identity`` names everything that changes its verdicts
    (backend, version, thresholds, model): the cache key and the tag on a run's results."""

    identity: str

    def judge(self, question: str, answer: str, evidence: Sequence[tuple[str, str]]) -> JudgeResult:
        """Judge ``answer`` to ``question`` against ``evidence`` = [(passage id, text), ...]."""
        ...


class UnknownJudgeError(EvalkitError, ValueError):
    """A judge name that is not registered; the message lists the choices."""


class JudgeSetupError(EvalkitError, ValueError):
    """A judge configured without what it needs (an LLM judge without a model that can judge)."""


JudgeFactory = Callable[..., Judge]


@dataclass(frozen=True)
class JudgeInfo:
    """What a registered judge needs: a model it calls (``llm``, ``ragas``: --judge-llm) or a local model
    folder (``nli``: --judge-model). Asked by ``run --dry-run`` and the CLI instead of judge names."""

    name: str
    factory: JudgeFactory
    calls_model: bool = False
    model_folder: bool = False


JUDGES: dict[str, JudgeFactory] = {}
"""Judge backends by the name users write; each value builds a judge from keyword options."""
JUDGE_INFO: dict[str, JudgeInfo] = {}
"""The same judges with what each needs (:class:`JudgeInfo`)."""


def register_judge(name: str, factory: JudgeFactory | None = None, *, calls_model: bool = False,
                   model_folder: bool = False) -> Any:
    """Register a judge backend under ``name`` (once): ``register_judge("x", factory)``, or as a decorator
    ``@register_judge("x", calls_model=True)`` on the factory. Returns the factory (the decorator)."""
    def add(f: JudgeFactory) -> JudgeFactory:
        if name in JUDGES and JUDGES[name] is not f:
            raise ValueError(f"judge '{name}' is already registered")
        JUDGES[name] = f
        JUDGE_INFO[name] = JudgeInfo(name, f, calls_model=calls_model, model_folder=model_folder)
        return f
    return add if factory is None else add(factory)


def judges() -> dict[str, JudgeFactory]:
    """Every registered judge: the built-ins, then the user's plugins (``EVALKIT_PLUGINS``)."""
    import evalkit.judges  # noqa: F401  (registers llm, nli, ragas)

    load_plugins()
    return JUDGES


def judge_parts(name: str) -> list[JudgeInfo]:
    """The registered judges ``name`` is made of (one, or the two of a cascade ``A+B``); unknown parts refused."""
    known = judges()
    parts = [name] if name in known or "+" not in name else name.split("+", 1)
    for part in parts:
        if part not in known:
            where = f" in cascade '{name}'" if len(parts) > 1 else ""
            raise UnknownJudgeError(f"unknown judge '{part}'{where}{did_you_mean(part, known)}")
    return [JUDGE_INFO[p] for p in parts]


def calls_model(name: str) -> bool:
    """Whether judge ``name`` (or a part of its cascade) calls an LLM per answer (needs --judge-llm)."""
    return any(p.calls_model for p in judge_parts(name))


def takes_model_folder(name: str) -> bool:
    """Whether judge ``name`` (or a part of its cascade) reads a local model folder (--judge-model)."""
    return any(p.model_folder for p in judge_parts(name))


@register_judge("offline")
def _offline(cache_root: Any = None, **options: Any) -> Judge:
    """The offline judge needs no model cache (``cache_root`` is accepted for a uniform call)."""
    from evalkit.judges.offline import OfflineJudge

    return OfflineJudge(**options)


def make_judge(name: str, **options: Any) -> Judge:
    """Build the judge registered as ``name`` with ``options`` (e.g. ``make_judge("offline")``).

    ``A+B`` (``offline+llm``, ``offline+nli``) is a cascade of two registered judges: B decides
    again the claims A leaves ``unverified`` (:mod:`evalkit.judges.cascade`)."""
    if len(judge_parts(name)) > 1:
        from evalkit.judges.cascade import make_cascade

        return make_cascade(name, **options)
    return JUDGES[name](**options)
