"""Fast entity extraction (Chinese and English), normalisation and the alias table."""
from __future__ import annotations

import pytest

from evalkit.index.entities import (
    AliasTable,
    FastExtractor,
    find_keys,
    ident,
    make_extractor,
    normalise,
    split_sentences,
)


def _surfaces(text: str, **kw) -> dict[str, str]:
    return {m.surface: m.label for m in FastExtractor(**kw).mentions(text)}


def test_chinese_proper_nouns_companies_and_noun_compounds():
    found = _surfaces("供应商名称：岚屿微电子（合肥）有限公司\n华东区负责人周明轩，常驻上海。供应类别：主控芯片")
    assert found["岚屿微电子（合肥）有限公司"] == "org"  # bracketed place kept inside the company name
    assert found["周明轩"] == "person"        # jieba nr
    assert found["上海"] == "place"           # jieba ns
    assert found["主控芯片"] == "compound"     # n + n
    assert "供应" not in found                 # a verb is not an entity


def test_latin_codes_inside_chinese_text_are_kept():
    found = _surfaces("设备报 E-4012 时检查 tls.ca_bundle；LX-200 Pro 的功耗 15W")
    assert {"E-4012", "tls.ca_bundle", "LX-200 Pro"} <= set(found)
    assert "15W" not in found  # number + unit is not an entity


def test_english_names_codes_and_compounds():
    found = _surfaces("Supplier: Orvanta Semiconductor Pte. Ltd.\nThe TQ-8830 SoC is single sourced. "
                      "Its lead time is 16 weeks. "
                      "Orvanta ships through the University of Oxford and Procter & Gamble Co.")
    assert found["Orvanta Semiconductor Pte. Ltd"] == "name"
    assert found["TQ-8830"] == "code" and found["SoC"] == "name"
    assert found["lead time"] == "compound"
    assert "University of Oxford" in found and "Procter & Gamble Co" in found
    assert "Supplier" not in found  # a field label before a colon
    assert "The" not in found and "Orvanta" not in found  # sentence-initial single capitalised word


def test_product_suffixes_stay_with_the_code():
    assert "LX-200 Pro" in _surfaces("Which company makes the SoC used in the LX-200 Pro?")
    assert "NP-Gate 5" in _surfaces("朔峰 NP-Gate 5 的对标产品")


@pytest.mark.parametrize("a, b", [("ACME Corp.", "Acme Corp"), ("Acme Corp", "ACME"), ("ＡＣＭＥ  corp", "acme"),
                                  ("LX-200", "lx 200"), ("岚屿微电子（合肥）有限公司", "岚屿微电子"),
                                  ("Corvane Wireless Co., Ltd.", "CORVANE WIRELESS")])
def test_normalisation_folds_case_width_space_punctuation_and_legal_suffixes(a, b):
    assert ident(normalise(a)) == ident(normalise(b))


def test_legal_suffixes_are_kept_when_asked():
    assert ident(normalise("ACME Corp.", strip_legal=False)) != ident(normalise("ACME", strip_legal=False))


def test_three_spellings_become_one_id_through_normalisation_and_aliases():
    aliases = AliasTable({"Acme Corp": ["艾克美", "Acme Industries"]})
    x = FastExtractor(aliases)
    ids = {m.id for m in x.mentions("ACME Corp. signed. 艾克美签约了。Acme Industries agreed.")}
    assert ids == {ident(normalise("Acme Corp"))}


def test_alias_listed_under_two_names_is_refused():
    with pytest.raises(ValueError, match="listed under both"):
        AliasTable({"Acme": ["AC"], "Apex": ["AC"]})


def test_find_keys_matches_whole_latin_tokens_and_prefers_longer_keys():
    text = normalise("the lx 200 pro and lx2000 and 岚屿微电子供货")
    hits = [k for _, _, k in find_keys(text, ["lx 200 pro", "lx 200", "lx2", "岚屿"])]
    assert hits == ["lx 200 pro", "岚屿"]  # "lx2" is inside a token; "lx 200" overlaps the longer key


def test_sentences_split_on_chinese_and_english_ends_but_not_abbreviations():
    assert split_sentences("Orvanta Pte. Ltd. is in Singapore. It ships chips.\n第一句。第二句！") == [
        "Orvanta Pte. Ltd. is in Singapore.", "It ships chips.", "第一句", "第二句"]


def test_fast_relations_weigh_sentence_over_chunk_cooccurrence():
    x = FastExtractor(sentence_weight=1.0, chunk_weight=0.25)
    _, relations = x("The KS-9 chip is made by Borealis. Borealis is in Oslo. Borealis ships to Oslo.")
    w = {(r.source, r.target): r.weight for r in relations}
    assert w[("borealis", "ks9")] == 1.0          # one shared sentence
    assert w[("borealis", "oslo")] == 2.0         # two shared sentences
    assert w[("ks9", "oslo")] == 0.25             # only the chunk
    assert all(r.type == "co_occurs" for r in relations)


def test_llm_mode_needs_an_llm_spec():
    with pytest.raises(ValueError, match="'llm' needs an LLM"):
        make_extractor("llm", {}, AliasTable())
    with pytest.raises(ValueError, match="needs a model backend"):
        make_extractor("llm", {"llm": {"backend": "extractive"}}, AliasTable())
    with pytest.raises(ValueError, match="did you mean 'fast'"):
        make_extractor("fats", {}, AliasTable())
