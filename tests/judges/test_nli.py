"""The ``nli`` judge: label lookup, evidence windows and the verdict rule as pure functions, then the real
transformers path on tiny random-weight models built here (BERT, DeBERTa-v2, RoBERTa; three-way, binary and
one-logit scorers) with tokenizers trained here on a few sentences. Nothing is downloaded. These models test
the code path only: no figure here says anything about any real model's quality.

Verdicts are forced by zeroing the classifier's weights and setting its bias, so the logits ARE the bias and
each probability a test expects is recomputed independently from it (softmax / sigmoid by hand).
"""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from evalkit.errors import EvalkitError
from evalkit.judges import JUDGES, make_judge
from evalkit.judges.base import JudgeSetupError
from evalkit.judges.nli import NLIJudge, options_from_path, parse_options
from evalkit.judges.nli_rules import Scores, Thresholds, Window, decide, evidence_windows, read_labels
from evalkit.models.nli import model_fingerprint

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

SENTENCES = [
    "The warranty covers 24 months from the date of purchase.",
    "Returns are accepted within 30 days.",
    "The Lisbon office opened in March 2019 and employs about 120 people.",
    "Brightway repairs failures caused by defects in materials.",
    "保修期为24个月。退货须在30天内办理。",
]
EVIDENCE = [("doc-1", "The warranty covers 24 months. Returns are accepted within 30 days."),
            ("doc-2", "The Lisbon office opened in March 2019. It employs about 120 people.")]
ANSWER = "The warranty covers 24 months [doc-1]. The office opened in 2019."


def softmax(xs: list[float]) -> list[float]:
    exps = [math.exp(x) for x in xs]
    return [e / sum(exps) for e in exps]


# ---------------------------------------------------------------- tiny local models

def _wordpiece(folder: Path, max_len: int = 64):
    """A BERT-style tokenizer trained on SENTENCES, saved as a PreTrainedTokenizerFast."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(SENTENCES, trainers.WordPieceTrainer(
        vocab_size=300, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=max_len)
    fast.save_pretrained(str(folder))
    return fast


def _bpe(folder: Path, max_len: int = 64):
    """A RoBERTa-style byte-level BPE tokenizer trained on SENTENCES (<s>=0, <pad>=1, </s>=2)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(SENTENCES, trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="<pad>", cls_token="<s>", sep_token="</s>", mask_token="<mask>",
                                   model_max_length=max_len)
    fast.save_pretrained(str(folder))
    return fast


def _force(model, bias: list[float] | None) -> None:
    """Zero the last classifier layer's weights and set its bias: the logits are then exactly ``bias``."""
    if bias is None:
        return
    head = [m for m in model.modules() if isinstance(m, torch.nn.Linear) and m.out_features == len(bias)][-1]
    with torch.no_grad():
        head.weight.zero_()
        head.bias.copy_(torch.tensor(bias))


def build(folder: Path, arch: str, id2label: dict[int, str], bias: list[float] | None = None, seed: int = 0) -> Path:
    """A tiny random-weight sequence classifier of ``arch`` saved in ``folder`` with its own tokenizer."""
    import transformers as tf

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = (_bpe if arch == "roberta" else _wordpiece)(folder)
    common = dict(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, num_labels=len(id2label), id2label=id2label,
                  label2id={v: k for k, v in id2label.items()})
    if arch == "bert":
        config, cls = tf.BertConfig(max_position_embeddings=64, **common), tf.BertForSequenceClassification
    elif arch == "deberta":
        config = tf.DebertaV2Config(max_position_embeddings=64, relative_attention=True, position_buckets=16,
                                    pos_att_type=["p2c", "c2p"], pad_token_id=0, **common)
        cls = tf.DebertaV2ForSequenceClassification
    else:
        config = tf.RobertaConfig(max_position_embeddings=66, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                                  **common)
        cls = tf.RobertaForSequenceClassification
    torch.manual_seed(seed)
    model = cls(config)
    _force(model, bias)
    model.save_pretrained(str(folder))
    return folder


