"""GitLab Code Quality report: a JSON array of issues (`description`, `check_name`,
`fingerprint`, `severity`, `location.path`, `location.lines.begin`), as the
`codequality` report artifact expects."""

from __future__ import annotations

import json

from xferlint.reporters import ReportOptions
from xferlint.reporters.ci_common import finding_fingerprints, line_of, path_of, where_in_program

_SEVERITY = {"error": "major", "warning": "minor", "info": "info"}


def emit(report, options: ReportOptions) -> str:
    issues = []
    for f, fingerprint in zip(report.findings, finding_fingerprints(report, options)):
        where = "" if f.location is not None else f"{where_in_program(f)}: "
        issues.append({
            "description": f"{f.code} {where}{f.message}",
            "check_name": f"{f.code} {f.name}",
            "fingerprint": fingerprint.replace(":", "-"),
            "severity": _SEVERITY[f.severity.value],
            "location": {"path": path_of(f, options) or f.input, "lines": {"begin": line_of(f)}},
        })
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
