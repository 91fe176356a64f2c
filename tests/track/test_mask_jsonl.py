"""``mask_jsonl`` looks only at the string literals that could change; it must give exactly what decoding
and masking every literal gives (``_every_literal``, the reference), on any text, and what masking each
record gives (``mask_records``) on well-formed JSON lines."""
from __future__ import annotations

import json
import random

import pytest

from evalkit.redact import secret_env_values
from evalkit.track import secrets as sec

ENV_SECRET = "plain/Value\u00e9-0042"  # no key shape, a slash and a non-ASCII letter
KEYS = ["q", "ids", "text", "tokens_in", "max_tokens", "note", "password_hint", "score", "路径", "k\u212aey"]
SECRET_KEYS = ["api_key", "accessToken", "db_password"]
PIECES = ["d1", "d2", " ", "中文的句子", "password=hunter22", "http://u:pw1234@host/v1?api_key=abc&x=1",
          "sk-" + "a1" * 10, "Bearer abcdefghijk", 'a "quoted" word', "back\\slash", "C:\\\\path\\", "a/b",
          "\u212aey=abcdef", "\u017fecret=abcdef", "\u0131", "\u0130", "\u3000", "\n", "\t", "\x01", "\r\n",
          ENV_SECRET, "token", "=", "top_n=2", "backend=extractive|v2", "\ud800", "\u2028", "key", "::",
          # a trigger only through a character that folds to ASCII, or only as "://"
          "api_\u212aey: abcdef1", "\u017fecret: abcdef1", "pa\u017f\u017fword: hunter22",
          "ftp://user:pw9876@files.example/x"]


def _value(rng: random.Random, depth: int = 0) -> object:
    kind = rng.random()
    if depth < 2 and kind < 0.15:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if depth < 2 and kind < 0.25:
        return {rng.choice(KEYS): _value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    if kind < 0.35:
        return rng.choice([1, -2.5e-7, 123456, None, True, False])
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 4)))


def _text(rng: random.Random, records: list[dict]) -> str:
    """The records as JSON lines, written in one of the ways a JSON writer may choose."""
    ascii_, sep = rng.random() < 0.3, rng.choice([(", ", ": "), (",", ":"), (" , ", " :  ")])
    lines = [json.dumps(r, ensure_ascii=ascii_, separators=sep) for r in records]
    if rng.random() < 0.3:
        lines = [line.replace("/", "\\/") for line in lines]      # a writer that escapes the slash
    if rng.random() < 0.3:   # one that escapes a letter ("k" is in no JSON text outside a literal)
        lines = [line.replace("k", "\\u006b") for line in lines]
    end = rng.choice(["\n", "\r\n"])
    return end.join(lines) + (end if rng.random() < 0.8 else "")