THREE = {0: "entailment", 1: "neutral", 2: "contradiction"}
PERMUTED = {0: "CONTRADICTION", 1: "Entailment", 2: "Neutral"}  # another order, other case


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("nli_models")
    return {
        "bert_entail": build(root / "bert_entail", "bert", THREE, [3.0, 0.0, -1.0]),
        "bert_contra": build(root / "bert_contra", "bert", THREE, [-1.0, 0.0, 3.0]),
        "bert_neutral": build(root / "bert_neutral", "bert", THREE, [0.0, 2.0, 0.0]),
        "bert_random": build(root / "bert_random", "bert", THREE, None),
        # the same forced meanings with the labels in another order: entailment is output 1 here
        "deberta_entail": build(root / "deberta_entail", "deberta", PERMUTED, [-1.0, 3.0, 0.0]),
        "deberta_contra": build(root / "deberta_contra", "deberta", PERMUTED, [3.0, -1.0, 0.0]),
        "roberta_yes": build(root / "roberta_yes", "roberta", {0: "LABEL_0", 1: "LABEL_1"}, [-1.0, 1.0]),
        "roberta_no": build(root / "roberta_no", "roberta", {0: "LABEL_0", 1: "LABEL_1"}, [2.0, -2.0]),
        "score_high": build(root / "score_high", "bert", {0: "LABEL_0"}, [2.0]),
        "score_low": build(root / "score_low", "bert", {0: "LABEL_0"}, [-2.0]),
        "generic3": build(root / "generic3", "bert", {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}, [3.0, 0.0, -1.0]),
    }


def nli(folder: Path, tmp_path: Path, **options) -> NLIJudge:
    return make_judge("nli", cache_root=tmp_path / "cache", model=str(folder), **options)


# ---------------------------------------------------------------- pure parts

def test_labels_found_in_id2label_whatever_the_order_or_case():
    assert read_labels({"id2label": {"0": "entailment", "1": "neutral", "2": "contradiction"}}).describe() \
        == "three_way:e0c2"
    assert read_labels({"id2label": {"0": "CONTRADICTION", "1": "Entailment", "2": "Neutral"}}).describe() \
        == "three_way:e1c0"
    # binary: a label named for support, or the other one of a named "not supported" label; LABEL_k: 1 = supported
    assert read_labels({"id2label": {"0": "entailment", "1": "not_entailment"}}).supported == 0
    assert read_labels({"id2label": {"0": "consistent", "1": "hallucinated"}}).supported == 0
    assert read_labels({"id2label": {"0": "hallucinated", "1": "faithful"}}).supported == 1
    assert read_labels({"id2label": {"0": "LABEL_0", "1": "LABEL_1"}}).supported == 1
    assert read_labels({"num_labels": 1}).kind == "score"
    assert read_labels({"id2label": {"0": "LABEL_0", "1": "LABEL_1"}}, has_predict=True).kind == "score"


def test_generic_labels_need_the_explicit_mapping():
    config = {"id2label": {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}}
    with pytest.raises(JudgeSetupError, match="option labels"):
        read_labels(config)
    assert read_labels(config, labels={"entailment": 2, "contradiction": "LABEL_0"}).describe() == "three_way:e2c0"
    with pytest.raises(JudgeSetupError, match="labels.entailment"):
        read_labels(config, labels={"entailment": 5, "contradiction": 0})
    with pytest.raises(JudgeSetupError, match="supported"):
        read_labels(config, labels={"supported": 1})
    with pytest.raises(JudgeSetupError, match="same output"):
        read_labels(config, labels={"entailment": 1, "contradiction": 1})
    with pytest.raises(JudgeSetupError, match="needs 2 outputs"):
        read_labels(config, kind="binary")


