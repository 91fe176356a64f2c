"""The one secret-masking function: every form a key can travel in is masked, the rest kept."""
from __future__ import annotations

import json
import struct

import pytest

from evalkit.redact import looks_like_key, redact, redact_obj

KEY = "sk-proj-Abc123xyz789LMNOPqrstUVW"


@pytest.mark.parametrize("text, kept", [
    (f"http://user:{KEY}@llm.internal:8000/v1", "llm.internal:8000/v1"),
    (f"https://{KEY}@api.example.com/v1", "api.example.com/v1"),
    (f"https://api.example.com/v1?api_key={KEY}&model=x", "model=x"),
    (f"https://api.example.com/v1?foo=1&token={KEY}", "foo=1"),
    (f"POST failed: Authorization: Bearer {KEY} rejected", "rejected"),
    (f"the key {KEY} was pasted", "was pasted"),
    ("https://h/v1?key=AIzaSyD-1234567890abcdefghijklmnopqrs", "https://h/v1"),
])
def test_redact_masks_every_form(text, kept):
    out = redact(text)
    assert KEY not in out and "AIzaSyD" not in out
    assert "***" in out
    assert kept in out


def test_redact_keeps_ordinary_text():
    for text in ("http://localhost:8000/v1", "recall@20 0.85", "user@example.com wrote", "OPENAI_API_KEY",
                 "华南区销售额为 2,240 万元", "https://h/v1?model=qwen&temperature=0"):
        assert redact(text) == text


def test_redact_obj_walks_nested_values():
    obj = {"llm": {"base_url": f"http://u:{KEY}@h/v1", "model": "m"}, "list": [f"?api_key={KEY}", 3]}
    out = redact_obj(obj)
    assert KEY not in repr(out)
    assert out["llm"]["model"] == "m" and out["list"][1] == 3


@pytest.mark.parametrize("value, is_key", [
    ("OPENAI_API_KEY", False), ("DASHSCOPE_API_KEY", False), ("MY_KEY_2", False),
    (KEY, True), ("hf_abcdefghijklmnopqrstuvwxyz12", True), ("AbCdEf1234567890GhIjKl1234567890xyz", True),
    ("abc-def.ghi-jkl-mnop-qrst", True),
])
def test_looks_like_key(value, is_key):
    assert looks_like_key(value) is is_key


@pytest.mark.parametrize("text, kept", [
    (f'{{"api_key": "{KEY[3:]}", "model": "m"}}', '"model": "m"'),            # JSON, not key-shaped
    ("password=hunter2hunter2 rest", "rest"),
    (f"X-Api-Key: {KEY[3:]}", "X-Api-Key: "),
    ("aws_secret_access_key = AbCdEf0123456789xyz", "aws_secret_access_key = "),
    (f"hf_token={KEY[3:]}", "hf_token="),
    (f"https://h/v1?auth={KEY[3:]}&x=1", "x=1"),
])
def test_redact_masks_assignments_and_more_query_names(text, kept):
    out = redact(text)
    assert KEY[3:] not in out and "hunter2" not in out and "AbCdEf0123456789xyz" not in out
    assert kept in out and "***" in out


def test_redact_is_idempotent_and_keeps_punctuation():
    once = redact(f"rejected by http://h/v1/chat/completions?api_key={KEY}: HTTP 404")
    assert once == "rejected by http://h/v1/chat/completions?api_key=***: HTTP 404"
    assert redact(once) == once


@pytest.mark.parametrize("text", ["api_key_env: OPENAI_API_KEY", "max_tokens: 512", "tokens_in=5",
                                  "tokenizer: auto", "task-management-and-planning", "risk-free-rate-model"])
def test_redact_leaves_names_and_lookalikes(text):
    assert redact(text) == text


def test_values_of_secret_environment_variables_are_masked(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "plain-looking-value-42")
    assert redact("server said plain-looking-value-42 twice") == "server said *** twice"
    assert redact("x", secrets=()) == "x"


