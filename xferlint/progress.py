"""A one-line progress display on stderr for long runs.

Shown only when the stream is a terminal, not quiet, and the run has taken longer than
`delay` seconds (a quick run prints nothing); redrawn in place with a carriage return and
erased (`clear`) before anything else is written to stderr and when the run ends, so no
trace of it is left in the terminal or in any report. A few lines of stdlib: a progress
library would cost more import time than the whole `.pte` path.
"""

from __future__ import annotations

import sys
import time
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Callable, Iterator, Optional, Sequence, TextIO

from xferlint.console import one_line, terminal_columns

_ERASE = "\r\x1b[K"
# Seconds between two redraws: a directory of small programs finishes hundreds of inputs a
# second, and redrawing for each would flood a (remote) terminal with lines nobody can read.
_REDRAW = 0.1
_NO_LOCK = nullcontext()  # reusable: it holds no state


class Progress:
    """`update(done, running)` as inputs finish; `close()` (or `with`) at the end. Drawn at
    most every `_REDRAW` seconds (the latest state wins), and once a second while nothing
    changes, for the elapsed time."""

    def __init__(self, total: int, *, quiet: bool = False, stream: Optional[TextIO] = None,
                 enabled: Optional[bool] = None, delay: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled and not quiet and total > 0
        self.total = total
        self.delay = delay
        self.clock = clock
        self.started = clock()
        self.shown = False
        self._last: Optional[tuple] = None
        self._drawn_at = -1.0
        self._args: tuple = (0, (), "lowering")  # what `update` was last told: what a tick redraws
        # a lock while `ticking`: draws from two threads take turns; with one thread, none
        self._lock: AbstractContextManager = _NO_LOCK

    def update(self, done: int, running: Sequence[str] = (), action: str = "lowering") -> None:
        """`done` of the inputs finished, `running` the ones in hand, being `action`
        (entry points are lowered; program files only read and checked)."""
        if not self.enabled:
            return
        args = self._args = (done, tuple(running), action)
        with self._lock:
            now = self.clock()
            elapsed = now - self.started
            if elapsed < self.delay:
                return
            since = now - self._drawn_at
            state = (*args, int(elapsed))
            if (state == self._last and since < 1.0) or (self.shown and since < _REDRAW):
                return
            self._last, self._drawn_at = state, now
            self.stream.write(_ERASE + self.line(done, running, elapsed, action, terminal_columns() - 1))
            self.stream.flush()
            self.shown = True

    def line(self, done: int, running: Sequence[str], elapsed: float, action: str = "lowering",
             width: Optional[int] = None) -> str:
        """The progress line, at most `width` columns. A name too long for them is cut at
        its start (`...ls/kv_cache.py:program`: the file and attribute are at the end), so
        that the counts and the elapsed time stay on screen."""
        head = f"xferlint: {done}/{self.total} inputs"
        tail = f", {elapsed:.0f} s"
        if not running:
            return fit(head + tail, width) if width is not None else head + tail
        head += f", {action} "
        name = one_line(running[0])
        more = f" (+{len(running) - 1} more)" if len(running) > 1 else ""
        text = head + name + more + tail
        if width is None:
            return text
        room = width - len(head) - len(more) - len(tail)
        if room < _SHORTEST_NAME:
            return fit(text, width)
        return head + fit_start(name, room) + more + tail

    def clear(self) -> None:
        """Erase the line (before other output goes to the same terminal)."""
        with self._lock:
            if self.shown:
                self.stream.write(_ERASE)
                self.stream.flush()
                self.shown = False
                self._last = None

    @contextmanager
    def ticking(self, interval: float = 0.25) -> Iterator[None]:
        """While the block runs, redraw what `update` was last told every `interval` seconds
        (at most once a second while it stays the same: the elapsed time moves), from a
        thread of its own: an input checked in this process can take seconds (a `.pte` of
        100,000 instructions), and nothing else calls `update` until it is done. Nothing
        when the display is off."""
        if not self.enabled:
            yield
            return
        import threading  # here: only a run with a terminal to draw on starts a thread

        stop = threading.Event()
        self._lock = threading.Lock()

        def tick() -> None:
            while not stop.wait(interval):
                self.update(*self._args)

        thread = threading.Thread(target=tick, name="xferlint-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            self._lock = _NO_LOCK

    def close(self) -> None:
        self.clear()
        self.enabled = False

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_SHORTEST_NAME = 12  # columns: a name cut shorter says nothing; the whole line is cut instead


def fit(text: str, width: int) -> str:
    """`text` cut to `width` terminal columns, `...` marking the cut. A wide character (CJK,
    fullwidth forms) takes two columns: counted as one, a name of them would wrap the line,
    and each redraw (a carriage return) would then leave the line before it on screen."""
    if len(text) * 2 <= width or (text.isascii() and len(text) <= width):
        return text
    import unicodedata

    used, room = 0, max(width - 3, 0)
    cut = None
    for k, ch in enumerate(text):
        used += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
        if cut is None and used > room:
            cut = k
        if used > width:
            return text[:cut] + "..."
    return text


def fit_start(text: str, width: int) -> str:
    """`text` cut at its start to `width` terminal columns, `...` marking the cut: `fit` of
    the text read backwards, read forwards again (wide characters count two columns)."""
    return fit(text[::-1], width)[::-1]