def test_windows_cover_every_sentence_with_overlap():
    text = "A one. B two. C three. D four. E five. F six. G seven."
    got = [(w.first, w.last) for w in evidence_windows([("d", text)], 3, 2)]
    assert got == [(1, 3), (3, 5), (5, 7)]
    got = [(w.first, w.last) for w in evidence_windows([("d", text)], 3, 3)]
    assert got == [(1, 3), (4, 6), (5, 7)]  # the last window ends at the last sentence
    wins = evidence_windows([("d1", "Only one."), ("d2", "  "), ("d3", "第一句。第二句。")], 3, 2)
    assert [(w.where(), w.text) for w in wins] == [("d1 sentence 1", "Only one."),
                                                   ("d3 sentences 1-2", "第一句。 第二句。")]
    with pytest.raises(JudgeSetupError):
        evidence_windows([("d", text)], 2, 3)


def _w(i: int) -> Window:
    return Window(f"doc-{i}", 1, 2, f"window {i}")


def test_three_way_rule():
    t, ws = Thresholds(), [_w(1), _w(2)]
    v = decide("c", ws, [Scores(0.2, 0.1), Scores(0.93, 0.01)], "three_way", t)
    assert (v.verdict, v.reason, v.evidence_id) == ("supported", "entailment 0.93 in doc-2 sentences 1-2", "doc-2")
    v = decide("c", ws, [Scores(0.2, 0.88), Scores(0.6, 0.3)], "three_way", t)
    assert (v.verdict, v.evidence_id) == ("unsupported", "doc-1")
    assert v.reason.startswith("contradiction 0.88 in doc-1")
    # contradiction decides only when it beats the best entailment
    assert decide("c", ws, [Scores(0.1, 0.7), Scores(0.9, 0.0)], "three_way", t).verdict == "supported"
    v = decide("c", ws, [Scores(0.3, 0.2), Scores(0.4, 0.1)], "three_way", t)
    assert v.verdict == "unverified" and "best entailment 0.40 in doc-2" in v.reason
    # ties: the first window in evidence order
    assert decide("c", ws, [Scores(0.8, 0.0), Scores(0.8, 0.0)], "three_way", t).evidence_id == "doc-1"
    assert decide("c", [], [], "three_way", t).verdict == "unverified"


def test_binary_rule_low_is_unverified_unless_asked():
    ws = [_w(1), _w(2)]
    assert decide("c", ws, [Scores(0.1), Scores(0.91)], "binary", Thresholds()).verdict == "supported"
    low = [Scores(0.05), Scores(0.02)]
    v = decide("c", ws, low, "binary", Thresholds())
    assert v.verdict == "unverified" and "cannot tell" in v.reason and "0.05" in v.reason
    assert decide("c", ws, low, "binary", Thresholds(low_is_unsupported=True)).verdict == "unsupported"
    v = decide("c", ws, [Scores(0.3)], "score", Thresholds(support=0.6, low=0.2, low_is_unsupported=True))
    assert v.verdict == "unverified" and v.reason == "consistency score 0.30 at best (in doc-1 sentences 1-2), " \
                                                      "between 0.2 and 0.6"


# ---------------------------------------------------------------- the real transformers path

@pytest.mark.parametrize("name, bias, verdict, entail_at", [
    ("bert_entail", [3.0, 0.0, -1.0], "supported", 0),
    ("bert_contra", [-1.0, 0.0, 3.0], "unsupported", 0),
    ("bert_neutral", [0.0, 2.0, 0.0], "unverified", 0),
    ("deberta_entail", [-1.0, 3.0, 0.0], "supported", 1),
    ("deberta_contra", [3.0, -1.0, 0.0], "unsupported", 1),
])
def test_three_way_models_verdicts(models, tmp_path, name, bias, verdict, entail_at):
    judge = nli(models[name], tmp_path)
    probs = softmax(bias)
    contra_at = 2 if entail_at == 0 else 0
    result = judge.judge("q", ANSWER, EVIDENCE)
    assert result.error is None and [c.verdict for c in result.claims] == [verdict, verdict]
    first = result.claims[0]
    expected = {"supported": f"entailment {probs[entail_at]:.2f} in doc-1 sentences 1-2",
                "unsupported": f"contradiction {probs[contra_at]:.2f} in doc-1 sentences 1-2",
                "unverified": f"neither entailed nor contradicted: best entailment {probs[entail_at]:.2f}"}[verdict]
    assert first.reason.startswith(expected)
    assert judge.identity.startswith(f"nli:v1:{name}@") and f"three_way:e{entail_at}c{contra_at}" in judge.identity


