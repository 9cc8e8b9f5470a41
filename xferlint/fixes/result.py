"""FixResult: the fixed program and what changed, as text for people and data for code."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import field
from typing import Any, Optional

from xferlint.analyzer.view import MethodView, OpKind
from xferlint.console import one_line
from xferlint.findings import Finding
from xferlint.fixes.outcome import MethodOutcome, Skipped
from xferlint.fixes.plan import FixPlan
from xferlint.records import dataclass
from xferlint.rules.base import format_bytes


@dataclass(frozen=True)
class RuleSavings:
    """What the fixes of one rule removed: findings fixed, copies, bytes per call."""

    code: str
    name: str
    fixed: int
    copies: int
    nbytes: int
    symbolic: int  # removed copies whose size is symbolic (not in `nbytes`)


@dataclass
class FixResult:
    """What `xferlint.fix()` returns.

    `program` is the fixed ExecutorchProgramManager (the unfixed one, lowered, when
    nothing could be fixed); `applied` the fixes applied, `skipped` the fixable findings
    that were not fixed and why, `remaining` the findings of the returned program.
    """

    input: str
    program: Any
    methods: list[MethodOutcome] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def applied(self) -> list[FixPlan]:
        return [p for m in self.methods for p in m.applied]

    @property
    def skipped(self) -> list[Skipped]:
        return [s for m in self.methods for s in m.skipped]

    @property
    def changed(self) -> bool:
        return bool(self.applied)

    @property
    def copies_removed(self) -> int:
        return sum(len(p.copies) for p in self.applied)

    @property
    def bytes_saved(self) -> Optional[int]:
        """Bytes per call the removed copies moved; None when one of them is symbolic."""
        sizes = [c.nbytes for p in self.applied for c in p.copies]
        return None if any(s is None for s in sizes) else sum(s for s in sizes if s is not None)

    def by_rule(self) -> list[RuleSavings]:
        groups: dict[str, list[FixPlan]] = defaultdict(list)
        for plan in self.applied:
            groups[plan.code].append(plan)
        out = []
        for code in sorted(groups):
            copies = [c for p in groups[code] for c in p.copies]
            out.append(RuleSavings(code=code, name=groups[code][0].name, fixed=len(groups[code]), copies=len(copies),
                                   nbytes=sum(c.nbytes or 0 for c in copies),
                                   symbolic=sum(1 for c in copies if c.nbytes is None)))
        return out

    @property
    def buffer(self) -> bytes:
        """The fixed program, serialized (what `xferlint fix -o` writes)."""
        if isinstance(self.program, (bytes, bytearray)):
            return bytes(self.program)
        return bytes(self.program.buffer)

    @property
    def data_files(self) -> dict[str, bytes]:
        """External tensor data (`.ptd`) that goes next to the program, by file name."""
        data = getattr(self.program, "_tensor_data", None) or {}
        return {(name if name.endswith(".ptd") else f"{name}.ptd"): bytes(cord) for name, cord in data.items()}

    # -- text ---------------------------------------------------------------------------
    def summary_lines(self) -> list[str]:
        lines: list[str] = []
        for s in self.by_rule():
            sym = f" (+{s.symbolic} of symbolic size)" if s.symbolic else ""
            noun = "copy" if s.copies == 1 else "copies"
            lines.append(f"{self.input}: {s.code} {s.name}: fixed {s.fixed}, removed {s.copies} {noun}, "
                         f"{format_bytes(s.nbytes)}{sym} per call saved")
        lines.extend(self.refusal_lines())
        if not lines:
            lines.append(f"{self.input}: nothing to fix")
        return lines

    def refusal_lines(self) -> list[str]:
        """One line per fixable finding that was not fixed, and why."""
        return [f"{self.input}: {skip.code} not fixed ({skip.method}: {', '.join(skip.nodes)}): "
                f"{skip.reason}" + (" (use --unsafe-fixes)" if skip.unsafe else "") for skip in self.skipped]

    def diff(self) -> str:
        """A unified diff of each changed method: the copies that go and the readers that
        read something else now."""
        chunks = []
        for method in self.methods:
            if not method.applied:
                continue
            before, after = render(method.before), render(method.after)
            import difflib

            name = f"{one_line(self.input)} ({one_line(method.method)}"  # a header is one line, whatever the name
            chunks.extend(difflib.unified_diff(before, after, f"{name})", f"{name}, fixed)", lineterm=""))
        return "\n".join(chunks) + ("\n" if chunks else "")


def render(method: MethodView) -> list[str]:
    """One line per node, `name = target(operands)`, and the outputs: what --diff compares."""
    lines = []
    for node in method.nodes:
        if node.kind in (OpKind.INPUT, OpKind.CONSTANT):
            continue
        device = f"  # {node.device}" if node.device is not None else ""
        result = ", ".join(node.outputs) or "_"
        lines.append(one_line(f"{result} = {node.target}({', '.join(node.inputs)}){device}"))
    lines.append(one_line(f"return ({', '.join(v or 'None' for v in method.outputs)})"))
    return lines
