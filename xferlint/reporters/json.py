"""JSON output: the Report, as `xferlint schema` describes it."""

from __future__ import annotations

from xferlint.serialize import to_json_text


def emit(report, options) -> str:
    return to_json_text(report, end="\n")
