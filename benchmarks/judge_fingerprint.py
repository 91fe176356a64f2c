"""A fingerprint of the offline judge and the answer detectors, to prove a refactoring changed nothing.

What it is for: moving rules around (word lists into data files, a function into another
module) must not change a single verdict. This runs, on every labelled case file of the
repository,

- the offline judge (:class:`evalkit.judges.offline.OfflineJudge`, default thresholds) on
  every case with a question, an answer and evidence (evidence given by document id is
  resolved from ``eval_sets/corpora/demo_kb.jsonl``), recording each claim's verdict,
  reason and evidence ids;
- :func:`evalkit.text.abstention.detect_abstention` and
  :func:`evalkit.text.error_replies.detect_error_reply` on every answer (and every
  ``text`` of the error-reply cases);
- the word-level helpers of :mod:`evalkit.text.lexicon` (negation cues, content terms)
  on every answer and evidence passage,

and writes it all as one JSON file (sorted keys, one layout). Compare two runs byte for byte:

    python benchmarks/judge_fingerprint.py --out /tmp/before.json
    ... change ...
    python benchmarks/judge_fingerprint.py --out /tmp/after.json && cmp /tmp/before.json /tmp/after.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "eval_sets" / "corpora" / "demo_kb.jsonl"
JUDGE_FILES = ("benchmarks/data/judge_cases.jsonl", "benchmarks/data/judge_paraphrases.jsonl")
DETECTOR_GLOBS = ("benchmarks/data/abstention_*.jsonl", "tests/judges/data/*.jsonl")


def _rows(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _corpus() -> dict[str, str]:
    return {d["id"]: d["text"] for d in _rows(CORPUS)}


def _evidence(row: dict[str, Any], texts: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple((str(e["id"]), str(e["text"]) if "text" in e else texts[e["id"]]) for e in row["evidence"])


def judge_files() -> list[Path]:
    """Every case file the offline judge is run on: the benchmark sets and each test file with judge cases."""
    out = [ROOT / p for p in JUDGE_FILES]
    for p in sorted((ROOT / "tests" / "judges" / "data").glob("*.jsonl")):
        rows = _rows(p)
        if rows and all({"question", "answer", "evidence"} <= r.keys() for r in rows):
            out.append(p)
    return out


def detector_files() -> list[Path]:
    """Every file with answers (or error-reply texts) the detectors are run on."""
    return sorted({p for g in DETECTOR_GLOBS for p in ROOT.glob(g)})


def judge_fingerprint(texts: dict[str, str]) -> dict[str, Any]:
    """Per case file, per case id: each claim's verdict, reason and evidence ids."""
    from evalkit.judges.offline import OfflineJudge

    judge = OfflineJudge()
    out: dict[str, Any] = {}
    for path in judge_files():
        cases = {}
        for i, row in enumerate(_rows(path)):
            r = judge.judge(row["question"], row["answer"], _evidence(row, texts))
            cases[f"{i:04d}:{row.get('id', '')}"] = {
                "error": r.error,
                "claims": [[c.claim, c.verdict, c.reason, c.evidence_id, c.evidence_ids] for c in r.claims],
            }
        out[str(path.relative_to(ROOT))] = cases
    return out


def detector_fingerprint() -> dict[str, Any]:
    """Per file, per row: the abstention finding and the error-reply finding of its answer (or text)."""
    from evalkit.text.abstention import detect_abstention
    from evalkit.text.error_replies import detect_error_reply

    out: dict[str, Any] = {}
    for path in detector_files():
        rows = {}
        for i, row in enumerate(_rows(path)):
            text = row.get("answer", row.get("text"))
            if not isinstance(text, str):
                continue
            err = detect_error_reply(text)
            rows[f"{i:04d}:{row.get('id', '')}"] = {
                "abstention": detect_abstention(text).to_dict(),
                "error_reply": err.to_dict() if err else None,
            }
        out[str(path.relative_to(ROOT))] = rows
    return out


def lexicon_fingerprint(texts: dict[str, str]) -> dict[str, Any]:
    """Negation cues and content terms of every answer and evidence passage (a finer net for word lists)."""
    from evalkit.text.lexicon import content_terms, negation_spans

    seen: dict[str, None] = {}
    for path in judge_files():
        for row in _rows(path):
            seen.setdefault(row["question"])
            seen.setdefault(row["answer"])
            for _, t in _evidence(row, texts):
                seen.setdefault(t)
    out = {}
    for t in seen:
        key = hashlib.sha256(t.encode("utf-8")).hexdigest()[:16]
        out[key] = {"neg": negation_spans(t), "terms": list(content_terms(t))}
    return out


def fingerprint() -> dict[str, Any]:
    texts = _corpus()
    return {"judge": judge_fingerprint(texts), "detectors": detector_fingerprint(),
            "lexicon": lexicon_fingerprint(texts)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="where to write the fingerprint JSON")
    args = ap.parse_args()
    fp = fingerprint()
    Path(args.out).write_text(json.dumps(fp, ensure_ascii=False, sort_keys=True, indent=1) + "\n", encoding="utf-8")
    n_claims = sum(len(c["claims"]) for f in fp["judge"].values() for c in f.values())
    n_det = sum(len(f) for f in fp["detectors"].values())
    print(f"{args.out}: {n_claims} claims in {sum(len(f) for f in fp['judge'].values())} cases, "
          f"{n_det} detector rows, {len(fp['lexicon'])} texts; sha256 "
          f"{hashlib.sha256(Path(args.out).read_bytes()).hexdigest()[:16]}")


if __name__ == "__main__":
    main()
