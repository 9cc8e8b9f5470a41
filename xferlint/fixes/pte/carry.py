"""Memory-plan refusals carried from one fix pass to the next, when provably unchanged.

`fix_pte_loaded` runs a second pass over the program the first one patched, so that a
fix refused then (the memory plan did not allow it) is tried again once other copies are
gone. On a large program nearly every refusal is decided again the same way: the patch
touched instructions nowhere near its conflict. A refusal is carried over, instead of
being decided again, only when deciding it again is provably the same computation:

- it was decided before anything was accepted in its method's round (`_decide` with an
  empty `DeadClosure` and `MemoryCheck`), and is asked again under the same condition;
- the next pass makes the same plan for the same finding (planning is not skipped);
- nothing the decision read was changed by what was applied since. A decision reads the
  plan's nodes (the patch check, the dead-code closure, the edits), the nodes its live
  regions walked (their operands, results and predecessors), and the readers of the
  values it asked about (the plan's values, every region's family, what the removed
  nodes write). An applied round changes exactly: the nodes it removes and rewires, the
  predecessors of the nodes after a removed one, the readers of every value a removed
  node reads or writes and of every value a rewire swaps (method outputs included), and
  the exits when it removes one (then nothing of that method is carried).

The conflict is then the same one (its nodes renumbered), and so is the reason given.
`Carry` keeps these proofs per method, in the numbering of the program at hand.

A proof is built when it is first needed (a later pass asks for it, or a round is applied
and `advance` checks it), not when the refusal is decided: most refusals are never asked
about (a program where nothing is applied has no second pass). Building it later reads
the same things: the method and the plan are immutable, and the regions a proof is built
from are never changed once the trial that returned them is over (they are the original
regions `MemoryCheck` keeps while nothing is accepted, fresh ones, or a trial's layer over
an original one; only regions kept after a commit are grown, a fresh one is kept only when
its own plan is accepted, and proofs are only kept for refused plans, while nothing is
accepted). `keep` is given the proof's inputs only when none of the
regions is missing, so a deferred proof always exists, as an eager one would have.
"""

from __future__ import annotations

from typing import Callable, Iterable, NamedTuple, Optional, Sequence, Union

from xferlint.analyzer.view import MethodView
from xferlint.fixes.plan import OUTPUT, FixPlan, nodes_by_name
from xferlint.fixes.pte.memory import Conflict, WalkBudget


def signature(plan: FixPlan) -> tuple:
    """What identifies a plan's edits, by node names (the same plan made again)."""
    return (plan.code, plan.finding, tuple((r.reader, r.old, r.new) for r in plan.rewires), plan.removes,
            plan.removes_if_dead)


class Refusal(NamedTuple):
    """A memory-plan refusal and what deciding it read (node indices, values)."""

    plan: tuple  # `signature` of the refused plan
    conflict: tuple[str, int, str, int]  # value, writer node, other value, reader node
    nodes: frozenset[int]
    values: frozenset[str]


def plan_nodes(method: MethodView, plan: FixPlan) -> set[int]:
    """The nodes a plan names (its rewired readers, removes and removes_if_dead)."""
    by_name = nodes_by_name(method)
    names = [r.reader for r in plan.rewires if r.reader != OUTPUT]
    names += [*plan.removes, *plan.removes_if_dead]
    return {by_name[n].index for n in names if n in by_name}


def refusal(method: MethodView, plan: FixPlan, conflict: Conflict, regions: Sequence,
            delta_nodes: Iterable[int]) -> Optional[Refusal]:
    """The proof of one refusal: `regions` are the live regions its memory trial read
    (`MemoryCheck.trial`); None when one of them is not at hand."""
    if any(region is None for region in regions):
        return None
    nodes = plan_nodes(method, plan)
    nodes.update(delta_nodes)
    values: set[str] = set()
    by_name = nodes_by_name(method)
    for name in plan.removes_if_dead:  # the closure asks who reads what they write
        if name in by_name:
            values.update(by_name[name].outputs)
    for region in regions:
        nodes.update(region.live)
        nodes.update(region.readers)
        base = getattr(region.live, "base", None)  # a trial's layer over a kept region
        if base is not None:
            nodes.update(base)
            nodes.update(region.readers.base)
        values.update(region.family)
    values.add(conflict.value)
    return Refusal(signature(plan), (conflict.value, conflict.writer.index, conflict.other, conflict.reader.index),
                   frozenset(nodes), frozenset(values))


Deferred = Callable[[], Refusal]  # builds a proof when first needed (see the module docstring)


