"""Entry points: `file.py`, `file.py:attr`, `pkg.mod:attr` and directories.

A directory is searched recursively for `.py` files whose top level defines `program`
(decided by parsing each file, never by importing it) and for `.pte` and `.pt2` files. Loading an
entry point runs the user's code; everything it prints goes to stderr so that JSON and
SARIF on stdout stay clean. Whatever goes wrong becomes an InputError with one line that
names the input and the problem.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import re
from dataclasses import replace
from typing import Any, Iterable, Iterator, Optional

from xferlint.errors import InputError, InterruptedInput
from xferlint.frontends import is_program_object
from xferlint.frontends.bounded import message_line
from xferlint.frontends.files import missing
from xferlint.frontends.discovery import Discovery, walk
from xferlint.records import dataclass

# ast, hashlib, traceback and known_failures are imported where a .py entry point is parsed
# or imported: a run over .pte files never needs them.

PROGRAM_ATTR = "program"
PROGRAM_SUFFIXES = (".pte", ".pt2")  # program files read without importing anything
# `model.py:program[edge]`: a dict's key after an attribute is anything up to the last `]`
# (the output names `program[c]d]` and `program[]` so); without an attribute, a plain key
_KEYED_ATTR = re.compile(r"^(.*:[A-Za-z_][A-Za-z0-9_]*)\[(.*)\]$", re.DOTALL)
_KEYED = re.compile(r"^(.+)\[([^\[\]]+)\]$")
_EXPECTED = (
    "an ExportedProgram, EdgeProgramManager or ExecutorchProgramManager, a dict of them by name, "
    "or a zero-argument callable returning one"
)


@dataclass(frozen=True)
class EntryPoint:
    """One input as the user named it, resolved to a file or a module."""

    label: str  # as shown in output: `model.py:program`, `pkg.mod:attr`, `m.pte`, `m.pt2`
    file: Optional[str] = None  # a .py, .pte or .pt2 path
    module: Optional[str] = None  # a dotted module name
    attr: str = PROGRAM_ATTR
    key: Optional[str] = None  # one program of a dict of programs (`model.py:program[edge]`)

    @property
    def is_pte(self) -> bool:
        return self.file is not None and self.file.endswith(".pte")

    @property
    def is_pt2(self) -> bool:
        return self.file is not None and self.file.endswith(".pt2")

    @property
    def is_program_file(self) -> bool:
        """A serialized program (`.pte`, `.pt2`), not Python to import."""
        return self.file is not None and self.file.endswith(PROGRAM_SUFFIXES)


@dataclass(frozen=True)
class ProgramObject:
    """A program object found behind an entry point."""

    label: str
    name: str
    obj: Any
    file: Optional[str]


# --------------------------------------------------------------------------- discovery


def defines_program(path: str) -> bool:
    """True when the file's top level binds `program` (assignment, def, class, import)."""
    import ast

    from xferlint.frontends.files import open_regular

    try:
        fd, _ = open_regular(path)  # never blocks: a FIFO named model.py in a directory hung discovery
        with os.fdopen(fd, "rb") as handle:
            tree = ast.parse(handle.read(), filename=path)
    except (SyntaxError, ValueError, OSError):
        # Not decidable without importing: include it so the user sees the error.
        return True
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.name == PROGRAM_ATTR:
            return True
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(_binds(t) for t in targets):
                return True
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name.split(".")[0]) == PROGRAM_ATTR for a in stmt.names):
                return True
    return False


def _binds(target: "ast.AST") -> bool:
    import ast

    if isinstance(target, ast.Name):
        return target.id == PROGRAM_ATTR
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_binds(t) for t in target.elts)
    return False


def _is_candidate(path: str) -> bool:
    name = os.path.basename(path)
    return name.endswith(PROGRAM_SUFFIXES) or (name.endswith(".py") and defines_program(path))


