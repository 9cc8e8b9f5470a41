"""Suppression comments in model source, as ruff reads them.

`# xferlint: noqa: XF006` (codes comma- or space-separated) or a plain `# noqa: XF006` on
the line a finding is reported at suppresses it; a bare `# xferlint: noqa` suppresses
every finding on the line (a bare `# noqa`, or a `# noqa: E501` naming no XF code, is left
to other tools). A comment `# xferlint: noqa-file: XF006` (or bare, for every rule)
anywhere in a model file suppresses those findings in the whole file. Text after the codes
is the justification (`# xferlint: noqa: XF006 weights stay on host until Q3`), carried
into SARIF.

Comments are honoured only in the project's own files: one in an installed package
(site-packages), in generated code (`@generated` in its first lines) or, when the check
names a project root, outside that root is not honoured; the finding stays and the run
says which comment was passed over (`Record.unhonoured`).

`Record` (in `xferlint.suppression_record`, re-exported here) is what suppression did over
a whole run: the findings it suppressed (kept, with their `Suppression`, for SARIF), which
directive suppressed what (XF100 unused-noqa reads it) and the source files of every
program linted.
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from functools import lru_cache
from typing import Iterable, Optional

from xferlint.findings import Finding
from xferlint.records import dataclass
from xferlint.suppression_record import Record  # re-exported: `xferlint.suppression.Record`

_CODE = r"[A-Z]+[0-9]+"
_DIRECTIVE = re.compile(
    r"#\s*(?P<ours>xferlint:\s*)?(?P<kind>noqa-file|noqa)(?![\w-])"
    r"(?P<sep>:\s*)?(?P<codes>" + _CODE + r"(?:(?:\s*,\s*|\s+)" + _CODE + r")*)?",
    re.IGNORECASE,
)
_LIBRARY = ("/site-packages/", "/dist-packages/")
_GENERATED = re.compile(r"@generated|Code generated .* DO NOT EDIT|DO NOT EDIT", re.IGNORECASE)
MAX_SOURCE_BYTES = 32 << 20


@dataclass(frozen=True, slots=True)
class Directive:
    """One noqa directive in a source file. Offsets are 0-based into the line's text:
    `start` (the `#`), `codes_start`/`codes_end` (the code list, empty for a blanket one)
    and `end` (after the justification)."""

    file: str
    line: int
    scope: str  # "line" or "file"
    ours: bool  # `# xferlint: noqa...` rather than a plain `# noqa: XF...`
    codes: tuple[str, ...]  # every code written (a plain noqa's foreign ones too); () blanket
    start: int
    codes_start: int
    codes_end: int
    end: int
    justification: Optional[str] = None

    @property
    def xf_codes(self) -> tuple[str, ...]:
        return tuple(c for c in self.codes if c.startswith("XF"))

    @property
    def blanket(self) -> bool:
        return not self.codes

    @property
    def column(self) -> int:
        return self.start + 1

    def covers(self, code: str) -> bool:
        return (self.blanket and self.ours) or code in self.codes


def parse_comment(comment: str, offset: int, file: str = "", line: int = 0) -> list[Directive]:
    """The directives in one comment (the text from its `#`), at `offset` in its line."""
    out = []
    for match in _DIRECTIVE.finditer(comment):
        scope = "file" if match.group("kind").lower() == "noqa-file" else "line"
        ours = bool(match.group("ours"))
        if scope == "file" and not ours:
            continue
        raw = match.group("codes") if match.group("sep") else None
        codes = tuple(c.upper() for c in re.split(r"[\s,]+", raw.strip())) if raw else ()
        if not ours and not any(c.startswith("XF") for c in codes):
            continue  # `# noqa` / `# noqa: E501`: other tools' business
        codes_start = match.start("codes") if raw else match.end("kind")
        codes_end = match.end("codes") if raw else match.end("kind")
        tail = comment[match.end():]
        cut = tail.find("#")
        rest = tail if cut < 0 else tail[:cut]
        reason = rest.strip().lstrip(":;,-\u2013\u2014 ").strip() or None
        out.append(Directive(file=file, line=line, scope=scope, ours=ours, codes=codes, start=offset + match.start(),
                             codes_start=offset + codes_start, codes_end=offset + codes_end,
                             end=offset + match.end() + len(rest.rstrip()), justification=reason))
    return out


# --------------------------------------------------------------------------- files


def read_source(path: str) -> Optional[bytes]:
    """The bytes of a source file, None when it is no regular file of a sane size."""
    from xferlint.frontends.files import read_input

    try:
        return read_input(path, path, what="a source file", limit=MAX_SOURCE_BYTES)
    except Exception:  # noqa: BLE001 - InputError of any kind: no comments to read
        return None


def decode(data: bytes) -> tuple[str, str]:
    """(text, encoding) of Python source bytes: its coding cookie or BOM, else UTF-8."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding), encoding
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return data.decode("utf-8", errors="replace"), "utf-8"