def test_binary_model_reads_eos_joined_input(models, tmp_path):
    yes = nli(models["roberta_yes"], tmp_path, input_format="eos_joined").judge("q", ANSWER, EVIDENCE)
    p_yes = softmax([-1.0, 1.0])[1]
    assert [c.verdict for c in yes.claims] == ["supported"] * 2
    assert yes.claims[0].reason == f"supported probability {p_yes:.2f} in doc-1 sentences 1-2"
    no = nli(models["roberta_no"], tmp_path, input_format="eos_joined")
    assert [c.verdict for c in no.judge("q", ANSWER, EVIDENCE).claims] == ["unverified"] * 2
    strict = nli(models["roberta_no"], tmp_path, input_format="eos_joined", binary_low_is_unsupported=True,
                 low_threshold=0.1)
    assert [c.verdict for c in strict.judge("q", ANSWER, EVIDENCE).claims] == ["unsupported"] * 2
    assert strict.pairs_scored == 0  # the other thresholds re-decide from the cache: same model, same pairs
    assert strict.identity != no.identity


def test_one_logit_scorer_uses_a_sigmoid(models, tmp_path):
    high = nli(models["score_high"], tmp_path).judge("q", ANSWER, EVIDENCE)
    assert high.claims[0].reason == f"consistency score {1 / (1 + math.exp(-2.0)):.2f} in doc-1 sentences 1-2"
    low = nli(models["score_low"], tmp_path).judge("q", ANSWER, EVIDENCE)
    assert [c.verdict for c in low.claims] == ["unverified"] * 2 and "0.12 at best" in low.claims[0].reason


def test_label_k_folder_with_explicit_labels(models, tmp_path):
    with pytest.raises(JudgeSetupError, match="option labels"):
        nli(models["generic3"], tmp_path)
    judge = nli(models["generic3"], tmp_path, labels={"entailment": 0, "neutral": 1, "contradiction": 2})
    assert judge.judge("q", ANSWER, EVIDENCE).claims[0].verdict == "supported"


def test_batching_gives_the_same_scores(models, tmp_path):
    one = nli(models["bert_random"], tmp_path / "a", batch_size=1, cache="off")
    many = nli(models["bert_random"], tmp_path / "b", batch_size=64, cache="off")
    claims = ["The warranty covers 24 months.", "Returns are accepted within 90 days.", "保修期为24个月。"]
    evidence = EVIDENCE + [("doc-3", " ".join(SENTENCES))]
    a, b = one.verdicts(claims, evidence), many.verdicts(claims, evidence)
    assert [(v.verdict, v.reason) for v in a] == [(v.verdict, v.reason) for v in b]
    pairs = [(w.text, c) for c in claims for w in evidence_windows(evidence)]
    pa, pb = one.probabilities(pairs), many.probabilities(pairs)
    assert max(abs(x.entailment - y.entailment) for x, y in zip(pa, pb)) < 1e-5
    assert one.forward_calls == 2 * len(pairs) and many.forward_calls == 2  # verdicts + probabilities, no cache
    assert len({round(x.entailment, 6) for x in pa}) > 1  # the random model's outputs do depend on the input


def test_cache_hit_gives_identical_results_without_the_model(models, tmp_path):
    first = nli(models["bert_random"], tmp_path)
    r1 = first.judge("q", ANSWER, EVIDENCE)
    n_windows = len(evidence_windows(EVIDENCE))
    assert first.pairs_scored == 2 * n_windows and first.forward_calls == 1
    again = NLIJudge(parse_options({"model": str(models["bert_random"])}), cache_root=tmp_path / "cache",
                     scorer=lambda pairs: pytest.fail("the model ran on a cache hit"))
    assert again.judge("q", ANSWER, EVIDENCE).to_dict() == r1.to_dict()
    assert again.pairs_scored == 0 and again.forward_calls == 0
    replay = nli(models["bert_random"], tmp_path, cache="replay-only")
    assert replay.judge("q", ANSWER, EVIDENCE).to_dict() == r1.to_dict()
    with pytest.raises(JudgeSetupError, match="replay-only"):
        replay.judge("q", "A claim never scored before.", EVIDENCE)


