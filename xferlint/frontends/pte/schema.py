"""ExecuTorch's generated flatbuffer reader, loaded without importing torch.

The generated modules live in `executorch/exir/_serialize/generated/` and import each other
by their absolute names (`executorch.exir._serialize.generated...`). Importing them the
ordinary way runs `executorch/exir/__init__.py`, which imports torch (3-4 s). Instead, for
the duration of the import, the two parent packages `executorch.exir` and
`executorch.exir._serialize` are stand-in package modules that point at the real
directories but run no code; the generated package itself is imported for real and stays
in `sys.modules`, so a later real import of `executorch.exir` (a `.py` entry point linted
in the same process) reuses it. The stand-ins are removed right after.

Where the installed schema is the one xferlint's reader follows (`pinned()`: ExecuTorch's
`program.fbs` and `scalar_type.fbs`, by size and CRC-32), none of this is loaded: the fast
reader and the struct stand-ins of `tables.py` read the program, and its self-check against
the generated accessors is not run (the files it would check are the files it was checked
against). Another schema (another ExecuTorch) loads the generated reader and compares as
before.

flatbuffers imports numpy when it can, only for its `...AsNumpy` accessors, which the
reader does not use; the import costs more than the whole read, so numpy is hidden while
flatbuffers and the generated modules load, unless it is already loaded.
"""

from __future__ import annotations

import _thread
import importlib
import importlib.machinery
import importlib.util
import os
import sys
import types
import zlib
from typing import Any, Optional

from xferlint.errors import InputError

GENERATED = "executorch.exir._serialize.generated.executorch_flatbuffer"
_PARENTS = ("executorch.exir", "executorch.exir._serialize")
_LOCK = _thread.allocate_lock()  # threading.Lock itself, without importing threading
# The schema files the fast reader's vtable slots (program.py, tables.py, fixes/pte/patch.py)
# were written for and compared on, field by field, with the generated accessors: those of
# ExecuTorch 1.5.1. (file, size, CRC-32) each; a new ExecuTorch whose schema differs is
# read with the generated reader's self-check until its files are compared and pinned here.
PINNED = (("program.fbs", 18832, 0x938A7709), ("scalar_type.fbs", 794, 0x75A91093))
_PINNED: list[Optional[bool]] = [None]  # pinned(), once per process


_FIND = object()  # `_executorch_dir`'s default: look the package up


def _executorch_dir(spec: Any = _FIND) -> str:
    """The installed `executorch` package folder that holds the generated schema; `spec`:
    its module spec when the caller looked it up already (a lookup scans `sys.path`)."""
    if spec is _FIND:
        spec = importlib.util.find_spec("executorch")  # a namespace package: runs no code
    locations = list(getattr(spec, "submodule_search_locations", None) or []) if spec else []
    for location in locations:
        if os.path.isdir(os.path.join(location, "exir", "_serialize", "generated")):
            return location
    raise InputError(
        "reading .pte files needs ExecuTorch's generated flatbuffer schema "
        "(executorch/exir/_serialize/generated); install executorch (pip install executorch)"
    )


def pinned() -> bool:
    """Whether `.pte` files are read with the pinned schema alone, without the generated
    reader: the installed ExecuTorch's schema is the one in PINNED (read once per process,
    about 0.2 ms, most of it finding the package), or no ExecuTorch is installed at all (a
    lint-only environment: `pip install xferlint`, the pre-commit hooks), where the pinned
    schema is the one at hand.
    flatbuffers evolves a schema by adding fields, never by moving one, and a change that
    breaks readers changes the file identifier (`ET12`), which the container checks.
    False for an ExecuTorch with another schema, or one without its schema files."""
    if _PINNED[0] is None:
        _PINNED[0] = _schema_is(PINNED)
    return _PINNED[0]


def _schema_is(expected: tuple) -> bool:
    if not expected:
        return False
    try:
        spec = importlib.util.find_spec("executorch")
        if spec is None:
            return True
        folder = os.path.join(_executorch_dir(spec), "exir", "_serialize")
        for name, size, crc in expected:
            with open(os.path.join(folder, name), "rb") as f:
                data = f.read(size + 1)
            if len(data) != size or zlib.crc32(data) != crc:
                return False
    except (InputError, OSError, ImportError, ValueError):  # ValueError: a module in sys.modules without a spec
        return False
    return True


