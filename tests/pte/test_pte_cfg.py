"""The instruction CFG and the analyses over it: structure, reaching definitions, liveness.

Real programs (`cond` and `map` lowered by ExecuTorch) check the edges the frontend builds
from fall-through and `JumpFalseCall`. The liveness cases that ExecuTorch's emitter never
produces (a D2H whose slot is overwritten before anyone reads it, a result read only on the
next loop iteration) are hand-built views with an explicit CFG: they pin down what "is a
D2H result ever read" means once slots are mutable. A property test checks that over
straight-line SSA the CFG liveness is the graph frontend's liveness.
"""

from __future__ import annotations

import random
from typing import Optional

from hypothesis import given, settings
from hypothesis import strategies as st

from xferlint.analyzer.cfg import ENTRY, ControlFlowGraph
from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.lattice import CPU, Device
from xferlint.analyzer.view import MethodView, Node, OpKind, ProgramView, TensorMeta, Value
from xferlint.pipeline import analyze
from xferlint.frontends.pte.view import load_pte_bytes
from xferlint.selection import select_rules

CUDA0 = Device("cuda", 0)
MATRIX = TensorMeta(shape=(4, 4), dtype="float32", nbytes=64)


def _method(ops, outputs, successors=None, exits=None, declared=None) -> MethodView:
    """ops: (kind, inputs, outputs[, device]); successors: per node, default straight line."""
    declared = declared or {}
    nodes, values = [], {}
    for i, (kind, ins, outs, *rest) in enumerate(ops):
        for v in ins + outs:
            values.setdefault(v, Value(id=v, tensor=MATRIX, declared_device=declared.get(v, CPU)))
        nodes.append(Node(index=i, name=f"n{i}_{kind.value}", kind=kind, target=kind.value, inputs=tuple(ins),
                          outputs=tuple(outs), device=rest[0] if rest else None))
    if successors is None:
        cfg = ControlFlowGraph.straight_line(len(nodes))
    else:
        cfg = ControlFlowGraph(successors=tuple(tuple(s) for s in successors), exits=frozenset(exits))
    inputs = tuple(n.outputs[0] for n in nodes if n.kind == OpKind.INPUT)
    return MethodView(name="forward", nodes=tuple(nodes), values=values, inputs=inputs, outputs=tuple(outputs),
                      cfg=cfg)


def _dead_d2h(method: MethodView) -> int:
    view = ProgramView(input="hand.pte", name="hand", kind="pte", methods=(method,))
    return sum(f.code == "XF003" for f in analyze(view, select_rules(select=["XF003"])))


def _without_cfg(method: MethodView) -> MethodView:
    return MethodView(name=method.name, nodes=method.nodes, values=method.values, inputs=method.inputs,
                      outputs=method.outputs)


# --------------------------------------------------------------------------- real programs


def test_cond_branches_join_at_their_merge(pte_bytes):
    method = load_pte_bytes(pte_bytes("cond-nested")).view.methods[0]
    cfg = method.cfg
    jumps = [n for n in method.nodes if n.target == "jump_false"]
    branch_jump, skip_false = jumps
    assert len(cfg.successors[branch_jump.index]) == 2  # into the true branch, or over it
    assert len(cfg.successors[skip_false.index]) <= 1  # constant False: always jumps
    moves = [n for n in method.nodes if n.kind == OpKind.MOVE]
    result = moves[0].outputs[0]
    assert result in method.outputs
    facts = DeviceFacts.compute(method)
    # both branches' MOVEs may be what the method returns
    assert facts._flow.at_exit[result] == frozenset(m.index for m in moves)
    # the branches are conditional, the code before the jump is not
    for m in moves:
        assert m.index in cfg.conditional_nodes
    assert branch_jump.index not in cfg.conditional_nodes
    assert all(facts.is_useful(m) for m in moves)


