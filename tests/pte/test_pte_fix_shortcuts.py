"""Shortcuts of the `.pte` fix trial must decide, and say, exactly what the long way does:

- `MemoryCheck` grows a layer over a value's original region while no edit is accepted
  (instead of computing the region afresh a second time): the same conflict (value,
  writer, other tensor, reader) as a check that keeps no original region;
- `_Patchable` checks a selected plan's removes and removes_if_dead instead of resolving
  every plan: the same patch problem as `_patch_problem` on the resolved plan.

Checked on lowered programs and on synthetic ones whose memory plans are reshuffled so
that some tensors share bytes and some do not."""

from __future__ import annotations

import dataclasses

import pytest

from xferlint.fixes.engine import plan_method
from xferlint.fixes.plan import DeadClosure
from xferlint.fixes.pte.fix import _delta, _Patchable, _patch_problem
from xferlint.fixes.pte.memory import MemoryCheck
from xferlint.frontends.pte.view import load_pte_bytes
from xferlint.selection import select_rules
from xferlint.testing import synthetic_pte as sp

from tests.pte.test_pte_fix_incremental import LOWERED, _merged, _reshuffled

SYNTHETIC = [lambda: sp.fan_out(40), lambda: sp.ladder(12), lambda: sp.in_place_ladder(15), lambda: sp.loops(6),
             lambda: sp.methods(3)]


class _Afresh(MemoryCheck):
    """A memory check that keeps no original region: every region not kept by a commit is
    computed afresh with the trial's edits (the long way)."""

    def _kept(self, value):
        return self._regions.get(value)


def _said(conflict):
    if conflict is None:
        return None
    return conflict.value, conflict.writer.index, conflict.other, conflict.reader.index


def _conflicts(view, method) -> tuple[list, list]:
    """(with the shortcut, the long way): per selected plan, the conflict its trial reports."""
    planning = plan_method(view, method, select_rules())
    closure, memory = DeadClosure(method, planning.facts), MemoryCheck(method, planning.facts)
    fast, slow, deltas = [], [], []
    for selected in planning.selected:
        extended = [r.new for r in selected.rewires]
        step = closure.trial(selected)
        delta = _delta(method, selected, step.removed)
        found = memory.trial(delta, extended)
        afresh = _Afresh(method, planning.facts)
        if deltas:
            afresh.commit(_merged(deltas), ())
        fast.append(_said(found))
        slow.append(_said(afresh.trial(delta, extended)))
        if found is None:
            closure.commit(step)
            memory.commit(delta, extended)
            deltas.append(delta)
    return fast, slow


@pytest.mark.parametrize("name", LOWERED)
def test_memory_shortcut_says_what_the_long_way_says_on_lowered_programs(pte_bytes, name):
    view = load_pte_bytes(pte_bytes(name), label=f"{name}.pte").view
    for method in view.methods:
        fast, slow = _conflicts(view, method)
        assert fast == slow


@pytest.mark.parametrize("index", range(len(SYNTHETIC)))
def test_memory_shortcut_says_what_the_long_way_says_on_reshuffled_plans(index):
    view = load_pte_bytes(SYNTHETIC[index](), label="synthetic.pte").view
    refused = 0
    for seed in range(12):
        method = _reshuffled(view.methods[0], seed)
        fast, slow = _conflicts(dataclasses.replace(view, methods=(method,)), method)
        assert fast == slow
        refused += sum(c is not None for c in fast)
    if index != 2:  # the in-place ladder removes dead copies: nothing kept alive, nothing refused
        assert refused


def _patch_problems(loaded) -> list[tuple]:
    """(unresolved, resolved): per selected plan, the patch problem each check reports."""
    pairs = []
    view, native = loaded.view, loaded.native
    for method in view.methods:
        planning = plan_method(view, method, select_rules(), resolved=False)
        patchable = _Patchable(method, planning, native)
        resolved = planning.resolve(planning.selected)
        pairs.extend((patchable.problem(j), _patch_problem(method, plan, native)) for j, plan in enumerate(resolved))
    return pairs


@pytest.mark.parametrize("name", LOWERED)
def test_patch_check_of_unresolved_plans_equals_the_resolved_one(pte_bytes, name):
    pairs = _patch_problems(load_pte_bytes(pte_bytes(name), label=f"{name}.pte"))
    assert all(fast == slow for fast, slow in pairs)


@pytest.mark.parametrize("index", range(len(SYNTHETIC)))
def test_patch_check_of_unresolved_synthetic_plans_equals_the_resolved_one(index):
    pairs = _patch_problems(load_pte_bytes(SYNTHETIC[index](), label="synthetic.pte"))
    assert pairs and all(fast == slow for fast, slow in pairs)


@pytest.mark.parametrize("index", range(len(SYNTHETIC)))
def test_patch_check_when_a_node_to_remove_is_no_instruction(index):
    """Plans made to name a method input (not an instruction) among removes_if_dead (then
    the resolved plan has it only if it is dead) or removes: both checks still agree."""
    loaded = load_pte_bytes(SYNTHETIC[index](), label="synthetic.pte")
    view, native = loaded.view, loaded.native
    problems = 0
    for method in view.methods:
        first = native.methods[method.name].first_instruction_node
        assert first > 0
        outsider = method.nodes[0].name
        planning = plan_method(view, method, select_rules(), resolved=False)
        for variant in ({"removes_if_dead": lambda p: p.removes_if_dead + (outsider,)},
                        {"removes": lambda p: (outsider,) + p.removes}):
            (field, edit), = variant.items()
            planning.selected = [dataclasses.replace(p, **{field: edit(p)}) for p in planning.selected]
            patchable = _Patchable(method, planning, native)
            resolved = planning.resolve(planning.selected)
            for j, plan in enumerate(resolved):
                fast, slow = patchable.problem(j), _patch_problem(method, plan, native)
                assert fast == slow
                problems += slow is not None
    assert problems


def test_planners_round_trip_lookup_equals_round_trip_at():
    from xferlint.fixes.planners import _round_trip
    from xferlint.rules._lint import lint_method
    from xferlint.rules._patterns import round_trip_at

    found = 0
    for build in SYNTHETIC:
        view = load_pte_bytes(build(), label="synthetic.pte").view
        for method in view.methods:
            ctx, _ = lint_method(view, method, select_rules())
            trips = [round_trip_at(ctx.facts, node) for node in method.nodes]
            assert [_round_trip(ctx, node) for node in method.nodes] == trips
            found += sum(t is not None for t in trips)
    assert found
