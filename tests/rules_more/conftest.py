"""Programs for the XF005-XF007/XF009 and transfer-summary tests, each lowered once.

Every program is built with ExecuTorch's own lowering (`xferlint.testing.lower`) and
cached for the session under a `rules_more:` key; hand-built graphs live next to the
tests that need them (cases ExecuTorch cannot produce on a CPU machine).
"""

from __future__ import annotations

import pytest

from rules_more_models import build


@pytest.fixture(scope="session")
def program(lowered_once):
    """`program(key)`: one of the programs of rules_more_models.py, lowered once per session."""
    return lambda key: lowered_once(f"rules_more:{key}", lambda: build(key))
