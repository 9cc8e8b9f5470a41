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
from typing import Iterable, Iterator, Mapping, Optional, Sequence

from xferlint.analyzer.lattice import UNREACHED, LatticeValue, join
from xferlint.analyzer.transfer import TRANSFER
from xferlint.analyzer.view import MethodView, Node

Readers = Mapping[str, Sequence[Node]]  # value -> the nodes that read it, in program order


def solve(method: MethodView, readers: Optional[Readers] = None) -> dict[str, LatticeValue]:
    """Return the least fixed point: the device of every value of `method`. `readers`, when
    the caller has them (DeviceFacts does), are not built again.

    In the first pass a value that rises must be revisited only when a node up to this
    one has read it: its first reader (readers are in program order) tells, with one
    look-up per value risen rather than a set of every value read so far."""
    if readers is None:
        readers = _readers(method.nodes)
    state: dict[str, LatticeValue] = {}
    device_of = _device_of(state)
    values = method.values
    nodes = method.nodes
    table = TRANSFER
    get, first_readers = state.get, readers.get
    for i, node in enumerate(nodes):
        result = table[node.kind](node, device_of, values)
        if result is UNREACHED:
            continue
        for vid in node.outputs:
            if get(vid) is None:  # its first value (the state never holds UNREACHED): it rises
                state[vid] = result
            elif not _rise(state, vid, result):
                continue
            read = first_readers(vid)
            if read and read[0].index <= i:  # a node already done read it: from here on, the worklist
                outputs = node.outputs
                _revisit(nodes, values, state, i, vid, outputs[outputs.index(vid) + 1:], result, readers)
                return state
    return state


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


def _readers(nodes: tuple[Node, ...]) -> dict[str, list[Node]]:
    readers: dict[str, list[Node]] = {}
    for node in nodes:
        for vid in node.inputs:
            readers.setdefault(vid, []).append(node)
    return readers


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

    for pos, done in order():
        node = nodes[pos]
        result = table[node.kind](node, device_of, values)
        if result is UNREACHED:
            continue
        for vid in node.outputs:
            if not _rise(state, vid, result):
                continue
            for reader in readers.get(vid, ()):
                j = reader.index
                if j <= done and not waiting[j]:  # a later node of the plain part is still to come
                    waiting[j] = True
                    push(j)
