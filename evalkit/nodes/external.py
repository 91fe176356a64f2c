"""Nodes that call the user's own system: a running service (``http``) or a function (``python``).

A node class has one role in the engine, so each comes in two types:

| type | role | for |
|---|---|---|
| ``http`` | retriever | a search service: its ranking becomes ``retrieved`` |
| ``http_generate`` | generator | a RAG service: its answer is judged like ``generate``'s (its ranking too, when mapped) |
| ``python`` | other | ``module:function(state) -> dict`` writing any declared state fields (a LangChain retriever) |
| ``python_generate`` | generator | a function that answers |

One converter (:func:`evalkit.nodes.system_outputs.to_state`) turns the system's outputs into state fields, so a
service or a function is scored exactly like a bundled graph:

- **rankings** (``retrieved``, ``reranked``, ``evidence``): ids, ``{doc_id, score}`` or
  ``Hit``s, best first, become ``Hit``s. A passage id of the variant's chunking stays that
  passage; a document id becomes its first passage; an id the corpus lacks is kept (it is
  never relevant).
- **an answer** (``answer``, with optional ``contexts`` and ``citations``) becomes the
  generator fields: ``answer``, ``abstained``, ``citations``, ``used_documents``,
  ``invalid_citations``, ``answer_evidence``, ``evidence_texts``, ``generator`` and
  ``outcome``. The evidence is ``contexts`` (texts or ``{doc_id, text}``) when given, else
  the top ``evidence_k`` of the ranking the node produced or sent. Citations are the
  given ids, else parsed from the answer as ``generate`` parses them.

``http``/``http_generate`` POST the state fields in ``send`` (default ``question``,
``query_id``, ``history``; a ranking travels as ``[{id, doc_id, score, text}]``) plus a
static ``body`` as JSON, and map response fields (dotted paths) into the outputs with
``response``. :mod:`evalkit.nodes.http_transport` gives each request a whole-request
deadline, retries (``Retry-After`` on 429), a concurrency cap and a response cache
(``cache: off`` for a live service, which then is not shared between variants). The node
writes ``http_call`` (status, latency, attempts, cache hit, URL with secrets masked) for
the trace. A call that fails after its retries raises :class:`ExternalCallError`, so the
query fails or takes its ``on_error`` edge; with ``on_failure: record`` the node writes
empty outputs and appends ``external_failure`` (node, kind, attempts, status, message),
and the query goes on, visibly degraded.

``python``/``python_generate`` call the user's ``module:function`` with the engine's
read-only view of the fields the config declares in ``reads`` (reading another fails the
query with a ``GraphError``); the returned keys must be the declared ``writes`` (plus
``answer``, ``contexts`` and ``citations`` for ``python_generate``). Configs never run code by
themselves: the module must be allowed in ``EVALKIT_PYTHON_NODES`` (comma-separated modules
or packages).

Declarations come from the params (``contract``), so config loading checks every read
against what is written upstream, and the engine checks every write.
"""
from __future__ import annotations

import importlib
import os
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from evalkit.errors import EvalkitError
from evalkit.graph.graph import GraphError
from evalkit.graph.node import Node, NodeParams, register_node
from evalkit.graph.schema import (
    ABSTAINED,
    ANSWER,
    EVIDENCE,
    HISTORY,
    OUTCOME,
    QUERY_ID,
    QUESTION,
    RERANKED,
    RETRIEVED,
    Contract,
    Role,
)
from evalkit.nodes.http_transport import ServiceClient
from evalkit.nodes.system_outputs import (
    ANSWER_AUX,
    ANSWER_FIELDS,
    EVIDENCE_TEXTS,
    EXTERNAL_FAILURE,
    HTTP_CALL,
    RANKINGS,
    ExternalCallError,
    PassageIds,
    _passage_ids,
    to_state,
)
from evalkit.records import Hit
from evalkit.redact import is_secret_key, looks_like_key, redact

__all__ = ["EVIDENCE_TEXTS", "EXTERNAL_FAILURE", "HTTP_CALL", "ExternalCallError", "HttpGenerate", "HttpNode",
           "PassageIds", "PythonGenerate", "PythonNode", "to_state"]

ALLOW_ENV = "EVALKIT_PYTHON_NODES"


def _instance_token() -> str:
    return uuid.uuid4().hex


