"""Writing files the way a linter must: atomically, never half-written, nothing left behind.

Temporary files are named `.xferlint-<pid>-<random>.tmp` next to the target, so that one
left by a killed run (SIGKILL cannot be caught) is recognisable: a later write into the
same directory removes those whose process is gone.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from typing import Callable, Iterable, Iterator, Optional

_TEMP = re.compile(r"^\.xferlint-(\d+)-[^/]*\.tmp$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


_SWEPT: set[str] = set()  # directories whose dead runs' temporaries this process removed


def remove_stale_temporaries(directory: str) -> list[str]:
    """Delete the temporary files of xferlint runs that died in `directory`; their names."""
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        match = _TEMP.match(name)
        if match and int(match.group(1)) != os.getpid() and not _alive(int(match.group(1))):
            try:
                os.unlink(os.path.join(directory, name))
                removed.append(name)
            except OSError:
                pass
    return removed


def _write_special(path: str, pieces: Iterable[bytes]) -> None:
    """A FIFO, a character device: written in place (renaming over it would replace the
    node with a file); a FIFO nobody reads is an error, not a hang."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, "a FIFO with no reader") from None
        raise
    try:
        os.set_blocking(fd, True)
        for piece in pieces:
            view = memoryview(piece)
            while view:
                view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def write_atomic(path: str, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same directory and a rename,
    so readers see the old file or the whole new one, never a part.

    A symlink is followed (its target is replaced, the link stays). A read-only file is
    refused (EACCES): replacing it would defeat its mode. A path that is not a regular
    file (`/dev/null`, `/dev/stdout`, a FIFO) is written in place.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"write_atomic writes bytes, not {type(data).__name__}")
    _replace(path, (data,))


def write_atomic_text(path: str, text: str) -> None:
    """`write_atomic(path, text.encode("utf-8"))`, encoded a slice at a time: a report of
    tens of MB is not copied whole once more (each fresh MB of memory is 256 page faults,
    ~1 ms here)."""
    if not isinstance(text, str):
        raise TypeError(f"write_atomic_text writes str, not {type(text).__name__}")
    _replace(path, encoded_pieces(text))


def encoded_pieces(text: str, size: int = 1 << 20) -> Iterator[bytes]:
    """`text`'s UTF-8 in pieces of `size` characters: together, `text.encode("utf-8",
    "backslashreplace")`. Only a file name that is no UTF-8 (Python holds its bytes as lone
    surrogates) has characters UTF-8 cannot encode: each is written as its escape,
    `\\udcff`, which a JSON report reads back as that same character (so
    `os.fsencode` gives the name's bytes), and the report stays valid UTF-8."""
    for piece in text_pieces(text, size):
        yield piece.encode("utf-8", "backslashreplace")


def text_pieces(text: str, size: int = 1 << 20) -> Iterator[str]:
    """`text` in slices of `size` characters (a stream's write encodes each one whole)."""
    for start in range(0, len(text), size):
        yield text[start:start + size]


def _replace(path: str, pieces: Iterable[bytes]) -> None:
    path = os.path.realpath(path)
    if os.path.exists(path):
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory")
            _write_special(path, pieces)
            return
        if not mode & 0o222 or not os.access(path, os.W_OK):  # root's access() says yes to 0444
            raise PermissionError(errno.EACCES, "the file is read-only")
    directory = os.path.dirname(path) or "."
    if directory not in _SWEPT:  # once per directory and process: `check --fix` writes thousands there
        _SWEPT.add(directory)
        remove_stale_temporaries(directory)
    import tempfile  # only writing a file needs it

    fd, tmp = tempfile.mkstemp(prefix=f".xferlint-{os.getpid()}-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            for piece in pieces:
                handle.write(piece)
            handle.flush()
            os.fsync(handle.fileno())
        if os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def find_upward(start: str, found: Callable[[str], bool]) -> Optional[str]:
    """The first directory from `start` up to the filesystem root for which `found` holds."""
    directory = os.path.abspath(start)
    while not found(directory):
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent
    return directory


def project_root(explicit: Optional[str] = None) -> str:
    """`--project-root`, else the git work tree around the current directory, else cwd."""
    if explicit:
        return os.path.abspath(explicit)
    here = os.getcwd()
    return find_upward(here, lambda d: os.path.exists(os.path.join(d, ".git"))) or here
