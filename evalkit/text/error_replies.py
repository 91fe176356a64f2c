"""Error replies: a reply that is a service, transport or provider error message, not an answer.

What it is for: many stacks answer HTTP 200 when the LLM behind them is down or refusing
work, with the error as the reply text: proxies and gateways (LiteLLM, one-api / new-api,
nginx, Envoy, Cloudflare), local servers (Ollama, vLLM, TGI, llama.cpp), provider error
JSON pasted into the content, Chinese providers' busy messages (当前分组上游负载已饱和，请稍后再试),
and users' own wrappers returning ``"Error: ..."``. Judged as an answer, such a reply counts
as a hallucination; worded as an apology it can pass for a correct abstention. Either way
it describes the endpoint, not the pipeline: :func:`evalkit.text.abstention.detect_abstention`
calls :func:`detect_error_reply`, and a flagged generator reply makes the query *degraded*
(cause ``error_reply``, :mod:`evalkit.run.health`).

:func:`detect_error_reply` looks at structure, in this order, and returns the first finding:

1. ``json``: the whole reply is a JSON (or Python-dict) object, possibly truncated, that is an
   error envelope: an ``error`` / ``error_code`` / ``error_msg`` key, ``"object": "error"``,
   ``"success": false``, a ``code`` / ``status`` of 400-599, or a ``message`` / ``msg`` /
   ``detail`` in error words; nested envelopes too (``{"Response": {"Error": ...}}``).
2. ``page``: an HTML document whose title or heading is an error (502 Bad Gateway, a
   Cloudflare 524), or a raw ``HTTP/1.1 503`` response.
3. ``exception``: the reply opens with a traceback, a dotted exception name and its message
   (``openai.RateLimitError: ...``, ``java.net.SocketTimeoutException: ...``), an error
   prefix (``Error:``, ``[ERROR]``, ``错误：``, ``调用大模型失败：``, ``Error code: 429 - ...``),
   an AWS ``An error occurred (ThrottlingException) when calling ...`` or a Go ``Post "url": ...``
   error, followed by words of failure.
4. ``message``: a short reply (at most :data:`MAX_MESSAGE_CHARS`) that states a failure of the
   service (overloaded, rate limit reached, quota used up, timed out, 502 Bad Gateway, 服务繁忙,
   请求过于频繁, 令牌额度已用尽, 上游负载已饱和, 模型不存在...) and says nothing else: once the
   failure words, the service words (model, server, 服务, 模型...), apologies and retry advice
   (请稍后再试, "please try again later"), pointers to the docs, ids and URLs are taken out, at most
   :data:`MAX_LEFT_WORDS` words and :data:`MAX_LEFT_CJK` Chinese characters are left. A reply
   with one failure and none of those asides (an apology, retry advice, a request id, where to
   get help) must be the failure alone, naming what failed (the service, the call or a status:
   "Service Unavailable", "Request timed out", 网关超时), and not a refusal. A bare state names
   nothing that failed and is an answer ("Unauthorized.", "Out of memory.", 超时。, 余额不足。 can
   each answer a question about a log or a status): the reply alone cannot tell, and a false
   alarm removes a real answer.

Precision first (a false alarm removes a real answer from the metrics): rules 3 and 4 never
fire on a reply with a citation marker; rule 4 not on one that names its sources ("the
documents do not say", 资料中没有提到), explains (means, returns, 表示, 意味着, ...时会) or opens
with yes / no, and a bare noun is no failure ("Rate limit: 60 requests per minute", 超时时间为
30 秒). A cause (because, 因为, 由于) is an explanation, except in a reply with an aside: "The model
is overloaded because of high demand. Please try again later." gives its cause as error messages
do. A pointer to the docs ("For more information, read the docs: URL", 详情请参考文档) is where to
get help, not a source the reply names. Quoted text is masked first, so an answer quoting an error message (当系统提示“请求过于
频繁”时...) is an answer. A refusal that blames the service ("Sorry, I am unable to answer at
this time due to high demand") is an error reply. Users whose answers trip it keep them with
``not_patterns`` (``eval_sets/NAME.abstention.yaml``). Measured in ``benchmarks/error_replies.py``
on ``tests/judges/data/error_replies.jsonl``.
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from evalkit.text.citations import find_markers
from evalkit.text.refusal_rules import WEB_DOMAINS, normalise, refusal_spans
from evalkit.text.wordlists import alternation, words

__all__ = ["MAX_LEFT_CJK", "MAX_LEFT_WORDS", "MAX_MESSAGE_CHARS", "ErrorReply", "detect_error_reply"]

MAX_MESSAGE_CHARS = 320  # rule 4 reads short replies only: a longer one that is an error has a structure
MAX_LEFT_WORDS, MAX_LEFT_CJK = 3, 6  # what rule 4 allows besides failure, service and filler words


@dataclass(frozen=True)
class ErrorReply:
    """The finding: which rule (``kind``: json | page | exception | message) and the words that decided it."""

    kind: str
    matched: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "matched": self.matched}


# --------------------------------------------------------------------------- failure words
# A failure of the service: a status, a state of a service word, a limit hit, a broken transport.
# (each list, its words and examples: data/failure_*.txt)
_STATUS = alternation("failure_status", regex=True)
_STATE_EN = alternation("failure_state_en", regex=True)
_LIMIT_EN = r"\b(?:" + alternation("failure_limit_en", regex=True) + r")\b"
_TRANSPORT = r"\b(?:" + alternation("failure_transport_en", regex=True) + r")\b"
_GENERIC_EN = r"\b(?:" + alternation("failure_generic_en", regex=True) + r")\b"
_FAIL_ZH = alternation("failure_zh", regex=True)
_FAILURE = re.compile("|".join(f"(?:{p})" for p in (_STATUS, _STATE_EN, _LIMIT_EN, _TRANSPORT, _GENERIC_EN, _FAIL_ZH)),
                      re.IGNORECASE)

# words a failure message is made of besides the failure: the service, the request, filler, advice, ids
_SERVICE = re.compile(r"\b(?:" + alternation("service_words_en", regex=True) + r")\b|"
                      + alternation("service_words_zh", regex=True), re.IGNORECASE)  # data/service_words_*.txt
# an address, or a bare domain and its path (the dots of which :func:`normalise` writes as "_")
_URL = r"https?://\S+|\b[\w.-]+[._](?:" + WEB_DOMAINS + r")\b\S*"
_IDS = re.compile(_URL + r"|\b(?:request|trace|req)[\s_-]?id\b\s*[:=]?\s*[\w-]*|"
                  r"\b\w*\d\w*\b|[（(]\s*[)）]", re.IGNORECASE)
_EN_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
_CJK = re.compile(r"[\u3400-\u9fff]")

# --------------------------------------------------------------------------- guards
_SOURCES = re.compile(r"\b(?:documents?|docs|documentation|context|passages?|sources?|knowledge\s*base|handbook|"
                      r"manual|excerpts?|search\s+results?|according\s+to)\b|"
                      r"资料|文档|知识库|检索|参考|上下文|原文|手册|根据",
                      re.IGNORECASE)
# where to get help is no source: "read the docs: https://...", "visit our docs at ...", 详情请参考文档
_POINTER = re.compile(_URL + r"|\b(?:for\s+(?:more\s+)?(?:information|info|details|help)\b[^.;:!?]{0,40}?[,:]?\s*)?"
                      r"(?:please\s+)?(?:read|see|visit|check|consult|refer\s+to|go\s+to)\s+"
                      r"(?:the\s+|our\s+)?(?:\w+\s+)?"
                      r"(?:docs|documentation|help\s+(?:center|docs?)|faq)\b(?:\s+(?:at|here))?(?:\s+for\s+(?:more\s+)?"
                      r"(?:information|details))?|(?:详情|更多(?:信息|说明|详情)?)?请?(?:参考|参阅|查看|查阅|见|访问)"
                      r"(?:官方|帮助|使用|接口)?(?:文档|说明文档|帮助中心)", re.IGNORECASE)
# a failure message may give its cause ("overloaded because of high demand", 因为请求量过大); with an aside
# (retry advice, an apology...) the cause is part of the message, not an explanation
_CAUSE = re.compile(r"\bbecause\b|因为|由于", re.IGNORECASE)
# a bare failure must name what failed (the service, the call, a status code): a bare state can answer a
# question about a log or a status ("Unauthorized.", "Out of memory.", 超时。, 余额不足。)
_NAMED = re.compile(r"\b[45]\d\d\b|\b(?:services?|servers?|gateway|upstream|api|endpoint|models?|deployment|requests?|"
                    r"response|connection|backend|proxy|provider|channel|rate[\s_-]?limit\w*)\b|"
                    r"服务|系统|网关|接口|模型|上游|网络|后端|请求|连接|调用|渠道|令牌", re.IGNORECASE)
_VERDICT = re.compile(r"^\s*(?:yes|no)\b\s*(?:[,.;:!—–-]|$)|^\s*(?:是的|不是|对|不对|可以|不可以|不能|会|不会)[，,。.!！]",
                      re.IGNORECASE)
# an explanation is an answer: "HTTP 429 means ...", "... returns 503 ...", 表示 / 意味着 / 返回 ...
_EXPLAINS = re.compile(r"\b(?:means?|meaning|indicates?|signals?|returns|returning|raised|thrown|occurs|happens?|"
                       r"caused\s+by|because|which|base\s+class|subclass)\b|表示|意味着|是指|指的是|原因是|因为|导致|如果|"
                       r"正常的|属于|(?<!超)时(?:会|需|请|，|,)",
                       re.IGNORECASE)
# what error messages add to the failure: retry advice, an apology, a request id, where to get help
_ASIDE = re.compile(r"\b(?:try\s+again|retry|retrying|resubmit|check\s+back|"
                    r"(?:please\s+)?wait\s+(?:a\s+moment|\d|before)|"
                    r"contact\s+(?:us|support|your)|help\s+center|if\s+the\s+(?:error|problem|issue)\s+persists|sorry|"
                    r"apologi[sz]e|apologies|oops|(?:request|trace|req)[\s_-]?id)\b|稍后|稍候|再试|重试|抱歉|对不起|不好意思|"
                    r"联系(?:客服|管理员)|请耐心等待|休息一下|充值|续费|请检查|request\s+id|top\s+up|"
                    r"(?:please\s+)?check\s+your|" + _POINTER.pattern,
                    re.IGNORECASE)
_LOG_LEVELS = words("log_levels")  # "[ERROR]" is a log level, not a citation marker


def _cited(text: str) -> bool:
    """A citation marker other than a log level (``[ERROR]``, ``[错误]``)."""
    return any(not all(r.lower() in _LOG_LEVELS for r in m.refs) for m in find_markers(text))


# --------------------------------------------------------------------------- 1. JSON envelopes
_ERROR_KEYS = {"error", "errors", "error_code", "errorcode", "error_msg", "errormsg", "errmsg", "err_msg", "exception",
               "fault"}
_STATUS_KEYS = {"code", "status", "status_code", "statuscode", "http_status", "httpstatus"}
_MESSAGE_KEYS = {"message", "msg", "detail", "details", "error_description", "reason", "title"}
_JSON_HEAD = re.compile(r"""^\{\s*["']?(?P<key>[A-Za-z_]+)["']?\s*:""")


def _error_status(value: Any) -> bool:
    s = str(value).strip()
    return s.isdigit() and 400 <= int(s) <= 599


def _envelope(obj: Any, depth: int = 0) -> str | None:
    """The key that makes a parsed object an error envelope, else None."""
    if not isinstance(obj, dict) or depth > 3:
        return None
    for k, v in obj.items():
        key = str(k).lower()
        if key in _ERROR_KEYS and v not in (None, "", {}, [], 0, False):
            return str(k)
        if (key in ("object", "type") and str(v).lower() == "error") or (key == "success" and v is False):
            return f"{k}: {v}"
        if key in _STATUS_KEYS and _error_status(v):
            return f"{k}: {v}"
        if key in _MESSAGE_KEYS and isinstance(v, str) and _FAILURE.search(v):
            return f"{k}: {v[:60]}"
    for v in obj.values():
        found = _envelope(v, depth + 1)
        if found:
            return found
    return None


def _json_error(text: str) -> str | None:
    """Rule 1: the reply is an error envelope (JSON, a Python dict's repr, or the head of a truncated one)."""
    if not text.startswith("{"):
        return None
    try:
        obj, end = json.JSONDecoder().raw_decode(text)
    except ValueError:
        try:
            obj, end = ast.literal_eval(text), len(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            obj, end = None, len(text)
    if obj is not None:
        rest = text[end:].strip()
        if len(_EN_WORD.findall(_IDS.sub(" ", rest))) > MAX_LEFT_WORDS:
            return None  # JSON followed by prose: an answer that opens with an example
        return _envelope(obj)
    head = _JSON_HEAD.match(text)  # truncated: the first key names an envelope, and failure words follow
    if head and head.group("key").lower() in _ERROR_KEYS | _STATUS_KEYS | _MESSAGE_KEYS | {"object", "type"}:
        found = _FAILURE.search(text) or re.search(r"""["']?(?:code|status)["']?\s*:\s*["']?[45]\d\d\b""", text)
        return found.group(0) if found else None
    return None


# --------------------------------------------------------------------------- 2. pages
_PAGE = re.compile(r"^\s*(?:<!doctype\s+html|<html|<head|<body)", re.IGNORECASE)
_PAGE_TITLE = re.compile(r"<(?:title|h1|h2)[^>]*>(?P<t>[^<]{1,200})<", re.IGNORECASE)
_HTTP_RESPONSE = re.compile(r"^\s*HTTP/\d(?:\.\d)?\s+[45]\d\d\b[^\n]*", re.IGNORECASE)


def _page_error(text: str) -> str | None:
    """Rule 2: an HTML error page, or a raw HTTP error response."""
    m = _HTTP_RESPONSE.match(text)
    if m:
        return m.group(0).strip()
    if not _PAGE.match(text):
        return None
    for t in _PAGE_TITLE.finditer(text):
        title = t.group("t").strip()
        if re.search(r"\b[45]\d\d\b", title) or _FAILURE.search(title):
            return title
    return None


# --------------------------------------------------------------------------- 3. exceptions and error prefixes
_EXCEPTION_HEAD = re.compile(
    r"^\s*(?:traceback\s+\(most\s+recent\s+call\s+last\)|"
    r"(?P<name>(?:[a-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Timeout|Exhausted|Failure|Fault))\s*[:：]|"
    r"\[?(?:error|fatal|exception|err)\]?\s*[:：\]]|\[(?:error|错误|异常)\]|错误\s*[:：]|异常\s*[:：]|"
    r"error\s+code\s*[:=]?\s*\d{3}|an\s+error\s+occurred\s+\(\w+\)\s+when\s+calling|"
    r"(?:get|post|put|patch|delete)\s+\"https?://[^\"]+\"\s*:|"
    r"[\u4e00-\u9fffA-Za-z ]{1,12}?(?:失败|异常|错误|出错)\s*[:：]|"
    r"[A-Za-z ]{1,24}?\b(?:error|failed|failure)\s*:)",
    re.IGNORECASE)
# an exception whose name alone says the service failed (a ValueError might be a Python-docs answer)
_FAILURE_NAME = re.compile(r"ratelimit|timeout|connection|connect|unavailable|outofmemory|quota|throttl|overload|"
                           r"authentication|permissiondenied|notfound|apierror|servererror|internalserver|http",
                           re.IGNORECASE)
_EXCEPTION_NAME = re.compile(r"\b(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)\b|\berrno\b|\b[45]\d\d\b")


def _exception(text: str) -> str | None:
    """Rule 3: a traceback, an exception or an error prefix, followed by words of failure."""
    m = _EXCEPTION_HEAD.match(text)
    if m is None or _cited(text):
        return None
    head = m.group(0).strip()
    if head.lower().startswith(("traceback", "error code", "an error occurred")):
        return head
    tail = text[m.end():]
    name = m.group("name")
    if name and _FAILURE_NAME.search(name) and not _EXPLAINS.search(tail.split("\n", 1)[0]):
        return head
    found = _FAILURE.search(tail) or _EXCEPTION_NAME.search(tail)
    return f"{head} ... {found.group(0)}" if found else None


# --------------------------------------------------------------------------- 4. short failure messages
def _left_over(text: str) -> tuple[int, int]:
    """English words and Chinese characters of ``text`` that are not failure, service or filler words, asides, ids
    or URLs."""
    rest = _ASIDE.sub(" ", _FAILURE.sub(" ", _IDS.sub(" ", text)))
    rest = _SERVICE.sub(" ", rest)
    return len(_EN_WORD.findall(rest)), len(_CJK.findall(rest))


def _message(text: str) -> str | None:
    """Rule 4: a short reply that states a failure of the service and nothing else."""
    norm = normalise(text).strip()
    aside = _ASIDE.search(norm)
    said = _POINTER.sub(" ", norm)  # a pointer to the docs is an aside, not a source
    if (len(norm) > MAX_MESSAGE_CHARS or _cited(norm) or _VERDICT.match(norm) or _SOURCES.search(said)
            or _EXPLAINS.search(_CAUSE.sub(" ", said) if aside else said)):
        return None
    found = _FAILURE.search(said)
    if found is None:
        return None
    words, cjk = _left_over(said)
    if not aside and len(_FAILURE.findall(said)) < 2:
        # one failure and nothing else: a bare failure naming what failed ("Service Unavailable", 网关超时)
        bare = (words, cjk) == (0, 0) and _NAMED.search(said) and not refusal_spans(norm)
        return found.group(0).strip() if bare else None
    if words > MAX_LEFT_WORDS or cjk > MAX_LEFT_CJK:
        return None
    return found.group(0).strip()


_RULES = (("json", _json_error), ("page", _page_error), ("exception", _exception), ("message", _message))


def detect_error_reply(text: str) -> ErrorReply | None:
    """A finding when ``text`` is an error message of the service rather than an answer, else None.

    >>> detect_error_reply("当前分组上游负载已饱和，请稍后再试 (request id: 2024061215304512)").kind
    'message'
    >>> detect_error_reply("A 502 Bad Gateway error means the upstream server returned an invalid response [doc3].")
    """
    s = (text or "").strip()
    if not s:
        return None
    for kind, rule in _RULES:
        matched = rule(s)
        if matched:
            return ErrorReply(kind, matched[:80])
    return None
