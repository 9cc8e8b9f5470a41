"""What the CI formats (github, gitlab, junit, json-lines) share: where a finding is shown
and its line-independent fingerprint."""

from __future__ import annotations

from typing import Optional

from xferlint.findings import anchor_node
from xferlint.fingerprint import finding_key, fingerprints
from xferlint.reporters import ReportOptions, display_path


def path_of(finding, options: ReportOptions) -> Optional[str]:
    """The file a finding is shown in (relative to the project root): its source line's
    file, else the input file; None for a program with no file at all."""
    if finding.location is not None:
        return display_path(finding.location.file, options.project_root)
    if finding.file:
        return display_path(finding.file, options.project_root)
    return None


def line_of(finding) -> int:
    return finding.location.line if finding.location is not None else 1


def column_of(finding) -> int:
    return finding.location.column if finding.location is not None else 1


def where_in_program(finding) -> str:
    """`program[edge] forward instr 3`: the place inside the program, for formats whose
    location is a file and line only."""
    return f"{finding.input} {finding.method} {anchor_node(finding)}"


def finding_fingerprints(report, options: ReportOptions) -> list[str]:
    """One fingerprint per finding of the report, in order (the SARIF scheme)."""
    return fingerprints(finding_key(f, path_of(f, options) or f.input) for f in report.findings)