def _stand_in(name: str, path: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__path__ = [path]  # type: ignore[attr-defined]
    module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
    module.__spec__.submodule_search_locations = [path]
    module.__file__ = None
    module.__package__ = name
    return module


def _flatbuffers_without_numpy() -> None:
    """Import flatbuffers with its optional numpy support switched off (see above)."""
    if "flatbuffers" in sys.modules or "numpy" in sys.modules:
        return
    spec = importlib.util.find_spec("flatbuffers")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("reading .pte files needs the flatbuffers package (pip install flatbuffers)")
    # Load flatbuffers.compat under a stand-in parent (its real parent imports numpy through
    # it), switch numpy off, then import the real package, which reuses that compat module.
    stand_in = sys.modules["flatbuffers"] = _stand_in("flatbuffers", list(spec.submodule_search_locations)[0])
    try:
        compat = importlib.import_module("flatbuffers.compat")
    finally:
        if sys.modules.get("flatbuffers") is stand_in:
            del sys.modules["flatbuffers"]
    original = compat.import_numpy
    compat.import_numpy = lambda: None
    try:
        package = importlib.import_module("flatbuffers")
        package.compat = compat
    finally:
        compat.import_numpy = original


def _import_hiding_numpy(name: str) -> Any:
    _flatbuffers_without_numpy()
    compat = sys.modules["flatbuffers.compat"] if "numpy" not in sys.modules else None
    if compat is None:
        return importlib.import_module(name)
    original = compat.import_numpy
    compat.import_numpy = lambda: None  # the generated modules bind `np = import_numpy()`
    try:
        return importlib.import_module(name)
    finally:
        compat.import_numpy = original


def _bind_classes(package: Any) -> Any:
    """Rebind `ExecutionPlan` -> `ExecutionPlan.ExecutionPlan` in every generated module.

    The generated modules end with `from ...executorch_flatbuffer import ExecutionPlan`,
    which rebinds the class name to its module, so `Program.ExecutionPlan(i)` would call a
    module. ExecuTorch applies the same rebinding before it reads a program
    (`_patch_generated_module_aliases` in exir/_serialize/_flatbuffer_program.py); it is
    idempotent, so it does not matter which of the two runs first.
    """
    for module_name in getattr(package, "__all__", ()):
        module = getattr(package, module_name, None)
        if not isinstance(module, types.ModuleType):
            continue
        for name, value in list(vars(module).items()):
            if isinstance(value, types.ModuleType):
                cls = getattr(value, name, None)
                if isinstance(cls, type):
                    setattr(module, name, cls)
    return package


def generated() -> Any:
    """The `executorch_flatbuffer` package of generated reader classes."""
    module = sys.modules.get(GENERATED)
    if module is not None and getattr(module, "_xferlint_bound", False):
        return module
    with _LOCK:
        module = _load()
        _bind_classes(module)
        module._xferlint_bound = True
        return module


def _load() -> Any:
    module = sys.modules.get(GENERATED)
    if module is not None:
        return module
    if all(p in sys.modules for p in _PARENTS):  # the real packages are loaded already
        return _import_hiding_numpy(GENERATED)
    root = _executorch_dir()
    paths = {
        "executorch.exir": os.path.join(root, "exir"),
        "executorch.exir._serialize": os.path.join(root, "exir", "_serialize"),
    }
    installed = {}
    for name in _PARENTS:
        if name not in sys.modules:
            installed[name] = sys.modules[name] = _stand_in(name, paths[name])
    try:
        return _import_hiding_numpy(GENERATED)
    except ImportError as exc:
        raise InputError(f"cannot load ExecuTorch's generated flatbuffer schema: {exc}") from None
    finally:
        for name, stand_in in installed.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]
        parent = sys.modules.get("executorch")
        if parent is not None and getattr(parent, "exir", None) in installed.values():
            delattr(parent, "exir")
