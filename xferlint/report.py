"""The outcome of a run: findings, per-input errors and a summary (the JSON output)."""

from __future__ import annotations

from collections import Counter
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

from xferlint import __version__
from xferlint.analyzer.summary import MethodTransfers, TransferSummary, summarize
from xferlint.findings import Finding, InputErrorEntry


class Summary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    inputs: int = Field(description="Inputs given (after directory expansion)")
    programs: int = Field(description="Programs analysed")
    findings: int
    fixable: int
    errors: int
    by_code: dict[str, int] = Field(description="Findings per rule code")
    bytes_flagged: Optional[int] = Field(
        description="Sum of `bytes` over the findings that have one (per call)"
    )
    transfers: TransferSummary = Field(
        default_factory=TransferSummary,
        description="Copies and bytes per call, per method and device pair, and what the fixable findings would save",
    )


class Report(BaseModel):
    """The whole JSON output of `xferlint check --format json`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str = Field(description="xferlint version")
    findings: list[Finding]
    errors: list[InputErrorEntry]
    summary: Summary


def _sort_key(finding: Finding):
    loc = finding.location
    return (
        loc.file if loc else "",
        loc.line if loc else 0,
        loc.column if loc else 0,
        finding.input,
        finding.program,
        finding.method,
        finding.code,
        finding.nodes,
    )


def build_report(findings: list[Finding], errors: list[InputErrorEntry], inputs: int, programs: int,
                 transfers: Optional[list[MethodTransfers]] = None) -> Report:
    ordered = sorted(findings, key=_sort_key)
    sized = [f.bytes for f in ordered if f.bytes is not None]
    summary = Summary(
        inputs=inputs,
        programs=programs,
        findings=len(ordered),
        fixable=sum(1 for f in ordered if f.fixable),
        errors=len(errors),
        by_code=dict(sorted(Counter(f.code for f in ordered).items())),
        bytes_flagged=sum(sized) if sized else (0 if not ordered else None),
        transfers=summarize(transfers or ()),
    )
    return Report(version=__version__, findings=ordered, errors=sorted(errors, key=lambda e: e.input), summary=summary)


def json_schema() -> dict:
    return Report.model_json_schema()