def test_best_window_decides_and_is_named(tmp_path, models):
    """A scorer that entails only the window holding 'Brightway' (the judge's own windows, batching, cache)."""
    def scorer(pairs):
        return [[0.9, 0.05, 0.05] if "Brightway" in p else [0.1, 0.8, 0.1] for p, _ in pairs]

    long = "One. Two. Three. Four. Brightway repairs defects. Six. Seven."
    judge = NLIJudge(parse_options({"model": str(models["bert_random"]), "batch_size": 2}),
                     cache_root=tmp_path / "c", scorer=scorer)
    (v,) = judge.verdicts(["Brightway repairs defects."], [("doc-1", "Nothing here."), ("doc-2", long)])
    # windows of doc-2: 1-3, 3-5, 5-7; the first holding sentence 5 decides
    assert (v.verdict, v.reason, v.evidence_id) == ("supported", "entailment 0.90 in doc-2 sentences 3-5", "doc-2")
    assert judge.forward_calls == 2  # 4 windows in batches of 2


def test_model_failure_is_an_error_not_a_verdict(models, tmp_path):
    def broken(pairs):
        raise RuntimeError("out of memory")

    judge = NLIJudge(parse_options({"model": str(models["bert_random"]), "cache": "off"}), scorer=broken)
    result = judge.judge("q", ANSWER, EVIDENCE)
    assert result.claims == [] and "RuntimeError: out of memory" in result.error and result.unsupported is None


def test_bad_folders_and_options_are_clear_errors(tmp_path, models):
    with pytest.raises(JudgeSetupError, match="NLI model folder not found: .*nope"):
        nli(tmp_path / "nope", tmp_path)
    with pytest.raises(JudgeSetupError, match="hub name: evalkit never downloads"):
        make_judge("nli", model="cross-encoder/nli-deberta-v3-base")
    (tmp_path / "empty").mkdir()
    with pytest.raises(JudgeSetupError, match=r"empty has no config.json"):
        nli(tmp_path / "empty", tmp_path)
    with pytest.raises(JudgeSetupError, match="needs a model folder"):
        make_judge("nli")
    with pytest.raises(JudgeSetupError, match="option 'batch_size'"):
        nli(models["bert_entail"], tmp_path, batch_size=0)
    with pytest.raises(JudgeSetupError, match="option 'treshold'"):
        nli(models["bert_entail"], tmp_path, treshold=0.7)
    with pytest.raises(JudgeSetupError, match="window_stride"):
        nli(models["bert_entail"], tmp_path, window_sentences=2, window_stride=3)
    broken = tmp_path / "no_weights"
    shutil.copytree(models["bert_entail"], broken)
    (broken / "model.safetensors").unlink()
    with pytest.raises(EvalkitError, match="could not load the model"):
        nli(broken, tmp_path)


def test_remote_code_is_refused_by_default(tmp_path, models):
    folder = tmp_path / "remote"
    shutil.copytree(models["bert_entail"], folder)
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {"AutoModelForSequenceClassification": "modeling_x.XForSequenceClassification"}
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(JudgeSetupError, match="trust_remote_code: true"):
        nli(folder, tmp_path)


def test_identity_changes_with_the_weights_not_the_location(tmp_path, models):
    same = tmp_path / "elsewhere" / "bert_random"
    shutil.copytree(models["bert_random"], same)
    assert nli(same, tmp_path).identity == nli(models["bert_random"], tmp_path).identity
    other = tmp_path / "other" / "bert_random"  # the same files, one weight changed: same sizes, other values
    shutil.copytree(same, other)
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(str(other), local_files_only=True)
    with torch.no_grad():
        model.classifier.bias[0] += 0.5
    model.save_pretrained(str(other))
    assert (other / "model.safetensors").stat().st_size == (same / "model.safetensors").stat().st_size
    assert model_fingerprint(other) != model_fingerprint(same)
    assert nli(other, tmp_path).identity != nli(same, tmp_path).identity
    assert nli(same, tmp_path, entailment_threshold=0.7).identity != nli(same, tmp_path).identity


