"""Fix plans: what a fix removes and rewires, decided on the view, applied elsewhere.

A `FixPlan` names view nodes (`Node.name`) and value ids, never FX nodes or flatbuffer
indices, so any frontend can apply it:

- `Rewire(reader, old, new)`: every operand of node `reader` that is value `old` becomes
  value `new` (`reader == OUTPUT`: the method's outputs). On an FX graph that is
  `reader.replace_input_with(old, new)`; in a `.pte` it is replacing the EValue index of
  `old` by that of `new` in the reader instruction's args (method outputs: in
  `ExecutionPlan.outputs`).
- `removes`: nodes to delete, together with the buffer each writes into (`out=` alloc on
  FX, the out tensor in a `.pte` KernelCall), after the rewires; nothing reads them then.
- `removes_if_dead`: nodes to delete only if, once every accepted plan of the method is
  applied, nothing reads them and they are not method outputs (XF001's D2H: dropped once
  dead, kept while it still feeds host code). `resolve()` turns them into `removes`.

Planning per method: findings -> one plan (or a `NoFix` that says why not) per finding ->
`select()` keeps plans that do not touch what another plan removes (the rest wait for the
next round, planned afresh on the fixed program) -> `resolve()`.
"""

from __future__ import annotations

from dataclasses import field
from typing import Iterable, NamedTuple, Optional, Sequence

from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.view import COPY_KINDS, MethodView, Node
from xferlint.findings import Applicability, Finding
from xferlint.frozen import fast_constructor
from xferlint.records import dataclass
from xferlint.run_caches import run_cache

OUTPUT = "<output>"  # Rewire.reader for the method's outputs


def finding_key(finding: Finding) -> tuple[str, str, tuple[str, ...]]:
    """What identifies a finding across re-reads of a program: rule, method, nodes."""
    return (finding.code, finding.method, tuple(finding.nodes))


@dataclass(frozen=True)
class Rewire:
    """A reader of a removed copy's result made to read another value instead."""

    reader: str  # node name, or OUTPUT
    old: str  # value id read now
    new: str  # value id read instead


@dataclass(frozen=True)
class RemovedCopy:
    """A copy a fix deletes, with the bytes it moved."""

    node: str
    kind: str  # "h2d" / "d2h"
    nbytes: Optional[int]  # None when the shape is symbolic


@dataclass(frozen=True)
class FixPlan:
    """The edits that fix one finding."""

    code: str
    name: str  # the rule's name
    method: str
    finding: tuple[str, ...]  # the finding's nodes: with code and method, its identity
    applicability: Applicability
    summary: str  # one line: what the fix does
    rewires: tuple[Rewire, ...] = ()
    removes: tuple[str, ...] = ()
    removes_if_dead: tuple[str, ...] = ()
    copies: tuple[RemovedCopy, ...] = field(default=(), compare=False)  # filled by resolve()

    @property
    def key(self) -> tuple[str, str, tuple[str, ...]]:
        return (self.code, self.method, self.finding)

    @property
    def touched(self) -> frozenset[str]:
        """Nodes whose operands this plan edits."""
        return frozenset(r.reader for r in self.rewires)

    @property
    def nbytes(self) -> Optional[int]:
        """Bytes per call the removed copies moved (None if any is symbolic)."""
        sizes = [c.nbytes for c in self.copies]
        return None if any(s is None for s in sizes) else sum(s for s in sizes if s is not None)


# A plan and its rewires per fixable finding, planned again each round and pass of a fix
# trial (tens of thousands on a large `.pte`): built by keyword without the frozen
# dataclass `__init__` (one `object.__setattr__` per field, most of a plan's cost).
new_plan = fast_constructor(FixPlan)
new_rewire = fast_constructor(Rewire)


@dataclass(frozen=True)
class NoFix:
    """A finding that has a rule with a fix, but not one xferlint can apply here."""

    code: str
    name: str
    method: str
    finding: tuple[str, ...]
    reason: str

    @property
    def key(self) -> tuple[str, str, tuple[str, ...]]:
        return (self.code, self.method, self.finding)