@pytest.fixture
def env_secret(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setenv("MY_SERVICE_API_KEY", ENV_SECRET)
    return secret_env_values()


def test_it_equals_masking_every_literal_and_every_record_on_well_formed_lines(env_secret: list[str]) -> None:
    rng = random.Random(7)
    fast_path_changed = 0
    for case in range(400):
        records = [{rng.choice(KEYS): _value(rng) for _ in range(rng.randint(1, 5))} for _ in range(rng.randint(1, 6))]
        if case % 10 == 0:
            records[-1][rng.choice(SECRET_KEYS)] = _value(rng)     # a secret-named key: the structural path
        text = _text(rng, records)
        fast = sec._marked_literals(text, env_secret)
        assert fast is not None, text                                # well-formed: the fast path itself ran
        assert fast == sec._every_literal(text, env_secret), text
        assert sec.mask_jsonl(text) == fast
        if json.dumps(records, ensure_ascii=False) == json.dumps(records):   # every value is valid UTF-8 text
            assert [json.loads(line) for line in fast.splitlines() if line.strip()] == \
                [json.loads(line) for line in sec.mask_records(records).splitlines()]
        fast_path_changed += fast != text
    assert fast_path_changed > 100                                   # the cases did hold secrets to mask


def test_a_files_bytes_are_masked_as_its_text_is(env_secret: list[str]) -> None:
    """``mask_jsonl_bytes`` (what MLflow's per_query.jsonl artifact goes through) gives the UTF-8 of what
    ``mask_jsonl`` gives for the decoded text, and the very bytes it was given when nothing is masked."""
    rng = random.Random(13)
    untouched = changed = 0
    for case in range(400):
        records = [{rng.choice(KEYS): _value(rng) for _ in range(rng.randint(1, 5))} for _ in range(rng.randint(1, 6))]
        if case % 10 == 0:
            records[-1][rng.choice(SECRET_KEYS)] = _value(rng)
        text = _text(rng, records)
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError:
            continue                                  # a lone surrogate: no UTF-8 file holds this text
        masked = sec.mask_jsonl(text)
        try:
            expected: object = masked.encode("utf-8")
        except UnicodeEncodeError:                    # the masking wrote a lone surrogate: writing it failed
            expected = UnicodeError
        try:
            got: object = sec.mask_jsonl_bytes(raw)
        except UnicodeError:
            got = UnicodeError
        assert got == expected, text
        assert (got is raw) == (masked is text), text  # untouched exactly when the text was
        untouched += got is raw
        changed += got != raw
    assert untouched >= 10 and changed > 100           # both kinds of case were met (21 and 200+ with seed 13)


def test_what_it_masks(env_secret: list[str]) -> None:
    records = [{"q": f"see {ENV_SECRET} and password=hunter22", "ids": ["d1", "sk-" + "b" * 24]},
               {"q": "nothing", "n": 123456}]
    out = sec.mask_jsonl("".join(json.dumps(r) + "\n" for r in records))
    assert ENV_SECRET not in out and "hunter22" not in out and "sk-bbb" not in out
    assert json.loads(out.splitlines()[0]) == {"q": "see *** and password=***", "ids": ["d1", "***"]}
    assert out.splitlines()[1] == json.dumps(records[1])
    clean = json.dumps({"q": "token budget", "backend": "top_n=2"}) + "\n"     # markers, nothing to mask
    assert sec.mask_jsonl(clean) is clean


@pytest.mark.parametrize("text", [
    '{"q": "odd "quote", "x": "sk-' + "c" * 20 + '"}\n',              # an unescaped quote inside a value
    '{"q": "a"} \\"password=hunter22\\" "b"}\n',                      # backslashes outside a literal
    '{"q": "password=hunter22\\\\"x": 1}\n',                          # a literal ending in an escaped backslash
    '{"api_key"\u3000: "plain"}\n{"q": "sk-' + "d" * 20 + '"}\n',    # Unicode space before a key's colon
    '{"q": "unterminated\n{"x": "password=hunter22"}\n',             # a literal left open at the end of a line
    '{"q": "x\\u00"}\n',                                             # a broken escape: both raise
    '{"q": "\x00password=hunter22"}\n',                              # a raw control character: both raise
])
def test_malformed_text_is_masked_as_the_reference_masks_it(text: str, env_secret: list[str]) -> None:
    try:
        expected: object = sec._every_literal(text, env_secret)
    except ValueError as exc:
        expected = type(exc)
    try:
        got: object = sec.mask_jsonl(text)
    except ValueError as exc:
        got = type(exc)
    assert got == expected
    try:
        got_bytes: object = sec.mask_jsonl_bytes(text.encode("utf-8"))
    except ValueError as exc:
        got_bytes = type(exc)
    assert got_bytes == (expected.encode("utf-8") if isinstance(expected, str) else expected)


def test_it_scans_in_pieces_as_it_scans_whole(monkeypatch: pytest.MonkeyPatch, env_secret: list[str]) -> None:
    rng = random.Random(11)
    records = [{rng.choice(KEYS): _value(rng) for _ in range(4)} for _ in range(300)]
    text = _text(rng, records)
    whole = sec._marked_literals(text, env_secret)
    monkeypatch.setattr(sec, "_CHUNK", 97)                           # many chunks, each whole lines
    assert sec._marked_literals(text, env_secret) == whole == sec._every_literal(text, env_secret)


def test_mask_text_skips_the_pair_pattern_only_where_it_cannot_match(env_secret: list[str]) -> None:
    """``mask_text`` runs ``_TEXT_PAIR`` only on a text where redact's trigger scan finds a trigger; on any
    text (short or long enough to be squeezed, look-alike letters included) it gives what running it always gave."""
    from evalkit.redact import MASK, _may_hold, redact

    rng = random.Random(5)
    extra = ["x" * 600, "API_KEY = abcd1234", "Token: zzzz9999", "pa\u017f\u017fwd=abcd1", "my_tok\u212aen=abcd",
             "\u0130", "secret : 12345"]
    skipped = paired = 0
    for _ in range(3000):
        text = "".join(rng.choice(PIECES + extra) for _ in range(rng.randint(0, 6)))
        reference = redact(sec._TEXT_PAIR.sub(lambda m: m.group(1) + MASK, text), env_secret) if text else text
        assert sec.mask_text(text, env_secret) == reference, text
        skipped += bool(text) and not _may_hold(text)
        paired += bool(text) and sec._TEXT_PAIR.search(text) is not None
    assert skipped > 100 and paired > 300
