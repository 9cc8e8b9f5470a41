"""What the CLI tells the user on stderr besides the report: `note:` lines, which `-q`
("the findings only: no summary or notes") hides. The CLI sets the level once per run."""

from __future__ import annotations

import sys

_quiet = False


def set_quiet(quiet: bool) -> None:
    global _quiet
    _quiet = quiet


def note(text: str) -> None:
    """One `note: text` line on stderr, unless the run is quiet."""
    if not _quiet:
        print(f"note: {text}", file=sys.stderr)
