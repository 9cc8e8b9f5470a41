"""The `xferlint` console script: the process's start-up, then `cli.console`.

A short run (one `.pte` file, about a third of it module imports) pays at start-up for two
things it never uses, which only the process's own entry point may leave out:

- `dataclasses` imports `inspect`, and with it `ast`, `dis`, `tokenize` and more (4 % of
  such a run), for one call: the docstring of a data class written without one. Here
  `dataclasses` gets a stand-in that imports the real module at its first use and puts it
  in its place, so a class without a docstring still gets the standard one. No other
  module sees the stand-in: a later `import inspect` anywhere imports the real one.
- the cyclic collector sweeps the heap again and again while modules load (3 % of such a
  run); they make modules, classes and functions, no garbage. It is paused until the CLI
  module is loaded; `cli.cmd_check` pauses it again for the modules it loads.
"""

from __future__ import annotations

import gc
import sys
import types


class _Deferred(types.ModuleType):
    """A module as `dataclasses` holds it until an attribute of it is first read: then the
    real module is imported and takes the stand-in's place in `dataclasses`."""

    def __getattr__(self, name: str):
        import importlib

        real = importlib.import_module(self.__name__)
        owner = sys.modules.get("dataclasses")
        if owner is not None and vars(owner).get(self.__name__) is self:
            setattr(owner, self.__name__, real)
        return getattr(real, name)


def import_dataclasses_lazily() -> None:
    """Import `dataclasses` with a stand-in for `inspect` (module docstring); nothing where
    either is loaded already."""
    if "dataclasses" in sys.modules or "inspect" in sys.modules:
        return
    # `import inspect` finds the stand-in in sys.modules; its `__spec__` is None (set by
    # ModuleType), so the import system asks nothing of it that would load the real one
    stand_in = sys.modules["inspect"] = _Deferred("inspect")
    try:
        import dataclasses  # noqa: F401
    finally:
        if sys.modules.get("inspect") is stand_in:
            del sys.modules["inspect"]


def main() -> None:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        import_dataclasses_lazily()
        from xferlint.cli import console
    finally:
        if was_enabled:
            gc.enable()
    console()


if __name__ == "__main__":  # pragma: no cover
    main()
