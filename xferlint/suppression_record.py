"""`Record`: what suppression comments did over a run (see `xferlint.suppression`).

Every check keeps one, but a `.pte` without an ETRecord has no source lines, so no comment
is ever read: the comment parser, its regular expressions and the record types it makes
(`Directive`, `Suppressed`, `Suppression`, `Unhonoured`, in `xferlint.suppression`) are
imported only when a finding or a program has a source file (four dataclasses fewer to
create at start-up, about 4 % of a small `.pte` check).
"""

from __future__ import annotations

import os
from dataclasses import field
from typing import TYPE_CHECKING, Iterable, Optional

from xferlint.findings import Finding
from xferlint.records import dataclass

if TYPE_CHECKING:
    from xferlint.suppression import Directive, Suppressed, Unhonoured


@dataclass
class Record:
    """What suppression comments did over a run (or over one program, by default)."""

    root: Optional[str] = None  # the project root: comments outside it are not honoured
    enabled: frozenset[str] = frozenset()  # codes of the rules that ran
    tracks_sources: bool = False  # collect the programs' source files (a rule reads comments)
    suppressed: list[Suppressed] = field(default_factory=list)
    unhonoured: list[Unhonoured] = field(default_factory=list)
    used: set = field(default_factory=set)  # (directive, code or "*")
    sources: dict = field(default_factory=dict)  # source file -> the first ProgramView it belongs to

    def _covering(self, finding: Finding) -> Optional[Directive]:
        loc = finding.location
        if loc is None:
            return None
        from xferlint.suppression import directives_by_line

        by_line, file_scope = directives_by_line(loc.file)
        line = next((d for d in by_line.get(loc.line, ()) if d.covers(finding.code)), None)
        return line or next((d for d in file_scope if d.covers(finding.code)), None)

    def split(self, findings: Iterable[Finding]) -> list[Finding]:
        """The findings no honoured comment suppresses; the others are recorded."""
        kept = []
        for finding in findings:
            directive = self._covering(finding)
            if directive is None:
                kept.append(finding)
                continue
            from xferlint.suppression import Suppressed, Suppression, Unhonoured, not_honoured

            reason = not_honoured(directive.file, self.root)
            if reason is not None:
                self.unhonoured.append(Unhonoured(finding, directive, reason))
                kept.append(finding)
                continue
            self.used.add((directive, "*" if directive.blanket else finding.code))
            self.suppressed.append(Suppressed(finding, Suppression(
                "inSource", directive.justification, f"{directive.file}:{directive.line}")))
        return kept

    def absorb(self, other: "Record") -> None:
        """Add what `other` (the record of one input, e.g. from a worker process) recorded."""
        self.suppressed.extend(other.suppressed)
        self.unhonoured.extend(other.unhonoured)
        self.used |= other.used
        for path, view in other.sources.items():
            self.sources.setdefault(path, view)

    def blank(self) -> "Record":
        """An empty record with this one's settings (for one input)."""
        return Record(root=self.root, enabled=self.enabled, tracks_sources=self.tracks_sources)

    def add_program(self, view) -> None:
        """Remember the source files of a program (its entry point, every located node)."""
        files = set()
        if view.file and view.file.endswith(".py"):
            files.add(os.path.abspath(view.file))
        for method in view.methods:
            for node in method.nodes:
                if node.location is not None:
                    files.add(node.location.file)
                if node.delegate is not None:
                    files.update(op.location.file for op in node.delegate.ops if op.location is not None)
        for path in sorted(files):
            self.sources.setdefault(path, view)

    def source_directives(self) -> list[Directive]:
        """The directives of the honoured source files of every program, by file and line."""
        out: list[Directive] = []
        if not self.sources:
            return out
        from xferlint.suppression import directives, not_honoured

        for path in sorted(self.sources):
            if not_honoured(path, self.root) is None:
                out.extend(directives(path))
        return out

    def was_used(self, directive: Directive, code: str) -> bool:
        return (directive, code) in self.used

    def notes(self) -> list[str]:
        seen, out = set(), []
        for item in self.unhonoured:
            line = item.note()
            if line not in seen:
                seen.add(line)
                out.append(line)
        return out
