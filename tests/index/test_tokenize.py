"""BM25 tokenisation: jieba for Chinese, Porter + stop words for English, codes whole and split."""
from __future__ import annotations

import pytest

from evalkit.text.tokenize import STOPWORDS, Tokenizer


@pytest.fixture(scope="module")
def tok():
    return Tokenizer()  # auto: jieba for CJK runs, English path for the rest


# --- Chinese --------------------------------------------------------------------------

def test_chinese_words_via_jieba(tok):
    # "e-invoice reimbursement cap" -> e-(lectronic) / invoice / reimbursement / cap
    assert tok("电子发票报销上限") == ["电子", "发票", "报销", "上限"]
    assert Tokenizer("zh")("电子发票报销上限") == ["电子", "发票", "报销", "上限"]


def test_chinese_punctuation_dropped(tok):
    out = tok("报销上限，是多少？（每月）")
    assert "报销" in out and "上限" in out
    assert not {"，", "？", "（", "）"} & set(out)


# --- English --------------------------------------------------------------------------

def test_english_stems_and_drops_stop_words(tok):
    assert tok("The retries are running") == ["retri", "run"]  # 'the', 'are' are stop words
    assert Tokenizer("en")("The retries are running") == ["retri", "run"]


def test_english_settings():
    assert Tokenizer(stem=False)("The retries are running") == ["retries", "running"]
    kept = Tokenizer(stopwords=False)("The retries are running")
    assert kept[0] == "the" and len(kept) == 4
    assert {"the", "a", "of", "with"} <= STOPWORDS


def test_english_lower_cases_and_matches_inflections(tok):
    assert tok("Connection TIMEOUTS") == tok("connection timeout")


# --- codes ----------------------------------------------------------------------------

@pytest.mark.parametrize("code,parts", [
    ("E-4012", ["e", "4012"]),
    ("LX-200", ["lx", "200"]),
    ("retry.max_attempts", ["retri", "max", "attempt"]),  # parts are stemmed like any word
])
def test_codes_kept_whole_and_split(tok, code, parts):
    out = tok(code)
    assert out[0] == code.lower()  # the whole code, never stemmed
    assert out[1:] == parts


def test_code_parts_match_natural_language_query(tok):
    # the point of emitting parts: a question in words finds the config key
    doc = set(tok("Set retry.max_attempts to 5"))
    query = set(tok("how many max attempts does retry allow"))
    assert {"retri", "max", "attempt"} <= doc & query
    # and the whole code matches only the code
    assert "retry.max_attempts" in doc and "retry.max_attempts" not in query


def test_mixed_chinese_english_and_codes(tok):
    out = tok("错误码E-4012怎么处理？请把retry.max_attempts调到5")
    assert out[:6] == ["错误码", "e-4012", "e", "4012", "怎么", "处理"]
    assert "retry.max_attempts" in out and "5" in out
    assert tok("LX-200打印机卡纸")[:3] == ["lx-200", "lx", "200"]


def test_whitespace_mode():
    assert Tokenizer("whitespace")("A b  C-1") == ["a", "b", "c-1"]


def test_unknown_mode_lists_choices():
    with pytest.raises(ValueError, match="unknown tokenizer 'jieba'; valid: auto, en, zh, whitespace"):
        Tokenizer("jieba")


# --- identity -------------------------------------------------------------------------

def test_identity_changes_with_settings():
    ids = {
        Tokenizer().identity,
        Tokenizer(stem=False).identity,
        Tokenizer(stopwords=False).identity,
        Tokenizer("en").identity,
        Tokenizer("zh").identity,
        Tokenizer("whitespace").identity,
    }
    assert len(ids) == 6
    assert Tokenizer().identity == Tokenizer("auto", True, True).identity
    assert "jieba=" in Tokenizer("zh").identity and "jieba=" not in Tokenizer("en").identity
    # settings that do not affect a mode do not change its identity
    assert Tokenizer("zh", stem=False).identity == Tokenizer("zh").identity


def test_possessives_are_dropped_and_no_empty_terms(tok):
    # Lucene's English analyzer strips a possessive 's; Porter would stem a stray "s" to ""
    assert Tokenizer("en")("the patient's doctors’ notes") == ["patient", "doctor", "note"]
    assert "" not in Tokenizer("en")("s S 's it's a b")


# --- other alphabets (tokenizer v4) ----------------------------------------------------

