"""The `.pte` fix trial decides plan by plan, incrementally (`DeadClosure`, `MemoryCheck`
keeping and growing live regions); it must decide exactly what deciding each plan from
scratch decides: `resolve()` over the accepted plans plus the candidate, and a memory
check with no region kept. Checked on lowered programs and on synthetic ones whose memory
plans are reshuffled so that some tensors share bytes and some do not."""

from __future__ import annotations

import dataclasses
import random

import pytest

from xferlint.analyzer.view import Placement
from xferlint.fixes.engine import plan_method
from xferlint.fixes.plan import DeadClosure, resolve
from xferlint.fixes.pte.fix import _delta
from xferlint.fixes.pte.memory import Delta, MemoryCheck
from xferlint.frontends.pte.view import load_pte_bytes
from xferlint.selection import select_rules
from xferlint.testing import synthetic_pte as sp

LOWERED = ["addsin-noelide", "addsin-noelide-naive", "mixed-noelide", "mixed-noelide-naive", "mixed-rewired",
           "shared-input-naive", "cond-after-dead-copy"]


def _merged(deltas: list[Delta]) -> Delta:
    rewires: dict[int, dict[str, str]] = {}
    outputs: dict[str, str] = {}
    removed: set[int] = set()
    for d in deltas:
        for i, swap in d.rewires.items():
            rewires.setdefault(i, {}).update(swap)
        outputs.update(d.outputs)
        removed |= d.removed
    return Delta(rewires, frozenset(removed), outputs)


def _decisions(view, method, unsafe: bool = False) -> tuple[list[bool], list[bool]]:
    """(incremental, from scratch): per selected plan, accepted or not."""
    planning = plan_method(view, method, select_rules(), unsafe_fixes=unsafe)
    closure, memory = DeadClosure(method, planning.facts), MemoryCheck(method, planning.facts)
    fast, slow, accepted, deltas = [], [], [], []
    for selected in planning.selected:
        extended = [r.new for r in selected.rewires]
        step = closure.trial(selected)
        delta = _delta(method, selected, step.removed)
        ok = memory.trial(delta, extended) is None
        # from scratch: the accepted plans and the candidate resolved together
        union = {n for p in resolve(method, planning.facts, accepted + [selected]) for n in p.removes}
        before = {n for p in resolve(method, planning.facts, accepted) for n in p.removes} if accepted else set()
        assert step.removed == union - before
        fresh = MemoryCheck(method, planning.facts)
        fresh.commit(_merged(deltas), ())
        slow.append(fresh.trial(delta, extended) is None)
        fast.append(ok)
        if ok:
            closure.commit(step)
            memory.commit(delta, extended)
            accepted.append(selected)
            deltas.append(delta)
    return fast, slow


def _reshuffled(method, seed: int):
    """The method with every planned tensor moved to one of a few 64-byte slots."""
    rng = random.Random(seed)
    values = {}
    for vid, value in method.values.items():
        p = value.placement
        if p is not None:
            value = dataclasses.replace(value, placement=Placement(p.buffer, 64 * rng.randrange(4), p.nbytes or 64))
        values[vid] = value
    return dataclasses.replace(method, values=values)


@pytest.mark.parametrize("name", LOWERED)
def test_incremental_decisions_on_lowered_programs(pte_bytes, name):
    view = load_pte_bytes(pte_bytes(name), label=f"{name}.pte").view
    for method in view.methods:
        fast, slow = _decisions(view, method)
        assert fast == slow


@pytest.mark.parametrize("build, mixed", [(lambda: sp.fan_out(40), True), (lambda: sp.ladder(12), True),
                                          (lambda: sp.in_place_ladder(15), False), (lambda: sp.loops(6), True)],
                         ids=["fan-out", "ladder", "in-place", "loops"])
def test_incremental_decisions_on_reshuffled_memory_plans(build, mixed):
    view = load_pte_bytes(build(), label="synthetic.pte").view
    seen = set()
    for seed in range(12):
        method = _reshuffled(view.methods[0], seed)
        fast, slow = _decisions(dataclasses.replace(view, methods=(method,)), method)
        assert fast == slow
        seen.add((any(fast), not all(fast)))
    assert any(accepted for accepted, _ in seen)
    if mixed:  # some plans accepted and some refused in one method: kept regions grown and asked
        assert (True, True) in seen


@pytest.mark.parametrize("build, plans", [
    (lambda: sp.returned_copies(6, round_trip=True), 6),
    (lambda: sp.returned_copies(6, own_bytes=True, round_trip=True), 6),
    (sp.returned_copy_of_a_reused_slot, 1),
], ids=["one-slot", "own-bytes", "reused-slot"])
def test_incremental_decisions_with_unsafe_fixes_returning_another_copy(build, plans):
    # an unsafe XF004 fix returns the first copy instead of a duplicate: a first copy returned
    # already keeps its region (live at every exit as it was); one returned only now has it
    # computed afresh, as the write into its reused bytes after its last read shows
    view = load_pte_bytes(build(), label="returned.pte").view
    seen = set()
    for seed in range(16):
        method = view.methods[0] if seed == 0 else _reshuffled(view.methods[0], seed)
        fast, slow = _decisions(dataclasses.replace(view, methods=(method,)), method, unsafe=True)
        assert fast == slow
        assert len(fast) == plans
        seen.add((any(fast), not all(fast)))
    assert (False, True) in seen if plans == 1 else (True, True) in seen and (True, False) in seen
