"""A memory-plan refusal carried from one fix pass to the next (`xferlint.fixes.pte.carry`)
must be exactly what deciding it again decides: the same fixes applied, the same refusals
with the same reasons, the same bytes, on lowered, synthetic and fuzzed programs; and a
refusal whose conflict the first pass removed is decided again, and accepted."""

from __future__ import annotations

import pytest

from pte_fuzz import fixable_mutants
from xferlint.errors import XferlintError
from xferlint.fixes.pte import carry as carry_module
from xferlint.fixes.pte import fix as fix_module
from xferlint.fixes.pte.fix import fix_pte_bytes
from xferlint.selection import select_rules
from xferlint.testing import synthetic_pte as sp

from tests.pte.test_pte_fix_incremental import LOWERED


class _NoCarry(carry_module.Carry):
    """Carries nothing: every pass decides every plan (the long way)."""

    def conflict(self, index, method, plan):
        return None


class _Counting(carry_module.Carry):
    carried = 0

    def conflict(self, index, method, plan):
        found = super().conflict(index, method, plan)
        _Counting.carried += found is not None
        return found


class _Eager(carry_module.Carry):
    """Builds every proof when it is kept as well, and checks that the deferred build
    (what `Carry` does) reads the same: the regions were not changed in between."""

    compared = 0
    kept: list = []

    def keep(self, index, key, proof):
        if not callable(proof):
            return super().keep(index, key, proof)
        build, eager = proof, proof()

        def deferred():
            late = build()
            assert late == eager, key
            _Eager.compared += 1
            return late

        _Eager.kept.append(deferred)
        super().keep(index, key, deferred)


def _said(result):
    applied = [(p.key, p.removes, p.rewires) for p in result.applied]
    skipped = [(s.code, s.method, s.nodes, s.reason, s.unsafe) for s in result.skipped]
    return applied, skipped, bytes(result.buffer)


def _both(monkeypatch, data: bytes):
    """(with carrying, without): what fixing `data` says."""
    rules = select_rules()
    monkeypatch.setattr(fix_module, "Carry", _Counting)
    fast = _said(fix_pte_bytes(data, rules))
    monkeypatch.setattr(fix_module, "Carry", _NoCarry)
    slow = _said(fix_pte_bytes(data, rules))
    return fast, slow


def _conflict_removed_by_the_first_pass() -> bytes:
    """A round trip `y` -> host `x` -> two copies back (`a`, `b`) -> one delegate. Removing
    `a` (XF001) would keep `y` alive while `b` writes over it: refused. Removing `b` (XF001)
    is allowed and applied, so on the second pass nothing writes over `y` any more, and
    removing `a` is accepted."""
    b = sp.PlanBuilder()
    (y,) = b.delegate([b.h2d(b.input())])
    x = b.d2h(y)
    a, second = b.h2d(x), b.h2d(x)
    (z,) = b.delegate([a, second])
    b.outputs.append(b.d2h(z))
    plan = b.plan()
    offsets = {y: 0, second: 0, a: 64, z: 128}  # `b` shares bytes with `y`; the others do not
    for vid, offset in offsets.items():
        plan.values[vid].val.allocation_info.memory_offset_low = offset
    plan.non_const_buffer_sizes = [0, 64, 256]
    return sp.serialize([plan])


def test_a_refusal_whose_conflict_the_first_pass_removed_is_accepted(monkeypatch):
    data = _conflict_removed_by_the_first_pass()
    fast, slow = _both(monkeypatch, data)
    assert fast == slow
    applied = [key for key, _, _ in fast[0]]
    assert [code for code, _, _ in applied] == ["XF001", "XF001"]  # the second on the second pass
    assert not fast[1]


def test_a_proof_is_dropped_when_what_it_read_is_patched():
    """`Carry.advance` keeps a proof only when the applied plans touched none of its nodes
    (removed, rewired, or after a removed one) and none of its values' readers."""
    from xferlint.fixes.plan import FixPlan, Rewire
    from xferlint.findings import Applicability
    from xferlint.frontends.pte.view import load_pte_bytes

    method = load_pte_bytes(sp.ladder(4), label="ladder.pte").view.methods[0]
    nodes = method.nodes
    first = 1  # the first instruction's node (after the input's)
    h2d = next(n for n in nodes if n.kind.name == "H2D" and n.index > 10)
    reader = next(n for n in nodes if h2d.output in n.inputs)
    after_h2d = method.cfg.successors[h2d.index][0]
    far = nodes[-2].index
    plan = FixPlan(code="XF004", name="duplicate-transfer", method=method.name, finding=(h2d.name,),
                   applicability=Applicability.SAFE, summary="", rewires=(Rewire(reader.name, h2d.output, "v0"),),
                   removes=(h2d.name,))

    def proof(nodes_read, values_read):
        return carry_module.Refusal(("XF001", (), (), (), ()), ("v0", far, "v0", far), frozenset(nodes_read),
                                    frozenset(values_read))

    proofs = {
        "removed": proof({h2d.index}, ()),
        "rewired": proof({reader.index}, ()),
        "after a removed one": proof({after_h2d}, ()),
        "a swapped value's readers": proof((), {"v0"}),
        "what a removed node reads": proof((), set(h2d.inputs)),
        "untouched": proof({far}, {nodes[-2].outputs[0]}),
    }
    carry = carry_module.Carry()
    for name, p in proofs.items():
        carry.keep(0, (name, method.name, (nodes[first].name,)), p)  # one key each
    renames = {n.name: n.name for n in nodes if n.index != h2d.index}
    carry.advance(0, method, method, [plan], renames)
    assert [key[0] for key in carry.methods[0]] == ["untouched"]


