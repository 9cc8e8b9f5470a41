"""Frontends: native programs -> ProgramView. One module per input kind."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Optional

from xferlint.analyzer.view import ProgramView
from xferlint.records import dataclass

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


@dataclass(frozen=True)
class Detached:
    """The `native` of a program that was loaded in a worker process and stayed there
    (xferlint/workers): rules and reporters need only the view; a fix the worker tried
    comes back as `fix` (a FixResult without its program) or `fix_error` (why not);
    `settled`: the worker also decided which of its findings are fixable (a program file)."""

    fix: Any = None
    fix_error: Optional[str] = None
    classes: frozenset = frozenset()  # the class names of the native program's type and bases
    settled: bool = False

    @staticmethod
    def class_names(native: Any) -> frozenset:
        return frozenset(c.__name__ for c in type(native).__mro__) if native is not None else frozenset()

    def fixed(self, label: str) -> Any:
        from xferlint.errors import FixError

        if self.fix is not None:
            return self.fix
        raise FixError(self.fix_error or f"{label}: the program was loaded in a worker process and not fixed there")