class Carry:
    """Per method index: finding key -> the refusal that may be carried; and the walk
    budget every round and pass of the trial shares (`xferlint.fixes.pte.memory.WalkBudget`,
    None: each method's check has its own)."""

    def __init__(self, budget: Optional[WalkBudget] = None) -> None:
        self.methods: dict[int, dict[tuple, Union[Refusal, Deferred]]] = {}
        self.budget = budget

    def keep(self, index: int, key: tuple, proof: Union[Refusal, Deferred]) -> None:
        """Keep a proof, or what builds it (a callable, asked at most once)."""
        self.methods.setdefault(index, {})[key] = proof

    def _proof(self, proofs: dict, key: tuple) -> Optional[Refusal]:
        proof = proofs.get(key)
        if proof is not None and not isinstance(proof, Refusal):
            proof = proofs[key] = proof()
        return proof

    def conflict(self, index: int, method: MethodView, plan: FixPlan) -> Optional[Conflict]:
        """The conflict a trial of `plan` (with nothing accepted) would find, when proved
        unchanged since it was found; None: decide it."""
        proof = self._proof(self.methods.get(index, {}), plan.key)
        if proof is None or proof.plan != signature(plan):
            return None
        value, writer, other, reader = proof.conflict
        return Conflict(value=value, writer=method.nodes[writer], other=other, reader=method.nodes[reader])

    def advance(self, index: int, before: MethodView, after: MethodView, applied: Sequence[FixPlan],
                renames: dict[str, str], names: Optional[dict[str, str]] = None,
                moved: Optional[dict[int, int]] = None) -> None:
        """`applied` (resolved) turned `before` into `after` (`renames`: new name -> old):
        drop the proofs that read what changed, renumber the others. `names` (old name ->
        new) and `moved` (old node index -> new) are derived from `renames` when not given
        (the fix has them at hand: a method of a large program has 100,000 nodes)."""
        proofs = self.methods.get(index)
        if not proofs:
            return
        dirty, touched = _changed(before, applied)
        if dirty is None:
            del self.methods[index]
            return
        if names is None:
            names = {old: new for new, old in renames.items()}
        if moved is None:
            old_by_name, new_by_name = nodes_by_name(before), nodes_by_name(after)
            moved = {old_by_name[old].index: new_by_name[new].index for old, new in names.items()}
        kept: dict[tuple, Refusal] = {}
        for key in proofs:
            proof = self._proof(proofs, key)
            if not dirty.isdisjoint(proof.nodes) or not touched.isdisjoint(proof.values):
                continue
            renamed = _renamed(key, proof, names, moved)
            if renamed is not None:
                kept[renamed[0]] = renamed[1]
        self.methods[index] = kept


def _changed(method: MethodView, applied: Sequence[FixPlan]) -> tuple[Optional[set[int]], set[str]]:
    """(nodes whose operands, results or predecessors change, values whose readers change)
    when `applied` is patched into `method`; (None, ...) when its exits change too."""
    by_name = nodes_by_name(method)
    cfg = method.cfg
    dirty: set[int] = set()
    touched: set[str] = set()
    for plan in applied:
        for r in plan.rewires:
            touched.update((r.old, r.new))
            if r.reader != OUTPUT:
                dirty.add(by_name[r.reader].index)
        for name in plan.removes:
            node = by_name[name]
            dirty.add(node.index)
            touched.update(node.inputs)
            touched.update(node.outputs)
            if cfg is not None:
                if node.index in cfg.exits:
                    return None, touched
                dirty.update(cfg.successors[node.index])
    return dirty, touched


def _renamed(key: tuple, proof: Refusal, names: dict[str, str], moved: dict[int, int]) -> Optional[tuple]:
    """The key and proof in the patched program's numbering (None: a node is gone)."""
    try:
        code, method, finding = key
        plan_code, plan_finding, rewires, removes, if_dead = proof.plan
        value, writer, other, reader = proof.conflict
        name = names.__getitem__  # mapped over each tuple: a missing node raises KeyError all the same
        new_key = (code, method, tuple(map(name, finding)))
        plan = (plan_code, tuple(map(name, plan_finding)),
                tuple((r if r == OUTPUT else names[r], old, new) for r, old, new in rewires),
                tuple(map(name, removes)), tuple(map(name, if_dead)))
        return new_key, Refusal(plan, (value, moved[writer], other, moved[reader]),
                                frozenset(map(moved.__getitem__, proof.nodes)), proof.values)
    except KeyError:
        return None
