#!/usr/bin/env python
"""Speed of the ``nli`` judge's code path with a model of a real size (random weights: no quality figure).

    python benchmarks/nli_speed.py                       # DeBERTa-v3-base dimensions, 40 English cases
    python benchmarks/nli_speed.py --size large --cases 12 --threads 2

Run it on an idle machine: on the shared 2-core box (load average ~12) a DeBERTa-v3-base-sized
forward pass of 8 pairs x 96 tokens took 6.6 s with 1 thread and 14 s with 2.

What it does:

1. Builds, in a temporary folder, a ``DebertaV2ForSequenceClassification`` with the
   dimensions of DeBERTa-v3-base (12 layers, hidden 768) or -large (24 layers, hidden 1024)
   and three labels, with RANDOM weights, and a WordPiece tokenizer trained on the cases'
   own texts (the real models use a 128k SentencePiece vocabulary: token counts differ a
   little). Nothing is downloaded. Compute per token does not depend on the weights' values,
   so the timing is that of the real model's size; the verdicts mean nothing.
2. Judges the first ``--cases`` English cases of ``benchmarks/data/judge_cases.jsonl``
   with ``make_judge("nli", ...)`` (default windows of 3 sentences, stride 2), once with
   the cache off (every pair through the model: pairs/s, answers/s) and once from a warm
   cache (no model call: answers/s).
3. Prints the load time, the number of claims and (window, claim) pairs, and the rates.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_common import REPO

CASES = REPO / "benchmarks" / "data" / "judge_cases.jsonl"
SIZES = {"base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
         "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)}


def build(folder: Path, size: str, texts: list[str]) -> None:
    """A random-weight DeBERTa-v2 classifier of the given size and a tokenizer trained on ``texts``."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification, PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(
        vocab_size=8000, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                            sep_token="[SEP]", mask_token="[MASK]", model_max_length=512).save_pretrained(str(folder))
    config = DebertaV2Config(vocab_size=128100, max_position_embeddings=512, relative_attention=True,
                             position_buckets=256, pos_att_type=["p2c", "c2p"], norm_rel_ebd="layer_norm",
                             share_att_key=True, position_biased_input=False, type_vocab_size=0, pad_token_id=0,
                             num_labels=3, id2label={0: "entailment", 1: "neutral", 2: "contradiction"},
                             label2id={"entailment": 0, "neutral": 1, "contradiction": 2}, **SIZES[size])
    torch.manual_seed(0)
    DebertaV2ForSequenceClassification(config).save_pretrained(str(folder))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", choices=sorted(SIZES), default="base")
    p.add_argument("--cases", type=int, default=40, help="English cases to judge (default: 40)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (default: 1; on busy shared cores 2 threads measured 2x slower)")
    p.add_argument("--batch-size", type=int, default=16)
    args = p.parse_args(argv)
    rows = [json.loads(line) for line in CASES.open(encoding="utf-8")]
    cases = [r for r in rows if r["lang"] == "en"][:args.cases]
    texts = [r["answer"] for r in rows] + [e["text"] for r in rows for e in r["evidence"]]
    from evalkit.judges import make_judge
    from evalkit.judges.nli_rules import evidence_windows
    from evalkit.text.claims import split_claims

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / f"random-deberta-v3-{args.size}"
        t0 = time.perf_counter()
        build(folder, args.size, texts)
        built = time.perf_counter() - t0
        options = dict(model=str(folder), threads=args.threads, batch_size=args.batch_size)
        t0 = time.perf_counter()
        cold = make_judge("nli", cache_root=Path(tmp) / "cache", cache="off", **options)  # loads the model
        load = time.perf_counter() - t0
        claims = sum(len(split_claims(c["answer"])) for c in cases)
        pairs = sum(len(split_claims(c["answer"])) * len(evidence_windows([(e["id"], e["text"])
                                                                            for e in c["evidence"]]))
                    for c in cases)
        t0 = time.perf_counter()
        for c in cases:
            cold.judge(c["question"], c["answer"], [(e["id"], e["text"]) for e in c["evidence"]])
        model_s = time.perf_counter() - t0
        warm = make_judge("nli", cache_root=Path(tmp) / "cache", **options)
        for c in cases:  # fill the cache
            warm.judge(c["question"], c["answer"], [(e["id"], e["text"]) for e in c["evidence"]])
        hit = make_judge("nli", cache_root=Path(tmp) / "cache", **options)
        t0 = time.perf_counter()
        for c in cases:
            hit.judge(c["question"], c["answer"], [(e["id"], e["text"]) for e in c["evidence"]])
        cache_s = time.perf_counter() - t0
        assert hit.pairs_scored == 0 and cold.pairs_scored == pairs
    print(f"random-weight DeBERTa-v3-{args.size}-sized model, {args.threads} torch threads, batch {args.batch_size}")
    print(f"build {built:.1f} s; make_judge (fingerprint + load) {load:.1f} s")
    print(f"{len(cases)} answers, {claims} claims, {pairs} (window, claim) pairs")
    print(f"model: {pairs / model_s:.1f} pairs/s, {len(cases) / model_s:.2f} answers/s ({model_s:.1f} s)")
    print(f"cache hits: {len(cases) / cache_s:.0f} answers/s ({cache_s:.2f} s, no model call)")


if __name__ == "__main__":
    main()
