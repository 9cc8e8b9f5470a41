"""A sparse worklist solver for the device lattice.

Values are joined over all their writers (flow-insensitively), which is exact for the SSA
graphs FX produces and gives the join at control-flow merges for free: a `cond` result is
written by a MOVE in each branch, a loop-carried value by the MOVE at the loop's back edge.
A node is revisited only when one of its operands rises, and a value rises at most twice
(UNREACHED -> device -> CONFLICT), so the whole solve is linear in program size.

The worklist starts with every node in program order. Until a value rises after a node
has read it, nothing is ever queued again: that first pass is a plain loop, and only
when some node must be revisited (a loop, a value written after its read) does the solve
go on exactly as the worklist would, in the same order.
"""

from __future__ import annotations

from collections import deque
from typing import Iterable, Iterator, Mapping, Sequence

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

    In that pass a value that rises must be revisited only when a node up to this one has
    read it. Each node's reads are noted before its results are joined, so `readers` then
    holds exactly the reads so far: one look-up per value risen tells."""
    readers: Index = {}
    writers: Index = {}
    state: dict[str, LatticeValue] = {}
    device_of = _device_of(state)
    values = method.values
    nodes = method.nodes
    table = TRANSFER
    get, read, wrote = state.get, readers.setdefault, writers.setdefault
    for i, node in enumerate(nodes):
        for vid in node.inputs:
            read(vid, []).append(node)
        outputs = node.outputs
        for vid in outputs:
            wrote(vid, []).append(node)
        result = table[node.kind](node, device_of, values)
        if result is UNREACHED:
            continue
        for vid in outputs:
            if get(vid) is None:  # its first value (the state never holds UNREACHED): it rises
                state[vid] = result
            elif not _rise(state, vid, result):
                continue
            if vid in readers:  # a node already done read it: from here on, the worklist
                _index(nodes, i + 1, readers, writers)
                _revisit(nodes, values, state, i, vid, outputs[outputs.index(vid) + 1:], result, readers)
                return state, readers, writers
    return state, readers, writers


def _index(nodes: tuple[Node, ...], start: int, readers: Index, writers: Index) -> None:
    """Note the reads and writes of `nodes[start:]` (the rest of the pass, for the worklist)."""
    read, wrote = readers.setdefault, writers.setdefault
    for k in range(start, len(nodes)):
        node = nodes[k]
        for vid in node.inputs:
            read(vid, []).append(node)
        for vid in node.outputs:
            wrote(vid, []).append(node)


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


def _revisit(nodes: tuple[Node, ...], values, state: dict[str, LatticeValue], i: int, risen: str,
             rest: Iterable[str], result: LatticeValue, readers: Readers) -> None:
    """Go on as the worklist would after node `i` of the first pass raised `risen`.

    The worklist then holds the rest of the first pass in order and, behind it, the
    nodes queued again. The first part runs as a plain loop (a node there counts as
    queued until the loop reaches it), the second as the FIFO (`again`).
    """
    again: deque[int] = deque()
    waiting = [False] * len(nodes)  # in `again`
    push = again.append

    def queue_done_readers(vid: str) -> None:  # those the pass has run, up to node i
        for reader in readers.get(vid, ()):
            j = reader.index
            if j <= i and not waiting[j]:
                waiting[j] = True
                push(j)

    queue_done_readers(risen)
    for vid in rest:
        if _rise(state, vid, result):
            queue_done_readers(vid)
    device_of = _device_of(state)
    table = TRANSFER
    count = len(nodes)

    def order() -> Iterator[tuple[int, int]]:
        """(node, the last node still queued in the plain part): the rest of the pass,
        then the FIFO, where every node may be queued again."""
        for pos in range(i + 1, count):
            yield pos, pos
        pop = again.popleft
        while again:
            pos = pop()
            waiting[pos] = False
            yield pos, count

    get = state.get
    for pos, done in order():
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
            for reader in readers.get(vid, ()):
                j = reader.index
                if j <= done and not waiting[j]:  # a later node of the plain part is still to come
                    waiting[j] = True
                    push(j)
