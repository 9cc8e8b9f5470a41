"""Reaching definitions: the straight-line fast path gives the general path's answer, and
the general path gives the textbook dense dataflow's.

`cfg._reaching_definitions` answers a method without jumps (one block, no back edge) in
one pass (`_straight_line_reads`) instead of the sparse SSA construction
(`_sparse_reads`). Both are run here on the same methods: lowered programs and random
programs over mutable slots (rewrites, in-place writes, reads of never-written slots,
repeated operands), and must agree on every read's name, on what reaches the exit, and on
where the work limit falls. On random CFGs (branches, loops, unreachable nodes, several
exits) `FlowFacts` must match a per-node iterative solution, usefulness included.
"""

from __future__ import annotations

import random
from typing import Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xferlint.analyzer import cfg as cfgmod
from xferlint.analyzer.cfg import ControlFlowGraph, FlowFacts
from xferlint.analyzer.view import MethodView, Node, OpKind, Value
from xferlint.frontends.pte.view import load_pte_bytes

STRAIGHT = ["mixed-noelide", "addsin-noelide", "linear-stack", "multi-output", "shared-input", "two-methods"]


def _both(method: MethodView, limit: Optional[int] = None):
    limit = cfgmod.work_budget(method.nodes) if limit is None else limit
    fast = cfgmod._straight_line_reads(method, method.cfg, limit)
    general = cfgmod._sparse_reads(method, method.cfg, limit)
    return fast, general


def _assert_same(method: MethodView) -> None:
    (fast, fast_exit), (general, general_exit) = _both(method)
    assert fast.names == general.names
    assert fast.as_dict() == general.as_dict()
    assert fast_exit == general_exit
    for node in method.nodes:
        for vid in node.inputs + ("never-read",):
            assert fast.at(node.index, vid) == general.at(node.index, vid)


def _limit_falls_at_the_same_place(method: MethodView) -> None:
    for limit in range(len(method.nodes) - 1, len(method.nodes) + 4):
        outcomes = []
        for path in (cfgmod._straight_line_reads, cfgmod._sparse_reads):
            try:
                path(method, method.cfg, limit)
                outcomes.append(True)
            except cfgmod._TooMuchWork:
                outcomes.append(False)
        assert outcomes[0] == outcomes[1], limit


@pytest.mark.parametrize("name", STRAIGHT)
def test_fast_path_equals_general_path_on_lowered_programs(pte_bytes, name):
    for method in load_pte_bytes(pte_bytes(name)).view.methods:
        cfg = method.cfg
        assert len(cfg.blocks) == 1 and not cfg.block_successors[0]  # the fast path's case
        _assert_same(method)
        _limit_falls_at_the_same_place(method)


def _random_slots(seed: int) -> MethodView:
    """A straight-line method over a few mutable slots: slots are rewritten, written in
    place, read before any write, and read twice by one node."""
    rnd = random.Random(seed)
    slots = [f"s{k}" for k in range(rnd.randint(1, 6))]
    kinds = [OpKind.COMPUTE, OpKind.MOVE, OpKind.D2H, OpKind.H2D, OpKind.DELEGATE, OpKind.INPUT]
    nodes = []
    for i in range(rnd.randint(1, 30)):
        kind = rnd.choice(kinds)
        ins = tuple(rnd.choice(slots) for _ in range(0 if kind == OpKind.INPUT else rnd.randint(0, 3)))
        outs = tuple(rnd.sample(slots, k=rnd.randint(0, min(2, len(slots)))))
        nodes.append(Node(index=i, name=f"n{i}", kind=kind, target=kind.value, inputs=ins, outputs=outs,
                          mutates=bool(ins) and rnd.random() < 0.2))
    values = {s: Value(id=s) for s in slots}
    outputs = tuple(rnd.choice(slots + [None]) for _ in range(rnd.randint(0, 3)))
    return MethodView(name="forward", nodes=tuple(nodes), values=values, outputs=outputs,
                      cfg=ControlFlowGraph.straight_line(len(nodes)))


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=10**9))
def test_fast_path_equals_general_path_on_random_slot_programs(seed):
    method = _random_slots(seed)
    _assert_same(method)
    _limit_falls_at_the_same_place(method)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=10**9))
