"""Program files (`.pte`, `.pt2`) of one check, spread over `jobs` forked workers.

A `.pte` or `.pt2` runs no user code, so it needs no worker of its own (checked in the
parent, it cannot take the run down); a directory of a thousand of them, or a few large
ones, is still a thousand independent checks that one core runs one after another. Here
they are checked by `jobs` forked children that take the files from one shared queue
(`Claims`), the largest first, each taking the next as soon as it is done with one: what a
file costs is not known before it is checked (its size is a poor guide: a `.pte` of
weights is large and quick, a fix trial is slow), so no split made in advance keeps every
core busy to the end. A child checks each file it takes as the parent would: load ->
analyze -> rules, the per-file ignores, and the fix trial that settles which findings are
fixable (`fixes.driver.settle_fixability`, decisions only). Each file comes back as a
`Partial` (its settled findings, transfer summary, noqa record, and its programs without
their methods) with its place among the inputs, and the parent merges them in input order,
so the report is the same byte for byte whatever `jobs` and whichever child took a file.

Only a check that fixes nothing asks for this (`settle` given), a baseline and
`--add-noqa` included: `--fix` and `--diff` need each file's native program in the
parent; they get the in-process path. A baseline drops findings after the merge and counts the
transfers' flagged bytes and savings again from the bytes of the copies the findings
named (`CheckRun.copy_sizes`), which come back with each file. A run whose files are too few
or too small to pay for a fork (about a millisecond, plus sending the views back) stays in
process too, and so does a run that names a file twice (settling one copy changes the
findings of the other). A child that fails for any reason (killed, out of memory) sends
nothing back: every file no child reported is checked here, one after another, as without
workers.
"""

from __future__ import annotations

import os
import struct
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from xferlint.analyzer.view import ProgramView
from xferlint.frontends.entrypoints import EntryPoint
from xferlint.pipeline import CheckRun
from xferlint.records import dataclass
from xferlint.rules.base import Rule

if TYPE_CHECKING:
    from xferlint.workers.cache import ResultCache

# A run is spread only when it holds at least this many files or this many bytes: below,
# a fork and sending the views back cost about what a second core saves.
MIN_FILES = 8
MIN_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class SettleOptions:
    """Settle fixability where the files are checked: a plain `check`, after which nothing
    needs the files' native programs or their methods. `ignores`: the per-file-ignores
    tables, applied before the fix trial, as the parent applies them."""

    unsafe_fixes: bool = False
    ignores: tuple = ()


Slot = tuple[int, EntryPoint]  # (position among the run's inputs, the file)


def workers_for(here: Sequence[Slot], jobs: int) -> int:
    """How many children should check the files `here`: 0 when they are better checked in
    this process (see the module docstring)."""
    if jobs < 2 or len(here) < 2 or len({slot.label for _, slot in here}) != len(here):
        return 0
    if len(here) < MIN_FILES and sum(_size(slot.file) for _, slot in here) < MIN_BYTES:
        return 0
    return min(jobs, len(here))


class Claims:
    """The queue the children take files from: a pipe holding one 4-byte token per batch of
    files, written whole and its write end closed before any child is forked, so a read
    that finds it empty is the end. A read of 4 bytes is atomic, so every batch goes to
    exactly one child. The batches follow the files by size, largest first (a long check
    started last would leave the other cores idle at the end); at most `TOKENS` of them, so
    the tokens fit in the smallest pipe buffer (one page) and writing them never blocks."""

    TOKENS = 1024
    _TOKEN = struct.Struct("<I")

    __slots__ = ("order", "batch", "fd")

    def __init__(self, here: Sequence[Slot]) -> None:
        sizes = [_size(slot.file) for _, slot in here]
        self.order = sorted(range(len(here)), key=lambda k: (-sizes[k], k))
        self.batch = -(-len(here) // self.TOKENS)  # files per token, rounded up
        tokens = b"".join(self._TOKEN.pack(start) for start in range(0, len(here), self.batch))
        read, write = os.pipe()
        try:
            os.write(write, tokens)  # at most 4096 bytes: one atomic write into an empty pipe
        except OSError:  # the caller checks the files itself: no descriptor may be left open
            os.close(read)
            raise
        finally:
            os.close(write)
        self.fd = read

    def take(self) -> list[int]:
        """The positions (in `here`) of the next batch of files; [] when none is left."""
        token = os.read(self.fd, 4)
        if len(token) < 4:
            return []
        start = self._TOKEN.unpack(token)[0]
        return self.order[start:start + self.batch]

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class Tally:
    """Which files the children have in hand, for the progress line: the queue (`Claims`)
    could say how many files were taken, not which of them are still being checked (the
    file taken last may be done while a large one taken first holds the run). Each child
    writes a 4-byte token into this pipe as it starts a file and as it finishes one (a
    write of at most PIPE_BUF bytes is atomic), never waiting: a token that finds the pipe
    full is dropped, as the line is only a display. The parent drains the pipe whenever it
    redraws."""

    _TOKEN = struct.Struct("<I")

    __slots__ = ("read_fd", "write_fd", "in_hand", "finished")

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self.write_fd, False)
        self.in_hand: dict[int, None] = {}  # positions in `here`, in the order they were started
        self.finished = 0

    def note(self, k: int, finished: bool) -> None:
        """In a child: file `k` (its position in `here`) started, or finished."""
        try:
            os.write(self.write_fd, self._TOKEN.pack(2 * k + finished))
        except OSError:  # full (EAGAIN) or closed: the line misses one step
            pass

    def drain(self) -> None:
        """In the parent: read what the children wrote since the last call."""
        data = b""
        while True:
            try:
                chunk = os.read(self.read_fd, 1 << 16)  # a multiple of the 4-byte tokens
            except OSError:  # empty (EAGAIN), or closed
                break
            if not chunk:
                break
            data += chunk
        for (token,) in self._TOKEN.iter_unpack(data[:len(data) - len(data) % 4]):
            k, finished = divmod(token, 2)
            if finished:
                self.in_hand.pop(k, None)
                self.finished += 1
            else:
                self.in_hand[k] = None

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            if fd >= 0:
                os.close(fd)
        self.read_fd = self.write_fd = -1


