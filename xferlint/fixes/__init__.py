"""Fixes: planned on the view, applied by the code that owns the native program.

    plan.py       FixPlan / Rewire / NoFix, select() and resolve()      (torch-free)
    planners.py   one planner per fixable rule (XF001, XF003, XF004)    (torch-free)
    engine.py     plan_method() and check_fixed(): plan, then verify    (torch-free)
    fx.py         apply plans to FX graph modules, round by round
    program.py    ExecutorchProgramManager / EdgeProgramManager, FixTransfersPass
    result.py     FixResult: what changed, per rule; --diff rendering

`fix(program)` is the Python entry point (also `xferlint.fix`); `FixTransfersPass` goes
into `ExecutorchBackendConfig(to_out_var_pass=...)`. Importing this package does not
import torch; `FixTransfersPass` and `fix()` do when used.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

__all__ = ["FixTransfersPass", "fix", "fix_native"]


def fix(
    program: Any,
    *,
    select: Optional[Iterable[str]] = None,
    ignore: Optional[Iterable[str]] = None,
    unsafe_fixes: bool = False,
    config: Any = None,
    name: str = "program",
    strict: bool = False,
):
    """Fix an EdgeProgramManager or ExecutorchProgramManager; returns a FixResult whose
    `program` is the fixed ExecutorchProgramManager (see xferlint/fixes/result.py).

    An EdgeProgramManager is lowered (a copy of it: `to_executorch` changes its input) with
    `config` (an ExecutorchBackendConfig, default ExecuTorch's) and FixTransfersPass wrapping
    its `to_out_var_pass`. An ExecutorchProgramManager is fixed on a copy of its final graphs,
    memory-planned again and emitted anew; `config` then sets the emission options.
    """
    from xferlint.analyzer.view import ProgramView
    from xferlint.selection import select_rules

    rules = select_rules(select=select, ignore=ignore)
    origin = ProgramView(input=name, name=name, kind="graph")
    return fix_native(program, rules, origin, unsafe_fixes=unsafe_fixes, strict=strict, config=config)


def fix_native(program: Any, rules, origin, *, unsafe_fixes: bool = False, strict: bool = False, config: Any = None):
    """`fix` with the rules chosen and the program's origin (input, name, file) given."""
    from xferlint.errors import FixError
    from xferlint.fixes.program import fix_edge_program, fix_executorch_program

    kinds = {c.__name__ for c in type(program).__mro__}
    options = dict(unsafe_fixes=unsafe_fixes, strict=strict, config=config)
    if "EdgeProgramManager" in kinds:
        return fix_edge_program(program, rules, origin, **options)
    if "ExecutorchProgramManager" in kinds:
        return fix_executorch_program(program, rules, origin, **options)
    if "ExportedProgram" in kinds:
        from xferlint.fixes.driver import EXPORTED_NOT_FIXED

        raise FixError(f"{origin.input}: {EXPORTED_NOT_FIXED} (or lower it with to_edge_transform_and_lower "
                       "and fix the EdgeProgramManager)")
    raise FixError(f"{origin.input}: cannot fix a {type(program).__name__}; expected an EdgeProgramManager or "
                   "ExecutorchProgramManager")


def __getattr__(attr: str) -> Any:
    if attr == "FixTransfersPass":
        from xferlint.fixes.program import FixTransfersPass

        return FixTransfersPass
    raise AttributeError(f"module 'xferlint.fixes' has no attribute {attr!r}")
