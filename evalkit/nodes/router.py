"""The ``intent_router`` node: pick a retrieval path for the question, rules first, LLM second.

1. **Rules** from config, tried in order: the first rule with a keyword (case-insensitive
   substring, NFKC) or regex pattern that matches the question names the route
   (``evalkit.nodes.scheduler.Rule``; the same matcher the agent scheduler uses). The
   shipped defaults: codes, config fields and defaults -> ``keyword``; relation words
   (supplier, competes, 供应商, 负责...) -> ``graph``; how/method words (how do I, steps,
   如何, 怎么...) -> ``vector``.
2. **LLM** (optional ``llm``), only for questions no rule matches: JSON
   ``{"route": <one of routes>, "reason": ...}``. A label that is not a configured route,
   a failed call or garbage JSON gives ``default_route`` and is counted
   (``llm_fallback``): the run never stops for it.
3. No rule matched and no LLM: ``default_route``.

Writes ``route`` (route on it: ``routes: {router: {field: route, cases: {keyword: bm25, ...}}}``),
``route_reason`` (the rule and keyword/pattern, the LLM's reason, or why the default was
used), ``route_source`` (``rule``, ``llm``, ``default``) and, on an LLM failure,
``llm_fallback``.

YAML::

    router:
      type: intent_router
      params:
        routes: {keyword: "codes, fields, defaults", graph: "relations between entities", vector: "everything else"}
        default_route: vector
        rules:
          - {label: keyword, patterns: ['(?<![A-Za-z0-9])[A-Z]{1,4}-\\d{2,5}']}
        llm: {backend: openai, base_url: ..., model: ...}        # optional
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, model_validator

from evalkit.errors import did_you_mean
from evalkit.graph.node import Node, NodeParams, register_node
from evalkit.graph.schema import (
    ATTEMPT,
    LLM_FALLBACK,
    QUESTION,
    ROUTE,
    ROUTE_REASON,
    ROUTE_SOURCE,
    Role,
)
from evalkit.llm.base import LLMError, LLMSpec
from evalkit.nodes.rewrite import fallback_record
from evalkit.nodes.scheduler import Rule, classify

NO_RULE = "\x00no-rule"  # never a route label: classify's answer when no rule matched

DEFAULT_ROUTES = {
    "keyword": "exact codes, error codes, config field names, default values, API paths",
    "graph": "relations between entities: suppliers, competitors, who is responsible for what",
    "vector": "how-to and descriptive questions in everyday words",
}
DEFAULT_RULES = (
    Rule(label="keyword",
         patterns=[r"(?<![A-Za-z0-9])[A-Z]{1,4}-\d{2,5}(?![0-9])", r"(?<![\w.])[a-z_]+\.[a-z_]+", r"/v\d+/", r"`[^`]+`",
                   r"默认|错误码|报错|字段|配置项", r"(?i)\bdefault\b|\berror code\b|\bfield\b"]),
    Rule(label="graph",
         keywords=["供应商", "供应", "竞品", "竞争", "对标", "负责", "哪家", "which company", "supplier", "supplies",
                   "competes", "competitor", "who leads", "who makes", "which of our products"]),
    Rule(label="vector",
         keywords=["how do i", "how can i", "how to", "what should i do", "steps", "procedure", "怎么", "如何", "怎样",
                   "步骤", "流程", "办法"]),
)
ROUTER_PROMPT = (
    "You route questions to a retrieval method. Choose exactly one route from the list. "
    'Reply with JSON only: {"route": "<route>", "reason": "<one short sentence>"}'
)


class IntentRouterParams(NodeParams):
    routes: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_ROUTES),
                                   description="route label -> what it is for (shown to the LLM)")
    rules: list[Rule] = Field(default_factory=lambda: list(DEFAULT_RULES),
                              description="tried in order; the first rule with a matching keyword or pattern "
                                          "names the route")
    default_route: str = Field(default="vector", description="the route when no rule matches (and no llm, or "
                               "the llm failed)")
    llm: LLMSpec | None = Field(default=None, description="routes the questions no rule matches")
    system_prompt: str = Field(default=ROUTER_PROMPT, description="the llm's instructions")

    @model_validator(mode="after")
    def _known_labels(self) -> IntentRouterParams:
        for where, label in [("default_route", self.default_route),
                             *((f"rules[{i}].label", r.label) for i, r in enumerate(self.rules))]:
            if label not in self.routes:
                raise ValueError(f"{where}: '{label}' is not one of the routes{did_you_mean(label, self.routes)}; "
                                 f"add it under 'routes'")
        return self


@register_node
class IntentRouter(Node[IntentRouterParams]):
    type = "intent_router"
    role = Role.ROUTER
    reads = (QUESTION, ATTEMPT)
    writes = (ROUTE, ROUTE_REASON, ROUTE_SOURCE)
    optional_writes = (LLM_FALLBACK,)
    Params = IntentRouterParams

    def __init__(self, name: str, params: IntentRouterParams, resources: Any = None):
        super().__init__(name, params, resources)
        self.client = self.llm_client(params.llm, "route") if params.llm is not None else None

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        p = self.params
        question = state["question"]
        label, reason = classify(question, p.rules, NO_RULE)
        if label != NO_RULE:
            return {"route": label, "route_reason": reason, "route_source": "rule"}
        if self.client is None:
            return {"route": p.default_route, "route_reason": f"no rule matched: default route {p.default_route}",
                    "route_source": "default"}
        attempt = int(state.get("attempt") or 0) or 1
        try:
            label, why = self._ask(question)
        except Exception as exc:  # noqa: BLE001 - degrade to the default route, never crash
            record = fallback_record(self.name, attempt, exc)
            return {"route": p.default_route, "route_source": "default", "llm_fallback": record,
                    "route_reason": f"no rule matched; llm failed ({record['kind']}): default route {p.default_route}"}
        if label not in p.routes:
            record = {"node": self.name, "attempt": attempt, "kind": "unknown_label",
                      "message": f"llm chose '{label[:60]}', not one of {sorted(p.routes)}"}
            return {"route": p.default_route, "route_source": "default", "llm_fallback": record,
                    "route_reason": f"no rule matched; {record['message']}: default route {p.default_route}"}
        return {"route": label, "route_reason": f"no rule matched; llm: {why}", "route_source": "llm"}

    def _ask(self, question: str) -> tuple[str, str]:
        """The LLM's route label (stripped, as given) and reason; ``LLMError`` without a label."""
        listing = "\n".join(f"- {label}: {what}" for label, what in self.params.routes.items())
        if self.client is None:
            raise LLMError("intent_router has no llm configured", kind="config")
        value, _ = self.client.chat_json(f"Routes:\n{listing}\n\nQuestion: {question}",
                                         system=self.params.system_prompt, expect=dict, max_tokens=80)
        label = value.get("route")
        if not isinstance(label, str) or not label.strip():
            raise LLMError(f"router reply has no 'route' string: {str(value)[:120]}", kind="bad_json")
        return label.strip(), str(value.get("reason", ""))[:200]
