"""The outcome of a run: findings, per-input errors and a summary (the JSON output)."""

from __future__ import annotations

from collections import Counter
from dataclasses import field
from typing import Optional

from xferlint import __version__
from xferlint.analyzer.summary import MethodTransfers, TransferSummary, summarize
from xferlint.findings import Finding, InputErrorEntry, node_order
from xferlint.records import dataclass
from xferlint.serialize import BOUNDARY, described, json_schema as _json_schema


@dataclass(**BOUNDARY)
class Summary:
    """Counts over the whole run."""

    inputs: int = described("Inputs given (after directory expansion)")
    programs: int = described("Programs analysed")
    findings: int
    fixable: int
    errors: int
    suppressed: int = described(
        "Findings not reported because a noqa comment or the baseline accepts them", default=0)
    by_code: dict[str, int] = described("Findings per rule code")
    bytes_flagged: int = described(
        "Bytes per call of the distinct copies the findings name (transfers.flagged_bytes)")
    transfers: TransferSummary = described(
        "Copies and bytes per call, per method and device pair, and what the fixable findings would save",
        default_factory=TransferSummary,
    )


@dataclass(**BOUNDARY)
class Report:
    """The whole JSON output of `xferlint check --format json`."""

    version: str = described("xferlint version")
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
        node_order(finding.nodes),
    )


def build_report(findings: list[Finding], errors: list[InputErrorEntry], inputs: int, programs: int,
                 transfers: Optional[list[MethodTransfers]] = None, suppressed: int = 0) -> Report:
    ordered = sorted(findings, key=_sort_key)
    traffic = summarize(transfers or ())
    summary = Summary(
        inputs=inputs,
        programs=programs,
        findings=len(ordered),
        fixable=sum(1 for f in ordered if f.fixable),
        errors=len(errors),
        suppressed=suppressed,
        by_code=dict(sorted(Counter(f.code for f in ordered).items())),
        bytes_flagged=traffic.flagged_bytes,
        transfers=traffic,
    )
    return Report(version=__version__, findings=ordered, errors=sorted(errors, key=lambda e: e.input), summary=summary)


def json_schema() -> dict:
    return _json_schema(Report)
