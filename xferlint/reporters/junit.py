"""JUnit XML: one test suite per input, one failed test case per finding (CI systems that
show test results show the findings), an errored case per input that could not be linted."""

from __future__ import annotations

from collections import defaultdict
from xml.sax import saxutils

from xferlint.console import one_line
from xferlint.reporters import ReportOptions
from xferlint.reporters.ci_common import column_of, line_of, path_of, where_in_program


def quoteattr(text: str) -> str:
    """An attribute's quoted value. Every text goes through `one_line`: XML 1.0 has no way
    to write most control characters (a file name holding ESC made the report unreadable),
    and their escapes read as the name does in the text output."""
    return saxutils.quoteattr(one_line(text))


def escape(text: str) -> str:
    """Element text (see `quoteattr`)."""
    return saxutils.escape(one_line(text))


def emit(report, options: ReportOptions) -> str:
    suites: dict[str, list[str]] = defaultdict(list)
    for f in report.findings:
        path = path_of(f, options)
        place = f"{path}:{line_of(f)}:{column_of(f)}" if f.location is not None else where_in_program(f)
        suites[f.input].append(
            f'    <testcase name={quoteattr(f"{f.code} {place}")} classname={quoteattr(f.input)}>\n'
            f'      <failure message={quoteattr(f.message)} type={quoteattr(f.code)}>'
            f'{escape(f"{place}: {f.code} {f.name}: {f.message}")}</failure>\n'
            f'    </testcase>')
    for e in report.errors:
        suites[e.input].append(
            f'    <testcase name={quoteattr("load")} classname={quoteattr(e.input)}>\n'
            f'      <error message={quoteattr(e.message)} type={quoteattr(e.kind)}/>\n'
            f'    </testcase>')
    failures = len(report.findings)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuites name="xferlint" tests="{failures + len(report.errors)}" failures="{failures}" '
           f'errors="{len(report.errors)}">']
    for name in sorted(suites):
        cases = suites[name]
        n_fail = sum(1 for c in cases if "<failure" in c)
        out.append(f'  <testsuite name={quoteattr(name)} tests="{len(cases)}" failures="{n_fail}" '
                   f'errors="{len(cases) - n_fail}">')
        out.extend(cases)
        out.append("  </testsuite>")
    if not suites:
        out.append('  <testsuite name="xferlint" tests="1" failures="0" errors="0">\n'
                   '    <testcase name="no findings" classname="xferlint"/>\n  </testsuite>')
    out.append("</testsuites>")
    return "\n".join(out) + "\n"