def _split_attr(spec: str) -> tuple[str, Optional[str]]:
    head, sep, tail = spec.rpartition(":")
    if sep and tail.isidentifier() and head:
        return head, tail
    return spec, None


def first_of_each(entries: Iterable[EntryPoint], seen: set) -> list[EntryPoint]:
    """`entries` less those already in `seen` (which they join): one program named twice
    (`a.pte ./a.pte`, a directory and a file in it, `m.py` and `m.py:program`) is linted
    and counted once, under the name it was first given, as ruff and mypy count a file."""
    kept = []
    for entry in entries:
        identity = (_file_identity(entry.file) if entry.file else entry.module, entry.attr, entry.key)
        if identity not in seen:
            seen.add(identity)
            kept.append(entry)
    return kept


def _file_identity(path: str) -> Any:
    """The file itself (device and inode: links and other spellings of one path agree),
    else the path made absolute."""
    try:
        info = os.stat(path)
    except OSError:
        return os.path.abspath(path)
    return info.st_dev, info.st_ino


def file_of(spec: str) -> str:
    """The path a command-line input names: `model.py:program[edge]` -> `model.py`."""
    return _split_attr(_split_key(spec)[0])[0]


def _bad_attribute(spec: str) -> None:
    """`model.py:` or `model.py:1x` (a file, then no Python name): say what is wrong with
    the attribute rather than that no such file exists."""
    head, _, tail = spec.partition(":")
    if head.endswith(PROGRAM_SUFFIXES):
        raise InputError(f"{spec}: a {os.path.splitext(head)[1]} file has no attributes")
    if (head.endswith(".py") or os.path.isfile(head)) and not tail.isidentifier():
        what = "nothing follows `:`" if not tail else f"`{tail}` is not a Python name"
        raise InputError(f"{spec}: {what} (`{head}:NAME` names one of the file's top-level names)")


def _split_key(spec: str) -> tuple[str, Optional[str]]:
    """`model.py:program[edge]` -> (`model.py:program`, `edge`): one program of a dict, as
    the output names it."""
    match = _KEYED_ATTR.match(spec) or _KEYED.match(spec)
    if match and not os.path.exists(spec):
        return match.group(1), match.group(2)
    return spec, None


def expand(spec: str, discovery: Optional[Discovery] = None) -> list[EntryPoint]:
    """Resolve one command-line input into entry points (a directory gives many)."""
    if not spec.strip():  # `xferlint check "$MODEL"` with MODEL unset: say so, not `error: : no such file`
        raise InputError(f"{spec!r}: an empty argument, not a file or entry point (an unset shell variable?)")
    if os.path.isdir(spec):
        found = [EntryPoint(label=_display(p), file=p) for p in walk(spec, _is_candidate, discovery)]
        if not found:
            raise InputError(f"{spec}: no entry points found (no .py file defines a top-level `program`, no .pte or .pt2; "
                             "test folders, hidden and git-ignored files are skipped)")
        return [_with_attr(e) for e in found]
    spec, key = _split_key(spec)
    if key is not None:
        if spec.endswith(PROGRAM_SUFFIXES):
            raise InputError(f"{spec}[{key}]: a {os.path.splitext(spec)[1]} file holds one program; name the file alone")
        return [replace(e, key=key, label=f"{e.label}[{key}]") for e in expand(spec, discovery)]
    if ":" in spec and not os.path.exists(spec):
        _bad_attribute(spec)
    base, attr = _split_attr(spec)
    if base.endswith((".py",) + PROGRAM_SUFFIXES) or os.sep in base or os.path.exists(base):
        if not os.path.exists(base):
            raise missing(spec, base)
        if os.path.isdir(base):
            raise InputError(f"{spec}: a directory cannot take an attribute")
        if base.endswith(PROGRAM_SUFFIXES):
            if attr:
                raise InputError(f"{spec}: a {os.path.splitext(base)[1]} file has no attributes")
            return [EntryPoint(label=spec, file=base)]
        if not base.endswith(".py"):
            raise InputError(f"{spec}: not a Python file, .pte, .pt2 or directory")
        return [EntryPoint(label=spec if attr else f"{spec}:{PROGRAM_ATTR}", file=base, attr=attr or PROGRAM_ATTR)]
    if not all(part.isidentifier() for part in base.split(".")):
        raise InputError(f"{spec}: no such file, and not a `package.module:attr` entry point")
    return [EntryPoint(label=spec if attr else f"{spec}:{PROGRAM_ATTR}", module=base, attr=attr or PROGRAM_ATTR)]


