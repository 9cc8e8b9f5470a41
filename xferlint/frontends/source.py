"""Source locations from FX `stack_trace` metadata.

A stack trace lists frames outermost first; the frame that matters to a model author is
the innermost one that is not inside torch, executorch or xferlint itself.
"""

from __future__ import annotations

import importlib.util
import os
import re
from functools import lru_cache
from typing import Optional

from xferlint.analyzer.view import SourceLocation
from xferlint.frontends.files import source_line

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[^\n]+)(?:\n(?P<code>[^\n]*))?')


@lru_cache(maxsize=1)
def _library_roots() -> tuple[str, ...]:
    roots = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]  # xferlint
    for name in ("torch", "executorch", "torchao", "functorch"):
        try:  # find_spec locates a top-level package without importing it (torch-free readers)
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        for path in (spec.submodule_search_locations or []) if spec is not None else []:
            roots.append(os.path.abspath(path))
    return tuple(root.rstrip(os.sep) + os.sep for root in roots)


# Library frames of a program saved on another machine (a `.pt2` carries its stack traces).
_LIBRARY_MARKERS = ("/site-packages/", "/dist-packages/")


def _is_library(path: str) -> bool:
    absolute = os.path.abspath(path)
    return absolute.startswith(_library_roots()) or path.startswith("<") or any(
        m in path.replace(os.sep, "/") for m in _LIBRARY_MARKERS)


def _column(path: str, line: int, code: Optional[str]) -> int:
    text = source_line(path, line)
    if not text:
        return 1
    if code:
        found = text.find(code.strip())
        if found >= 0:
            return found + 1
    return len(text) - len(text.lstrip()) + 1


@lru_cache(maxsize=4096)
def location_from_stack_trace(stack_trace: Optional[str]) -> Optional[SourceLocation]:
    """The innermost user frame of an FX stack trace, or None when it has none."""
    if not stack_trace:
        return None
    frames = list(_FRAME.finditer(stack_trace))
    for frame in reversed(frames):
        path = frame.group("file")
        if _is_library(path):
            continue
        line = int(frame.group("line"))
        code = (frame.group("code") or "").strip() or None
        return SourceLocation(
            file=os.path.abspath(path),
            line=line,
            column=_column(path, line, code),
            function=frame.group("func").strip(),
            code=code,
        )
    return None


def relocate(location: Optional[SourceLocation], anchor: str, cache: dict) -> Optional[SourceLocation]:
    """A location recorded on another machine (an archive exported elsewhere): when its file
    does not exist here, the file with the longest matching path tail beside `anchor` (the
    archive) or in its parent directories, else the location as recorded."""
    if location is None or os.path.exists(location.file):
        return location
    if location.file not in cache:
        cache[location.file] = _beside(location.file, anchor)
    found = cache[location.file]
    if found is None:
        return location
    return SourceLocation(file=found, line=location.line, column=_column(found, location.line, location.code),
                          function=location.function, code=location.code)


def _beside(recorded: str, anchor: str, levels: int = 4) -> Optional[str]:
    parts = [p for p in recorded.replace("\\", "/").split("/") if p]
    directory = os.path.dirname(os.path.abspath(anchor))
    for _ in range(levels):
        for n in range(min(len(parts), 4), 0, -1):
            candidate = os.path.join(directory, *parts[-n:])
            if os.path.isfile(candidate):
                return candidate
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return None
