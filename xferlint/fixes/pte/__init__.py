"""`.pte` fixes, the hook `xferlint.fixes.driver.fix_loaded` calls for `.pte` inputs.

The work is done torch-free in `xferlint.fixes.pte.fix`: plans from `xferlint.fixes.engine`,
a memory-plan check for each, in-place instruction edits, read back and verified.
"""

from __future__ import annotations

from typing import Any, Sequence

from xferlint.fixes.result import FixResult
from xferlint.fixes.pte.fix import fix_pte_loaded
from xferlint.rules.base import Rule

__all__ = ["fix_pte"]


def fix_pte(loaded: Any, rules: Sequence[Rule], origin: Any = None, *, unsafe_fixes: bool = False,
            strict: bool = False, decisions_only: bool = False) -> FixResult:
    """Fix the `.pte` program `loaded` (a LoadedProgram from the .pte frontend);
    `decisions_only`: see `fix_pte_loaded`."""
    return fix_pte_loaded(loaded, rules, unsafe_fixes=unsafe_fixes, decisions_only=decisions_only)
