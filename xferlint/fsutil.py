"""Writing files the way a linter must: atomically, never half-written."""

from __future__ import annotations

import os
import stat
import tempfile
from typing import Callable, Optional


def write_atomic(path: str, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same directory and a rename,
    so readers see the old file or the whole new one, never a part.

    A path that exists and is not a regular file (`/dev/null`, `/dev/stdout`, a FIFO) is
    written in place: renaming over it would replace the device node with a file.
    """
    if os.path.exists(path) and not stat.S_ISREG(os.stat(path).st_mode):
        with open(path, "wb") as handle:
            handle.write(data)
        return
    directory = os.path.dirname(os.path.abspath(path)) or "."
    fd, tmp = tempfile.mkstemp(prefix=".xferlint-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        else:
            os.chmod(tmp, 0o644)
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