def test_judge_model_path_or_yaml(tmp_path, models):
    assert options_from_path(models["bert_entail"]) == {"model": str(models["bert_entail"].resolve())}
    spec = tmp_path / "nli.yaml"
    shutil.copytree(models["bert_entail"], tmp_path / "m")
    spec.write_text("model: m\nentailment_threshold: 0.8\nbatch_size: 4\n")
    assert options_from_path(spec) == {"model": str((tmp_path / "m").resolve()), "entailment_threshold": 0.8,
                                       "batch_size": 4}
    assert "nli" in JUDGES


# ---------------------------------------------------------------- the command line

def _answers(tmp_path: Path) -> Path:
    rows = [{"id": "q1", "question": "How long is the warranty?", "answer": "The warranty covers 24 months.",
             "contexts": [EVIDENCE[0][1]]},
            {"id": "q2", "question": "When did the office open?", "answer": "It opened in March 2019. About 120 "
             "people work there.", "contexts": [EVIDENCE[1][1]]}]
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_score_judge_nli_judge_model(tmp_path, models, monkeypatch):
    from click.testing import CliRunner

    from evalkit.cli import cli

    monkeypatch.setenv("EVALKIT_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "r.json"
    args = ["score", "--answers", str(_answers(tmp_path)), "--name", "nli_run", "--output", str(out), "--no-mlflow",
            "--judge", "nli", "--judge-model", str(models["bert_entail"])]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    summary = json.loads(out.read_text())
    identity = nli(models["bert_entail"], tmp_path).identity
    assert json.dumps(summary).count(identity) >= 1  # the run is tagged with the model's identity
    rows = [json.loads(line) for line in (tmp_path / "r" / "nli_run" / "per_query.jsonl").open()]
    assert {r["generation"]["judge"] for r in rows} == {identity}
    claims = [c for r in rows for c in r["generation"]["judgement"]["claims"]]
    p = softmax([3.0, 0.0, -1.0])[0]
    assert [c["verdict"] for c in claims] == ["supported"] * 3
    assert all(c["reason"].startswith(f"entailment {p:.2f} in ctx-") and c["reason"].endswith(" sentences 1-2")
               for c in claims)


@pytest.mark.parametrize("extra, message", [
    (["--judge", "nli"], "needs a model folder"),
    (["--judge", "nli", "--judge-model", "cross-encoder/nli-deberta-v3-base"], "never downloads"),
    (["--judge", "offline", "--judge-model", "x"], "--judge-model applies to --judge nli"),
])
def test_score_bad_judge_model_is_one_line(tmp_path, extra, message, monkeypatch):
    from click.testing import CliRunner

    from evalkit.cli import cli

    monkeypatch.chdir(tmp_path)
    args = ["score", "--answers", str(_answers(tmp_path)), "--name", "x", "--output", str(tmp_path / "r.json"),
            "--no-mlflow", *extra]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code != 0 and message in res.output and "Traceback" not in res.output


def test_run_judge_nli_and_resume_keeps_the_model(tmp_path, models, monkeypatch):
    """`evalkit run --judge nli --judge-model FOLDER` judges generated answers; the folder is saved for --resume."""
    from click.testing import CliRunner

    from evalkit.cli import cli
    from evalkit.evalsets import freeze

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVALKIT_CACHE", str(tmp_path / "cache"))
    (tmp_path / "corpora").mkdir()
    docs = [("d1", "Warranty", "The warranty covers 24 months. Returns are accepted within 30 days."),
            ("d2", "Office", "The Lisbon office opened in March 2019. It employs about 120 people.")]
    (tmp_path / "corpora" / "kb.jsonl").write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n"
                                                           for i, t, x in docs))
    (tmp_path / "kb.jsonl").write_text("".join(json.dumps({"id": i, "question": q, "relevant_doc_ids": g,
                                                           "type": "single", "lang": "en"}) + "\n"
                                               for i, q, g in [("q1", "how long is the warranty", ["d1"]),
                                                               ("q2", "when did the office open", ["d2"])]))
    freeze(tmp_path / "kb.jsonl", corpus=str(tmp_path / "corpora" / "kb.jsonl"))
    (tmp_path / "g.yaml").write_text(
        "name: ex\nnodes:\n  retrieve: {type: retrieve, params: {bm25: {tokenizer: en, top_k: 2}}}\n"
        "  generate: {type: generate, params: {evidence_from: retrieved, llm: {backend: extractive}}}\n"
        "edges: {start: retrieve, retrieve: generate, generate: end}\n")
    res = CliRunner().invoke(cli, ["run", "--eval-set", "kb.jsonl@v1", "--graph-config", "g.yaml", "--output",
                                   "r/x.json", "--no-mlflow", "--no-progress", "--judge", "nli",
                                   "--judge-model", str(models["bert_contra"])])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in (tmp_path / "r" / "x" / "ex" / "per_query.jsonl").open()]
    verdicts = [c["verdict"] for r in rows for c in r["generation"]["judgement"]["claims"]]
    assert verdicts and set(verdicts) == {"unsupported"}
    assert {r["generation"]["judge"] for r in rows} == {nli(models["bert_contra"], tmp_path).identity}
    saved = json.loads((tmp_path / "r" / "x" / "invocation.json").read_text())
    assert saved["judge"] == "nli" and saved["judge_model"] == str(models["bert_contra"].resolve())


