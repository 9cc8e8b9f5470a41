"""A sparse worklist solver for the device lattice.

Values are joined over all their writers (flow-insensitively), which is exact for the SSA
graphs FX produces and gives the join at control-flow merges for free: a `cond` result is
written by a MOVE in each branch, a loop-carried value by the MOVE at the loop's back edge.
A node is revisited only when one of its operands rises, and a value rises at most twice
(UNREACHED -> device -> CONFLICT), so the whole solve is linear in program size.

The worklist starts with every node in program order: that first pass is a plain loop,
which queues a node again only when a value it has read rises (a loop, a value written
after its read); the nodes queued then run behind it, first in first out, exactly in the
worklist's order.
"""

from __future__ import annotations

from collections import deque
from typing import Mapping, Optional, Sequence

from xferlint.analyzer.lattice import UNREACHED, LatticeValue, join
from xferlint.analyzer.transfer import TRANSFER
from xferlint.analyzer.view import MethodView, Node

Readers = Mapping[str, Sequence[Node]]  # value -> the nodes that read it, in program order
Index = dict[str, list[Node]]  # value -> the nodes that read (or write) it, in program order


def solve(method: MethodView) -> dict[str, LatticeValue]:
    """Return the least fixed point: the device of every value of `method`."""
    return solve_indexed(method)[0]


def solve_indexed(method: MethodView) -> tuple[dict[str, LatticeValue], Index, Index]:
    """`solve`, and the readers and writers of every value (DeviceFacts keeps them), built
    in the same pass over the nodes: the solve's first pass.

    In that pass a value that rises must be revisited only by the nodes up to this one
    that read it. Each node's reads are noted before its results are joined, so `readers`
    then holds exactly the reads so far: one look-up per value risen tells, and names the
    nodes to queue again (behind the rest of the pass, as the worklist would)."""
    readers: Index = {}
    writers: Index = {}
    state: dict[str, LatticeValue] = {}
    device_of = _device_of(state)
    values = method.values
    nodes = method.nodes
    table = TRANSFER
    get, done_readers, writers_of = state.get, readers.get, writers.get
    again: Optional[_Queue] = None
    for node in nodes:
        # get-then-append, not setdefault(vid, []): that makes a list per read, kept or not
        for vid in node.inputs:
            found = done_readers(vid)
            if found is None:
                readers[vid] = [node]
            else:
                found.append(node)
        outputs = node.outputs
        for vid in outputs:
            found = writers_of(vid)
            if found is None:
                writers[vid] = [node]
            else:
                found.append(node)
        result = table[node.kind](node, device_of, values)
        if result is UNREACHED:
            continue
        for vid in outputs:
            if get(vid) is None:  # its first value (the state never holds UNREACHED): it rises
                state[vid] = result
            elif not _rise(state, vid, result):
                continue
            found = done_readers(vid)
            if found is not None:  # a node already done read it: it runs again
                if again is None:
                    again = _Queue(len(nodes))
                again.push_all(found)
    if again is not None:
        _drain(nodes, values, state, readers, again)
    return state, readers, writers


class _Queue:
    """The nodes queued again, first in first out, each at most once at a time."""

    __slots__ = ("fifo", "waiting")

    def __init__(self, count: int) -> None:
        self.fifo: deque[int] = deque()
        self.waiting = [False] * count  # in `fifo`

    def push_all(self, readers: Sequence[Node]) -> None:
        waiting, push = self.waiting, self.fifo.append
        for reader in readers:
            j = reader.index
            if not waiting[j]:
                waiting[j] = True
                push(j)


def _drain(nodes: tuple[Node, ...], values, state: dict[str, LatticeValue], readers: Readers,
           again: _Queue) -> None:
    """Run the queued nodes until none is left: the worklist after the first pass, every
    reader of a value that rises queued again."""
    device_of = _device_of(state)
    table = TRANSFER
    get = state.get
    fifo, waiting, push_all = again.fifo, again.waiting, again.push_all
    pop = fifo.popleft
    while fifo:
        pos = pop()
        waiting[pos] = False
        node = nodes[pos]
        result = table[node.kind](node, device_of, values)
        if result is UNREACHED:
            continue
        for vid in node.outputs:
            old = get(vid)  # `_rise`, inline: the loop's one call per value written
            if old is None:
                state[vid] = result
            else:
                new = join(old, result)
                if new is old or new == old:
                    continue
                state[vid] = new
            push_all(readers.get(vid, ()))


def _device_of(state: dict[str, LatticeValue]):
    get = state.get

    def device_of(vid: str) -> LatticeValue:
        return get(vid, UNREACHED)

    return device_of


def _rise(state: dict[str, LatticeValue], vid: str, result: LatticeValue) -> bool:
    """Join `result` into `vid`; True if its value changed (or it got one). The state never
    holds UNREACHED: absent is that."""
    old = state.get(vid, UNREACHED)
    if old is UNREACHED:
        state[vid] = result
        return True
    new = join(old, result)
    if new is old or new == old:
        return False
    state[vid] = new
    return True