def test_dumps_never_breaks_json_and_masks_by_key():
    from evalkit.redact import dumps

    obj = {"url": f"http://h/v1?token=abc\"def {KEY}", "client_secret": "s3cr3t", "n": 1, "ok": "plain"}
    out = json.loads(dumps(obj))
    assert KEY not in json.dumps(out) and out["client_secret"] == "***" and out["n"] == 1 and out["ok"] == "plain"
    plain = {"a": "nothing secret here", "b": [1, 2]}
    assert dumps(plain) == json.dumps(plain)


@pytest.mark.parametrize("token", [
    "sk-proj-Abc123xyz789LMNOPqrstUVW", "hf_ABCDEFGHIJKLMNOPQRSTUVWXYZ12", "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ12",
    "gho_ABCDEFGHIJKLMNOPQRSTUVWXYZ12", "github_pat_11ABCDEFG0123456789_XYZWVUTSRQPONMLK", "AKIAIOSFODNN7EXAMPLE",
    "AIzaSyD-1234567890abcdefghijklmnopqrs", "xoxb-1234567890-abcdefABCDEF"])
def test_every_key_shape_is_masked_in_plain_text(token):
    # the cheap substring test that gates the shape regex must let every shape through, with no
    # other trigger word around it (a GitHub fine-grained token was missed: its prefix has no "gh")
    out = redact(f"the server said: {token} (400)")
    assert token not in out and out == "the server said: *** (400)"


@pytest.mark.parametrize("obj", [
    {"a": [1, 2.5, -0.0, 1e-05, 1e300], "zh": "华南区\u2028", "none": None, "t": True},
    {"nan": float("nan"), "ok": 1.0},            # orjson would write null: must fall back
    {"inf": [float("inf"), float("-inf")]},
    {"tuple": (1, 2), "nested": [(3, "x")]},
    {1: "int key", "b": 2},                      # json turns the key into "1"
    {"big": 2 ** 70},
    {"surrogate": "\ud800 alone"},
])
def test_dumps_line_reads_back_as_json_dumps_does(obj):
    from evalkit.redact import dumps, dumps_line

    line = dumps_line(obj, secrets=())
    assert "\n" not in line
    got, want = json.loads(line), json.loads(dumps(obj, ensure_ascii=False))
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)  # NaN-safe comparison


def test_dumps_line_falls_back_for_numpy_floats_and_masks_secrets(monkeypatch):
    import numpy as np

    from evalkit.redact import dumps_line

    assert json.loads(dumps_line({"s": np.float64(0.25)}, secrets=()))["s"] == 0.25
    monkeypatch.setenv("MY_SERVICE_TOKEN", "plain-looking-value-42")
    obj = {"error": "POST http://u:pw@h/v1 failed: plain-looking-value-42", "api_key": "abcdefgh", "n": [1, 2]}
    out = dumps_line(obj)
    assert "plain-looking-value-42" not in out and "pw@" not in out
    back = json.loads(out)
    assert back["api_key"] == "***" and back["n"] == [1, 2]


def test_dumps_line_masks_the_callers_secrets_on_both_paths():
    from evalkit.redact import dumps_line

    for obj in ({"error": "server echoed my-extra-secret-1"}, {"error": "server echoed my-extra-secret-1",
                                                                 "score": float("nan")}):  # orjson / json path
        assert "my-extra-secret-1" not in dumps_line(obj, secrets=["my-extra-secret-1"])


# --- the squeezed trigger scan of long texts (redact._may_hold) -----------------------------------

def _record_like(rng, inserts: list[str]) -> str:
    """A per-query-record-like JSON line (~5-20 KB of rankings) with ``inserts`` at random places."""
    ranking = [{"doc_id": str(rng.randint(10**6, 10**8)), "score": round(rng.random(), 6)}
               for _ in range(rng.randint(20, 200))]
    parts = [json.dumps({"query_id": str(rng.randint(1, 999)), "question": "0-dimensional biomaterials 材料 show",
                         "retrieved": ranking}, ensure_ascii=False)]
    for text in inserts:
        at = rng.randint(0, len(parts[0]))
        parts[0] = parts[0][:at] + text + parts[0][at:]
    return parts[0]


