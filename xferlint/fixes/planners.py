"""One planner per fixable rule: a finding in, a FixPlan (or a NoFix saying why not) out.

Planners read only the view and the DeviceFacts, like rules do, and find the finding's
nodes again by the roles of its steps. `PLANNERS` maps rule codes to planners; a test
checks that it covers exactly the rules that declare a fix.
"""

from __future__ import annotations

from typing import Callable, Optional, Union

from xferlint.analyzer.view import Node, OpKind
from xferlint.findings import Applicability, Finding
from xferlint.fixes.plan import OUTPUT, FixPlan, NoFix, new_plan, new_rewire
from xferlint.rules._patterns import RoundTrip, is_aten_copy, method_round_trips, tick
from xferlint.rules.base import RuleContext
from xferlint.rules.duplicate_transfer import (
    REWIRABLE,
    DuplicateCopy,
    applicability,
    copy_target,
    sharing_blocker,
)

Planned = Union[FixPlan, NoFix]
Planner = Callable[[RuleContext, Finding], Planned]

# Nodes a dead chain may consist of: pure computations whose only effect is their result.
_PURE = frozenset({OpKind.COMPUTE, OpKind.ALIAS, OpKind.GETITEM, OpKind.H2D, OpKind.D2H, OpKind.TO_DEVICE})


def _node(ctx: RuleContext, finding: Finding, role: str) -> Optional[Node]:
    name = next((s.node for s in finding.steps if s.role == role), None)
    return _by_name(ctx).get(name) if name else None


def _by_name(ctx: RuleContext) -> dict[str, Node]:
    """The method's nodes by name (the first of each name), built once per context: a
    scan per finding made planning quadratic in the program."""
    index = ctx._memo.get(_BY_NAME)
    if index is None:
        index = {}
        for n in ctx.method.nodes:
            index.setdefault(n.name, n)
        ctx._memo[_BY_NAME] = index
    return index


_BY_NAME = ("planners", "nodes by name")


def _round_trip(ctx: RuleContext, h2d: Node) -> Optional[RoundTrip]:
    """`round_trip_at(ctx.facts, h2d)`, looked up among the method's round trips (those
    XF001 / XF002 found, `method_round_trips`: `round_trip_at` of every H2D node, and None
    for any other node): a planner per finding re-walked its trip."""
    by_h2d = ctx._memo.get(_TRIPS)
    if by_h2d is None:
        by_h2d = ctx._memo[_TRIPS] = {id(trip.h2d): trip for trip in method_round_trips(ctx)}
    return by_h2d.get(id(h2d))


_TRIPS = ("planners", "round trips by H2D")


def _no(finding: Finding, reason: str) -> NoFix:
    return NoFix(code=finding.code, name=finding.name, method=finding.method, finding=tuple(finding.nodes),
                 reason=reason)


def _plan(finding: Finding, summary: str, applicability: Applicability = Applicability.SAFE, **edits) -> FixPlan:
    return new_plan(code=finding.code, name=finding.name, method=finding.method, finding=tuple(finding.nodes),
                    applicability=applicability, summary=summary, **edits)


def _mutation(ctx: RuleContext, *values: str) -> Optional[str]:
    for vid in values:
        reader = ctx.facts.in_place_reader(vid)
        if reader is not None:
            return f"{tick(reader.name)} may write {tick(vid)} in place"
    return None


def plan_redundant_round_trip(ctx: RuleContext, finding: Finding) -> Planned:
    """XF001: rewire the H2D's readers to the device tensor, drop the H2D, and the D2H
    once nothing else reads it."""
    h2d = _node(ctx, finding, "h2d")
    trip = _round_trip(ctx, h2d) if h2d is not None else None
    if trip is None or not trip.same_device:
        return _no(finding, "the round trip is no longer in the program")
    if ctx.facts.is_output(h2d.output):
        return _no(finding, f"{tick(h2d.name)} is a method output; the caller expects its own copy")
    blocked = next((r for r in trip.consumers if r.kind not in REWIRABLE), None)
    if blocked is not None:
        return _no(finding, f"{tick(h2d.name)} feeds control flow ({tick(blocked.name)}), which the fix does not rewrite")
    mutated = _mutation(ctx, trip.value, h2d.output)
    if mutated:
        return _no(finding, f"{mutated}, so the copy and the original may differ")
    readers = dict.fromkeys(r.name for r in trip.consumers)
    return _plan(
        finding,
        f"read {tick(trip.value)} directly, remove {tick(h2d.name)} (and {tick(trip.d2h.name)} once dead)",
        rewires=tuple(new_rewire(reader=name, old=h2d.output, new=trip.value) for name in readers),
        removes=(h2d.name,),
        removes_if_dead=(trip.d2h.name,),
    )


