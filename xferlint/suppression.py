"""Suppression comments in model source, as ruff reads them.

`# xferlint: noqa: XF006` (codes comma- or space-separated) or a plain `# noqa: XF006` on
the line a finding is reported at suppresses it; a bare `# xferlint: noqa` suppresses
every finding on the line (a bare `# noqa` does not: it belongs to other tools). A line
`# xferlint: noqa-file: XF006` (or bare, for every rule) anywhere in a model file
suppresses those findings in the whole file. Comments in files outside the project
(site-packages, dist-packages) are not honoured: the finding stays.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable, Optional

from xferlint.findings import Finding
from xferlint.frontends.files import source_line, source_text

_CODES = r"(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)"
_LINE = re.compile(r"#\s*(?P<ours>xferlint:\s*)?noqa(?::\s*" + _CODES + r")?", re.IGNORECASE)
_FILE = re.compile(r"#\s*xferlint:\s*noqa-file(?::\s*" + _CODES + r")?", re.IGNORECASE)
_FOREIGN = ("/site-packages/", "/dist-packages/")
ALL = frozenset({"*"})


def _codes(match: re.Match) -> frozenset[str]:
    codes = match.group("codes")
    return frozenset(c.upper() for c in re.split(r"[\s,]+", codes.strip())) if codes else ALL


def line_codes(text: str) -> Optional[frozenset[str]]:
    """The codes a source line's noqa comment suppresses (ALL for a bare xferlint one),
    None when it has none of ours."""
    for match in _LINE.finditer(text):
        if match.group("codes"):
            codes = _codes(match)
            if any(c.startswith("XF") for c in codes):
                return codes
        elif match.group("ours"):
            return ALL
    return None


@lru_cache(maxsize=256)
def file_codes(path: str) -> Optional[frozenset[str]]:
    found: set[str] = set()
    for match in _FILE.finditer(source_text(path)):
        codes = _codes(match)
        if codes == ALL:
            return ALL
        found |= codes
    return frozenset(found) if found else None


def _covers(codes: Optional[frozenset[str]], code: str) -> bool:
    return codes is not None and (codes == ALL or code in codes)


def suppressed(finding: Finding) -> bool:
    loc = finding.location
    if loc is None or any(mark in loc.file.replace("\\", "/") for mark in _FOREIGN):
        return False
    return _covers(line_codes(source_line(loc.file, loc.line)), finding.code) or _covers(
        file_codes(loc.file), finding.code)


def split(findings: Iterable[Finding]) -> tuple[list[Finding], list[Finding]]:
    """(kept, suppressed)."""
    kept, dropped = [], []
    for finding in findings:
        (dropped if suppressed(finding) else kept).append(finding)
    return kept, dropped
