"""Reporters: a Report in, text out. One `emit(report, options)` per format; reporters
never see graphs."""

from __future__ import annotations

import os
import re
from typing import Optional

from xferlint.records import dataclass


@dataclass(frozen=True)
class ReportOptions:
    """How a report is rendered: what the command line and the run add to the Report."""

    statistics: bool = False
    project_root: Optional[str] = None  # paths are shown relative to it (default: cwd)
    fix_hint: str = "xferlint fix"
    # Whether the run applies unsafe fixes (`--unsafe-fixes` or `unsafe-fixes = true`): when
    # not, the text says which fixable findings `xferlint fix` leaves without that option.
    unsafe_fixes: bool = False
    # The enabled rule classes (SARIF lists every one, findings or not); empty: every rule.
    rules: tuple = ()
    # Per-method device timelines (analyzer/timeline.py), for the formats that draw programs
    # (html, model-explorer); the pipeline collects them only for those (`TIMELINE_FORMATS`).
    timelines: tuple = ()
    # Findings not reported, with why (`xferlint.suppression.Suppressed`: a noqa comment or
    # the baseline); only SARIF shows them (as results with `suppressions`).
    suppressed: tuple = ()
    # With `--baseline`: the baseline's entries nothing matched any more (SARIF results with
    # `baselineState: absent`); None without a baseline.
    baseline_absent: Optional[tuple] = None
    # Text output: `full` shows each finding's source line and detail; `quiet` (-q) only the
    # findings, no summary; `silent` (-s) nothing at all (the exit code says it); `color`
    # paints the path, code and fix mark (a terminal, no NO_COLOR / --no-color, never -o).
    full: bool = False
    quiet: bool = False
    silent: bool = False
    color: bool = False


TIMELINE_FORMATS = frozenset({"html", "model-explorer"})


_ATTRIBUTE = re.compile(r"[A-Za-z_][\w.]*(\[.*\])?")  # `program`, `program[decode]`, `pkg.attr`


def input_path(label: str) -> str:
    """The file an input label names: `model.py` of `model.py:program` (or of
    `model.py:program[decode]`, one program of several), else the label itself (a program
    file's path, or a module's name). Every format that places an input at its file asks here."""
    head, sep, tail = label.rpartition(":")
    if sep and head and (tail.isidentifier() or _ATTRIBUTE.fullmatch(tail)) and not os.path.exists(label):
        return head
    return label


def display_path(path: str, root: Optional[str] = None) -> str:
    """A path relative to the project root (or cwd) when it is inside it, else as is."""
    base = os.path.abspath(root or os.getcwd())
    absolute = os.path.abspath(path)
    try:
        rel = os.path.relpath(absolute, base)
    except ValueError:
        return absolute
    return absolute if rel.startswith("..") else rel


# format -> module with `emit(report, options) -> str` (or `module:function`); `concise` is
# the default and `text` its old name
FORMATS = {
    "concise": "xferlint.reporters.text",
    "full": "xferlint.reporters.text:emit_full",
    "text": "xferlint.reporters.text",
    "json": "xferlint.reporters.json",
    "json-lines": "xferlint.reporters.json_lines",
    "sarif": "xferlint.reporters.sarif",
    "github": "xferlint.reporters.github",
    "gitlab": "xferlint.reporters.gitlab",
    "junit": "xferlint.reporters.junit",
    "html": "xferlint.reporters.html",
    "model-explorer": "xferlint.reporters.model_explorer",
}


def emit(report, fmt: str, options: ReportOptions) -> str:
    """Render a report in one of FORMATS."""
    import importlib

    module, _, function = FORMATS.get(fmt, FORMATS["concise"]).partition(":")
    return getattr(importlib.import_module(module), function or "emit")(report, options)


TEXT_FORMATS = frozenset({"concise", "full", "text"})