def comments(text: str) -> list[tuple[int, int, str]]:
    """(line, column offset, text) of every comment; a file tokenize cannot read (a syntax
    error) falls back to the first `#` of each line."""
    try:
        return [(tok.start[0], tok.start[1], tok.string) for tok in tokenize.generate_tokens(io.StringIO(text).readline)
                if tok.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError):
        out = []
        for number, line in enumerate(text.splitlines(), start=1):
            at = line.find("#")
            if at >= 0:
                out.append((number, at, line[at:]))
        return out


@lru_cache(maxsize=512)
def _file_directives(path: str, stamp: tuple) -> tuple[Directive, ...]:
    data = read_source(path)
    if not data or b"noqa" not in data.lower():
        return ()
    text, _ = decode(data)
    return tuple(d for number, col, comment in comments(text) if "noqa" in comment.lower()
                 for d in parse_comment(comment, col, path, number))


def file_stamp(path: str) -> Optional[tuple]:
    """What changes when a file does (modified time, size, inode); None when it cannot be read."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return (info.st_mtime_ns, info.st_size, info.st_ino)


@lru_cache(maxsize=512)
def _indexed(path: str, stamp: tuple) -> tuple[dict[int, tuple[Directive, ...]], tuple[Directive, ...]]:
    by_line: dict[int, list[Directive]] = {}
    file_scope = []
    for d in _file_directives(path, stamp):
        if d.scope == "line":
            by_line.setdefault(d.line, []).append(d)
        elif d.scope == "file":
            file_scope.append(d)
    return {line: tuple(found) for line, found in by_line.items()}, tuple(file_scope)


def directives_by_line(path: str) -> tuple[dict[int, tuple[Directive, ...]], tuple[Directive, ...]]:
    """A source file's line directives by line and its file directives, each in file order
    (re-read when it changes): what a finding's line asks, without scanning the file's
    every directive (a file may mark thousands of lines). Shared: read, never change them."""
    absolute = os.path.abspath(path)
    stamp = file_stamp(absolute)
    return _indexed(absolute, stamp) if stamp is not None else ({}, ())


def directives(path: str) -> tuple[Directive, ...]:
    """Every noqa directive of ours in a source file, in file order (re-read when it changes)."""
    absolute = os.path.abspath(path)
    stamp = file_stamp(absolute)
    return _file_directives(absolute, stamp) if stamp is not None else ()


def line_codes(text: str) -> Optional[frozenset[str]]:
    """The codes a line's noqa comment suppresses ({"*"} for a bare xferlint one), None
    when it has none of ours."""
    at = text.find("#")
    found = parse_comment(text[at:], at) if at >= 0 else []
    line = [d for d in found if d.scope == "line"]
    if not line:
        return None
    if any(d.blanket for d in line):
        return frozenset({"*"})
    return frozenset(c for d in line for c in d.codes)


@lru_cache(maxsize=512)
def _generated(path: str, stamp: tuple) -> bool:
    data = read_source(path) or b""
    head = b"\n".join(data.splitlines()[:5]).decode("utf-8", errors="replace")
    return bool(_GENERATED.search(head))


def not_honoured(path: str, root: Optional[str]) -> Optional[str]:
    """Why comments in `path` are not honoured (None: they are)."""
    posix = path.replace("\\", "/")
    if any(mark in posix for mark in _LIBRARY):
        return "an installed package"
    if root is not None and not inside(path, root):
        return f"outside the project root {root}"
    stamp = file_stamp(os.path.abspath(path))
    if stamp is not None and _generated(os.path.abspath(path), stamp):
        return "generated code"
    return None


def inside(path: str, root: str) -> bool:
    absolute, base = os.path.abspath(path), os.path.abspath(root)
    try:
        return os.path.commonpath([absolute, base]) == base
    except ValueError:  # another drive
        return False


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class Suppression:
    """Why a finding is not reported: `inSource` (a noqa comment) or `external` (a baseline),
    in SARIF's terms."""

    kind: str
    justification: Optional[str] = None
    where: Optional[str] = None  # `file:line` of the comment, or the baseline file


@dataclass(frozen=True, slots=True)
class Suppressed:
    """A finding that is not reported, and why."""

    finding: Finding
    suppression: Suppression


@dataclass(frozen=True, slots=True)
class Unhonoured:
    """A comment that would suppress `finding` but is not honoured (`reason`)."""

    finding: Finding
    directive: Directive
    reason: str

    def note(self) -> str:
        d = self.directive
        return (f"{d.file}:{d.line}: a noqa comment for {self.finding.code} is not honoured ({self.reason}); "
                f"the finding stays")


def split(findings: Iterable[Finding], root: Optional[str] = None) -> tuple[list[Finding], list[Finding]]:
    """(kept, suppressed), for callers that do not keep a Record."""
    record = Record(root=root)
    kept = record.split(findings)
    return kept, [s.finding for s in record.suppressed]