def test_squeezed_scan_finds_every_trigger_the_plain_scan_finds():
    import random

    from evalkit.redact import _ANY_TRIGGER, _TRIGGERS, _may_hold

    rng = random.Random(11)
    # trigger words in either case, split by digits (must NOT count: the plain scan does not see them
    # either, but the squeeze may join them, which is allowed), Unicode that lower-cases to ASCII
    # (KELVIN SIGN -> k), Chinese, a lone surrogate
    pieces = [*(t for t in _TRIGGERS), *(t.upper() for t in _TRIGGERS), "\u212aey", "TO9KEN", "s1k-", "tok",
              "en", "密钥", "\ud800", "k", "e", "y", "=", ":", "/", "pa\u017f\u017fw", "g\u0131thub_pat_",
              "AK\u0130A", "to\u212aen", "ke中y", "s\u00e9cret", "\u00c5KIA"]
    agree = found = 0
    for _ in range(3000):
        text = _record_like(rng, [rng.choice(pieces) for _ in range(rng.choice([0, 0, 1, 2, 3]))])
        plain = _ANY_TRIGGER.search(text.lower()) is not None
        squeezed = _may_hold(text)
        assert squeezed or not plain, text  # never misses one
        agree += squeezed == plain
        found += plain
    assert found > 1000 and agree > 2500  # both kinds of text were tried, and joins are rare


def test_the_squeeze_knows_every_character_that_folds_to_ascii():
    """_may_hold deletes every non-ASCII byte before its scan, which is sound only if the characters
    listed in _ASCII_ALIKE are all the non-ASCII ones that lower-case to, or match under
    re.IGNORECASE, an ASCII character: checked over every code point of this Python's Unicode."""
    import re
    import string

    from evalkit.redact import _ASCII_ALIKE

    ascii_chars = string.ascii_letters + string.digits + string.punctuation
    listed = set(_ASCII_ALIKE)
    ignorecase = re.compile(f"[{re.escape(ascii_chars)}]", re.IGNORECASE)
    found = set()
    for code in range(128, 0x110000):
        c = chr(code)
        if 0xD800 <= code <= 0xDFFF:
            continue
        if any(ord(x) < 128 for x in c.lower()) or ignorecase.fullmatch(c):
            found.add(c)
    assert found == listed


def test_the_squeezed_scan_equals_the_plain_scan_on_chinese_record_lines():
    """Record lines of a Chinese corpus (ids with letters, Chinese text, an English word here and
    there): the squeezed scan says yes exactly when the plain scan does, or joins pieces (allowed)."""
    import random

    from evalkit.redact import _ANY_TRIGGER, _fold, _may_hold

    rng = random.Random(3)
    plain_words = ["差旅", "报销", "住宿", "fin-004#1", "hr-013", '"score":', '"doc_id":', "0.955474", "按", "k", "e",
                   "y", "s", "-", "t", "o", "n", "的", "a", "w", "ſ", "K", "ı", "İ", "i", "_"]
    trigger_like = ["Token", "key", "KEY", "=", "://", "sk-", "pass", "PASSW", "github", "_pat_", "aiza", "xox", "HF_",
                    "ke中y", "pa\u017f\u017fw", "to\u212aen", "AK\u0130A", "g\u0131thub_pat_"]
    said = agree = 0
    for _ in range(2000):
        words = [rng.choice(plain_words) for _ in range(600)]
        for _ in range(rng.choice([0, 0, 1, 2])):
            words[rng.randrange(len(words))] = rng.choice(trigger_like)
        text = "".join(words)
        plain = _ANY_TRIGGER.search(_fold(text)) is not None
        squeezed = _may_hold(text)
        assert squeezed or not plain, text
        said += plain
        agree += squeezed == plain
    assert 200 < said < 1800 and agree > 1000  # texts of both kinds were tried


def test_a_secret_deep_in_a_long_record_line_is_still_masked():
    import random

    from evalkit.redact import dumps_line

    rng = random.Random(5)
    for secret in ("sk-" + "A1b2" * 8, "password=hunter2hunter2", "Bearer abcdefgh12345678",
                   "https://user:pw@host/v1", "api_\u212aey=Zx81Zx81Zx81"):  # KELVIN SIGN k
        text = _record_like(rng, [f" {secret} "])
        assert len(text) > 512  # long enough to be squeezed
        masked = redact(text)
        assert masked != text and "***" in masked
        line = dumps_line({"trace": [text]})
        assert "***" in json.loads(line)["trace"][0]


