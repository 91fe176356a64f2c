"""The language code of a record that does not state one: ``--lang auto``, the importers' default.

Users import questions written in Chinese as often as in English, and an eval set's ``lang``
is what the by-language tables, the MLflow per-query table and ``filters: {field: lang, eq:
{from_record: lang}}`` read: a Chinese question recorded as ``en`` is misfiled everywhere.
``auto`` decides by script, which is reliable for the scripts it names and says nothing
about the others: ``ja`` when the text has kana, ``ko`` when it has Hangul, ``zh`` when it
has Han characters (and neither), else ``en``. A column or ``--lang zh|en|...`` overrides it.
"""
from __future__ import annotations

import re

from evalkit.evalsets.evalset import _LANG

AUTO = "auto"
_KANA = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def guess_lang(text: str | None) -> str:
    """``ja`` / ``ko`` / ``zh`` by script, else ``en`` (see the module docstring)."""
    if not text:
        return "en"
    if _KANA.search(text):
        return "ja"
    if _HANGUL.search(text):
        return "ko"
    return "zh" if _HAN.search(text) else "en"


def record_lang(lang: str, text: str | None) -> str:
    """``lang``, or the guess for ``text`` when ``lang`` is ``auto``."""
    return guess_lang(text) if lang == AUTO else lang


def valid_default(lang: object) -> bool:
    """Whether ``lang`` may be given as a default: ``auto`` or a code the eval set format accepts."""
    return isinstance(lang, str) and (lang == AUTO or bool(_LANG.fullmatch(lang)))
