"""`.pt2` fixes, the hook `xferlint.fixes.driver.fix_loaded` calls for `.pt2` inputs.

    graph.py    plans applied to the serialized graph (`models/model.json`)
    archive.py  the archive written anew with only the model JSON replaced
    fix.py      rounds: plan, check, apply, read back, verify

Torch-free, like the `.pt2` reader (`xferlint.frontends.pt2`).
"""

from __future__ import annotations

from typing import Any, Sequence

from xferlint.fixes.result import FixResult
from xferlint.rules.base import Rule

__all__ = ["fix_pt2"]


def fix_pt2(loaded: Any, rules: Sequence[Rule], origin: Any = None, *, unsafe_fixes: bool = False,
            strict: bool = False) -> FixResult:
    """Fix the `.pt2` program `loaded` (a LoadedProgram from the .pt2 frontend)."""
    from xferlint.fixes.pt2.fix import fix_pt2_loaded

    return fix_pt2_loaded(loaded, rules, unsafe_fixes=unsafe_fixes)
