"""Text output in ruff's concise style: `path:line:col: XF001 [*] message`, then a summary.

A finding without a source location is shown at `input:method:node`.
"""

from __future__ import annotations

from collections import Counter

from xferlint.reporters import ReportOptions, display_path
from xferlint.rules.base import format_bytes


def _where(finding, options: ReportOptions) -> str:
    loc = finding.location
    if loc is not None:
        return f"{display_path(loc.file, options.project_root)}:{loc.line}:{loc.column}"
    node = finding.nodes[0] if finding.nodes else "?"
    return f"{finding.input}:{finding.method}:{node}"


def _context(finding) -> str:
    """` (in program[edge], method decode)` when a source line alone does not say which
    program of a dict, or which method, the finding is in."""
    parts = []
    if finding.location is not None and finding.input.endswith("]"):
        parts.append(finding.input.rsplit(":", 1)[-1])
    if finding.location is not None and finding.method != "forward":
        parts.append(f"method {finding.method}")
    return f" (in {', '.join(parts)})" if parts else ""


def _line(finding, options: ReportOptions) -> str:
    mark = " [*]" if finding.fixable else ""
    return f"{_where(finding, options)}: {finding.code}{mark} {finding.message}{_context(finding)}"


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
            lines.append(f"[*] {s.fixable} fixable with `{options.fix_hint}`.")
    lines.extend(_transfers(s.transfers, options))
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
        lines += [f"  {m.input} {m.method}: {_traffic(m)}" for m in t.methods]
    return lines


def emit(report, options: ReportOptions) -> str:
    body = _statistics(report) if options.statistics else [_line(f, options) for f in report.findings]
    return "\n".join(body + _summary(report, options)) + "\n"