def select(plans: Sequence[FixPlan]) -> tuple[list[FixPlan], list[FixPlan]]:
    """(accepted, deferred): in order, a plan is accepted unless it removes a node an
    accepted plan touches or removes, or touches a node an accepted plan removes.
    Deferred plans are planned again on the fixed program (often they are gone then)."""
    accepted: list[FixPlan] = []
    deferred: list[FixPlan] = []
    removed: set[str] = set()
    involved: set[str] = set()
    for plan in plans:
        removes = set(plan.removes)
        needs = set(plan.touched) | set(plan.removes_if_dead)
        # membership per node, not `removed | involved`: a union per plan was quadratic
        if any(n in removed or n in involved for n in removes) or any(n in removed for n in needs):
            deferred.append(plan)
            continue
        accepted.append(plan)
        removed |= removes
        involved |= needs
    return accepted, deferred


_BY_NAME: dict[int, tuple[MethodView, dict[str, Node]]] = run_cache()  # for one command


def nodes_by_name(method: MethodView) -> dict[str, Node]:
    """`method`'s nodes by name (built once per method: a fix asks for every plan; read only)."""
    hit = _BY_NAME.get(id(method))
    if hit is not None and hit[0] is method:
        return hit[1]
    by_name = {n.name: n for n in method.nodes}
    if len(_BY_NAME) >= 8:
        del _BY_NAME[next(iter(_BY_NAME))]
    _BY_NAME[id(method)] = (method, by_name)
    return by_name


def resolve(method: MethodView, facts: DeviceFacts, plans: Sequence[FixPlan]) -> list[FixPlan]:
    """Decide every `removes_if_dead` (a node goes when, after all the plans' rewires and
    removals, nothing reads it and it is no method output; the first plan that asked for
    it removes it) and record the copies each plan removes, with their sizes."""
    removed: set[str] = {n for p in plans for n in p.removes}
    rewired_away: set[tuple[str, str]] = {(r.reader, r.old) for p in plans for r in p.rewires}
    outputs_rewired = {r.old for p in plans for r in p.rewires if r.reader == OUTPUT}
    by_name = nodes_by_name(method)

    def dead(node: Node) -> bool:
        for vid in node.outputs:
            if facts.is_output(vid) and vid not in outputs_rewired:
                return False
            if any(r.name not in removed and (r.name, vid) not in rewired_away for r in facts.readers(vid)):
                return False
        return True

    granted: dict[str, tuple] = {}  # node -> key of the plan that removes it
    changed = True
    while changed:
        changed = False
        for plan in plans:
            for name in plan.removes_if_dead:
                node = by_name.get(name)
                if name not in removed and node is not None and dead(node):
                    removed.add(name)
                    granted[name] = plan.key
                    changed = True
    return [_resolved(plan, granted, by_name, facts) for plan in plans]


def _resolved(plan: FixPlan, granted: dict[str, tuple], by_name: dict[str, Node], facts: DeviceFacts) -> FixPlan:
    """`plan` with the `removes_if_dead` nodes credited to it removed, and its copies."""
    removes = plan.removes
    if plan.removes_if_dead:
        key = plan.key
        removes += tuple(n for n in plan.removes_if_dead if granted.get(n) == key)
    copies = []
    for n in removes:
        node = by_name.get(n)
        if node is not None and node.kind in COPY_KINDS:
            copies.append(RemovedCopy(node=n, kind=node.kind.value, nbytes=facts.nbytes(node.output)))
    # a new plan, not dataclasses.replace: a plan per finding, and replace() is slow
    return new_plan(code=plan.code, name=plan.name, method=plan.method, finding=plan.finding,
                    applicability=plan.applicability, summary=plan.summary, rewires=plan.rewires,
                    removes=removes, removes_if_dead=(), copies=tuple(copies))


