"""What a worker child sends back to its parent: plain, picklable data.

Only runs with worker processes build these (an input that is a Python entry point, and
`xferlint fix` of one), so the modules that do import this one inside the functions that
start workers: a check of `.pte` files never creates these classes (each dataclass costs
about a millisecond of start-up).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Union

from xferlint.records import dataclass

if TYPE_CHECKING:
    from xferlint.analyzer.summary import MethodTransfers
    from xferlint.analyzer.timeline import MethodTimeline
    from xferlint.analyzer.view import ProgramView
    from xferlint.findings import Finding, InputErrorEntry
    from xferlint.suppression import Record


@dataclass(frozen=True, slots=True)
class Partial:
    """What a worker sends back for one entry point, in the order check_entry made it."""

    errors: list[InputErrorEntry]
    views: list[ProgramView]
    findings: list[Finding]
    transfers: list[MethodTransfers]
    timelines: Optional[list[MethodTimeline]]
    fixes: list[Optional[Union[Any, str]]]  # per view: FixResult without program | why not | None
    classes: list[frozenset]  # per view: the native program's class names (Detached.classes)
    record: Record  # what noqa comments suppressed in this input, its source files (XF100)
    # the files whose comments checking it read (a program file's: xferlint.workers.cache)
    sources: tuple = ()
    # a program file's CheckRun.copy_sizes: its views come back without their methods
    sizes: Optional[dict] = None


@dataclass(frozen=True)
class Emitted:
    """An emitted program's bytes, in place of the ExecutorchProgramManager a worker built
    (what FixResult.buffer and .data_files read)."""

    buffer: bytes
    _tensor_data: dict


@dataclass(frozen=True, slots=True)
class Refused:
    """An XferlintError (or internal error) raised in the worker, as the line to print."""

    message: str
