"""Text output: `concise` (the default) and `full`.

concise, one line per finding in ruff's style, then a summary:

    path:line:col: XF001 [*] <qualifier>: <short message>
    input.pte:method:instr N: XF003 [*] <short message>     (no source line known)

The qualifier (`program[edge]`, the `.pt2`/`.pte` archive the program came from, a method
other than `forward` as `decode()`) is there only when the path does not already say which
program the finding is in. `full` adds, under each line, the source line and the finding's
detail (what it means for this program and what to do). `-q` drops the summary, colour
marks the path, code and `[*]` on a terminal.
"""

from __future__ import annotations

import os
import re
import textwrap
from collections import Counter

from xferlint.console import one_line
from xferlint.findings import Applicability, anchor_node
from xferlint.reporters import ReportOptions, display_path
from xferlint.rules.base import format_bytes

# ANSI styles, as ruff uses them: bold path, cyan separators and fix mark, bold red code
_BOLD, _CYAN, _RED, _RESET = "\x1b[1m", "\x1b[36m", "\x1b[1;31m", "\x1b[0m"
WIDTH = 100  # columns `full` wraps a finding's detail to


def _paint(text: str, style: str, options: ReportOptions) -> str:
    return f"{style}{text}{_RESET}" if options.color and text else text


def _instr(finding) -> str:
    """A program location without source: `anchor_node` (`instr 12`), without the operator
    in parentheses."""
    return anchor_node(finding).split(" (", 1)[0]


def _where(finding, options: ReportOptions) -> str:
    loc = finding.location
    sep = _paint(":", _CYAN, options)
    if loc is not None:
        path = _paint(one_line(display_path(loc.file, options.project_root)), _BOLD, options)
        return f"{path}{sep}{loc.line}{sep}{loc.column}"
    return (f"{_paint(one_line(finding.input), _BOLD, options)}{sep}{one_line(finding.method)}{sep}"
            f"{one_line(_instr(finding))}")


def qualifier(finding) -> str:
    """Which program a located finding is in, when its path does not say it: the dict key
    (`program[edge]`), the archive it was read from (`model.pt2`), a method (`decode()`)."""
    if finding.location is None:
        return ""
    parts = []
    if finding.input.endswith("]"):
        parts.append(finding.input.rsplit(":", 1)[-1])
    elif finding.file and os.path.abspath(finding.file) != os.path.abspath(finding.location.file):
        parts.append(os.path.basename(finding.file))
    if finding.method != "forward":
        parts.append(f"{finding.method}()")
    return " ".join(parts)


def _line(finding, options: ReportOptions) -> str:
    mark = f" {_paint('[*]', _CYAN, options)}" if finding.fixable else ""
    context = qualifier(finding)
    context = f" {one_line(context)}:" if context else ""
    sep = _paint(":", _CYAN, options)
    return (f"{_where(finding, options)}{sep} {_paint(finding.code, _RED, options)}{mark}{context} "
            f"{one_line(finding.message)}")


def _full(finding, options: ReportOptions) -> list[str]:
    """A finding's line, its source line and its detail, wrapped, then a blank line."""
    lines = [_line(finding, options)]
    loc = finding.location
    if loc is not None and loc.code:
        gutter = _paint(f"{loc.line} |", _CYAN, options)
        lines.append(f"  {gutter} {one_line(loc.code.strip())}")
    if finding.detail:
        lines += textwrap.wrap(one_line(finding.detail), WIDTH, initial_indent="  ", subsequent_indent="  ",
                               break_on_hyphens=False, break_long_words=False)
    command = f"{options.fix_hint} {_UNSAFE}" if _needs_unsafe(finding, options) else options.fix_hint
    help_line = f"  help: `xferlint rule {finding.code}`" + (f" (fixable with `{command}`)" if finding.fixable else "")
    return lines + [help_line, ""]


_UNSAFE = "--unsafe-fixes"


