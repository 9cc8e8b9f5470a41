"""The Python entry points: `lint`, `lint_report` and `fix` on program objects.

They run the same pipeline as the CLI (`xferlint.pipeline`) in-process; errors raise (an
XferlintError subclass) instead of becoming per-input entries.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from xferlint.analyzer.summary import MethodTransfers
from xferlint.findings import Finding
from xferlint.frontends.entrypoints import EntryPoint, resolve
from xferlint.pipeline import analyze, comment_findings, configure, load_program, new_record
from xferlint.report import Report, build_report
from xferlint import run_caches
from xferlint.selection import select_rules


def lint(
    obj: Any,
    *,
    name: str = "program",
    select: Optional[Iterable[str]] = None,
    ignore: Optional[Iterable[str]] = None,
    strict: bool = False,
    max_transfer_bytes: Optional[int] = None,
) -> list[Finding]:
    """Lint a program object in-process and return its findings, sorted.

    `obj` is an ExportedProgram, EdgeProgramManager, ExecutorchProgramManager, a dict of
    them by name, a zero-argument callable returning one, or a ProgramView. Errors raise
    (an XferlintError subclass) instead of becoming entries. `max_transfer_bytes` is the
    per-call budget of every method (XF009).
    """
    return lint_report(obj, name=name, select=select, ignore=ignore, strict=strict,
                       max_transfer_bytes=max_transfer_bytes).findings


def lint_report(
    obj: Any,
    *,
    name: str = "program",
    select: Optional[Iterable[str]] = None,
    ignore: Optional[Iterable[str]] = None,
    strict: bool = False,
    max_transfer_bytes: Optional[int] = None,
) -> Report:
    """Like `lint`, but the whole Report: findings and the summary, with the transfer
    summary (`report.summary.transfers`) of every method."""
    rules = configure(select_rules(select=select, ignore=ignore), max_transfer_bytes=max_transfer_bytes)
    entry = EntryPoint(label=name, attr=name)
    findings: list[Finding] = []
    transfers: list[MethodTransfers] = []
    programs = resolve(obj, entry, name)
    record = new_record(rules)
    try:
        for program in programs:
            findings.extend(analyze(load_program(program, strict).view, rules, transfers, record=record))
    finally:
        run_caches.clear()  # nothing of the programs is kept past the call
    findings.extend(comment_findings(record, rules))
    return build_report(findings, [], 1, len(programs), transfers=transfers, suppressed=len(record.suppressed))


def fix(
    obj: Any,
    *,
    name: str = "program",
    select: Optional[Iterable[str]] = None,
    ignore: Optional[Iterable[str]] = None,
    unsafe_fixes: bool = False,
    config: Any = None,
    strict: bool = False,
):
    """Fix an EdgeProgramManager or ExecutorchProgramManager; see `xferlint.fixes.fix`."""
    from xferlint.fixes import fix as _fix

    try:
        return _fix(obj, name=name, select=select, ignore=ignore, unsafe_fixes=unsafe_fixes, config=config,
                    strict=strict)
    finally:
        run_caches.clear()
