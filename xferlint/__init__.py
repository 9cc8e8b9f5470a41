"""xferlint: find, explain and fix device-transfer anti-patterns in ExecuTorch programs.

The package imports nothing heavy at import time: torch and executorch are loaded only
by the frontends that need them, so linting a `.pte` stays fast.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "fix", "lint"]


def lint(obj, *, name: str = "program", select=None, ignore=None, strict: bool = False):
    """Lint a program object (ExportedProgram, EdgeProgramManager, ExecutorchProgramManager,
    a dict of them or a zero-argument callable returning one) and return its findings."""
    from xferlint.api import lint as _lint

    return _lint(obj, name=name, select=select, ignore=ignore, strict=strict)


def fix(obj, *, name: str = "program", select=None, ignore=None, unsafe_fixes: bool = False, config=None,
        strict: bool = False):
    """Fix an EdgeProgramManager or ExecutorchProgramManager: remove the copies XF001, XF003
    and XF004 flag (only safe fixes unless `unsafe_fixes`), verify the result, and return a
    FixResult whose `program` is the fixed ExecutorchProgramManager."""
    from xferlint.api import fix as _fix

    return _fix(obj, name=name, select=select, ignore=ignore, unsafe_fixes=unsafe_fixes, config=config,
                strict=strict)