def plan_cross_device_staging(ctx: RuleContext, finding: Finding) -> Planned:
    """XF002 on torch.export programs: the second `.to()` reads the device value itself
    (one device-to-device copy) and the `.cpu()` goes once nothing else reads it."""
    h2d = _node(ctx, finding, "h2d")
    trip = _round_trip(ctx, h2d) if h2d is not None else None
    if trip is None or trip.same_device:
        return _no(finding, "the staging is no longer in the program")
    if not is_aten_copy(h2d) or ctx.program.kind != "pt2":
        return _no(finding, "only a torch.export program saved as .pt2 can copy device to device")
    mutated = _mutation(ctx, trip.value, trip.d2h.output)
    if mutated:
        return _no(finding, f"{mutated}, so the host copy and the device value may differ")
    return _plan(
        finding,
        f"copy {tick(trip.value)} to {trip.target} directly in {tick(h2d.name)}, remove {tick(trip.d2h.name)} once dead",
        rewires=(new_rewire(reader=h2d.name, old=trip.d2h.output, new=trip.value),),
        removes_if_dead=(trip.d2h.name,),
    )


# The dead nodes the XF003 plans of one lint of a method may walk, together: each plan
# walks what its D2H feeds, and in a chain of dead copies (D2H, H2D, D2H, ...) each D2H
# feeds the rest of the chain, n**2 in all; ordinary plans walk a node or two each.
DEAD_WALK_BUDGET, DEAD_WALK_PER_NODE = 100_000, 4


def plan_dead_device_to_host(ctx: RuleContext, finding: Finding) -> Planned:
    """XF003: remove the dead D2H, and the dead host computations that only it feeds."""
    facts = ctx.facts
    d2h = _node(ctx, finding, "d2h")
    if d2h is None or d2h.kind != OpKind.D2H:
        return _no(finding, "the copy is no longer in the program")
    left = ctx.shared("planners.dead_walk", lambda: [DEAD_WALK_BUDGET + DEAD_WALK_PER_NODE * len(ctx.method.nodes)])
    chain: list[Node] = [d2h]
    seen = {d2h.name}
    i = 0
    while i < len(chain):
        if left[0] <= 0:
            return _no(finding, "not planned: the dead nodes it feeds are past the planning's work budget "
                                "(a chain of dead copies, each feeding the rest), which keeps the check linear; "
                                "`xferlint fix` removes what it planned, and run again it plans more")
        left[0] -= 1
        node = chain[i]
        i += 1
        for vid in node.outputs:
            if facts.is_output(vid) or facts.is_live(vid):
                return _no(finding, f"{tick(vid)} is used after all")
            for reader in facts.readers(vid):
                if reader.name in seen:
                    continue
                if reader.kind not in _PURE or reader.mutates or reader.scope != d2h.scope:
                    return _no(finding, f"its result reaches {tick(reader.name)}, which the fix does not remove")
                seen.add(reader.name)
                chain.append(reader)
    extra = f" and the {len(chain) - 1} dead node(s) it feeds" if len(chain) > 1 else ""
    return _plan(finding, f"remove {tick(d2h.name)}{extra}", removes=tuple(n.name for n in reversed(chain)))


def plan_duplicate_transfer(ctx: RuleContext, finding: Finding) -> Planned:
    """XF004: rewire the duplicate's readers to the first copy, drop the duplicate."""
    facts = ctx.facts
    first, dup = _node(ctx, finding, "copy"), _node(ctx, finding, "duplicate")
    if first is None or dup is None or not dup.inputs or copy_target(dup) is None:
        return _no(finding, "the copies are no longer in the program")
    pair = DuplicateCopy(first=first, duplicate=dup, value=dup.inputs[0], device=copy_target(dup))
    how = applicability(facts, pair)
    if how is None:
        return _no(finding, sharing_blocker(facts, pair) or "the copies cannot be shared")
    readers = dict.fromkeys(r.name for r in facts.readers(dup.output))
    rewires = [new_rewire(reader=name, old=dup.output, new=first.output) for name in readers]
    if facts.is_output(dup.output):
        rewires.append(new_rewire(reader=OUTPUT, old=dup.output, new=first.output))
    return _plan(
        finding,
        f"read {tick(first.name)} instead of {tick(dup.name)}, remove {tick(dup.name)}",
        applicability=how,
        rewires=tuple(rewires),
        removes=(dup.name,),
    )


PLANNERS: dict[str, Planner] = {
    "XF001": plan_redundant_round_trip,
    "XF002": plan_cross_device_staging,
    "XF003": plan_dead_device_to_host,
    "XF004": plan_duplicate_transfer,
}