def test_straight_line_usefulness_equals_the_general_closure(seed):
    """A straight-line method's usefulness comes from one backward pass, its reads named
    only when asked: the same useful nodes, live values, reads and exit as the closure
    over the general path's names."""
    method = _random_slots(seed)
    reads, at_exit = cfgmod._sparse_reads(method, method.cfg, cfgmod.work_budget(method.nodes))
    roots = {n.index for n in method.nodes if n.kind in cfgmod._EFFECT_KINDS or n.mutates}
    useful = cfgmod._useful(method.nodes, roots, method.outputs, at_exit, reads, None)
    live = {v for v in method.outputs if v is not None}.union(*(method.nodes[u].inputs for u in useful))
    facts = FlowFacts.compute(method, method.cfg)
    assert facts.exact
    assert facts.useful == useful and facts.live_values == live
    assert facts.reaching_at == reads.as_dict() and facts.at_exit == at_exit


def test_a_block_that_jumps_to_itself_takes_the_general_path():
    """One block whose last node jumps back to the first is a loop: a read at the top sees
    the write at the bottom, which the one-pass answer would miss."""
    nodes = (
        Node(index=0, name="n0", kind=OpKind.COMPUTE, target="c", inputs=("s",), outputs=("t",)),
        Node(index=1, name="n1", kind=OpKind.MOVE, target="m", inputs=("t",), outputs=("s",)),
    )
    method = MethodView(name="forward", nodes=nodes, values={"s": Value(id="s"), "t": Value(id="t")},
                        outputs=("s",), cfg=ControlFlowGraph(successors=((1,), (0,)), exits=frozenset({1})))
    assert len(method.cfg.blocks) == 1
    assert FlowFacts.compute(method, method.cfg).reaching(0, "s") == frozenset({cfgmod.ENTRY, 1})


# --------------------------------------------------------------------------- general path


def _random_cfg(seed: int) -> MethodView:
    rnd = random.Random(seed)
    n = rnd.randint(1, 24)
    slots = [f"s{k}" for k in range(rnd.randint(1, 6))]
    kinds = [OpKind.COMPUTE, OpKind.MOVE, OpKind.D2H, OpKind.H2D, OpKind.DELEGATE, OpKind.CONTROL, OpKind.INPUT]

    def node_at(i: int) -> Node:
        kind = rnd.choice(kinds)
        ins = tuple(rnd.choice(slots) for _ in range(rnd.randint(0, 3)))
        outs = tuple(rnd.sample(slots, k=rnd.randint(0, min(2, len(slots)))))
        return Node(index=i, name=f"n{i}", kind=kind, target=kind.value, inputs=ins, outputs=outs,
                    mutates=bool(ins) and rnd.random() < 0.15)

    return random_method(rnd, n, slots, node_at, jump=0.3)


def random_method(rnd: random.Random, n: int, slots: list[str], node_at, jump: float) -> MethodView:
    """A method of `n` nodes (`node_at(i)`) over `slots`, each falling through (85 %) and,
    with probability `jump`, jumping anywhere: back edges, forward skips, self loops."""
    nodes, succ, exits = [], [], set()
    for i in range(n):
        nodes.append(node_at(i))
        targets = [i + 1] if i + 1 < n and rnd.random() < 0.85 else []
        if rnd.random() < jump:
            j = rnd.randrange(n)
            if j not in targets:
                targets.append(j)
        succ.append(tuple(targets))
        if not targets or rnd.random() < 0.1:
            exits.add(i)
    outputs = tuple(rnd.choice(slots + [None]) for _ in range(rnd.randint(0, 3)))
    return MethodView(name="forward", nodes=tuple(nodes), values={v: Value(id=v) for v in slots}, outputs=outputs,
                      cfg=ControlFlowGraph(successors=tuple(succ), exits=frozenset(exits)))


