"""Frontends: native programs -> ProgramView. One module per input kind."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from xferlint.analyzer.view import ProgramView

_PROGRAM_TYPES = frozenset({"ExportedProgram", "EdgeProgramManager", "ExecutorchProgramManager"})


def is_program_object(obj: Any) -> bool:
    """True for the objects a frontend can read (without importing torch to find out)."""
    if isinstance(obj, ProgramView):
        return True
    return any(c.__name__ in _PROGRAM_TYPES for c in type(obj).__mro__)


@dataclass(frozen=True)
class LoadedProgram:
    """A view plus the native object it was read from (kept for fixes, never for rules)."""

    view: ProgramView
    native: Any = field(default=None, compare=False, repr=False)
