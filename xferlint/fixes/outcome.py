"""What fixing one method did: the plans applied, the findings skipped and why.

Shared by the FX and the `.pte` fix paths, and torch-free.
"""

from __future__ import annotations

from dataclasses import field

from xferlint.analyzer.view import MethodView
from xferlint.findings import Finding
from xferlint.fixes.plan import FixPlan
from xferlint.frozen import fast_constructor
from xferlint.records import dataclass


@dataclass(frozen=True)
class Skipped:
    """A finding whose fix was not applied, and why."""

    code: str
    name: str
    method: str
    nodes: tuple[str, ...]
    reason: str
    unsafe: bool = False  # would apply with --unsafe-fixes


# One per refused finding, each round and pass of a `.pte` fix trial: built by keyword
# without the frozen dataclass `__init__` (one `object.__setattr__` per field).
new_skipped = fast_constructor(Skipped)


@dataclass
class MethodOutcome:
    """What fixing one method did."""

    method: str
    before: MethodView
    after: MethodView
    findings: list[Finding]  # before the fix
    applied: list[FixPlan] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)  # after the fix