def test_map_body_is_a_loop_iterated_to_a_fixed_point(pte_bytes):
    method = load_pte_bytes(pte_bytes("map-nested")).view.methods[0]
    cfg = method.cfg
    facts = DeviceFacts.compute(method)
    body = [n for n in method.nodes if n.scope.startswith("loop")]
    assert body and all(n.index in cfg.loop_nodes for n in body)
    after = [n for n in method.nodes if n.index > max(b.index for b in body)]
    assert after and all(n.index not in cfg.loop_nodes for n in after)
    # the loop counter is read at the top of the body: on entry (initial value) and after
    # the increment at the bottom of the previous iteration
    select = next(n for n in body if "select_copy" in n.target)
    counter = select.inputs[-1]
    reaching = {w.target for w in facts.reaching_writers(select, counter)}
    assert "executorch_prim.add.Scalar" in reaching
    assert ENTRY in facts._flow.reaching(select.index, counter)
    # the delegates in the body are solved to their device across the back edge
    delegates = [n for n in body if n.kind == OpKind.DELEGATE]
    assert all(facts.device(d.output) == CUDA0 for d in delegates)
    stacked = method.outputs[0]
    assert facts.device(stacked) == CUDA0  # copy_index writes the body's result into it


def test_straight_line_program_is_one_block(pte_bytes):
    method = load_pte_bytes(pte_bytes("mixed-noelide")).view.methods[0]
    assert method.cfg.blocks == ((0, len(method.nodes) - 1),)
    assert not method.cfg.loop_nodes and not method.cfg.conditional_nodes


# --------------------------------------------------------------------------- liveness


def test_d2h_overwritten_before_any_read_is_dead():
    method = _method(
        [
            (OpKind.INPUT, [], ["x"]),
            (OpKind.INPUT, [], ["y"]),
            (OpKind.D2H, ["x"], ["h"]),
            (OpKind.MOVE, ["y"], ["h"]),  # the slot is written again before anyone reads it
            (OpKind.COMPUTE, ["h"], ["o"]),
        ],
        outputs=["o"], declared={"x": CUDA0},
    )
    facts = DeviceFacts.compute(method)
    assert not facts.is_useful(method.nodes[2])
    assert facts.is_useful(method.nodes[3])
    assert [w.index for w in facts.reaching_writers(method.nodes[4], "h")] == [3]
    assert _dead_d2h(method) == 1
    # flow-insensitively the slot `h` is read, so without the CFG the copy looks used
    assert _dead_d2h(_without_cfg(method)) == 0


def test_d2h_read_on_the_next_loop_iteration_is_live():
    # 0 x; 1 c; 2: o = f(h)   <- loop head, reads last iteration's h
    # 3: h = d2h(x); 4: jump_false(c) -> 2
    method = _method(
        [
            (OpKind.INPUT, [], ["x"]),
            (OpKind.INPUT, [], ["c"]),
            (OpKind.COMPUTE, ["h"], ["o"]),
            (OpKind.D2H, ["x"], ["h"]),
            (OpKind.CONTROL, ["c"], []),
        ],
        outputs=["o"], declared={"x": CUDA0},
        successors=[[1], [2], [3], [4], [2]], exits={4},
    )
    facts = DeviceFacts.compute(method)
    assert set(facts._flow.reaching(2, "h")) == {ENTRY, 3}
    assert facts.is_useful(method.nodes[3])
    assert method.cfg.loop_nodes == frozenset({2, 3, 4})
    assert _dead_d2h(method) == 0


def test_d2h_killed_at_the_loop_head_is_dead():
    # 2: h = move(y) at the top of the body kills the d2h's h from the last iteration
    method = _method(
        [
            (OpKind.INPUT, [], ["x"]),
            (OpKind.INPUT, [], ["y"]),
            (OpKind.MOVE, ["y"], ["h"]),
            (OpKind.COMPUTE, ["h"], ["o"]),
            (OpKind.D2H, ["x"], ["h"]),
            (OpKind.CONTROL, ["o"], []),
        ],
        outputs=["o"], declared={"x": CUDA0},
        successors=[[1], [2], [3], [4], [5], [2]], exits={5},
    )
    facts = DeviceFacts.compute(method)
    assert set(facts._flow.reaching(3, "h")) == {2}
    assert not facts.is_useful(method.nodes[4])
    assert _dead_d2h(method) == 1