def test_a_base_model_without_a_trained_head_is_refused(tmp_path):
    """A folder saved from a bare encoder would load with a random classification head: refused, not scored."""
    import transformers as tf

    folder = tmp_path / "base"
    folder.mkdir()
    tokenizer = _wordpiece(folder)
    tf.BertModel(tf.BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1,
                               num_attention_heads=2, intermediate_size=64,
                               max_position_embeddings=64)).save_pretrained(str(folder))
    with pytest.raises(EvalkitError, match="not a fine-tuned"):  # when the judge is built, before any answer
        nli(folder, tmp_path, labels={"supported": 1})


CONFIG_CODE = '''from transformers import PretrainedConfig


class OverlapConfig(PretrainedConfig):
    model_type = "overlap_scorer"
'''
MODEL_CODE = '''import torch
from transformers import PreTrainedModel

from .configuration_overlap import OverlapConfig


class OverlapForSequenceClassification(PreTrainedModel):
    """A scorer with its own predict(): the share of the claim's words found in the premise."""

    config_class = OverlapConfig

    def __init__(self, config):
        super().__init__(config)
        self.weight = torch.nn.Parameter(torch.ones(1))
        self.post_init()

    def _init_weights(self, module):
        pass

    def forward(self, *args, **kwargs):
        raise RuntimeError("this model scores through predict()")

    def predict(self, pairs):
        shares = [sum(w in p.lower() for w in c.lower().split()) / max(1, len(c.split())) for p, c in pairs]
        return torch.tensor(shares) * self.weight
'''


def test_remote_code_scorer_with_its_own_predict(tmp_path, monkeypatch):
    """An HHEM-style folder (config.json auto_map, a predict() method) runs only with trust_remote_code: true."""
    import transformers.dynamic_module_utils as dynamic
    from safetensors.torch import save_file

    monkeypatch.setattr(dynamic, "HF_MODULES_CACHE", str(tmp_path / "modules"))  # the copied code stays in tmp
    folder = tmp_path / "overlap"
    folder.mkdir()
    (folder / "configuration_overlap.py").write_text(CONFIG_CODE)
    (folder / "modeling_overlap.py").write_text(MODEL_CODE)
    (folder / "config.json").write_text(json.dumps({
        "model_type": "overlap_scorer", "architectures": ["OverlapForSequenceClassification"],
        "auto_map": {"AutoConfig": "configuration_overlap.OverlapConfig",
                     "AutoModelForSequenceClassification": "modeling_overlap.OverlapForSequenceClassification"}}))
    save_file({"weight": torch.ones(1)}, str(folder / "model.safetensors"))
    with pytest.raises(JudgeSetupError, match="trust_remote_code: true"):
        nli(folder, tmp_path)
    judge = nli(folder, tmp_path, trust_remote_code=True, support_threshold=0.9)
    assert judge.labels.kind == "score"
    (good, bad) = judge.verdicts(["the warranty covers 24 months", "the warranty covers 36 months"], EVIDENCE[:1])
    assert (good.verdict, good.reason) == ("supported", "consistency score 1.00 in doc-1 sentences 1-2")
    # 4 of the second claim's 5 words occur in the window ("36" does not)
    assert bad.verdict == "unverified" and bad.reason.startswith(f"consistency score {4 / 5:.2f} at best")


