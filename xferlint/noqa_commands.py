"""The suppression side of `xferlint check`: notes on comments not honoured, `--add-noqa`,
the XF100 fix of `--fix`, and baseline-accepted findings as suppressed results for SARIF.
The CLI calls these; they print to stderr what they did."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Iterable

from xferlint.console import error, note, one_line

if TYPE_CHECKING:
    from xferlint.suppression import Suppressed


def _rel(path: str) -> str:
    rel = os.path.relpath(path)
    return one_line(path if rel.startswith("..") else rel)


def print_notes(run) -> None:
    """One `note:` per noqa comment that was passed over (outside the project)."""
    for line in run.record.notes():
        note(line)


def add_noqa(run, root: str) -> int:
    """`--add-noqa`: mark every reported finding's line; print what changed. Returns how
    many lines could not be written (errors)."""
    from xferlint.fixes.noqa import add_noqa as write_noqa

    outcome = write_noqa(run.findings, root)
    for path, count in sorted(outcome.changed.items()):
        print(f"{_rel(path)}: added {count} noqa directive{'s' if count != 1 else ''}", file=sys.stderr)
    for line in outcome.skipped:
        note(line)
    for line in outcome.errors:
        error(line)
    total = outcome.total
    print(f"Added {total} noqa directive{'s' if total != 1 else ''}.", file=sys.stderr)
    return len(outcome.errors)


def _stale(run) -> tuple[list, list]:
    """(directive, stale codes) for each XF100 finding its fix can mend, and those findings."""
    from xferlint.rules.unused_noqa import UnusedNoqa

    stale, fixed = [], []
    by_place = {(d.file, d.line, d.column): d for d in run.record.source_directives()}
    for finding in run.comment_findings:
        loc = finding.location
        directive = by_place.get((loc.file, loc.line, loc.column)) if loc is not None else None
        codes = UnusedNoqa.stale_codes(directive, run.record) if directive is not None else None
        if codes is not None:
            stale.append((directive, codes))
            fixed.append(finding)
    return stale, fixed


def comment_diff(run) -> tuple[str, int]:
    """`check --diff`: XF100's edits to the model source as a unified diff (nothing is
    written), and how many findings they fix."""
    import difflib

    from xferlint.fixes.noqa import remove_stale

    if not run.comment_findings:
        return "", 0
    stale, fixed = _stale(run)
    outcome = remove_stale(stale, write=False)
    chunks = []
    for path, (before, after) in sorted(outcome.texts.items()):
        name = _rel(path)
        chunks.extend(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                           f"{name}", f"{name} (fixed)"))
    for line in outcome.skipped:
        note(line)
    done = set(outcome.texts)
    chunks = [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in chunks]
    return "".join(chunks), sum(1 for f in fixed if f.location is not None and f.location.file in done)


def fix_comments(run) -> None:
    """The XF100 fix under `check --fix`: remove the stale codes from the source files and
    drop the findings that were fixed."""
    from xferlint.fixes.noqa import remove_stale

    if not run.comment_findings:
        return
    stale, fixed = _stale(run)
    outcome = remove_stale(stale)
    done = {path for path in outcome.changed}
    for path, count in sorted(outcome.changed.items()):
        print(f"{_rel(path)}: removed {count} unused noqa directive{'s' if count != 1 else ''} (XF100)",
              file=sys.stderr)
    for line in outcome.skipped:
        note(line)
    for line in outcome.errors:
        error(line)
    gone = {id(f) for f in fixed if f.location is not None and f.location.file in done}
    run.comment_findings = [f for f in run.comment_findings if id(f) not in gone]


def fix_comments_of(spec: str, rules, project_root, strict: bool = False) -> None:
    """The XF100 fix under `xferlint fix INPUT`: lint the input's program (its comments need
    the whole check) and remove what is stale from its source files."""
    if not any(rule.code == "XF100" for rule in rules) or spec.endswith((".pte", ".pt2")):
        return
    from xferlint.fsutil import project_root as resolve_root
    from xferlint.pipeline import check_paths

    fix_comments(check_paths([spec], rules, strict=strict, project_root=resolve_root(project_root)))


def accepted_by_baseline(findings: Iterable, path: str) -> list[Suppressed]:
    """Baseline-accepted findings as suppressed (SARIF `external`)."""
    from xferlint.suppression import Suppressed, Suppression  # only with --baseline

    return [Suppressed(f, Suppression("external", None, path)) for f in findings]
