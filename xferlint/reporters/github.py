"""GitHub Actions workflow commands: one `::error`/`::warning`/`::notice` line per finding,
which the runner turns into annotations on the pull request's diff."""

from __future__ import annotations

from xferlint.console import one_line
from xferlint.reporters import ReportOptions
from xferlint.reporters.ci_common import column_of, line_of, path_of, where_in_program

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def emit(report, options: ReportOptions) -> str:
    lines = []
    for f in report.findings:
        props = []
        path = path_of(f, options)
        if path is not None:
            props += [f"file={_escape_property(path)}", f"line={line_of(f)}", f"col={column_of(f)}"]
        props.append(f"title={_escape_property(f'{f.code} {f.name}')}")
        where = "" if f.location is not None else f"{where_in_program(f)}: "
        # the text as the log shows it: a name's ESC or newline written as escapes (`one_line`),
        # never a colour or cursor move in the job's log
        lines.append(f"::{_LEVEL[f.severity.value]} {','.join(props)}::{_escape_data(one_line(where + f.message))}")
    for e in report.errors:
        lines.append(f"::error title=xferlint::{_escape_data(one_line(e.message))}")
    return "".join(line + "\n" for line in lines)
