"""xferlint: find, explain and fix device-transfer anti-patterns in ExecuTorch programs.

The package imports nothing heavy at import time: torch and executorch are loaded only
by the frontends that need them, so linting a `.pte` stays fast.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "lint"]


def lint(obj, *, name: str = "program", select=None, ignore=None, strict: bool = False):
    """Lint a program object (ExportedProgram, EdgeProgramManager, ExecutorchProgramManager,
    a dict of them or a zero-argument callable returning one) and return its findings."""
    from xferlint.api import lint as _lint

    return _lint(obj, name=name, select=select, ignore=ignore, strict=strict)