class Step(NamedTuple):
    """What adding one plan to a `DeadClosure` adds (see `DeadClosure.trial`)."""

    removed: frozenset[str]  # nodes removed now: the plan's removes and every node dead because of it
    away: frozenset[tuple[str, str]]  # (reader, value) reads the plan moves elsewhere
    outputs: frozenset[str]  # method outputs the plan rewires
    pending: tuple[str, ...]  # the plan's removes_if_dead that stay (not dead yet)


class DeadClosure:
    """The nodes that accepted plans remove, grown one plan at a time: each plan's
    `removes`, and every `removes_if_dead` node that is dead (as `resolve()` decides it:
    no reader left that is neither removed nor rewired away, and no method output).
    Deadness only grows as plans are added, so the set is the same in any order, and a
    plan costs the nodes it can affect, not the plans before it; `resolve()` then says
    which plan each removal is credited to."""

    def __init__(self, method: MethodView, facts: DeviceFacts) -> None:
        self.facts = facts
        self.by_name = nodes_by_name(method)
        self.removed: set[str] = set()
        self.away: set[tuple[str, str]] = set()
        self.outputs: set[str] = set()
        self.pending: set[str] = set()
        self.producers: dict[str, set[str]] = {}  # value -> pending nodes that write it

    def trial(self, plan: FixPlan) -> Step:
        """What accepting `plan` (unresolved) on top of the accepted ones would remove."""
        removed = {n for n in plan.removes if n not in self.removed}
        away = {(r.reader, r.old) for r in plan.rewires} - self.away
        outputs = {r.old for r in plan.rewires if r.reader == OUTPUT} - self.outputs
        mine = [n for n in plan.removes_if_dead if n not in self.removed and n in self.by_name]
        local: dict[str, list[str]] = {}
        for name in mine:
            for vid in self.by_name[name].outputs:
                local.setdefault(vid, []).append(name)

        def producers(vid: str) -> list[str]:
            return [*self.producers.get(vid, ()), *local.get(vid, ())]

        def dead(node: Node) -> bool:
            for vid in node.outputs:
                if self.facts.is_output(vid) and vid not in self.outputs and vid not in outputs:
                    return False
                for r in self.facts.readers(vid):
                    key = (r.name, vid)
                    if r.name not in self.removed and r.name not in removed and key not in self.away \
                            and key not in away:
                        return False
            return True

        work = list(mine)
        for name in removed:
            node = self.by_name.get(name)
            work.extend(p for v in (node.inputs if node is not None else ()) for p in producers(v))
        for _, old in away:
            work.extend(producers(old))
        for old in outputs:
            work.extend(producers(old))
        eligible = set(mine)
        while work:
            name = work.pop()
            if name in removed or name in self.removed or not (name in self.pending or name in eligible):
                continue
            node = self.by_name[name]
            if dead(node):
                removed.add(name)
                for v in node.inputs:
                    work.extend(producers(v))
        return Step(frozenset(removed), frozenset(away), frozenset(outputs),
                    tuple(n for n in mine if n not in removed))

    def commit(self, step: Step) -> None:
        self.removed |= step.removed
        self.away |= step.away
        self.outputs |= step.outputs
        for name in step.removed:
            if name in self.pending:
                self.pending.discard(name)
                for vid in self.by_name[name].outputs:
                    self.producers[vid].discard(name)
        for name in step.pending:
            if name not in self.pending:
                self.pending.add(name)
                for vid in self.by_name[name].outputs:
                    self.producers.setdefault(vid, set()).add(name)


def edits(plans: Iterable[FixPlan]) -> tuple[list[Rewire], list[str]]:
    """All rewires and removals of resolved plans, in order, without repeats."""
    # dicts as ordered sets: a list scanned per item was quadratic in the plans (10,000 round
    # trips: 33 s), and a Rewire compares field by field in Python
    rewires: dict[Rewire, None] = {}
    removes: dict[str, None] = {}
    for plan in plans:
        rewires.update(dict.fromkeys(plan.rewires))
        removes.update(dict.fromkeys(plan.removes))
    return list(rewires), list(removes)
