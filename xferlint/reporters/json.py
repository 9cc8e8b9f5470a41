"""JSON output: the Report model, as `xferlint schema` describes it."""

from __future__ import annotations


def emit(report, options) -> str:
    return report.model_dump_json(indent=2) + "\n"