def _with_attr(entry: EntryPoint) -> EntryPoint:
    if entry.is_program_file:
        return entry
    return EntryPoint(label=f"{entry.label}:{entry.attr}", file=entry.file, attr=entry.attr)


def _display(path: str) -> str:
    return os.path.normpath(path)


# --------------------------------------------------------------------------- loading


_LIBRARY_LOGGERS = ("torchao", "torch.utils._pytree", "torch._export", "torch.export", "executorch")


def _quiet_libraries() -> None:
    """Keep the import-time chatter of torch, torchao and ExecuTorch below ERROR out of the
    report (here, where they are first imported: a `.pte` check never loads logging)."""
    import logging

    for name in _LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send whatever user code prints (Python or C level) to stderr; the libraries it
    imports log errors only."""
    _quiet_libraries()
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _user_frame(exc: BaseException, file: Optional[str]) -> str:
    """` (at model.py:12)`: the innermost frame in the user's file, else the innermost."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    chosen = frames[-1]
    if file is not None:
        absolute = os.path.abspath(file)
        mine = [f for f in frames if os.path.abspath(f.filename) == absolute]
        chosen = mine[-1] if mine else chosen
    return f" (at {_display(os.path.relpath(chosen.filename)) if not chosen.filename.startswith('<') else chosen.filename}:{chosen.lineno})"


def _describe(exc: BaseException) -> str:
    from xferlint.frontends.known_failures import message_of

    message = message_of(exc)
    if message is None:
        return f"{type(exc).__name__} (whose message could not be read: its __str__ raised)"
    # the user's own text: a message may be megabytes, or move the cursor
    first = message_line(message)
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _known_failure(exc: BaseException) -> str:
    from xferlint.frontends.known_failures import explain

    return explain(exc)


def _import_file(path: str) -> Any:
    import hashlib
    import importlib.util

    absolute = os.path.abspath(path)
    digest = hashlib.sha1(absolute.encode()).hexdigest()[:12]
    name = f"xferlint_entry_{os.path.splitext(os.path.basename(path))[0]}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, absolute)
    if spec is None or spec.loader is None:
        raise InputError(f"{path}: cannot be imported as a Python file")
    module = importlib.util.module_from_spec(spec)
    directory = os.path.dirname(absolute)
    sys.path.insert(0, directory)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(directory)
    return module


_MAX_SOURCE_FILE = 1 << 30  # a Python file larger than this is no model's entry point


