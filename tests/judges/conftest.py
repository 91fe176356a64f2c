"""Fixtures of the judge tests."""
from __future__ import annotations

import pytest

from evalkit.judges.offline import OfflineJudge


@pytest.fixture(scope="module")
def judge() -> OfflineJudge:
    """The offline judge with its default thresholds."""
    return OfflineJudge()
