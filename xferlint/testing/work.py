"""Work counted, not timed, for tests that hold a stage linear: a run's Python line
events. A scan inside a comprehension or generator is one call however long it is, so call
counts miss it; each turn of its loop is a line event."""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable


def lines_run(run: Callable[[], Any]) -> int:
    """Python line events while `run()` runs (each turn of a loop is one)."""
    count = 0

    def trace(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return trace

    sys.settrace(trace)
    try:
        run()
    finally:
        sys.settrace(None)
        threading.settrace(None)
    return count
