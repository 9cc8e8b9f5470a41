"""Known ExecuTorch failures while building a program, and what they mean to a user.

An entry point that lowers a model runs ExecuTorch; some device programs make ExecuTorch
1.5.1 fail with an error that names nothing the user wrote (an `InternalError` about
`nbytes`, a `KeyError: 'stack_trace'`). `explain(exc)` recognizes those by a signature on
the exception or its causes and returns one sentence that says what happened and how to
get out, which the entry-point loader appends to its one-line error. Torch-free.
"""

from __future__ import annotations

import re
from typing import Iterator, Optional

from xferlint.records import dataclass


@dataclass(frozen=True)
class KnownFailure:
    """An ExecuTorch failure: how to recognize it and what to tell the user."""

    name: str
    exception: str  # class name of the exception (or of one of its causes)
    pattern: str  # regex searched in that exception's message
    explanation: str


KNOWN_FAILURES: tuple[KnownFailure, ...] = (
    KnownFailure(
        name="constant-copied-to-device",
        exception="InternalError",
        pattern=r"'NoneType' object has no attribute 'nbytes'",
        explanation=(
            "this is ExecuTorch failing to emit a host-to-device copy of a parameter, buffer or constant: "
            "one feeds a device delegate without being absorbed into it, and PropagateDevicePass gives "
            "its copy a constant TensorSpec that has no storage. Let the delegate own it (call "
            "`executorch.exir.backend.utils.tag_constant_data(exported_program)` in the partitioner), "
            "or lint the program before `to_executorch` (the EdgeProgramManager) to see the copy (XF006)"
        ),
    ),
    KnownFailure(
        name="emit-stacktrace-on-copies",
        exception="KeyError",
        pattern=r"^'?stack_trace'?$",
        explanation=(
            "this is ExecuTorch's emitter with `ExecutorchBackendConfig(emit_stacktrace=True)`: it expects a "
            "stack trace on every node, but the copies PropagateDevicePass inserts (and delegate calls) have "
            "none. Lower with `emit_stacktrace=False`; xferlint reads source lines from the graph itself"
        ),
    ),
)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: Optional[BaseException] = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def message_of(exc: BaseException) -> Optional[str]:
    """`str(exc)`, or None where the user's exception cannot say what it is (its `__str__`
    raises): the error line then blames their exception, not xferlint."""
    try:
        return str(exc)
    except Exception:  # noqa: BLE001 - any failure of the user's own __str__
        return None


def match(exc: BaseException) -> Optional[KnownFailure]:
    """The known failure `exc` (or one of its causes) is, if any."""
    for link in _chain(exc):
        text = (message_of(link) or "").strip()
        for known in KNOWN_FAILURES:
            if type(link).__name__ == known.exception and re.search(known.pattern, text, flags=re.MULTILINE):
                return known
    return None


def explain(exc: BaseException) -> str:
    """`; <what it means and how to get out>` for a known failure, else ``."""
    known = match(exc)
    return f"; {known.explanation}" if known is not None else ""
