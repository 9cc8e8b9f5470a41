"""Program files (`.pte`, `.pt2`) of one check, spread over `jobs` forked workers.

A `.pte` or `.pt2` runs no user code, so it needs no worker of its own (checked in the
parent, it cannot take the run down); a directory of a thousand of them, or a few large
ones, is still a thousand independent checks that one core runs one after another. Here
they are cut into `jobs` runs of consecutive files, about equal in bytes, and each run is
checked in a forked child: load -> analyze -> rules, the per-file ignores, and the fix
trial that settles which findings are fixable (`fixes.driver.settle_fixability`,
decisions only), as the parent would run them. Each file comes back as a `Partial` (its
settled findings, transfer summary, noqa record, and its programs without their
methods), and the parent merges them in input order, so the report is the same byte for
byte whatever `jobs`.

Only a plain check asks for this (`settle` given): `--fix` and `--diff` need each file's
native program in the parent, a baseline or `--add-noqa` may replace findings and so
re-summarise a program's methods; they get the in-process path. A run whose files are too few
or too small to pay for a fork (about a millisecond, plus sending the views back) stays in
process too, and so does a run that names a file twice (settling one copy changes the
findings of the other). A child that fails for any reason (killed, out of memory) leaves
its files to be checked here, one after another, as without workers.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Callable, Optional, Sequence

from xferlint.analyzer.view import ProgramView
from xferlint.frontends.entrypoints import EntryPoint
from xferlint.pipeline import CheckRun
from xferlint.records import dataclass
from xferlint.rules.base import Rule

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


def chunks(here: Sequence[Slot], jobs: int) -> Optional[list[list[Slot]]]:
    """`here` cut into `jobs` runs of consecutive files about equal in bytes; None when the
    files are better checked in this process (see the module docstring)."""
    if jobs < 2 or len(here) < 2 or len({slot.label for _, slot in here}) != len(here):
        return None
    sizes = [_size(slot.file) for _, slot in here]
    total = sum(sizes)
    if len(here) < MIN_FILES and total < MIN_BYTES:
        return None
    count = min(jobs, len(here))
    runs: list[list[Slot]] = [[] for _ in range(count)]
    seen = 0
    for item, size in zip(here, sizes):
        # the run this file's middle byte falls in: equal shares of bytes, in order
        runs[min(count - 1, (seen + size // 2) * count // max(total, 1))].append(item)
        seen += size
    return [r for r in runs if r]


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


def run_task(run: Sequence[Slot], check: Callable[[CheckRun, EntryPoint], None], new_part: Callable[[], CheckRun],
             rules: Sequence[Rule], strict: bool, settle: SettleOptions):
    """The task a child runs for one run of files: each checked into its own part, its
    fixability settled, sent back as a Partial."""
    from xferlint.workers.payloads import Partial  # here, in the parent: every forked worker has it

    def task() -> list[Partial]:
        from xferlint.fixes.driver import settle_fixability
        from xferlint.per_file_ignores import apply as apply_per_file_ignores
        from xferlint.pipeline import collector_paused

        out = []
        with collector_paused():  # as in the parent: program files make no reference cycles
            for _, slot in run:
                part = new_part()
                check(part, slot)
                apply_per_file_ignores(part, *settle.ignores)
                settle_fixability(part, rules, unsafe_fixes=settle.unsafe_fixes, strict=strict, keep_results=False)
                out.append(Partial(errors=part.errors, views=[_hollow(loaded.view) for loaded in part.loaded],
                                   findings=part.findings, transfers=part.transfers, timelines=part.timelines,
                                   fixes=[None] * len(part.loaded), classes=[frozenset()] * len(part.loaded),
                                   record=part.record))
        return out

    return task