@pytest.mark.parametrize("text, terms", [
    # French: accents kept, elision split off, 'à' is a word
    ("L’été à Besançon, près de Genève", ["l", "été", "à", "besançon", "près", "de", "genève"]),
    # German: ß case-folds to ss, so Straße matches STRASSE; umlauts kept; only ASCII words are Porter-stemmed
    ("Die Straße in MÜNCHEN", ["die", "strass", "münchen"]),
    # Russian and Greek: whole words, case-folded
    ("Москва — столица России", ["москва", "столица", "россии"]),
    ("Η Αθήνα είναι η ΠΡΩΤΕΥΟΥΣΑ", ["η", "αθήνα", "είναι", "η", "πρωτευουσα"]),
])
def test_unicode_letters_in_four_languages(tok, text, terms):
    assert tok(text) == terms
    assert Tokenizer("en")(text) == terms


def test_case_folding_and_nfkc_make_variants_match(tok):
    assert tok("STRASSE") == tok("Straße")
    assert tok("ΑΘΗΝΑ") == ["αθηνα"] and tok("Αθήνα") == ["αθήνα"]  # accents differ: see accents="strip"
    assert tok("Ｅ－４０１２") == tok("E-4012") == ["e-4012", "e", "4012"]  # full-width forms
    assert tok("ﬁle") == tok("file")  # the fi ligature
    assert tok("α-synuclein") == ["α-synuclein", "α", "synuclein"]  # a code of mixed alphabets, whole and split
    assert tok("नमस्ते दुनिया") == ["नमस्ते", "दुनिया"]  # combining vowel signs stay inside their word


def test_strip_accents_is_for_matching_only():
    strip = Tokenizer(accents="strip")
    assert strip("Besançon Genève Zürich") == strip("Besancon Geneve Zurich") == ["besancon", "genev", "zurich"]
    assert strip("ΑΘΗΝΑ") == strip("Αθήνα") == ["αθηνα"]
    assert Tokenizer()("Besançon") != Tokenizer()("Besancon")  # the default keeps them apart
    assert "accents=strip" in strip.identity and strip.identity != Tokenizer().identity


def test_ascii_letters_reproduce_the_old_tokenizer():
    """``letters="ascii"`` is tokenizer v3, byte for byte (these outputs were recorded from v3)."""
    old = Tokenizer(letters="ascii")
    assert old("Zürich") == ["z", "rich"]
    assert old("Москва Αθήνα") == []
    assert old("L’été à Besançon") == ["l", "t", "besan"]
    assert old("Straße in München") == ["stra", "e", "m", "nchen"]
    assert old.identity.startswith("tok=auto/v3") and Tokenizer().identity.startswith("tok=auto/v5")
    assert old("The retries are running E-4012") == Tokenizer()("The retries are running E-4012")
    assert old("E\u20114012") == ["e", "4012"]  # v3 kept as it was: its dashes are not folded


@pytest.mark.parametrize("dash", ["\u2010", "\u2011", "\u2012", "\u2013", "\u2212", "\uff0d", "\ufe63"])
def test_a_code_with_another_dash_is_the_same_code(dash):
    """Word processors and chat models write codes with U+2011 ("LX‑200") or an en dash; a query types "-".
    Before v5 the code's whole token was lost (only its parts matched). A dash between words stays a dash."""
    tok = Tokenizer()
    assert tok(f"LX{dash}200 router") == tok("LX-200 router") == ["lx-200", "lx", "200", "router"]
    assert tok(f"IL{dash}6 levels") == tok("IL-6 levels")
    assert tok(f"2019 {dash} 2024") == ["2019", "2024"]  # spaced: a separator, not part of a code
    assert Tokenizer("zh")(f"LX{dash}200") == ["lx", "200"]  # jieba mode never kept codes whole


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="accents"):
        Tokenizer(accents="remove")
    with pytest.raises(ValueError, match="letters"):
        Tokenizer(letters="latin")


def test_stemming_is_thread_safe():
    """Query threads stem at once: every stem must be what a single thread gets (a shared snowball
    stemmer raised IndexError and returned wrong stems under 8 threads)."""
    from concurrent.futures import ThreadPoolExecutor

    import snowballstemmer

    from evalkit.text.tokenize import _stemmer

    words = [f"{w}{i}ing" for i in range(10000) for w in ("connect", "allowance", "reimbursements")]
    reference = snowballstemmer.stemmer("porter")
    expected = [reference.stemWord(w) for w in words]
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(_stemmer(), words))
    assert got == expected