_LOOKS_NON_FINITE = struct.unpack(">d", b"\x40\x01\xcb\x7f\xf3\x00\x00\x01")[0]  # finite: 2.2..., CB 7F F3 inside


def _random_value(rng, depth: int = 0):
    """Nested JSON-like data: every float kind (NaN, infinities, -0.0, subnormal, huge), ints at the
    64-bit edges, tuples, and ints, floats and strings whose msgpack bytes hold what a non-finite
    float's would (0xCB 0x7F 0xF0: in an int, inside a finite float's mantissa)."""
    kinds = ["float", "int", "str", "none", "bool"] + (["list", "dict", "tuple"] if depth < 4 else [])
    kind = rng.choice(kinds)
    if kind == "float":
        return rng.choice([rng.random(), -rng.random() * 1e6, 0.0, -0.0, 5e-324, 1.7e308, float("nan"),
                           float("inf"), float("-inf"), round(rng.random(), 6), _LOOKS_NON_FINITE])
    if kind == "int":
        return rng.choice([0, -1, 2 ** 63 - 1, -(2 ** 63), rng.randint(-10 ** 9, 10 ** 9), 0x7ff0000000000067,
                           0xCB7FF0, 0xCBFFF0FF, -0x7FF0])
    if kind == "str":
        return rng.choice(["", "g\x7f\xf0", "ggggggggg\x7f", "华南区", "doc_id", "\x00\x7f\x7f\x7f\x7f", "\u02cb\x7f"])
    if kind == "none":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    items = [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 6))]
    if kind == "list":
        return items
    if kind == "tuple":
        return tuple(items)
    return {f"k{i}": v for i, v in enumerate(items)}


def test_dumps_line_fast_check_agrees_with_reading_back():
    import math
    import random

    import orjson

    from evalkit.redact import _plain_and_finite, dumps_line

    def has_non_finite(v) -> bool:
        if isinstance(v, float):
            return not math.isfinite(v)
        if isinstance(v, dict):
            return any(has_non_finite(x) for x in v.values())
        if isinstance(v, (list, tuple)):
            return any(has_non_finite(x) for x in v)
        return False

    rng = random.Random(3)
    skipped = 0
    for _ in range(4000):
        obj = {"v": _random_value(rng)}
        if has_non_finite(obj):
            assert not _plain_and_finite(obj), obj  # never misses a NaN or an infinity
        else:
            skipped += _plain_and_finite(obj)
        want = json.loads(json.dumps(obj, ensure_ascii=False))
        assert json.dumps(json.loads(dumps_line(obj, secrets=())), sort_keys=True) == json.dumps(want, sort_keys=True)
    assert skipped > 1000  # the fast check did its job on the finite ones
    # numpy values: orjson refuses them before this check (json writes them); types the check refuses take
    # the full check
    import enum

    import numpy as np

    class Tag(str):
        pass

    class Colour(enum.Enum):
        RED = "red"

    assert math.isnan(json.loads(dumps_line({"x": np.float64("nan")}, secrets=()))["x"])  # NaN (json), not null
    assert not _plain_and_finite({"x": [float("nan")]}) and _plain_and_finite({"x": 1.5})
    assert not _plain_and_finite({"x": Tag("a")}) and not _plain_and_finite({"x": Colour.RED})
    assert orjson.loads(dumps_line({"x": Tag("a")}, secrets=())) == {"x": "a"}
    with pytest.raises(TypeError):  # json.dumps cannot write an Enum: as before, not orjson's "red"
        dumps_line({"x": Colour.RED}, secrets=())
    # a frozen list (a shared ranking's trace form) is checked as the list it is, inside and out
    from evalkit.frozen import FrozenList

    ranked = FrozenList([["p1", "d1", 0.5], ["p2", "d2", 0.25]])
    assert _plain_and_finite({"x": ranked})
    assert dumps_line({"x": ranked}, secrets=()) == '{"x":[["p1","d1",0.5],["p2","d2",0.25]]}'
    assert not _plain_and_finite({"x": FrozenList([["p1", "d1", float("inf")]])})
    assert not _plain_and_finite({"x": FrozenList([Tag("a")])}) and not _plain_and_finite({"x": [ranked, Tag("a")]})


