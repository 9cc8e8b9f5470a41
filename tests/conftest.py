"""Shared fixtures for the top-level tests.

Lowering a program costs ~0.3-2 s, so every program a test needs is lowered once per
session through `lowered_once`, keyed by a name. The fixtures here never run on their own
(nothing is autouse): the test subdirectories of other features inherit them unchanged.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

import pytest

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(TESTS_DIR)

# `randmodels` (the random model generator) and `hand_built` are plain modules next to the tests; keep them
# importable whatever pytest's import mode is.
if TESTS_DIR not in sys.path:
    sys.path.insert(0, TESTS_DIR)

# The results cache (xferlint.workers.cache) is off for the suite, in this process and in
# every xferlint it starts: a test that changes a rule or a reader in process must see its
# files checked again, and the suite must neither read nor fill the user's cache.
# tests/test_cache.py turns it on, in a folder of its own.
os.environ["XFERLINT_NO_CACHE"] = "1"


class LoweredCache:
    """Programs lowered once per session, by name."""

    def __init__(self) -> None:
        self._programs: dict[str, Any] = {}

    def __call__(self, key: str, build: Callable[[], Any]) -> Any:
        if key not in self._programs:
            self._programs[key] = build()
        return self._programs[key]


@pytest.fixture(scope="session")
def lowered_once() -> LoweredCache:
    """`lowered_once(key, build)`: `build()` the first time `key` is asked for, then reuse."""
    return LoweredCache()


@pytest.fixture(scope="session")
def repo_root() -> str:
    return REPO_ROOT


@pytest.fixture(scope="session")
def xferlint_exe() -> str:
    """The console script of the venv the tests run in."""
    exe = os.path.join(os.path.dirname(sys.executable), "xferlint")
    if not os.path.exists(exe):
        pytest.skip("the xferlint console script is not installed next to this Python")
    return exe
