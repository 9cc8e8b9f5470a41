"""A sparse worklist solver for the device lattice.

Values are joined over all their writers (flow-insensitively), which is exact for the SSA
graphs FX produces and gives the join at control-flow merges for free: a `cond` result is
written by a MOVE in each branch, a loop-carried value by the MOVE at the loop's back edge.
A node is revisited only when one of its operands rises, and a value rises at most twice
(UNREACHED -> device -> CONFLICT), so the whole solve is linear in program size.
"""

from __future__ import annotations

from collections import deque

from xferlint.analyzer.lattice import UNREACHED, LatticeValue, join
from xferlint.analyzer.transfer import transfer
from xferlint.analyzer.view import MethodView


def solve(method: MethodView) -> dict[str, LatticeValue]:
    """Return the least fixed point: the device of every value of `method`."""
    state: dict[str, LatticeValue] = {}
    readers: dict[str, list[int]] = {}
    for node in method.nodes:
        for vid in node.inputs:
            readers.setdefault(vid, []).append(node.index)

    def device_of(vid: str) -> LatticeValue:
        return state.get(vid, UNREACHED)

    nodes = method.nodes
    values = method.values
    queued = [True] * len(nodes)
    worklist = deque(range(len(nodes)))
    while worklist:
        i = worklist.popleft()
        queued[i] = False
        node = nodes[i]
        result = transfer(node, device_of, values)
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
