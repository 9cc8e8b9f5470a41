"""Edits to suppression comments in model source: `check --add-noqa` and XF100's fix.

Both change comments only, one file at a time, atomically (`fsutil.write_atomic`), keeping
the file's encoding (coding cookie, BOM) and every line's ending (CRLF stays CRLF). The
rest of a comment and other tools' codes (`# noqa: E501`) are left as they are.
"""

from __future__ import annotations

import io
import os
import tokenize
from collections import defaultdict
from dataclasses import field
from typing import Iterable, Optional

from xferlint.findings import Finding
from xferlint.fsutil import write_atomic
from xferlint.records import dataclass
from xferlint.suppression import Directive, decode, directives, not_honoured, read_source

PREFIX = "# xferlint: noqa: "


@dataclass(frozen=True, slots=True)
class _Source:
    lines: list  # each with its own ending
    encoding: str

    @classmethod
    def read(cls, path: str) -> Optional["_Source"]:
        data = read_source(path)
        if data is None:
            return None
        text, encoding = decode(data)
        return cls(io.StringIO(text, newline="").readlines(), encoding)

    def data(self) -> bytes:
        return "".join(self.lines).encode(self.encoding)


def _split(line: str) -> tuple[str, str]:
    content = line.rstrip("\r\n")
    return content, line[len(content):]


def _closed_lines(lines: list) -> set[int]:
    """1-based lines whose end cannot take a comment: inside a multi-line string, or
    continued with a backslash."""
    closed = {i for i, line in enumerate(lines, start=1) if _split(line)[0].rstrip().endswith("\\")}
    try:
        for tok in tokenize.generate_tokens(io.StringIO("".join(lines)).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                closed.update(range(tok.start[0], tok.end[0]))
    except (tokenize.TokenError, SyntaxError):
        pass
    return closed


@dataclass
class Outcome:
    """What an edit run changed, per file, and what it left alone and why."""

    changed: dict = field(default_factory=dict)  # path -> number of directives
    texts: dict = field(default_factory=dict)  # path -> (text before, text after), for --diff
    skipped: list = field(default_factory=list)  # one line each
    errors: list = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.changed.values())


def _write(path: str, source: _Source, outcome: Outcome, count: int) -> None:
    try:
        write_atomic(path, source.data())
    except OSError as exc:
        outcome.errors.append(f"{path}: cannot write ({exc.strerror or exc})")
        return
    outcome.changed[path] = count


# --------------------------------------------------------------------------- --add-noqa


def _merge(content: str, found: list[Directive], codes: set[str]) -> Optional[str]:
    """The line with `codes` added to its xferlint directive, or a new one appended."""
    mine = [d for d in found if d.scope == "line" and (d.ours or d.xf_codes)]
    if any(d.blanket and d.ours for d in mine):
        return None
    target = next((d for d in mine if d.ours), None) or next(iter(mine), None)
    if target is not None:
        missing = sorted(codes - set(target.codes))
        if not missing:
            return None
        merged = ", ".join(list(target.codes) + missing)
        return content[:target.codes_start] + merged + content[target.codes_end:]
    return content.rstrip() + "  " + PREFIX + ", ".join(sorted(codes))


def add_noqa(findings: Iterable[Finding], root: str) -> Outcome:
    """Write `# xferlint: noqa: CODE` on the line of every finding inside `root`."""
    outcome = Outcome()
    wanted: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    unlocated = 0
    for f in findings:
        loc = f.location
        if f.code == "XF100":
            continue
        if loc is None:
            unlocated += 1
            continue
        reason = not_honoured(loc.file, root)
        if reason is not None:
            outcome.skipped.append(f"{loc.file}:{loc.line}: {f.code} not marked: {reason}")
            continue
        wanted[os.path.abspath(loc.file)][loc.line].add(f.code)
    for path in sorted(wanted):
        source = _Source.read(path)
        if source is None:
            outcome.skipped.append(f"{path}: cannot be read; no noqa directive added")
            continue
        closed, count = _closed_lines(source.lines), 0
        found: dict[int, list] = {}  # the file's directives by line, in file order: each marked line asks
        for directive in directives(path):
            found.setdefault(directive.line, []).append(directive)
        for line, codes in sorted(wanted[path].items()):
            if not 0 < line <= len(source.lines):
                continue
            if line in closed:
                outcome.skipped.append(f"{path}:{line}: {', '.join(sorted(codes))} not marked: the line ends inside "
                                       "a string or a backslash continuation, where a comment cannot go")
                continue
            content, ending = _split(source.lines[line - 1])
            edited = _merge(content, found.get(line, []), codes)
            if edited is not None and edited != content:
                source.lines[line - 1] = edited + ending
                count += 1
        if count:
            _write(path, source, outcome, count)
    if unlocated:
        outcome.skipped.append(f"{unlocated} finding{'s have' if unlocated != 1 else ' has'} no source line (a .pte "
                               "without --etrecord, a graph without stack traces): nothing to mark")
    return outcome


# --------------------------------------------------------------------------- XF100 fix


def _without(content: str, directive: Directive, codes: tuple[str, ...]) -> Optional[str]:
    """The line without the stale `codes` of `directive` (all of it when none is left);
    None when the whole line was only that comment."""
    remaining = [c for c in directive.codes if c not in codes] if codes else []
    if remaining:
        return content[:directive.codes_start] + ", ".join(remaining) + content[directive.codes_end:]
    before, after = content[:directive.start], content[directive.end:].strip()
    if not before.strip():
        return (before + after) if after else None
    return before.rstrip() + ("  " + after if after else "")


def remove_stale(stale: Iterable[tuple[Directive, tuple[str, ...]]], write: bool = True) -> Outcome:
    """Remove stale codes (XF100's fix): each (directive, codes; () for a blanket one).
    With `write` false nothing is written: `texts` and `changed` say what would change."""
    outcome = Outcome()
    by_file: dict[str, list] = defaultdict(list)
    for directive, codes in stale:
        by_file[directive.file].append((directive, codes))
    for path in sorted(by_file):
        source = _Source.read(path)
        if source is None:
            outcome.skipped.append(f"{path}: cannot be read; unused noqa directives left in place")
            continue
        drop, count, before = set(), 0, "".join(source.lines)
        # right to left on a line, so the offsets of the ones before stay valid
        for directive, codes in sorted(by_file[path], key=lambda item: (item[0].line, -item[0].start)):
            line = directive.line
            if not 0 < line <= len(source.lines):
                continue
            content, ending = _split(source.lines[line - 1])
            edited = _without(content, directive, codes)
            if edited is None:
                drop.add(line)
            else:
                source.lines[line - 1] = edited + ending
            count += 1
        source.lines[:] = [text for i, text in enumerate(source.lines, start=1) if i not in drop]
        if not count:
            continue
        outcome.texts[path] = (before, "".join(source.lines))
        if write:
            _write(path, source, outcome, count)
        else:
            outcome.changed[path] = count
    return outcome
