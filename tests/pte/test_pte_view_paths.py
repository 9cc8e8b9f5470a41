"""The `.pte` view builder's fast paths against their plain equivalents.

`_MethodBuilder` builds Nodes and Values without their dataclass `__init__` (slot by slot:
`fast_constructor`, `Frozen`) and gathers the values a delegate call may not write (`_Seen`)
in batches; each must give what the dataclass constructors and a per-instruction scan give.
"""

from __future__ import annotations

from dataclasses import fields

import pytest

from xferlint.analyzer.view import Node
from xferlint.frontends.pte import program as pp
from xferlint.frontends.pte import view as pte_view

NAMES = ["addsin-noelide", "cond-nested", "mixed-noelide", "map-nested", "two-methods", "addsin-legacy",
         "mixed-two-devices"]


@pytest.mark.parametrize("name", NAMES)
def test_view_without_fast_construction_is_the_same(pte_bytes, name, monkeypatch):
    data = pte_bytes(name)
    fast = pte_view.load_pte_bytes(data).view
    monkeypatch.setattr(pte_view, "_NODE_NEW", Node)  # the dataclass's own __init__
    monkeypatch.setattr(pte_view._VALUE, "slotted", None)  # Frozen then calls the class (or `replace`)
    plain = pte_view.load_pte_bytes(data).view
    assert fast == plain
    for a, b in zip(fast.methods, plain.methods):
        assert a.cfg == b.cfg
        for x, y in zip(list(a.nodes) + list(a.values.values()), list(b.nodes) + list(b.values.values())):
            assert type(x) is type(y) and _state(x) == _state(y)


def _state(obj) -> list:
    """Every field's name and value, in order (the classes are slotted: no `vars`)."""
    return [(f.name, getattr(obj, f.name)) for f in fields(obj)]


def _delegate_io_one_by_one(plan: pp.Plan) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Every delegate call's (inputs, outputs), with the values seen kept per instruction."""
    fixed = set(plan.inputs)
    probe = pte_view._MethodBuilder(plan, 0)
    fixed.update(probe.state)
    seen: set[int] = set()
    found = []
    for chain in plan.chains:
        for ins in chain.instructions:
            if ins.kind == pp.DELEGATE:
                found.append(pte_view.delegate_io(plan, ins.args, seen, fixed))
            seen.update(ins.args)
            if ins.kind == pp.MOVE:
                seen.update((ins.move_from, ins.move_to))
            elif ins.kind == pp.JUMP_FALSE:
                seen.add(ins.cond)
            elif ins.kind == pp.FREE:
                seen.add(ins.free)
    return found


@pytest.mark.parametrize("name", NAMES)
def test_delegate_outputs_match_a_per_instruction_scan(pte_bytes, name):
    program = pp.read_program(pte_bytes(name))
    view = pte_view.view_of(program, "x.pte", "x", None)[0]
    for plan, method in zip(program.plans, view.methods):
        expected = _delegate_io_one_by_one(plan)
        got = [n.outputs for n in method.nodes if n.kind.value == "delegate"]
        assert got == [tuple(map(pte_view.value_id, outputs)) for _, outputs in expected]
