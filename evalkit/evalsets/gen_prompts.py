"""Prompts of the LLM question generator, one per question type, in Chinese and English.

Each prompt shows one or two passages and asks for one JSON object; the keys each type
must return are in :data:`PROMPTS` (``keys``), checked by :func:`read_reply`. The
passages are the gold documents of the question (for ``unanswerable``: the look-alike
the question must *not* be answerable from). ``PROMPT_VERSION`` is recorded with every
generated line: change it when a prompt changes.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

PROMPT_VERSION = "llm/v1"

SYSTEM = {
    "en": "You write evaluation questions for a retrieval-augmented QA system from the company's own documents. "
          "Reply with one JSON object only, no prose.",
    "zh": "你为检索增强问答系统编写评测问题，素材是公司自己的文档。只回复一个 JSON 对象，不要任何其他文字。",
}


@dataclass(frozen=True)
class Prompt:
    """One question type: how many passages it reads, what it asks for, the JSON keys it expects."""

    type: str
    passages: int
    keys: tuple[str, ...]
    task: dict[str, str]  # lang -> instructions


PROMPTS: dict[str, Prompt] = {p.type: p for p in (
    Prompt("single", 1, ("question", "answer"), {
        "en": "Write one question a colleague would ask that this passage answers with a single fact (a number, "
              "date, name or rule). Do not copy sentences from the passage: paraphrase. The answer must be one or "
              "two sentences taken from what the passage states.\n"
              'Return {"question": "...", "answer": "..."}.',
        "zh": "写一个同事会问、且本段文字能用一个事实（数字、日期、名称或规定）回答的问题。不要照抄原文句子，要改写。"
              "答案用一两句话，只能包含原文明确写出的内容。\n"
              '返回 {"question": "...", "answer": "..."}。'}),
    Prompt("multi_hop", 2, ("question", "answer"), {
        "en": "The two passages come from different documents that share the entity \"{entity}\". Write one "
              "question that needs BOTH passages to answer (a fact from each, linked through that entity). The "
              "answer states both facts, in words the passages support.\n"
              'Return {"question": "...", "answer": "..."}.',
        "zh": "两段文字来自两份不同文档，它们都提到“{entity}”。写一个必须同时用到两段文字才能回答的问题（各取一个事实，"
              "通过这个实体连起来）。答案写出这两个事实，只用原文支持的说法。\n"
              '返回 {"question": "...", "answer": "..."}。'}),
    Prompt("comparison", 2, ("question", "answer", "attribute"), {
        "en": "The two passages come from different documents. Pick ONE attribute both state a value for (a limit, a "
              "price, a duration, a date...) and write a question comparing the two on it. The answer gives both "
              "values and which is larger/earlier.\n"
              'Return {"question": "...", "answer": "...", "attribute": "..."}.',
        "zh": "两段文字来自两份不同文档。选一个两者都给出取值的属性（额度、价格、时长、日期等），写一个就这个属性比较二者的"
              "问题。答案给出两个取值并说明哪个更大/更早。\n"
              '返回 {"question": "...", "answer": "...", "attribute": "..."}。'}),
    Prompt("colloquial", 1, ("formal_question", "question", "answer"), {
        "en": "First write a formal question this passage answers. Then reword it the way a busy employee would type "
              "it into a chat box: casual, short, maybe without the official terms. The answer comes from the "
              "passage.\n"
              'Return {"formal_question": "...", "question": "<the casual rewording>", "answer": "..."}.',
        "zh": "先写一个本段文字能回答的正式问题，再把它改写成员工在聊天框里随手打的口语问法：随意、简短，可以不用正式术语。"
              "答案来自原文。\n"
              '返回 {"formal_question": "...", "question": "<口语改写>", "answer": "..."}。'}),
    Prompt("unanswerable", 1, ("question", "answer"), {
        "en": "Write a question that LOOKS like this passage answers it (same topic and wording) but whose answer "
              "is NOT in it (e.g. another product, year, city or grade than the passage covers). The answer is a "
              "short statement that the documents do not say, naming what is missing.\n"
              'Return {"question": "...", "answer": "..."}.',
        "zh": "写一个看起来像是本段文字能回答（话题和用词相近）、但答案其实不在其中的问题（例如换成原文没有涉及的产品、年份、"
              "城市或级别）。answer 简短说明文档中没有这一信息，并指出缺的是什么。\n"
              '返回 {"question": "...", "answer": "..."}。'}),
)}


def render(kind: str, lang: str, passages: Sequence[tuple[str, str]], entity: str = "") -> tuple[str, str]:
    """(system, user) messages asking for one question of type ``kind`` in ``lang`` over ``passages``."""
    prompt = PROMPTS[kind]
    lang = lang if lang in SYSTEM else "en"
    label = "文段" if lang == "zh" else "Passage"
    shown = "\n\n".join(f"[{label} {i + 1}: {pid}]\n{text}" for i, (pid, text) in enumerate(passages))
    want = "用中文写问题和答案。" if lang == "zh" else "Write the question and the answer in English."
    task = prompt.task[lang].replace("{entity}", entity)
    return SYSTEM[lang], f"{shown}\n\n{task}\n{want}"


def read_reply(kind: str, value: Any) -> tuple[dict[str, str] | None, str]:
    """The reply's fields when it has every key of the type as a non-empty string; else (None, what is wrong)."""
    if not isinstance(value, dict):
        return None, f"expected a JSON object, got {type(value).__name__}"
    out = {}
    for key in PROMPTS[kind].keys:
        field = value.get(key)
        if not isinstance(field, str) or not field.strip():
            return None, f"missing or empty '{key}'"
        out[key] = field.strip()
    return out, ""
