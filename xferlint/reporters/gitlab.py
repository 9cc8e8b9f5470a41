"""GitLab Code Quality report: a JSON array of issues (`description`, `check_name`,
`fingerprint`, `severity`, `location.path`, `location.lines.begin`), as the
`codequality` report artifact expects. An input that could not be checked is an issue
too (`blocker`, at line 1 of its file): the merge request shows why the job failed, as
the other CI formats do."""

from __future__ import annotations

import json

from xferlint.fingerprint import digest
from xferlint.reporters import ReportOptions, display_path, input_path
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
    for e in report.errors:
        issues.append({
            "description": f"error: {e.message}",
            "check_name": f"xferlint {e.kind} error",
            "fingerprint": digest(("error", e.kind, e.input, e.message)),
            "severity": "blocker",
            "location": {"path": display_path(input_path(e.input), options.project_root), "lines": {"begin": 1}},
        })
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
