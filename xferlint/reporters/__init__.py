"""Reporters: a Report in, text out. One `emit(report, options)` per format; reporters
never see graphs."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class ReportOptions:
    statistics: bool = False
    project_root: Optional[str] = None  # paths are shown relative to it (default: cwd)
    fix_hint: str = "xferlint fix"
    # The enabled rule classes (SARIF lists every one, findings or not); empty: every rule.
    rules: tuple = ()
    # Per-method device timelines (analyzer/timeline.py), for the formats that draw programs
    # (html, model-explorer); the pipeline collects them only for those (`TIMELINE_FORMATS`).
    timelines: tuple = ()


FORMATS = ("text", "json", "sarif", "html", "model-explorer")
TIMELINE_FORMATS = frozenset({"html", "model-explorer"})


def display_path(path: str, root: Optional[str] = None) -> str:
    """A path relative to the project root (or cwd) when it is inside it, else as is."""
    base = os.path.abspath(root or os.getcwd())
    absolute = os.path.abspath(path)
    try:
        rel = os.path.relpath(absolute, base)
    except ValueError:
        return absolute
    return absolute if rel.startswith("..") else rel


def emit(report, fmt: str, options: ReportOptions) -> str:
    """Render a report in one of the `FORMATS`."""
    if fmt == "model-explorer":
        from xferlint.reporters.model_explorer import emit as emit_me

        return emit_me(report, options)
    if fmt == "html":
        from xferlint.reporters.html import emit as emit_html

        return emit_html(report, options)
    if fmt == "json":
        from xferlint.reporters.json import emit as emit_json

        return emit_json(report, options)
    if fmt == "sarif":
        from xferlint.reporters.sarif import emit as emit_sarif

        return emit_sarif(report, options)
    from xferlint.reporters.text import emit as emit_text

    return emit_text(report, options)
