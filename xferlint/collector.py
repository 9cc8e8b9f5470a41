"""Python's cyclic garbage collector during a check.

The view, the facts and the findings hold no reference cycles, so reference counting frees
them; the collector would only sweep the ever larger heap again and again (about 45 % of a
whole check on 10k-100k node programs, benchmarks/RESULTS.md). So the stages that run no
user code pause it, and a CLI command freezes what they made when it resumes.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the collector for a stage that runs no user code; the caller's setting is
    restored afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if _freeze_on_resume:
                gc.freeze()  # what the pause made lives until the command ends: never sweep it
            gc.enable()


_freeze_on_resume = False


@contextlib.contextmanager
def one_command() -> Iterator[None]:
    """The span of one CLI command. What it reads and finds lives until it returns, so the
    objects a pause made are frozen (`gc.freeze`) when the collector resumes, not swept again
    by every later collection (13 % of checking 1,000 `.pte` files); unfrozen at the end,
    so an in-process caller (the tests, an editor) collects them as usual afterwards."""
    global _freeze_on_resume
    previous = _freeze_on_resume
    _freeze_on_resume = True
    try:
        yield
    finally:
        _freeze_on_resume = previous
        if not previous:
            gc.unfreeze()
