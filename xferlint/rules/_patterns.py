"""Transfer patterns more than one rule matches, read off the view and DeviceFacts."""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.lattice import Device
from xferlint.analyzer.view import Node, OpKind
from xferlint.frozen import fast_constructor
from xferlint.records import dataclass


@dataclass(frozen=True)
class RoundTrip:
    """`h2d(d2h(x))`: x on `source` goes to host and straight on to `target`."""

    producer: Optional[Node]  # writes x (a delegate's getitem, usually)
    d2h: Node
    h2d: Node
    consumers: tuple[Node, ...]  # read the H2D's result
    value: str  # x
    source: Device
    target: Device

    @property
    def same_device(self) -> bool:
        return self.source is self.target or self.source == self.target  # a Device compares in Python

    def path(self) -> list[tuple[Node, str]]:
        """The transfer path with roles: producer, d2h, h2d, first consumer."""
        path = [(self.d2h, "d2h"), (self.h2d, "h2d")] + [(c, "consumer") for c in self.consumers[:1]]
        if self.producer is not None:
            path.insert(0, (self.producer, "producer"))
        return path


def round_trip_at(facts: DeviceFacts, h2d: Node) -> Optional[RoundTrip]:
    """The round trip that ends in `h2d`, when its source is a D2H of a device tensor."""
    if h2d.kind != OpKind.H2D or not h2d.inputs or h2d.device is None or h2d.device.is_host:
        return None
    d2h = facts.writer(h2d.inputs[0])
    if d2h is None or d2h.kind != OpKind.D2H or not d2h.inputs:
        return None
    value = d2h.inputs[0]
    source = facts.device(value)
    if not isinstance(source, Device) or source.is_host:
        return None
    return _ROUND_TRIP(
        producer=facts.writer(value),
        d2h=d2h,
        h2d=h2d,
        consumers=tuple(facts.readers(h2d.output)),
        value=value,
        source=source,
        target=h2d.device,
    )


_ROUND_TRIP = fast_constructor(RoundTrip)  # one per H2D of a device value: without the dataclass __init__


def round_trips(facts: DeviceFacts):
    writers = facts.writers
    h2d, d2h = OpKind.H2D, OpKind.D2H  # once: an enum member look-up costs ~65 ns, per node
    for node in facts.method.nodes:
        if node.kind is h2d and node.inputs:
            # only an H2D of a D2H's result can end a round trip: most H2Ds settle it here
            source = writers(node.inputs[0])
            if len(source) == 1 and source[0].kind is d2h:
                trip = round_trip_at(facts, node)
                if trip is not None:
                    yield trip


def method_round_trips(ctx) -> list[RoundTrip]:
    """`round_trips(ctx.facts)` in program order, found once per method: XF001 and XF002
    both read them (each walked every node and rebuilt every trip before)."""
    return ctx.shared("round-trips", lambda: list(round_trips(ctx.facts)))


def tick(name: str) -> str:
    """A node or value name as a message shows it."""
    return f"`{name}`"


LISTED = 8  # names a message or detail lists before "and N more"


def listed(items: Sequence[Any], last: str = " and ", show: Callable[[Any], str] = tick) -> str:
    """`a`, `b` and `c` (each item as `show` writes it, `last` before the last); past LISTED
    items, how many more (a delegate may read 100,000 host tensors: its finding names eight)."""
    names = [show(item) for item in items[:LISTED]]
    if len(items) > LISTED:
        return ", ".join(names) + f" and {len(items) - LISTED} more"
    return ", ".join(names[:-1]) + last + names[-1] if len(names) > 1 else "".join(names)


def is_aten_copy(node: Node) -> bool:
    """A copy written as `.to()` in torch.export ATen (`aten._to_copy`, `aten.to.*`,
    `aten.copy_`), not an ExecuTorch `et_copy` op: its advice is model code, not lowering."""
    return node.target.startswith("aten.")