def _dense(method: MethodView):
    """Reaching definitions node by node to a fixed point: IN of a node is the union of
    its predecessors' OUT (ENTRY for every value before node 0); a write replaces."""
    cfg, nodes = method.cfg, method.nodes
    slots = sorted({v for n in nodes for v in n.inputs + n.outputs} | {v for v in method.outputs if v})
    start = {v: frozenset({cfgmod.ENTRY}) for v in slots}
    into: dict[int, dict] = {0: start} if nodes else {}
    out: dict[int, dict] = {}
    changed = True
    while changed:
        changed = False
        for i in sorted(cfg.reachable):
            here = dict(into.get(i, {}))
            for p in cfg.predecessors[i]:
                for v, defs in out.get(p, {}).items():
                    here[v] = here.get(v, frozenset()) | defs
            if i == 0:
                for v in slots:
                    here[v] = here.get(v, frozenset()) | start[v]
            after = dict(here)
            after.update({v: frozenset({i}) for v in nodes[i].outputs})
            if into.get(i) != here or out.get(i) != after:
                into[i], out[i] = here, after
                changed = True
    reaching = {(i, v): into[i][v] for i in cfg.reachable for v in nodes[i].inputs}
    at_exit: dict[str, frozenset] = {}
    for e in cfg.exits:
        for v in method.outputs:
            if v is not None:
                at_exit[v] = at_exit.get(v, frozenset()) | (out[e][v] if e in out else frozenset({cfgmod.ENTRY}))
    return reaching, at_exit


def _dense_useful(method: MethodView, reaching, at_exit) -> set[int]:
    useful = {n.index for n in method.nodes if n.kind in (OpKind.DELEGATE, OpKind.UNKNOWN, OpKind.CONTROL)
              or n.mutates} & method.cfg.reachable
    useful |= {d for v in method.outputs if v is not None for d in at_exit.get(v, ()) if d >= 0}
    while True:
        more = {d for u in useful for v in method.nodes[u].inputs for d in reaching[(u, v)] if d >= 0} - useful
        if not more:
            return useful
        useful |= more


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=10**9))
def test_flow_facts_equal_the_dense_dataflow_on_random_cfgs(seed):
    method = _random_cfg(seed)
    reaching, at_exit = _dense(method)
    facts = FlowFacts.compute(method, method.cfg)
    assert facts.exact
    assert facts.reaching_at == reaching
    for node in method.nodes:
        for vid in node.inputs + ("never-read",):
            expected = reaching.get((node.index, vid), frozenset({cfgmod.ENTRY}))
            assert facts.reaching(node.index, vid) == expected
            assert facts.reaching_writer_indices(node.index, vid) == sorted(d for d in expected if d >= 0)
    assert facts.at_exit == at_exit
    assert facts.useful == _dense_useful(method, reaching, at_exit)


# --------------------------------------------------------------------------- structure


def _reference_blocks(cfg: ControlFlowGraph) -> tuple[tuple[int, int], ...]:
    """Leaders by definition: the entry, every jump target, every node after a node that
    does not simply fall through, every node with other than one fall-through predecessor."""
    n = len(cfg.successors)
    leaders = {0} if n else set()
    for i, succ in enumerate(cfg.successors):
        if succ != (i + 1,) or i in cfg.exits:
            leaders.update(succ)
            leaders.update({i + 1} if i + 1 < n else set())
    leaders.update(j for j, preds in enumerate(cfg.predecessors) if preds != (j - 1,))
    starts = sorted(leaders)
    return tuple(zip(starts, [s - 1 for s in starts[1:]] + [n - 1]))


def _reference_reachable(cfg: ControlFlowGraph) -> frozenset[int]:
    seen, stack = ({0}, [0]) if cfg.successors else (set(), [])
    while stack:
        for j in cfg.successors[stack.pop()]:
            if j not in seen:
                seen.add(j)
                stack.append(j)
    return frozenset(seen)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=10**9))
def test_blocks_and_reachability_match_their_definitions_on_random_cfgs(seed):
    cfg = _random_cfg(seed).cfg
    fresh = ControlFlowGraph(successors=cfg.successors, exits=cfg.exits)
    assert fresh.blocks == _reference_blocks(cfg)
    assert fresh.reachable == _reference_reachable(cfg)