@pytest.mark.parametrize("build", [lambda: sp.ladder(30), lambda: sp.methods(5), lambda: sp.loops(8),
                                   lambda: sp.fan_out(30), lambda: sp.in_place_ladder(10)],
                         ids=["ladder", "methods", "loops", "fan-out", "in-place"])
def test_carrying_decides_what_deciding_again_does_on_synthetic_programs(monkeypatch, build):
    fast, slow = _both(monkeypatch, build())
    assert fast == slow


@pytest.mark.parametrize("build", [lambda: sp.ladder(30), lambda: sp.loops(8), lambda: sp.fan_out(30),
                                   lambda: sp.in_place_ladder(10), _conflict_removed_by_the_first_pass],
                         ids=["ladder", "loops", "fan-out", "in-place", "second-pass"])
def test_a_proof_built_when_first_asked_for_is_the_one_built_when_kept(monkeypatch, build):
    _Eager.compared = 0
    monkeypatch.setattr(fix_module, "Carry", _Eager)
    fix_pte_bytes(build(), select_rules())
    assert _Eager.compared or build is not sp.ladder


def test_deferred_proofs_are_the_eager_ones_on_fuzzed_programs(monkeypatch, pte_bytes):
    """Every proof kept, built once the whole fix is over (the latest it could be), is the
    one built when it was kept."""
    monkeypatch.setattr(fix_module, "Carry", _Eager)
    _Eager.compared = 0
    for _, data in fixable_mutants(pte_bytes):
        _Eager.kept = []
        try:
            fix_pte_bytes(data, select_rules())
        except XferlintError:
            continue
        for deferred in _Eager.kept:
            deferred()
    assert _Eager.compared


def test_carrying_is_used(monkeypatch):
    _Counting.carried = 0
    fast, slow = _both(monkeypatch, sp.ladder(30))
    assert fast == slow and _Counting.carried == 2 * 29  # every round trip's two refusals


@pytest.mark.parametrize("name", LOWERED)
def test_carrying_decides_what_deciding_again_does_on_lowered_programs(monkeypatch, pte_bytes, name):
    fast, slow = _both(monkeypatch, pte_bytes(name))
    assert fast == slow


def test_carrying_decides_what_deciding_again_does_on_fuzzed_programs(monkeypatch, pte_bytes):
    """Mutated fixable programs (the fuzz test's seed, whose case 382 needs a second pass)."""
    compared = 0
    for case, data in fixable_mutants(pte_bytes):
        try:
            fast, slow = _both(monkeypatch, data)
        except XferlintError:
            continue
        assert fast == slow, case
        compared += 1
    assert compared


def test_refusals_name_the_findings_of_the_program_the_fix_started_from():
    """When the second pass applies a fix, its refusals are decided on the patched program
    (its instructions renumbered) and must still name the original program's findings."""
    from xferlint.frontends.pte.view import load_pte_bytes
    from xferlint.pipeline import analyze

    b = sp.PlanBuilder()
    (y,) = b.delegate([b.h2d(b.input())])
    x = b.d2h(y)
    a, second = b.h2d(x), b.h2d(x)
    (z,) = b.delegate([a, second])
    (y2,) = b.delegate([b.h2d(b.d2h(z))])  # then a round trip the memory plan never allows
    (z2,) = b.delegate([b.h2d(b.d2h(y2))])
    b.outputs.append(b.d2h(z2))
    plan = b.plan()
    for vid, offset in {y: 0, second: 0, a: 64, z: 128}.items():
        plan.values[vid].val.allocation_info.memory_offset_low = offset
    plan.non_const_buffer_sizes = [0, 64, 256]
    data = sp.serialize([plan])
    rules = select_rules()
    result = fix_pte_bytes(data, rules)
    assert len(result.applied) == 3  # `b`'s round trip, then `a`'s on the second pass
    refused = {(s.code, s.method, s.nodes) for s in result.skipped}
    assert refused
    loaded = load_pte_bytes(data, label="program.pte")
    found = {(f.code, f.method, tuple(f.nodes)) for f in analyze(loaded.view, rules)}
    # the last round trip (into `instr 11`, the last delegate), not the one pass 1 fixed
    # whose nodes the renumbered program's instructions 5-8 would name
    assert refused == {key for key in found if key[0] == "XF001" and key[2][-1].startswith("instr 11 ")}