def test_python_api_takes_judge_model_as_options(tmp_path, models, monkeypatch):
    import evalkit

    monkeypatch.chdir(tmp_path)
    rows = [{"id": "q1", "question": "How long is the warranty?", "answer": "The warranty covers 24 months.",
             "contexts": [EVIDENCE[0][1]]}]
    res = evalkit.score(name="api_nli", output=tmp_path / "r.json", answers=rows, judge="nli", mlflow=False,
                        judge_model={"model": str(models["bert_contra"]), "contradiction_threshold": 0.99},
                        cache_root=tmp_path / "cache")
    per_query = [json.loads(line) for line in (tmp_path / "r" / "api_nli" / "per_query.jsonl").open()]
    (claim,) = per_query[0]["generation"]["judgement"]["claims"]
    # contradiction 0.94 is below the 0.99 asked for, and entailment 0.04 below 0.5: not decided
    assert claim["verdict"] == "unverified"
    assert f"best contradiction {softmax([-1.0, 0.0, 3.0])[2]:.2f}" in claim["reason"]
    assert "c0.99" in per_query[0]["generation"]["judge"] and res is not None


@pytest.mark.parametrize("name, input_format", [("bert_entail", "pair"), ("roberta_yes", "eos_joined")])
def test_truncation_cuts_the_premise_never_the_claim(models, name, input_format):
    from pathlib import Path as _Path

    from transformers import AutoTokenizer

    from evalkit.models.nli import _encoder

    tokenizer = AutoTokenizer.from_pretrained(str(models[name]), local_files_only=True)
    claim = "Returns are accepted within 30 days."
    premise = " ".join(SENTENCES * 4)  # far longer than 24 tokens
    ids = _encoder(tokenizer, 24, input_format, _Path(models[name]))([(premise, claim)])["input_ids"][0].tolist()
    claim_ids = tokenizer(claim, add_special_tokens=False)["input_ids"]
    assert len(ids) == 24
    body = ids[:-1]  # the closing special token
    assert body[-len(claim_ids):] == claim_ids  # the whole claim is there, at the end


def test_offline_then_nli_cascade_decides_only_what_the_offline_judge_left(tmp_path, models):
    """`offline+nli`: the model (forced to entail) decides the claims the offline judge leaves unverified."""
    judge = make_judge("offline+nli", cache_root=tmp_path / "cache", model=str(models["bert_entail"]))
    offline = make_judge("offline")
    evidence = [("doc-1", "The Lisbon office opened in March 2019. It employs about 120 people."),
                ("doc-2", "Revenue was 4.2 million in 2022 and 5.0 million in 2023.")]
    answer = "The Lisbon office opened in March 2019. Revenue rose by 0.8 million from 2022 to 2023."
    first = offline.judge("q", answer, evidence).claims
    assert [c.verdict for c in first] == ["supported", "unverified"]  # a derived difference: the rules cannot tell
    result = judge.judge("q", answer, evidence)
    assert result.error is None and len(result.claims) == len(first)
    for before, after in zip(first, result.claims):
        if before.verdict == "unverified":
            p = softmax([3.0, 0.0, -1.0])[0]
            assert (after.verdict, after.stage, after.escalated) == ("supported", "nli", True)
            assert f"entailment {p:.2f} in doc-" in after.reason
        else:
            assert (after.verdict, after.stage, after.escalated) == (before.verdict, "offline", False)
    assert judge.stats.escalated == sum(c.verdict == "unverified" for c in first)
