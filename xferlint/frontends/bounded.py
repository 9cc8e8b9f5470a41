"""Bounded reading of program files, shared by the torch-free readers (`.pte`, `.pt2`).

One place for what every file frontend must do before decoding anything: refuse files
larger than any program, turn OS errors into one-line input errors, and make untrusted
names safe to print in a one-line message. Nothing here imports torch.
"""

from __future__ import annotations

from typing import Any

from xferlint.errors import InputError

MAX_FILE_BYTES = 1 << 34  # 16 GiB: a larger "program" is not one xferlint can read whole
MAX_TEXT = 200  # longer names are cut in messages
MAX_MESSAGE = 500  # and longer exception messages of user code


class FormatError(InputError):
    """A program file that is not readable as its format (wrong kind of file, truncated,
    corrupt, an unknown version). The message is one line naming what is wrong."""


def check_size(size: int, label: str, limit: int = MAX_FILE_BYTES) -> None:
    if size > limit:
        raise InputError(f"{label}: {size} bytes is larger than any program xferlint reads")


def read_file(path: str, label: str, kind: str = ".pte") -> bytes:
    """The whole regular file (at most MAX_FILE_BYTES), or an InputError naming the
    problem (a FIFO, a device, a directory: `xferlint.frontends.files`)."""
    from xferlint.frontends.files import read_input

    return read_input(path, label, what=f"a {kind} file", limit=MAX_FILE_BYTES)


def open_size(handle: Any, label: str) -> int:
    """The size of an open file, checked against MAX_FILE_BYTES."""
    import os

    size = os.fstat(handle.fileno()).st_size
    check_size(size, label)
    return size


def message_line(text: str) -> str:
    """The first line of a message xferlint did not write (an exception's), as an error line
    shows it: cut at MAX_MESSAGE characters, control characters escaped ('' when blank)."""
    lines = text.strip().splitlines()
    return safe_text(lines[0], MAX_MESSAGE) if lines else ""


def safe_text(raw: Any, limit: int = MAX_TEXT) -> str:
    """Untrusted text as a message may show it: at most `limit` characters, control
    characters escaped."""
    if type(raw) is str and len(raw) <= limit and raw.isprintable():  # most names: as they are
        return raw
    if raw is None:
        return ""
    text = bytes(raw).decode("utf-8", errors="replace") if isinstance(raw, (bytes, bytearray)) else str(raw)
    if len(text) > limit:
        text = text[:limit] + "..."
    if not text.isprintable():
        text = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)
    return text
