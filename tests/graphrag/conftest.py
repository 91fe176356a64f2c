"""A tiny bilingual supply-chain corpus where one question needs a bridge document."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from evalkit.index.corpus import Corpus
from evalkit.index.resources import Resources
from evalkit.records import Document

# The 2-hop chain: ZX-100 --(d-spec)--> KS-9 chip --(d-chip, the bridge)--> Borealis Semiconductor
# --(d-vendor)--> Oslo. d-box and d-noise mention ZX-100 or nothing relevant (distractors).
DOCS = [
    ("d-spec", "ZX-100 spec", "The ZX-100 gateway uses the KS-9 chip. The ZX-100 weighs 2 kg."),
    ("d-chip", "KS-9 chip", "The KS-9 chip is made by Borealis Semiconductor Ltd."),
    ("d-vendor", "Vendor profile", "Borealis Semiconductor is headquartered in Oslo. Payment terms are net 60 days."),
    ("d-box", "Packaging", "The ZX-100 ships in a recycled cardboard box."),
    ("d-noise", "Cafeteria", "The cafeteria serves Lunch Specials on Fridays."),
    ("d-zh", "供应商档案：岚屿微电子（合肥）有限公司",
     "岚屿微电子（合肥）有限公司为澜星科技供应主控芯片 KS-1606。采购对接人：王蕾。"),
    ("d-zh2", "考核结果", "岚屿微电子：92 分，A 级。Lanyu Micro 的交期稳定。"),
]
DOCUMENT_CHUNKING = {"method": "document", "prepend_title": True}


def make_corpus(docs=DOCS) -> Corpus:
    documents = [Document(id=i, title=t, text=x) for i, t, x in docs]
    digest = hashlib.sha256(repr(docs).encode()).hexdigest()
    return Corpus(path="<tiny>", documents=documents, sha256=digest)


@pytest.fixture
def corpus() -> Corpus:
    return make_corpus()


@pytest.fixture
def resources(corpus: Corpus, tmp_path: Path) -> Resources:
    return Resources(corpus, cache_root=tmp_path / "cache")


@pytest.fixture
def view(resources: Resources):
    return resources.for_variant(DOCUMENT_CHUNKING, seed=0)