def _hollow(view: ProgramView) -> ProgramView:
    """The program without its methods: all a plain check's report asks of it once its
    findings and transfer summary are made (sending the methods back cost the parent more
    to unpickle than checking the files took)."""
    return replace(view, methods=())


def warm_up(here: Sequence[Slot], timelines: bool) -> None:
    """Import here, once, what checking these files imports when first needed (a reader,
    the `.pte` reader's generated schema, the fix trial, timelines), rather than in every
    child."""
    import importlib

    import xferlint.per_file_ignores  # noqa: F401 - for the children

    if any(slot.is_pte for _, slot in here):
        from xferlint.frontends.pte.schema import generated, pinned

        for name in ("xferlint.frontends.pte.view", "xferlint.fixes.pte"):
            importlib.import_module(name)
        if not pinned():  # the pinned schema is read without the generated classes
            generated()
    if any(slot.is_pt2 for _, slot in here):
        for name in ("xferlint.frontends.pt2.view", "xferlint.fixes.pt2"):
            importlib.import_module(name)
    if timelines:
        importlib.import_module("xferlint.analyzer.timeline")


def _size(path: Optional[str]) -> int:
    try:
        return os.stat(path).st_size if path else 0
    except OSError:
        return 0  # the check reports it


def claim_task(here: Sequence[Slot], claims: Claims, check: Callable[[CheckRun, EntryPoint], None],
               new_part: Callable[[], CheckRun], rules: Sequence[Rule], strict: bool, settle: SettleOptions,
               cache: Optional[ResultCache] = None, tally: Optional[Tally] = None):
    """The task each child runs: take files from `claims` until none is left, check each
    into its own part, settle its fixability (and keep it in `cache`); send back (position
    in `here`, Partial) for every file it took. `tally`: where to say which file it starts
    and finishes (the progress line)."""
    import xferlint.workers.payloads  # noqa: F401 - here, in the parent: every forked worker has it

    def task() -> list:
        from xferlint.pipeline import collector_paused

        out = []
        with collector_paused():  # as in the parent: program files make no reference cycles
            for batch in iter(claims.take, []):
                for k in batch:
                    if tally is not None:
                        tally.note(k, finished=False)
                    out.append((k, check_file(here[k][1], check, new_part, rules, strict, settle, cache)))
                    if tally is not None:
                        tally.note(k, finished=True)
        return out

    return task


def check_file(slot: EntryPoint, check: Callable[[CheckRun, EntryPoint], None], new_part: Callable[[], CheckRun],
               rules: Sequence[Rule], strict: bool, settle: SettleOptions, cache: Optional[ResultCache] = None):
    """One file checked (in a child, or in the parent for the results cache), its
    fixability settled, as the Partial a child sends back; kept in `cache` when given,
    stamped before it is read (xferlint.workers.cache.Stamp)."""
    from xferlint.fixes.driver import settle_fixability
    from xferlint.per_file_ignores import apply as apply_per_file_ignores
    from xferlint.workers.cache import sources_of
    from xferlint.workers.payloads import Partial

    stamp = cache.stamp(slot.file) if cache is not None else None
    part = new_part()
    part.copy_sizes = {}  # the views go back without their methods: what a baseline counts again
    check(part, slot)
    # before the ignores drop findings whose comments were read; only the cache reads them
    sources = tuple(sorted(sources_of(part))) if cache is not None else ()
    apply_per_file_ignores(part, *settle.ignores)
    settle_fixability(part, rules, unsafe_fixes=settle.unsafe_fixes, strict=strict, keep_results=False)
    partial = Partial(errors=part.errors, views=[_hollow(loaded.view) for loaded in part.loaded],
                      findings=part.findings, transfers=part.transfers, timelines=part.timelines,
                      fixes=[None] * len(part.loaded), classes=[frozenset()] * len(part.loaded), record=part.record,
                      sources=sources, sizes=part.copy_sizes)
    if cache is not None:
        cache.store(slot.label, slot.file, stamp, partial)
    return partial
