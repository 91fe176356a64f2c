"""Judge benchmark data built at run time: RGB zh_refine cases and the demo's reference answers.

What it is for: ``benchmarks/judges.py`` reads labelled cases from
``benchmarks/data/*.jsonl`` and builds two more sets here, from data that is not copied
into the repository (RGB) or that lives elsewhere in it (the demo eval set):

- :func:`rgb_cases`: supported / planted-error cases from a seeded sample of RGB
  zh_refine questions (see the docstring of ``benchmarks/judges.py``).
- :func:`reference_cases`: every answerable demo question with a ``reference_answer``,
  as a supported case whose evidence is the text of its gold documents (``titles=True``
  prepends each document's title, as ``evalkit run``'s passages do by default). A correct
  answer flagged unsupported is a false alarm; ``kind`` is the question type.
"""
from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEMO_SET = REPO / "eval_sets" / "demo_kb.jsonl"
DEMO_CORPUS = REPO / "eval_sets" / "corpora" / "demo_kb.jsonl"


def reference_cases(eval_set: Path = DEMO_SET, corpus: Path = DEMO_CORPUS, titles: bool = False) -> list[Any]:
    """The eval set's reference answers as supported judge cases against their gold documents."""
    from evalkit.judges.scoring import JudgeCase

    docs = {d["id"]: d for d in map(json.loads, corpus.read_text(encoding="utf-8").splitlines()) if d}
    out = []
    for line in eval_set.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        if not q["relevant_doc_ids"] or not q.get("reference_answer"):
            continue
        ev = tuple((d, (f"{docs[d]['title']}\n" if titles and docs[d].get("title") else "") + docs[d]["text"])
                   for d in q["relevant_doc_ids"])
        out.append(JudgeCase(q["id"], q["lang"], q["question"], ev, q["reference_answer"], "supported", None,
                             q["type"]))
    return out


# --- RGB zh_refine -> judge cases, at run time ---------------------------------------------------
_QWORDS = ("什么时候", "何时", "哪一年", "哪里", "哪儿", "哪个", "哪些", "哪位", "哪家", "哪", "什么", "多少", "几", "谁")


def _clean(query: str) -> str:
    return re.sub(r"[？?。!！\s]+$", "", query.strip()).removesuffix("吗").removesuffix("呢")


def _statement(query: str, answer: str) -> str:
    """The question as a statement with ``answer`` in place of its question word."""
    q = _clean(query)
    for w in _QWORDS:
        i = q.find(w)
        if i >= 0:
            before, after = q[:i], q[i + len(w):]
            if after[:1] and answer.endswith(after[0]):
                after = after[1:]  # 在哪个组 + E组: not "E组组"
            sep = " " if before[-1:].isdigit() and answer[:1].isdigit() else ""
            return f"{before}{sep}{answer}{after}。"
    return f"{q}是{answer}。"


def _negated(query: str, answer: str) -> str:
    """A statement that the gold answer is NOT the answer (the evidence says it is)."""
    return f"{answer}不是“{_clean(query)}”的答案。"


def _gold(answer: list[Any], positives: list[str]) -> str | None:
    if len(answer) != 1:
        return None  # several required answers (a list of countries): not a one-claim answer
    alts = answer[0] if isinstance(answer[0], list) else [answer[0]]
    return next((str(a) for a in alts if any(str(a) in p for p in positives)), None)


def _changed(answer: str, evidence: str, rng: random.Random) -> tuple[str, str] | None:
    """(error type, changed answer) for a number or date answer; None when it has neither."""
    from evalkit.text.dates import find_dates

    if find_dates(answer):
        m = re.search(r"(\d{1,2})(日|号)", answer) or re.search(r"(\d{1,2})(月)", answer) or re.search(r"(\d{4})(年)", answer)
        if not m:
            return None
        v = int(m.group(1))
        for new in ([v % 28 + 3, v % 28 + 5] if m.group(2) in "日号" else [v % 12 + 1, v % 12 + 2]
                    if m.group(2) == "月" else [v - 1, v + 1]):
            out = answer[:m.start(1)] + str(new) + answer[m.end(1):]
            if out not in evidence:
                return "changed_date", out
        return None
    m = re.search(r"\d+(?:\.\d+)?", answer)
    if not m:
        return None
    s = m.group(0)
    v, dec = float(s), len(s.split(".")[1]) if "." in s else 0
    for factor in (1.3, 0.7, 1.6):
        new = round(v * factor, dec) if dec else max(round(v * factor), int(v) + 1 + rng.randrange(3))
        new_s = f"{new:.{dec}f}" if dec else str(int(new))
        out = answer[:m.start()] + new_s + answer[m.end():]
        if new_s != s and out not in evidence:
            return "changed_number", out
    return None


def rgb_cases(path: Path, n_questions: int, seed: int) -> list[Any]:
    """Supported / planted-error cases built from a seeded sample of RGB zh_refine questions."""
    from evalkit.judges.scoring import JudgeCase
    from evalkit.text.claims import split_sentences
    from evalkit.text.postag import posseg as _posseg

    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rng = random.Random(seed)
    usable = []
    for r in rows:
        gold = _gold(r["answer"], r["positive"])
        if gold:
            usable.append((r, gold))
    rng.shuffle(usable)
    usable = usable[:n_questions]
    names = {"nr", "nrt", "nrfg", "ns", "nt", "nz"}
    out: list[JudgeCase] = []
    for i, (r, gold) in enumerate(usable):
        pos = [p for p in r["positive"] if gold in p][:2]
        neg = [p for p in r["negative"] if gold not in p][:1]
        passages = pos + neg
        evidence = tuple((f"rgb{r['id']}-{k}", p) for k, p in enumerate(passages))
        ev_text = " ".join(passages)
        q = r["query"]
        cases = [("supported", None, _statement(q, gold))]
        ch = _changed(gold, ev_text, rng)
        if ch:
            cases.append(("unsupported", ch[0], _statement(q, ch[1])))
        elif not re.search(r"\d", gold):
            tags = {f for w, f in _posseg(gold) if f in names}
            others = [g for rr, g in usable if rr is not r and not re.search(r"\d", g) and g not in ev_text
                      and g not in q and (not tags or tags & {f for _, f in _posseg(g)})]
            if others:
                cases.append(("unsupported", "entity_absent", _statement(q, others[i % len(others)])))
            present = [w for w, f in _posseg(" ".join(pos)) if f in (tags or names) and len(w) >= 2
                       and w not in gold and gold not in w and w not in q]
            if present:
                cases.append(("unsupported", "entity_present", _statement(q, present[0])))
        cases.append(("unsupported", "negation", _negated(q, gold)))
        other = usable[(i + 1) % len(usable)][0]
        extra = [s for p in other["positive"] for s in split_sentences(p)
                 if 15 <= len(s) <= 80 and re.search(r"[\u4e00-\u9fff]", s) and s not in ev_text]
        if extra:
            cases.append(("unsupported", "extra_sentence", _statement(q, gold) + extra[0]))
        for label, et, answer in cases:
            out.append(JudgeCase(f"rgb{r['id']}-{len(out)}-{'s' if et is None else 'u'}", "zh", q, evidence,
                                 answer, label, et))
    return out


