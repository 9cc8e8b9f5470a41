"""The device timeline of a method: every node in program order with the device it runs
on, and every copy with its devices and bytes.

This is the view-level data visual reporters (HTML, Model Explorer) need and the report
does not carry: it is computed once per method by the pipeline from the view and the
DeviceFacts, so reporters never walk graphs. A node's device is the device of its result
(a delegate's is its `target_device`, host when it has none); a node that writes nothing
runs where its operands live.
"""

from __future__ import annotations

from typing import Optional

from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.lattice import CONFLICT, CPU, Device, join_all
from xferlint.analyzer.summary import copy_of
from xferlint.analyzer.view import MethodView, Node, OpKind
from xferlint.records import dataclass

UNKNOWN_DEVICE = "unknown"
CONFLICT_DEVICE = "conflict"


@dataclass(frozen=True, slots=True)
class TimelineNode:
    """One node of a method, where it runs, and what it is."""

    index: int
    name: str
    kind: str  # OpKind value: compute, delegate, h2d, d2h, ...
    target: str  # operator, e.g. aten.cumsum.out, executorch_call_delegate
    device: str  # cpu, cuda:0, ..., unknown, conflict
    scope: str = ""  # the control-flow body the node sits in ("" at the top level)
    line: Optional[int] = None  # model source line, when the node has one
    backend: Optional[str] = None  # delegates: the backend id
    ops: tuple[str, ...] = ()  # delegates: the operators lowered into it, when known


@dataclass(frozen=True, slots=True)
class TimelineCopy:
    """One transfer: the copy node, its direction, its devices, its bytes per call."""

    index: int  # the copy node's index (TimelineNode.index)
    node: str
    direction: str  # h2d, d2h or d2d
    source: str
    target: str
    nbytes: Optional[int]  # None when the shape is symbolic


@dataclass(frozen=True, slots=True)
class MethodTimeline:
    """The timeline of one method of one program."""

    input: str
    program: str
    method: str
    kind: str  # the frontend: graph or pte
    nodes: tuple[TimelineNode, ...]
    copies: tuple[TimelineCopy, ...]

    @property
    def devices(self) -> tuple[str, ...]:
        """The lanes: cpu first, then the other devices in order, then unknown/conflict."""
        seen = {n.device for n in self.nodes} | {d for c in self.copies for d in (c.source, c.target)}
        seen.add(str(CPU))
        return tuple(sorted(seen, key=_lane_key))


def _lane_key(device: str) -> tuple:
    if device in (UNKNOWN_DEVICE, CONFLICT_DEVICE):
        return (2, device, 0)
    kind, _, index = device.partition(":")
    return (0 if kind == "cpu" else 1, kind, int(index) if index.isdigit() else 0)


def _name(value) -> str:
    if isinstance(value, Device):
        return str(value)
    return CONFLICT_DEVICE if value is CONFLICT else UNKNOWN_DEVICE


def node_device(node: Node, facts: DeviceFacts) -> str:
    """Where `node` runs: its delegate's device, else its result's, else its operands'."""
    if node.kind == OpKind.DELEGATE:
        return str(node.device) if node.device is not None else str(CPU)
    if node.outputs:
        return _name(facts.device(node.output))
    return _name(join_all(facts.device(v) for v in node.inputs))


def _timeline_node(node: Node, facts: DeviceFacts) -> TimelineNode:
    delegate = node.delegate
    return TimelineNode(
        index=node.index,
        name=node.name,
        kind=node.kind.value,
        target=node.target,
        device=node_device(node, facts),
        scope=node.scope,
        line=node.location.line if node.location is not None else None,
        backend=delegate.backend if delegate is not None else None,
        ops=_op_labels(delegate) if delegate is not None else (),
    )


def method_timeline(input: str, program: str, kind: str, method: MethodView, facts: DeviceFacts) -> MethodTimeline:
    """The timeline of one method, from its view and its solved facts."""
    nodes = tuple(_timeline_node(n, facts) for n in method.nodes)
    found = (copy_of(n, facts) for n in method.nodes)
    copies = tuple(
        TimelineCopy(index=c.node.index, node=c.node.name, direction=c.direction, source=c.source,
                     target=c.target, nbytes=c.nbytes)
        for c in found if c is not None
    )
    return MethodTimeline(input=input, program=program, method=method.name, kind=kind, nodes=nodes, copies=copies)


def _op_labels(delegate) -> tuple[str, ...]:
    """`aten.mm` for each distinct op lowered into a delegate (its overload dropped), in order."""
    labels = (op.target.rsplit(".", 1)[0] if op.target.count(".") >= 2 else op.target
              for op in getattr(delegate, "ops", ()) or ())
    return tuple(dict.fromkeys(label for label in labels if label))