def test_a_list_frozen_all_the_way_is_written_once_and_as_the_list_it_is():
    import random

    from evalkit.frozen import FrozenList
    from evalkit.redact import dumps_line

    def frozen(v):
        return FrozenList([frozen(x) for x in v]) if isinstance(v, list) else v

    rng = random.Random(11)
    cached = 0
    for _ in range(1500):
        items = [rng.choice([rng.random(), float("nan"), float("inf"), 10**30, "k\u00e9y", None, True, -0.0,
                             [rng.random(), "p1", [1, 2]]]) for _ in range(rng.randint(0, 4))]
        plain = {"trace": [{"wrote": items}], "n": 1}
        shared = frozen(items)
        record = {"trace": [{"wrote": shared}], "n": 1}
        want = dumps_line(plain, secrets=())
        assert dumps_line(record, secrets=()) == want  # the first record writes it and keeps what it wrote
        cached += getattr(shared, "_json", None) is not None
        assert dumps_line(record, secrets=()) == want  # later records splice the kept text in
        assert dumps_line({"a": shared, "b": shared}, secrets=()) == dumps_line({"a": items, "b": items}, secrets=())
    assert cached > 1000
    half = FrozenList([FrozenList(["p1", 0.5]), ["p2", 0.25]])  # a plain list inside: nothing is kept
    assert dumps_line({"x": half}, secrets=()) == '{"x":[["p1",0.5],["p2",0.25]]}'
    assert getattr(half, "_json", None) is None


_SECRET_FORMS = ["api_key=Zx81Zx81Zx81", "API-KEY: 'Zx81Zx81Zx81'", '"client_secret": "Zx81Zx81Zx81"', "hf_token=Zx81Zx81",
                 "Password : hunter2hunter2", "passwd=abcd1234", "Bearer abcdefgh12345678", "token   Zx81Zx81Zx81",
                 "Basic dXNlcjpwYXNzd29yZA==", "x-api-key: Zx81Zx81Zx81", "private-key=Zx81Zx81",
                 "access_key: Zx81Zx81", "api_\u212aey=Zx81Zx81Zx81", "pa\u017f\u017fword=hunter2hunter2",
                 "ba\u017fic Zx81Zx81Zx81", "bas\u0131c Zx81Zx81Zx81Zx81", "BAS\u0130C Zx81Zx81Zx81Zx81",
                 "ToKeN=Zx81Zx81Zx81", "SECRET:Zx81Zx81"]
_LOOKALIKES = ["max_tokens: 512", '"prompt_tokens": 1834', "tokenizer: en", "api_key_env: OPENAI_API_KEY",
               "keyword = 3", "the token budget", "secretary", "basic idea", "key_terms", "monkey: 4"]


def test_the_near_stand_ins_never_change_what_is_masked(monkeypatch):
    # _BEARER_NEAR / _ASSIGNED_NEAR only skip work: with them matching everything (the full patterns
    # always run), every text comes out the same: secrets in many spellings, look-alikes, long records
    import random
    import re

    import evalkit.redact as redact_module

    rng = random.Random(2026)
    texts = []
    for _ in range(1500):
        inserts = [rng.choice(_SECRET_FORMS + _LOOKALIKES * 2) for _ in range(rng.choice([0, 1, 1, 2, 3]))]
        texts.append(_record_like(rng, inserts) if rng.random() < 0.5 else " ; ".join(inserts))
    fast = [redact(t, []) for t in texts]
    monkeypatch.setattr(redact_module, "_BEARER_NEAR", re.compile(""))
    monkeypatch.setattr(redact_module, "_ASSIGNED_NEAR", re.compile(""))
    assert [redact(t, []) for t in texts] == fast
    assert sum(f != t for f, t in zip(fast, texts)) > 500  # secrets were there to mask


@pytest.mark.parametrize("text", ["pa\u017f\u017fword=hunter2hunter2", "\u017fecret: Zx81Zx81Zx81",
                                  "ba\u017fic Zx81Zx81Zx81", "api_\u212aey=Zx81Zx81Zx81", "bas\u0131c Zx81Zx81Zx81",
                                  "BAS\u0130C Zx81Zx81Zx81"])
