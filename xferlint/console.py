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
        print(f"note: {text}", file=sys.stderr)


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