def _needs_unsafe(finding, options: ReportOptions) -> bool:
    """Whether `xferlint fix` applies this fixable finding's fix only with --unsafe-fixes
    (which this run does not set)."""
    return finding.fixable and not options.unsafe_fixes and finding.fix_applicability == Applicability.UNSAFE


def _statistics(report) -> list[str]:
    counts = Counter(f.code for f in report.findings)
    names = {f.code: f.name for f in report.findings}
    fixable = {f.code for f in report.findings if f.fixable}
    width = max((len(str(n)) for n in counts.values()), default=1)
    return [
        f"{counts[code]:>{width}}\t{code}\t{'[*] ' if code in fixable else ''}{names[code]}"
        for code in sorted(counts)
    ]


def _summary(report, options: ReportOptions) -> list[str]:
    s = report.summary
    if s.findings == 0:
        lines = ["All checks passed!" if s.errors == 0 else "No findings."]
    else:
        per_code = ", ".join(f"{n} {code}" for code, n in s.by_code.items())
        noun = "finding" if s.findings == 1 else "findings"
        lines = [f"Found {s.findings} {noun} ({per_code}) in {s.programs} program{'s' if s.programs != 1 else ''}."]
        if s.bytes_flagged:
            lines.append(f"Flagged transfers move {format_bytes(s.bytes_flagged)} per call.")
        if s.fixable:
            unsafe = sum(1 for f in report.findings if _needs_unsafe(f, options))
            only = f" ({unsafe} of them only with `{_UNSAFE}`)" if unsafe else ""
            lines.append(f"[*] {s.fixable} fixable with `{options.fix_hint}`{only}.")
    lines.extend(_transfers(s.transfers, options))
    if s.findings and not options.full:  # a concise line says where and what it costs; the remedy is in the help
        lines.append(f"What to do: `xferlint rule {next(iter(s.by_code))}` (any code), or --output-format full.")
    if s.errors:
        lines.append(f"{s.errors} input{'s' if s.errors != 1 else ''} could not be linted (errors on stderr).")
    return lines


def _traffic(t) -> str:
    """`2 H2D (8.0 KiB), 1 D2H (4.0 KiB)`, with the device pairs and symbolic copies."""
    if not t.pairs:
        return "no copies"
    text = f"{t.h2d_copies} H2D ({format_bytes(t.h2d_bytes)}), {t.d2h_copies} D2H ({format_bytes(t.d2h_bytes)})"
    pairs = ", ".join(f"{p.source} -> {p.target} {format_bytes(p.bytes)}" for p in t.pairs)
    symbolic = f", {t.symbolic_copies} of symbolic size" if t.symbolic_copies else ""
    return f"{text}{symbolic}; {pairs}"


def _transfers(t, options: ReportOptions) -> list[str]:
    """The footer's traffic line (and one line per method with --statistics)."""
    if not t.methods:
        return []
    count = len(t.methods)
    lines = [f"Transfers per call in {count} method{'s' if count != 1 else ''}: {_traffic(t)}."]
    if t.fixable_savings:
        lines[-1] += f" Fixes would save {format_bytes(t.fixable_savings)} per call."
    if options.statistics:
        lines += [f"  {one_line(m.input)} {one_line(m.method)}: {_traffic(m)}" for m in t.methods]
    return lines


def emit(report, options: ReportOptions) -> str:
    """The concise text (or `full` with `options.full`)."""
    if options.statistics:
        body = _statistics(report)
    elif options.full:
        body = [line for f in report.findings for line in _full(f, options)]
    else:
        body = [_line(f, options) for f in report.findings]
    if options.quiet:
        return "".join(line + "\n" for line in body)
    return "\n".join(body + _summary(report, options)) + "\n"


def emit_full(report, options: ReportOptions) -> str:
    """`--output-format full`."""
    import dataclasses

    return emit(report, dataclasses.replace(options, full=True))
