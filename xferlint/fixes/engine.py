"""Planning and checking fixes on views: the frontend-neutral half of every fix.

`plan_method` lints one method and plans a fix for each fixable finding; `check_fixed`
compares the method before and after a fix, re-read from the fixed native program. Both
are torch-free, so the `.pte` frontend uses them as they are:

    planning = plan_method(view, method, rules, unsafe)       # on the view
    apply planning.plans to the native program                # frontend-specific
    problem = check_fixed(view_after, method_after, rules, planning, unsafe)
    if problem: keep the old program and report `problem`     # else: next round

A round applies the plans `select()` kept; the next round plans again on the fixed
program, until nothing is left (then a second fix would change nothing).
"""

from __future__ import annotations

from dataclasses import field
from typing import Callable, Collection, Optional, Sequence

from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.view import MethodView, ProgramView
from xferlint.findings import Applicability, Finding, Severity
from xferlint.fixes.plan import FixPlan, NoFix, finding_key, resolve, select
from xferlint.fixes.planners import PLANNERS
from xferlint.records import dataclass
from xferlint.rules._lint import lint_method
from xferlint.rules.base import Rule, RuleContext

# How a method is linted: (program, method) -> (its rule context, its findings).
Lint = Callable[[ProgramView, MethodView], tuple[RuleContext, list[Finding]]]

MAX_ROUNDS = 8  # each round removes at least one node; real programs settle in one or two

@dataclass
class MethodPlanning:
    """What one method needs: its findings, the plans of this round and what is left."""

    method: MethodView
    facts: DeviceFacts
    findings: list[Finding]
    plans: list[FixPlan] = field(default_factory=list)  # accepted and resolved: apply these
    selected: list[FixPlan] = field(default_factory=list)  # the same plans, unresolved
    deferred: list[FixPlan] = field(default_factory=list)  # clash with an accepted plan: next round
    no_fix: list[NoFix] = field(default_factory=list)
    unsafe: list[FixPlan] = field(default_factory=list)  # need --unsafe-fixes

    def resolve(self, plans: Sequence[FixPlan]) -> list[FixPlan]:
        """Resolve a subset of this round's plans on their own (when some fail to verify)."""
        return resolve(self.method, self.facts, plans)


def plan_method(
    program: ProgramView,
    method: MethodView,
    rules: Sequence[Rule],
    unsafe_fixes: bool = False,
    exclude: Collection[tuple] = (),
    lint: Optional[Lint] = None,
    resolved: bool = True,
) -> MethodPlanning:
    """Lint `method` and plan a fix for every fixable finding not in `exclude` (keys).
    `lint`: how to lint it (default: every rule of `rules`, `lint_method`). `resolved=False`:
    leave `plans` empty, for a caller that resolves only the plans it keeps (`resolve()`)."""
    ctx, findings = lint(program, method) if lint is not None else lint_method(program, method, rules)
    facts = ctx.facts
    planning = MethodPlanning(method=method, facts=facts, findings=findings)
    wanted: list[FixPlan] = []
    for finding in findings:
        planner = PLANNERS.get(finding.code)
        if planner is None or not finding.fixable or finding_key(finding) in exclude:
            continue
        planned = planner(ctx, finding)
        if isinstance(planned, NoFix):
            planning.no_fix.append(planned)
        elif planned.applicability == Applicability.UNSAFE and not unsafe_fixes:
            planning.unsafe.append(planned)
        else:
            wanted.append(planned)
    wanted.sort(key=lambda p: p.code)  # XF001 before XF004: a round trip removes both copies
    planning.selected, planning.deferred = select(wanted)
    if resolved:
        planning.plans = resolve(method, facts, planning.selected)
    return planning


def check_fixed(
    program: ProgramView,
    method: MethodView,
    rules: Sequence[Rule],
    before: MethodPlanning,
    applied: Sequence[FixPlan],
) -> Optional[str]:
    """Why the fixed `method` (re-read from the fixed native program) is not acceptable,
    or None: the applied plans' findings must be gone and no finding of those rules, and
    no error, may be new."""
    _, after = lint_method(program, method, rules)
    fixed = {p.key for p in applied}
    codes = {p.code for p in applied}
    known = {finding_key(f) for f in before.findings}
    for finding in after:
        key = finding_key(finding)
        if key in fixed:
            return f"after the fix {finding.code} still reports {', '.join(finding.nodes)}"
        if key not in known and (finding.code in codes or finding.severity == Severity.ERROR):
            return f"the fix would introduce {finding.code} ({finding.name}): {finding.message}"
    return None
