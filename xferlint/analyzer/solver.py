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
from typing import Optional, Sequence

from xferlint.analyzer.lattice import UNREACHED, LatticeValue, join
from xferlint.analyzer.transfer import TRANSFER
from xferlint.analyzer.view import MethodView, Node

# What the solve keeps per value, in one list so that a value is looked up once per read
# or write, not once per dict (device, readers, writers): its device (UNREACHED until it
# has one), the nodes that read it and the nodes that write it, in program order.
Slot = list
DEVICE, READERS, WRITERS = 0, 1, 2


def solve(method: MethodView) -> dict[str, LatticeValue]:
    """Return the least fixed point: the device of every value of `method` that has one,
    in the order the values first got it."""
    slots, risen = solve_slots(method)
    return {vid: slots[vid][DEVICE] for vid in risen}


def solve_slots(method: MethodView) -> tuple[dict[str, Slot], list[str]]:
    """`solve`, as a slot per value read or written (DeviceFacts keeps them: the readers
    and writers are built in the same pass over the nodes, the solve's first pass), and
    the values in the order they first got a device.

    In that pass a value that rises must be revisited only by the nodes up to this one
    that read it. Each node's reads are noted before its results are joined, so a slot
    then holds exactly the reads so far: they are the nodes to queue again (behind the
    rest of the pass, as the worklist would)."""
    slots: dict[str, Slot] = {}
    risen: list[str] = []
    get, first = slots.get, risen.append
    device_of = _device_of(slots)
    values = method.values
    nodes = method.nodes
    table = TRANSFER
    again: Optional[_Queue] = None
    for node in nodes:
        for vid in node.inputs:
            slot = get(vid)
            if slot is None:
                slots[vid] = [UNREACHED, [node], []]
            else:
                slot[READERS].append(node)
        result = table[node.kind](node, device_of, values)
        for vid in node.outputs:
            slot = get(vid)
            if slot is None:  # neither read nor written yet: nothing to revisit
                slots[vid] = [result, [], [node]]
                if result is not UNREACHED:
                    first(vid)
                continue
            slot[WRITERS].append(node)
            if result is UNREACHED:
                continue
            old = slot[DEVICE]
            if old is UNREACHED:
                slot[DEVICE] = result
                first(vid)
            else:
                new = join(old, result)
                if new is old or new == old:
                    continue
                slot[DEVICE] = new
            if slot[READERS]:  # a node already done read it: it runs again
                if again is None:
                    again = _Queue(len(nodes))
                again.push_all(slot[READERS])
    if again is not None:
        _drain(nodes, values, slots, risen, again)
    return slots, risen


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


def _drain(nodes: tuple[Node, ...], values, slots: dict[str, Slot], risen: list[str], again: _Queue) -> None:
    """Run the queued nodes until none is left: the worklist after the first pass, every
    reader of a value that rises queued again. (Every value written has a slot by now.)"""
    device_of = _device_of(slots)
    table = TRANSFER
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
            slot = slots[vid]
            old = slot[DEVICE]
            if old is UNREACHED:
                risen.append(vid)
                slot[DEVICE] = result
            else:
                new = join(old, result)
                if new is old or new == old:
                    continue
                slot[DEVICE] = new
            push_all(slot[READERS])


def _device_of(slots: dict[str, Slot]):
    get = slots.get

    def device_of(vid: str) -> LatticeValue:
        slot = get(vid)
        return UNREACHED if slot is None else slot[DEVICE]

    return device_of
