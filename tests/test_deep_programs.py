"""Programs deeper than Python's stack: chains of thousands of host ops, moves and aliases
are followed in loops, not by recursion (a parameter through 5,000 host ops once ended in
"internal error ... RecursionError")."""

from __future__ import annotations

import sys

from xferlint.analyzer.cfg import ControlFlowGraph
from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.lattice import CPU
from xferlint.analyzer.view import MethodView, Node, OpKind, ProgramView, TensorMeta, Value
from xferlint.frontends.pte.view import load_pte_bytes
from xferlint.pipeline import analyze
from xferlint.rules import _words as words
from xferlint.rules.base import RuleContext
from xferlint.selection import select_rules
from xferlint.testing import synthetic_pte as sp

DEEP = 3 * sys.getrecursionlimit()


def test_a_parameter_through_thousands_of_host_ops_is_one_constant_transfer():
    view = load_pte_bytes(sp.constant_chain(DEEP), label="chain.pte").view
    findings = analyze(view, select_rules(select=["XF006"]), transfers=[])
    assert [f.code for f in findings] == ["XF006"]
    roles = [s.role for s in findings[0].steps]
    # the whole chain is followed; the path lists the host ops nearest the copy
    assert roles == ["constant"] + ["host-op"] * 16 + ["h2d", "consumer"]
    assert findings[0].steps[-3].node == f"instr {DEEP - 1} (aten::cos.out)"
    assert f"the last 16 of its {DEEP:,} host ops" in findings[0].detail
    assert findings[0].bytes == 64


def _chain_of_moves(length: int, cycle: bool = False) -> MethodView:
    """x (an input) moved `length` times; with `cycle`, the last move writes the first's
    operand again inside a loop, so the moves feed each other."""
    meta = TensorMeta(shape=(4, 4), dtype="float32", nbytes=64)
    nodes = [Node(index=0, name="x", kind=OpKind.INPUT, target="input", inputs=(), outputs=("x",))]
    names = ["x"] + [f"m{k}" for k in range(length)]
    for k in range(length):
        nodes.append(Node(index=k + 1, name=f"move{k}", kind=OpKind.MOVE, target="move",
                          inputs=(names[k],), outputs=(names[k + 1],)))
    successors = [(i + 1,) if i + 1 < len(nodes) else () for i in range(len(nodes))]
    if cycle:  # the first move reads m{last} too: the last move jumps back to it
        nodes[1] = Node(index=1, name="move0", kind=OpKind.MOVE, target="move", inputs=(names[-1],),
                        outputs=("m0",))
        successors[-1] = (1,)
    values = {v: Value(id=v, tensor=meta, declared_device=CPU) for v in names}
    cfg = ControlFlowGraph(successors=tuple(successors), exits=frozenset({len(nodes) - 1}))
    return MethodView(name="forward", nodes=tuple(nodes), values=values, inputs=("x",),
                      outputs=(names[-1],), cfg=cfg)


def _context(method: MethodView) -> RuleContext:
    view = ProgramView(input="hand.pte", name="hand", kind="pte", methods=(method,))
    return RuleContext(program=view, method=method, facts=DeviceFacts.compute(method))


def test_a_value_moved_thousands_of_times_is_named_by_its_input():
    method = _chain_of_moves(DEEP)
    assert words.subject(_context(method), method.nodes[-1]) == words.input_name(method.nodes[0])


def test_moves_that_feed_each_other_round_a_loop_still_get_a_name():
    method = _chain_of_moves(5, cycle=True)
    assert words.subject(_context(method), method.nodes[-1]) == "the move result"


def test_a_value_of_many_constants_lists_the_first_16_and_counts_them():
    b = sp.PlanBuilder()
    constants = [b.constant() for _ in range(20)]
    joined = b.tensor()
    b.kernel("aten::cat", "out", constants + [joined, joined])
    (y,) = b.delegate([b.h2d(joined)])
    b.outputs.append(b.d2h(y))
    view = load_pte_bytes(sp.serialize([b.plan()], constant=True), label="many.pte").view
    (finding,) = analyze(view, select_rules(select=["XF006"]), transfers=[])
    assert [s.role for s in finding.steps] == ["constant"] * 16 + ["host-op", "h2d", "consumer"]
    assert finding.detail.endswith(" The path lists the first 16 of its 20 constants and its 1 host op.")
