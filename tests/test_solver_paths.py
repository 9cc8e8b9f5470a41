"""The solver's first pass and its hand-off to the worklist give the plain worklist's answer.

`solver.solve` runs the nodes once in order and builds the reader index only when a value
rises after a node read it (then it goes on as the worklist would). The plain worklist is
kept here as the reference; both run on random programs over mutable slots (values
written after they are read, in-place writes, loops' back-edge MOVEs) and must agree on
every value and on the order the values were first written.
"""

from __future__ import annotations

import random
from collections import deque

from hypothesis import given, settings
from hypothesis import strategies as st

from xferlint.analyzer.lattice import CPU, UNREACHED, Device, join
from xferlint.analyzer.solver import solve
from xferlint.analyzer.transfer import transfer
from xferlint.analyzer.view import MethodView, Node, OpKind, TensorMeta, Value

CUDA0, CUDA1 = Device("cuda", 0), Device("cuda", 1)
MATRIX = TensorMeta(shape=(4, 4), dtype="float32", nbytes=64)
SCALAR = TensorMeta(shape=(), dtype="int64", nbytes=8)


def reference_solve(method: MethodView) -> dict:
    """The worklist over every node, readers re-queued whenever an operand rises."""
    state: dict = {}
    readers: dict[str, list[int]] = {}
    for node in method.nodes:
        for vid in node.inputs:
            readers.setdefault(vid, []).append(node.index)
    queued = [True] * len(method.nodes)
    worklist = deque(range(len(method.nodes)))
    while worklist:
        i = worklist.popleft()
        queued[i] = False
        node = method.nodes[i]
        result = transfer(node, lambda v: state.get(v, UNREACHED), method.values)
        if result is UNREACHED:
            continue
        for vid in node.outputs:
            old = state.get(vid, UNREACHED)
            new = join(old, result)
            if new == old and vid in state:
                continue
            state[vid] = new
            for j in readers.get(vid, ()):
                if not queued[j]:
                    queued[j] = True
                    worklist.append(j)
    return state


def _random_method(seed: int) -> MethodView:
    rnd = random.Random(seed)
    slots = [f"s{k}" for k in range(rnd.randint(1, 7))]
    devices = [CPU, CUDA0, CUDA1, None]
    values = {s: Value(id=s, tensor=rnd.choice([MATRIX, MATRIX, SCALAR, None]), declared_device=rnd.choice(devices))
              for s in slots}
    kinds = [OpKind.INPUT, OpKind.CONSTANT, OpKind.H2D, OpKind.D2H, OpKind.TO_DEVICE, OpKind.DELEGATE,
             OpKind.MOVE, OpKind.ALIAS, OpKind.COMPUTE, OpKind.COMPUTE, OpKind.CONTROL, OpKind.UNKNOWN]
    nodes = []
    for i in range(rnd.randint(1, 30)):
        kind = rnd.choice(kinds)
        arity = 0 if kind in (OpKind.INPUT, OpKind.CONSTANT) else rnd.randint(0, 3)
        ins = tuple(rnd.choice(slots) for _ in range(arity))
        outs = tuple(rnd.choice(slots) for _ in range(rnd.randint(0, 2)))  # repeats allowed
        nodes.append(Node(index=i, name=f"n{i}", kind=kind, target=kind.value, inputs=ins, outputs=outs,
                          device=rnd.choice(devices[:3]) if kind in (OpKind.H2D, OpKind.TO_DEVICE,
                                                                       OpKind.DELEGATE) else None))
    return MethodView(name="forward", nodes=tuple(nodes), values=values)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=10**9))
def test_solve_equals_the_plain_worklist(seed):
    method = _random_method(seed)
    expected = reference_solve(method)
    got = solve(method)
    assert got == expected
    assert list(got) == list(expected)  # the same values, written first in the same order


def test_a_value_written_after_its_read_is_revisited():
    """The first pass reads `s` before the MOVE at the bottom writes it: the reader must
    run again (the hand-off to the worklist)."""
    values = {"x": Value(id="x", tensor=MATRIX, declared_device=CUDA0), "s": Value(id="s", tensor=MATRIX),
              "y": Value(id="y", tensor=MATRIX)}
    nodes = (
        Node(index=0, name="n0", kind=OpKind.ALIAS, target="alias", inputs=("s",), outputs=("y",)),
        Node(index=1, name="n1", kind=OpKind.INPUT, target="input", outputs=("x",)),
        Node(index=2, name="n2", kind=OpKind.MOVE, target="move", inputs=("x",), outputs=("s",)),
    )
    state = solve(MethodView(name="forward", nodes=nodes, values=values))
    assert state["y"] == CUDA0