def test_d2h_in_one_branch_read_after_the_merge_is_live():
    # 2: jump_false(p) -> 4 or fall into 3: h = d2h(x); 4: o = f(h)
    method = _method(
        [
            (OpKind.INPUT, [], ["x"]),
            (OpKind.INPUT, [], ["p"]),
            (OpKind.CONTROL, ["p"], []),
            (OpKind.D2H, ["x"], ["h"]),
            (OpKind.COMPUTE, ["h"], ["o"]),
        ],
        outputs=["o"], declared={"x": CUDA0},
        successors=[[1], [2], [3, 4], [4], []], exits={4},
    )
    facts = DeviceFacts.compute(method)
    assert set(facts._flow.reaching(4, "h")) == {ENTRY, 3}
    assert method.cfg.conditional_nodes == frozenset({3})
    assert facts.is_useful(method.nodes[3])
    assert _dead_d2h(method) == 0


def test_unreachable_code_is_not_useful():
    method = _method(
        [
            (OpKind.INPUT, [], ["x"]),
            (OpKind.CONTROL, ["x"], []),  # jumps over node 2 unconditionally
            (OpKind.D2H, ["x"], ["h"]),
            (OpKind.COMPUTE, ["x"], ["o"]),
        ],
        outputs=["o"], declared={"x": CUDA0},
        successors=[[1], [3], [3], []], exits={3},
    )
    assert method.cfg.reachable == frozenset({0, 1, 3})
    assert not DeviceFacts.compute(method).is_useful(method.nodes[2])


# --------------------------------------------------------------------------- property


def _random_ssa(seed: int) -> MethodView:
    rnd = random.Random(seed)
    kinds = [OpKind.COMPUTE, OpKind.COMPUTE, OpKind.D2H, OpKind.H2D, OpKind.DELEGATE, OpKind.ALIAS]
    ops: list[tuple] = [(OpKind.INPUT, [], [f"in{i}"]) for i in range(rnd.randint(1, 3))]
    available = [o[2][0] for o in ops]
    for i in range(rnd.randint(1, 25)):
        kind = rnd.choice(kinds)
        arity = 1 if kind in (OpKind.D2H, OpKind.H2D, OpKind.ALIAS) else rnd.randint(1, 3)
        ins = [rnd.choice(available) for _ in range(arity)]
        outs = [f"v{i}_{k}" for k in range(rnd.randint(1, 2) if kind == OpKind.DELEGATE else 1)]
        device: Optional[Device] = CUDA0 if kind in (OpKind.H2D, OpKind.DELEGATE) else None
        ops.append((kind, ins, outs, device))
        available.extend(outs)
    outputs = rnd.sample(available, k=rnd.randint(0, min(3, len(available))))
    return _method(ops, outputs=outputs)


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=0, max_value=10**9))
def test_cfg_liveness_equals_graph_liveness_on_straight_line_ssa(seed):
    method = _random_ssa(seed)
    with_cfg = DeviceFacts.compute(method)
    without = DeviceFacts.compute(_without_cfg(method))
    for vid in method.values:
        assert with_cfg.is_live(vid) == without.is_live(vid), vid
    for node in method.nodes:
        assert with_cfg.is_useful(node) == without.is_useful(node), node.name
    assert with_cfg.devices == without.devices


def test_past_the_work_limit_liveness_is_flow_insensitive_and_conservative():
    from xferlint.analyzer.cfg import FlowFacts

    method = _method(
        [
            (OpKind.INPUT, [], ["x"]),
            (OpKind.INPUT, [], ["y"]),
            (OpKind.D2H, ["x"], ["h"]),
            (OpKind.MOVE, ["y"], ["h"]),
            (OpKind.COMPUTE, ["h"], ["o"]),
        ],
        outputs=["o"], declared={"x": CUDA0},
    )
    exact = FlowFacts.compute(method, method.cfg)
    rough = FlowFacts.compute(method, method.cfg, work_limit=1)
    assert exact.exact and not rough.exact
    assert exact.useful <= rough.useful  # it may keep a dead copy, never drop a used one
    assert 2 in rough.useful and 2 not in exact.useful
    assert rough.reaching(4, "h") >= exact.reaching(4, "h")