# ---------------------------------------------------------------------------- python


def _allowed(module: str) -> bool:
    allowed = [m.strip() for m in os.environ.get(ALLOW_ENV, "").split(",") if m.strip()]
    return any(module == m or module.startswith(m + ".") for m in allowed)


class PythonParams(NodeParams):
    function: str = Field(description="module:function, called as function(state_view) -> dict")
    reads: list[str] = Field(default=["question"], description="state fields the function may read (declared "
                             "and enforced like any node's)")
    writes: list[str] = Field(default=[], description="state fields it returns besides the answer fields "
                              "(retrieved, reranked, evidence...)")
    memoize: bool = Field(default=True, description="false: not a function of its reads (a live chain, "
                          "sampling), so never shared between variants")
    evidence_k: int = Field(default=5, ge=1, description="without returned contexts, the answer is judged "
                            "against this many top passages of its ranking")

    @model_validator(mode="after")
    def _check(self) -> PythonParams:
        module, sep, func = self.function.partition(":")
        if not sep or not module or not func.isidentifier():
            raise ValueError(f"function must be 'module:function', got {self.function!r}")
        if not _allowed(module):
            raise ValueError(f"module '{module}' is not allowed: a graph config never runs code by itself; allow "
                             f"it with {ALLOW_ENV}={module} (comma-separated modules or packages)")
        answering = [w for w in self.writes if w in ANSWER_FIELDS]
        if answering:
            raise ValueError(f"writes {answering}: an answer is written by type python_generate (it writes every "
                             "answer field; list only the other fields it returns, such as retrieved)")
        return self


@register_node
class PythonNode(Node[PythonParams]):
    """Calls the user's ``module:function(state_view) -> dict`` (a LangChain retriever, say)."""

    type = "python"
    role = Role.OTHER
    external = True
    Params = PythonParams
    answers = False

    @classmethod
    def contract(cls, params: PythonParams) -> Contract:
        writes = [*params.writes, *(ANSWER_FIELDS if cls.answers else ())]
        return Contract(frozenset(params.reads), frozenset(), frozenset(writes), frozenset())

    def __init__(self, name: str, params: PythonParams, resources: Any = None):
        super().__init__(name, params, resources)
        module, _, func = params.function.partition(":")
        try:
            self.fn: Callable[[Mapping[str, Any]], Any] = getattr(importlib.import_module(module), func)
        except (ImportError, AttributeError) as exc:
            raise EvalkitError(f"python node '{name}': cannot load {params.function} ({type(exc).__name__}: {exc})") \
                from exc
        self.ids = _passage_ids(resources)
        self._token = _instance_token()
        self.keys = {*params.writes, *(("answer", *ANSWER_AUX) if self.answers else ())}

    def fingerprint(self) -> dict[str, Any]:
        """``memoize: false``: an identity of this instance alone, so no other variant reuses its results."""
        return {} if self.params.memoize else {"instance": self._token}

    def resume_fingerprint(self) -> dict[str, Any]:
        """Nothing: the instance token keeps other variants from reusing results, and differs in every process."""
        return {}

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        p = self.params
        out = self.fn(state)  # the engine's read-only view: only the declared reads
        if not isinstance(out, Mapping):
            raise GraphError(f"node '{self.name}' ({self.type}): {p.function} returned {type(out).__name__}, "
                             "expected a dict")
        extra = sorted(set(out) - self.keys)
        if extra:
            raise GraphError(f"node '{self.name}' ({self.type}): {p.function} returned undeclared key(s) {extra}; "
                             f"declared writes: {sorted(self.keys)}")
        missing = sorted(k for k in (*p.writes, *(("answer",) if self.answers else ())) if k not in out)
        if missing:
            raise GraphError(f"node '{self.name}' ({self.type}): {p.function} did not return {missing}")
        writes = [*p.writes, *((ANSWER,) if self.answers else ())]
        upstream: dict[str, Any] = {str(f): state[f] for f in RANKINGS if f in p.reads and f in state}
        return to_state(out, writes, self.ids, f"python:{p.function}", p.function, p.evidence_k, upstream)


@register_node
class PythonGenerate(PythonNode):
    """``python`` for a function that answers: judged like ``generate``."""

    type = "python_generate"
    role = Role.GENERATOR
    writes: ClassVar[tuple[str, ...]] = ANSWER_FIELDS
    answers = True


