"""What the CLI tells the user on stderr besides the report: `note:` lines, which `-q`
("the findings only: no summary or notes") hides. The CLI sets the level once per run."""

from __future__ import annotations

import os
import sys

_quiet = False


def set_quiet(quiet: bool) -> None:
    global _quiet
    _quiet = quiet


def note(text: str) -> None:
    """One `note: text` line on stderr, unless the run is quiet."""
    if not _quiet:
        print(f"note: {one_line(text)}", file=sys.stderr)


def error(text: str) -> None:
    """One `error: text` line on stderr, quiet or not."""
    print(f"error: {one_line(text)}", file=sys.stderr)


def one_line(text: str) -> str:
    """`text` with every character that is not printable written as its escape, as Python's
    repr writes it: a newline as `\\n`, a terminal's ESC as `\\x1b`. A file name may hold
    either, and a finding, an error or a note is still one line of text (that grep, a CI log
    and the next line of output can rely on), and no file name can move the cursor or
    recolour the terminal it is printed on. Where anything is escaped, so is a backslash:
    `a\\nb` then reads back as the four characters it is, not as a line break. A tab stays a
    tab: it breaks no line, and a source line indented or aligned with tabs reads as it is."""
    if text.isprintable() or ("\t" in text and text.replace("\t", " ").isprintable()):
        return text
    return "".join(ch if (ch.isprintable() and ch != "\\") or ch == "\t" else repr(ch)[1:-1] for ch in text)


def terminal_columns(fallback: int = 80) -> int:
    """`shutil.get_terminal_size().columns`: COLUMNS when set, else the width of the terminal
    on stdout, else `fallback`; without importing shutil, which imports bz2 and lzma (3 ms,
    1.5 % of a one-file check, for the width of help text nobody asked to see)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or fallback
