"""Reading what the user points at, safely: regular files only, bounded, header first.

Every frontend reads its files through here, so a FIFO with no writer, a device
(`/dev/zero`), a symlink to one, or a huge sparse file is one clear InputError instead
of a hang or an out-of-memory: the file is opened without blocking, checked to be a
regular file on the open descriptor (no race with a swap), checked against a size bound,
and its first bytes are handed to `check_header` before the rest is read.
"""

from __future__ import annotations

import errno
import os
import stat
from functools import lru_cache
from typing import Callable, Optional

from xferlint.errors import InputError

MAX_SOURCE_BYTES = 32 << 20  # a model source file larger than this is not read for context

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(path: str) -> tuple[int, int]:
    """(fd, size) of a regular file; OSError(EINVAL, kind) for anything else."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, _kind(info.st_mode))
        return fd, info.st_size
    except BaseException:
        os.close(fd)
        raise


def _read_exactly(fd: int, count: int) -> bytes:
    """Up to `count` bytes (fewer at the end of the file). Each read asks for all that is
    left (the callers bound `count`), so a regular file comes in one read and one bytes
    object: no chunks joined into a copy of a program of tens of MB."""
    chunks, left = [], count
    while left > 0:
        chunk = os.read(fd, left)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def missing(label: str, path: str) -> InputError:
    """The error for a path that leads to no file: a dangling or looping symbolic link
    says so (`ls` lists it, so "no such file" would puzzle)."""
    if os.path.islink(path):
        return InputError(f"{label}: a symbolic link to nothing (its target is missing, or the links go round in a loop)")
    return InputError(f"{label}: no such file")


def _input_error(label: str, what: str, exc: OSError, path: str = "") -> InputError:
    if isinstance(exc, FileNotFoundError) or exc.errno == errno.ELOOP:
        return missing(label, path)
    if isinstance(exc, IsADirectoryError):
        return InputError(f"{label}: is a directory, not {what}")
    if isinstance(exc, PermissionError):
        return InputError(f"{label}: permission denied")
    if exc.errno == errno.EINVAL and exc.strerror and not exc.strerror.startswith("Invalid"):
        return InputError(f"{label}: is {exc.strerror}, not {what}; only regular files are read")
    kind = _kind_of(path)  # a socket cannot even be opened (ENXIO): say what it is, not errno's words
    if kind is not None:
        return InputError(f"{label}: is {kind}, not {what}; only regular files are read")
    return InputError(f"{label}: cannot be read ({exc.strerror or exc})")


def _kind_of(path: str) -> Optional[str]:
    """What `path` is when it is no regular file (by stat: nothing is opened), else None."""
    try:
        mode = os.stat(path).st_mode if path else None
    except OSError:
        return None
    return None if mode is None or stat.S_ISREG(mode) else _kind(mode)


def check_regular(path: str, label: str, *, what: str, limit: int) -> int:
    """The size of `path` if it is a regular file of at most `limit` bytes (InputError if
    not), for readers that open the file themselves (zip archives)."""
    try:
        fd, size = open_regular(path)
    except OSError as exc:
        raise _input_error(label, what, exc, path) from None
    os.close(fd)
    if size > limit:
        raise InputError(f"{label}: {size} bytes is larger than any {what} xferlint reads ({limit} bytes)")
    return size


def read_input(path: str, label: str, *, what: str, limit: int, header: int = 0,
               check_header: Optional[Callable[[bytes, int], None]] = None) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them.

    `check_header(first_bytes, size)` sees the first `header` bytes (and the file's size)
    before the rest is read and raises for a foreign or impossible file. Every failure is
    an InputError naming `label`.
    """
    try:
        fd, size = open_regular(path)
    except OSError as exc:
        raise _input_error(label, what, exc, path) from None
    try:
        if size > limit:
            raise InputError(f"{label}: {size} bytes is larger than any {what} xferlint reads ({limit} bytes)")
        head = _read_exactly(fd, min(header, size)) if header else b""
        if check_header is not None:
            check_header(head, size)
        if head:  # the whole file in one read, the header again: no copy joining it to the rest
            os.lseek(fd, 0, os.SEEK_SET)
        data = _read_exactly(fd, size + 1)  # one byte more: a file that grew is refused
        if len(data) != size:
            raise InputError(f"{label}: changed while it was read ({size} bytes, then {len(data)})")
        if not data.startswith(head):  # same size, other bytes: sizes would read "N bytes, then N"
            raise InputError(f"{label}: changed while it was read (its first {len(head)} bytes differ)")
        return data
    except OSError as exc:
        raise InputError(f"{label}: cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


@lru_cache(maxsize=256)
def _source_lines(path: str) -> tuple[str, ...]:
    try:
        fd, size = open_regular(path)
    except OSError:
        return ()
    try:
        if size > MAX_SOURCE_BYTES:
            return ()
        return tuple(_read_exactly(fd, size).decode("utf-8", errors="replace").splitlines(keepends=True))
    except OSError:
        return ()
    finally:
        os.close(fd)


def source_line(path: str, line: int) -> str:
    """Line `line` (1-based) of a source file a stack trace names, '' when it cannot be had
    (not a regular file, too large, unreadable): a location never blocks or exhausts memory."""
    lines = _source_lines(os.path.abspath(path))
    return lines[line - 1] if 0 < line <= len(lines) else ""


def source_text(path: str) -> str:
    """The whole of a source file under the same rules as `source_line` ('' if not had)."""
    import os as _os

    return "".join(_source_lines(_os.path.abspath(path)))