# ---------------------------------------------------------------------------- http


class HttpParams(NodeParams):
    url: str = Field(description="the service's endpoint (http:// or https://); credentials in it are masked")
    send: list[str] | dict[str, str] = Field(
        default=[str(QUESTION), str(QUERY_ID), str(HISTORY)],
        description="state fields sent in the JSON body (a map renames them: {state field: body key})")
    body: dict[str, Any] = Field(default={}, description="fixed JSON fields added to every request")
    headers: dict[str, str] = Field(default={}, description="extra HTTP headers (never a secret: see api_key_env)")
    api_key_env: str | None = Field(default=None, description="NAME of the environment variable holding the "
                                    "key, sent as a bearer token")
    api_key_header: str = Field(default="Authorization", description="header the api_key_env key is sent in: "
                                "Authorization as 'Bearer KEY', any other (X-Api-Key...) as the bare key")
    response: dict[str, str] = Field(default={str(RETRIEVED): str(RETRIEVED)},
                                     description="output -> dotted path in the response JSON (docs/byo.md)")
    timeout_s: float = Field(default=30.0, gt=0, description="whole-request deadline of each attempt")
    max_retries: int = Field(default=2, ge=0, description="retries after a timeout, 429 or 5xx")
    backoff_s: float = Field(default=0.5, ge=0, description="retry waits: uniform(0, min(30, backoff_s * 2**n)) "
                             "seconds (full jitter); a 429's Retry-After wins")
    concurrency: int = Field(default=4, ge=1, description="requests in flight at once")
    cache: Literal["read-write", "off", "replay-only"] = Field(
        default="read-write", description="responses kept by request: read-write, off, replay-only (no calls)")
    on_failure: Literal["raise", "record"] = Field(
        default="raise", description="raise: the query fails; record: external_failure is written and the "
        "graph goes on (a conditional edge can route it)")
    evidence_k: int = Field(default=5, ge=1, description="without returned contexts, the answer is judged "
                            "against this many top passages of the ranking")
    seed: int = Field(default=0, description="seed of the retry jitter (runs wait the same)")

    @field_validator("cache", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        return "off" if value is False else value  # YAML reads a bare `cache: off` as false

    @model_validator(mode="after")
    def _check(self) -> HttpParams:
        if not self.url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {redact(self.url)!r}")
        allowed, required = self._outputs()
        bad = [k for k in self.response if k not in allowed]
        if bad:
            raise ValueError(f"response maps unknown output(s) {bad}; this node type maps {', '.join(allowed)}")
        if required not in self.response:
            raise ValueError(f"response must map '{required}' (the field of the response that holds it)")
        if any(_credential_header(k) for k in self.headers):
            raise ValueError("put no credential header in the config (it would be logged): name the environment "
                             "variable holding the key in api_key_env, and the header in api_key_header")
        if self.api_key_env and looks_like_key(self.api_key_env):
            raise ValueError("api_key_env must be the NAME of an environment variable, not the key itself")
        return self

    def _outputs(self) -> tuple[tuple[str, ...], str]:
        return (RETRIEVED, RERANKED, EVIDENCE), RETRIEVED

    def sent_fields(self) -> dict[str, str]:
        return dict(self.send) if isinstance(self.send, dict) else {f: f for f in self.send}


def _credential_header(name: str) -> bool:
    """Whether an HTTP header carries a credential (``Authorization``, ``Cookie``, ``X-Api-Key``,
    ``Ocp-Apim-Subscription-Key``, ``X-Auth-Token``...): such values belong in ``api_key_env``, never in a config
    that is logged."""
    low = name.strip().lower()
    words = [w for w in low.replace("_", "-").split("-") if w]
    return low in ("authorization", "proxy-authorization", "cookie") or is_secret_key(name) or \
        any(w in ("key", "apikey", "auth", "token", "signature", "credential", "credentials") for w in words)


class HttpGenerateParams(HttpParams):
    response: dict[str, str] = Field(default={str(ANSWER): str(ANSWER)},
                                     description="output -> dotted path in the response JSON (docs/byo.md)")

    def _outputs(self) -> tuple[tuple[str, ...], str]:
        return (ANSWER, *ANSWER_AUX, RETRIEVED, RERANKED, EVIDENCE), ANSWER


def _path(data: Any, dotted: str) -> tuple[bool, Any]:
    for part in dotted.split("."):
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return False, None
    return True, data


@register_node
class HttpNode(Node[HttpParams]):
    """POSTs the query to the user's search service and maps its ranking into the state (module docstring)."""

    type = "http"
    role = Role.RETRIEVER
    external = True
    writes: ClassVar[tuple[str, ...]] = (RETRIEVED, HTTP_CALL)
    optional_writes: ClassVar[tuple[str, ...]] = (EXTERNAL_FAILURE,)
    Params = HttpParams

    @classmethod
    def contract(cls, params: HttpParams) -> Contract:
        mapped = [k for k in params.response if k not in ANSWER_AUX and k != ANSWER]
        writes = {*mapped, HTTP_CALL, *(ANSWER_FIELDS if ANSWER in params.response else ())}
        return Contract(frozenset(params.sent_fields()), frozenset(), frozenset(writes), frozenset({EXTERNAL_FAILURE}))

    def __init__(self, name: str, params: HttpParams, resources: Any = None, *,
                 sleep: Callable[[float], None] = time.sleep):
        super().__init__(name, params, resources)
        self.writes_now = sorted(type(self).contract(params).writes - {HTTP_CALL})
        self.ids = _passage_ids(resources)
        self._token = _instance_token()
        self.url_shown = redact(params.url)
        root = getattr(resources, "cache_root", None)
        if root is None:
            from evalkit.cachestore import default_cache_root

            root = default_cache_root()
        self.client = ServiceClient(params, Path(root) / "external", sleep=sleep)

    def fingerprint(self) -> dict[str, Any]:
        """``cache: off`` (a live service): an identity of this instance alone, so every variant asks the
        service itself rather than reusing another variant's response (work sharing is keyed by identity)."""
        return {"instance": self._token} if self.params.cache == "off" else {}

    def resume_fingerprint(self) -> dict[str, Any]:
        """Nothing: the instance token keeps other variants from reusing responses, and differs in every process."""
        return {}

    def _jsonable(self, value: Any) -> Any:
        """A state value as JSON: a ranking is sent as ``[{id, doc_id, score, text}]`` (its passages' texts)."""
        if isinstance(value, list) and value and all(isinstance(h, Hit) for h in value):
            passages = self.ids.passages
            return [{"id": h.id, "doc_id": h.doc_id, "score": h.score,
                     "text": passages.text(h.id) if passages is not None and h.id in self.ids.doc_of else None}
                    for h in value]
        return value

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        p = self.params
        read = {f: state.get(f) for f in p.sent_fields()}
        payload = {**p.body, **{key: self._jsonable(read[f]) for f, key in p.sent_fields().items()}}
        t0 = time.perf_counter()
        try:
            data, call = self.client.call(payload)
            outputs = {}
            for out, dotted in p.response.items():
                found, value = _path(data, dotted)
                if not found and out not in ANSWER_AUX:
                    keys = sorted(data)[:10] if isinstance(data, dict) else "-"
                    raise ExternalCallError(f"http node: the response of {self.url_shown} has no '{dotted}' (mapped "
                                            f"to {out}); keys: {keys}", "bad_response", call["attempts"],
                                            call["status"])
                if found:
                    outputs[out] = value
            written = to_state(outputs, self.writes_now, self.ids, f"http:{self.url_shown}", self.url_shown,
                               p.evidence_k, read)
        except ExternalCallError as exc:
            if p.on_failure == "raise":
                raise
            written = to_state({ANSWER: ""}, self.writes_now, self.ids, f"http:{self.url_shown}", self.url_shown)
            if ANSWER in written:
                written.update({ABSTAINED: False, OUTCOME: "failed"})
            written[EXTERNAL_FAILURE] = exc.record(self.name)
            call = {"status": exc.status, "attempts": exc.attempts, "cache_hit": False, "error": exc.kind}
        written[HTTP_CALL] = {**call, "url": self.url_shown, "latency_ms": round((time.perf_counter() - t0) * 1000.0, 3)}
        return written


@register_node
class HttpGenerate(HttpNode):
    """``http`` for a RAG service that answers: judged like ``generate`` (module docstring)."""

    type = "http_generate"
    role = Role.GENERATOR
    writes = (*ANSWER_FIELDS, HTTP_CALL)
    Params = HttpGenerateParams