def test_letters_ignorecase_takes_for_ascii_ones_do_not_hide_a_secret(text):
    # LONG S matches 's' under re.IGNORECASE but lower() keeps it: the triggers are now looked for in
    # the folded text, so the pattern that would match also runs
    assert "***" in redact(text, [])
    assert "***" in redact(_record_like(__import__("random").Random(1), [f" {text} "]), [])


def test_the_one_trigger_search_finds_what_the_substring_tests_find():
    """_may_hold's regex, which starts each trigger at its rarest character, must answer as testing every
    trigger with `in` does: on random texts of the squeezed alphabet, near misses and every trigger."""
    import random

    from evalkit.redact import _ANY_TRIGGER_BYTES, _NOT_IN_A_TRIGGER, _TRIGGER_BYTES

    alphabet = bytes(i for i in range(128) if bytes([i]) not in _NOT_IN_A_TRIGGER and not chr(i).isupper())
    rng = random.Random(5)
    found = 0
    for _ in range(20000):
        parts = [bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))]
        for _ in range(rng.randint(0, 3)):
            t = rng.choice(_TRIGGER_BYTES)
            cut = rng.randint(0, len(t))  # a whole trigger, or a near miss: a piece of one, or one letter off
            parts.append(rng.choice([t, t[:cut], t[cut:], t[:cut] + bytes([rng.choice(alphabet)]) + t[cut + 1:]]))
            parts.append(bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 3))))
        text = b"".join(parts)
        want = any(t in text for t in _TRIGGER_BYTES)
        assert (_ANY_TRIGGER_BYTES.search(text) is not None) == want, text
        found += want
    assert 5000 < found < 15000  # both answers were drawn often
    for t in _TRIGGER_BYTES:
        assert _ANY_TRIGGER_BYTES.search(b"oc_i:score:" + t + b":score") and not _ANY_TRIGGER_BYTES.search(t[:-1])


def test_pretty_dumps_writes_what_json_dumps_writes():
    """``dumps(obj, indent=2, ensure_ascii=False)`` (a run's summary) is written by orjson for plain, finite
    data: the same layout, escapes and values as ``json.dumps``; anything else (NaN, non-string keys,
    huge integers, subclasses) by json itself, text for text."""
    import math
    import random
    import re

    import orjson

    from evalkit.redact import _orjson_text, dumps

    def _pretty(obj):  # the fast path dumps takes for these options
        return _orjson_text(obj, orjson.OPT_INDENT_2)

    number = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|NaN|-?Infinity")

    def numbers_as_floats(text: str) -> str:  # 1e-07 and 1e-7 (json's and orjson's) are the same float
        return number.sub(lambda m: repr(float(m.group())), text)

    rng = random.Random(11)
    fast = 0
    for i in range(3000):
        obj = {"v": _random_value(rng), "s": rng.choice(["\x00\x1f\x7f", "\u2028é\"\\", "华南区", "", "1e-07"]),
               "f": rng.choice([1e-5, 2.5e-7, 0.1, 1e22, 123456789012345678.0, 3])}
        if i % 50 == 0:
            obj[rng.choice(["nan", "key"])] = {1: 2} if i % 100 else float("nan")
        want = json.dumps(obj, indent=2, ensure_ascii=False)
        got = dumps(obj, indent=2, ensure_ascii=False)
        fast += _pretty(obj) is not None
        assert numbers_as_floats(got) == numbers_as_floats(want)
        if _pretty(obj) is None:
            assert got == want  # json wrote it
        reread, expected = json.loads(got), json.loads(want)
        assert json.dumps(reread, sort_keys=True) == json.dumps(expected, sort_keys=True)
        if "nan" in obj and isinstance(obj["nan"], float):
            assert math.isnan(reread["nan"])
    assert 1000 < fast < 3000  # both paths taken
    # a secret in such a file is masked on the fast path too
    assert "sk-" not in dumps({"k": "sk-" + "a" * 30}, indent=2, ensure_ascii=False)
