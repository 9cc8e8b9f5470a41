"""Frontends: native programs -> ProgramView. One module per input kind."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from xferlint.analyzer.view import ProgramView


@dataclass(frozen=True)
class LoadedProgram:
    """A view plus the native object it was read from (kept for fixes, never for rules)."""

    view: ProgramView
    native: Any = field(default=None, compare=False, repr=False)