def load_entry_point(entry: EntryPoint) -> list[ProgramObject]:
    """Import the entry point and return the program objects behind its attribute."""
    where = entry.file or entry.module or entry.label
    if entry.file is not None:  # a FIFO or a device would block the import, or never end it
        from xferlint.frontends.files import check_regular

        check_regular(entry.file, entry.label, what="a Python file", limit=_MAX_SOURCE_FILE)
    try:
        with stdout_to_stderr():
            if entry.file is not None:
                module = _import_file(entry.file)
            else:
                if os.getcwd() not in sys.path:
                    sys.path.insert(0, os.getcwd())
                module = importlib.import_module(entry.module)
    except SyntaxError as exc:
        raise InputError(f"{entry.label}: syntax error at line {exc.lineno}: {exc.msg}") from None
    except ModuleNotFoundError as exc:
        if entry.module is not None and exc.name and entry.module.startswith(exc.name):
            raise InputError(f"{entry.label}: no module named '{exc.name}'") from None
        raise InputError(f"{entry.label}: importing it raised {_describe(exc)}{_user_frame(exc, entry.file)}") from None
    except KeyboardInterrupt as exc:
        raise InterruptedInput(f"{entry.label}: importing it raised KeyboardInterrupt"
                               f"{_user_frame(exc, entry.file)}") from exc
    except BaseException as exc:  # noqa: BLE001 - the user's code may raise anything, SystemExit included
        raise InputError(f"{entry.label}: importing it raised {_describe(exc)}{_user_frame(exc, entry.file)}"
                         f"{_known_failure(exc)}") from None
    if not hasattr(module, entry.attr):
        what = "top-level `program`" if entry.attr == PROGRAM_ATTR else f"attribute `{entry.attr}`"
        raise InputError(f"{entry.label}: {where} has no {what}; point at one with `{where}:NAME`")
    if entry.file is None and getattr(module, "__file__", None):
        # A module entry point still has a file: reporters fall back to it for findings
        # without source lines, and errors point into it.
        entry = EntryPoint(label=entry.label, file=module.__file__, module=entry.module, attr=entry.attr)
    if entry.key is None:
        return resolve(getattr(module, entry.attr), entry, entry.attr)
    base = replace(entry, key=None, label=entry.label[: -len(entry.key) - 2])
    programs = resolve(getattr(module, entry.attr), base, entry.attr)
    chosen = [p for p in programs if p.label == entry.label]
    if not chosen:
        # a key that is empty, holds `, ` or is not printable is quoted: the list stays readable
        names = ", ".join(p.name if p.name.isprintable() and p.name and ", " not in p.name else repr(p.name)
                          for p in programs)
        raise InputError(f"{entry.label}: `{entry.attr}` has no program named {entry.key!r} (it has: {names})")
    return chosen


def resolve(obj: Any, entry: EntryPoint, name: str, depth: int = 0) -> list[ProgramObject]:
    """Unwrap callables and dicts into program objects."""
    if is_program_object(obj):
        label = entry.label if depth == 0 else f"{entry.label}[{name}]"
        return [ProgramObject(label=label, name=name, obj=obj, file=entry.file)]
    if isinstance(obj, dict) and depth == 0:
        if not obj:
            raise InputError(f"{entry.label}: `{entry.attr}` is an empty dict; expected {_EXPECTED}")
        out: list[ProgramObject] = []
        for key in obj:
            out.extend(resolve(obj[key], entry, str(key), depth + 1))
        return out
    if callable(obj) and not isinstance(obj, type) and depth <= 1:
        try:
            with stdout_to_stderr():
                produced = obj()
        except KeyboardInterrupt as exc:
            raise InterruptedInput(f"{entry.label}: calling `{name}` raised KeyboardInterrupt"
                                   f"{_user_frame(exc, entry.file)}") from exc
        except TypeError as exc:
            if "argument" in _describe(exc) and exc.__traceback__ is not None and exc.__traceback__.tb_next is None:
                raise InputError(f"{entry.label}: `{name}` must take no arguments ({_describe(exc)})") from None
            raise InputError(f"{entry.label}: calling `{name}` raised {_describe(exc)}{_user_frame(exc, entry.file)}") from None
        except BaseException as exc:  # noqa: BLE001
            raise InputError(f"{entry.label}: calling `{name}` raised {_describe(exc)}{_user_frame(exc, entry.file)}"
                             f"{_known_failure(exc)}") from None
        if is_program_object(produced) or (isinstance(produced, dict) and depth == 0):
            return resolve(produced, entry, name, depth)
        raise InputError(f"{entry.label}: `{name}()` returned {_a(type(produced).__name__)}; expected {_EXPECTED}")
    raise InputError(f"{entry.label}: `{name}` is {_a(type(obj).__name__)}; expected {_EXPECTED}")


def _a(noun: str) -> str:
    """`an int`, `a str`: the type name with its article."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"
