"""The transfer summary: what crosses the bus per call, per method and per device pair.

Computed from the view and the DeviceFacts, so every frontend gets it. A *copy* is a node
that moves a tensor between devices: `et_copy._h2d_copy` and `et_copy._d2h_copy` (both
forms), and `_to_copy`-style ops with an explicit device other than their operand's. Each
copy in the program counts once: a copy inside a `cond` branch counts although the branch
may not run, and a copy in a loop body counts once although it runs per iteration
(`in_control_flow` says how many such copies there are). A copy whose shape is symbolic
counts in `copies` but not in `bytes` (`symbolic_copies`).

`flagged_bytes` is what the findings are about: the bytes of every copy node a finding
names (`Finding.copies`), each counted once however many findings name it.
`fixable_savings` is what the fixable findings would stop moving: the bytes of every copy
node a fix deletes (`Finding.removes`), each counted once.
"""

from __future__ import annotations

from dataclasses import field, replace
from typing import Iterable, Optional

from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.lattice import CPU, UNREACHED, Device
from xferlint.analyzer.view import COPY_KINDS, MethodView, Node, OpKind
from xferlint.records import dataclass
from xferlint.serialize import BOUNDARY, described

H2D, D2H, D2D = "h2d", "d2h", "d2d"


@dataclass(frozen=True)
class Copy:
    """One transfer node: its direction, its source and target devices, its bytes."""

    node: Node
    direction: str  # h2d, d2h or d2d
    source: str  # device of the operand ("unknown" when the analysis has none)
    target: str
    nbytes: Optional[int]


def _device_name(value) -> str:
    return str(value) if isinstance(value, Device) else "unknown"


def copy_of(node: Node, facts: DeviceFacts) -> Optional[Copy]:
    """The transfer `node` performs, or None when it moves nothing between devices."""
    return _copy(node, facts, {}) if node.kind in COPY_KINDS else None


def _copy(node: Node, facts: DeviceFacts, names: dict) -> Optional[Copy]:
    """`copy_of` for a node of a copy kind; `names` caches device names by id (a method has
    a handful of devices and may have 100,000 copies, each of which named both its ends)."""
    kind = node.kind
    if not node.inputs:
        return None
    operand = node.inputs[0]
    source = facts.device(operand)
    target: Optional[Device] = CPU if kind == OpKind.D2H else node.device
    direction = _direction(kind, source, target)
    if direction is None:
        return None
    nbytes = facts.nbytes(node.output)
    if nbytes is None:
        nbytes = facts.nbytes(operand)
    # by identity (hashing a Device costs more than naming it): the devices are the
    # facts' and the nodes', alive while the caller's `names` is
    source_name = names.get(id(source))
    if source_name is None:
        source_name = names[id(source)] = _device_name(source)
    target_name = names.get(id(target))
    if target_name is None:
        target_name = names[id(target)] = str(target)
    return _new_copy(node, direction, source_name, target_name, nbytes)


def _new_copy(node: Node, direction: str, source: str, target: str, nbytes: Optional[int]) -> Copy:
    """`Copy(...)` without the frozen dataclass `__init__` (one `object.__setattr__` per
    field): its `__dict__` is what `__init__` leaves, every field in declaration order."""
    copy = object.__new__(Copy)
    copy.__dict__.update({"node": node, "direction": direction, "source": source, "target": target,
                          "nbytes": nbytes})
    return copy


def copies(facts: DeviceFacts) -> list[Copy]:
    """Every transfer of a method, in program order (found once per facts: the summary
    asks again after the fix trial)."""
    return list(facts.derived("summary.copies", _find_copies))


def _find_copies(facts: DeviceFacts) -> list[Copy]:
    names: dict = {}
    found = (_copy(node, facts, names) for node in facts.method.nodes if node.kind in COPY_KINDS)
    return [c for c in found if c is not None]


# --------------------------------------------------------------------------- models


@dataclass(**BOUNDARY)
class PairTraffic:
    """Copies from one device to another."""

    source: str = described("Device the bytes leave (cpu, cuda:0)")
    target: str = described("Device the bytes arrive on")
    copies: int
    bytes: int = described("Bytes per call (copies of symbolic size not included)")


@dataclass(**BOUNDARY)
class Traffic:
    """Counts and bytes per call, by direction and by device pair."""

    h2d_copies: int = 0
    h2d_bytes: int = 0
    d2h_copies: int = 0
    d2h_bytes: int = 0
    bytes: int = described("All copies' bytes per call (device-to-device ones included)", default=0)
    symbolic_copies: int = described("Copies whose size is symbolic: counted, not in bytes", default=0)
    in_control_flow: int = described("Copies inside cond branches or loop bodies (counted once each)", default=0)
    pairs: list[PairTraffic] = described("Per (source, target) device pair", default_factory=list)
    flagged_bytes: int = described("Bytes per call of the copies findings name (each copy once)", default=0)
    fixable_savings: int = described("Bytes per call of the copies fixable findings remove (each copy once)",
                                     default=0)


@dataclass(**BOUNDARY)
class MethodTransfers(Traffic):
    """The traffic of one method of one program."""

    input: str = described("The input as given on the command line")
    program: str
    method: str


@dataclass(**BOUNDARY)
class TransferSummary(Traffic):
    """The traffic of every method linted, and the totals over them."""

    methods: list[MethodTransfers] = field(default_factory=list)


# --------------------------------------------------------------------------- computing


def _pairs(items: Iterable[tuple[str, str, int, int]]) -> list[PairTraffic]:
    table: dict[tuple[str, str], list[int]] = {}
    for source, target, count, nbytes in items:
        entry = table.setdefault((source, target), [0, 0])
        entry[0] += count
        entry[1] += nbytes
    return [PairTraffic(source=s, target=t, copies=c, bytes=b) for (s, t), (c, b) in sorted(table.items())]


def _distinct_bytes(sizes: dict[str, int], names: Iterable[str]) -> int:
    """Bytes per call of the named copies (`sizes`: bytes by node name, see `_table`), each
    counted once (symbolic ones not at all)."""
    return sum(sizes[n] for n in set(names) if n in sizes)


def traffic_counts(found: list[Copy]) -> dict:
    """The Traffic fields (but savings) of a list of copies, in one pass over them (the
    pairs too: what `_pairs` makes of each copy's (source, target, 1, bytes)). A check
    counts a method's copies without building them (`_table`); this is its plain form."""
    h2d = h2d_bytes = d2h = d2h_bytes = total = symbolic = in_control_flow = 0
    table: dict[tuple[str, str], list[int]] = {}
    for c in found:
        nbytes = c.nbytes
        if nbytes is None:
            symbolic += 1
            nbytes = 0
        else:
            total += nbytes
        if c.direction == H2D:
            h2d += 1
            h2d_bytes += nbytes
        elif c.direction == D2H:
            d2h += 1
            d2h_bytes += nbytes
        if c.node.scope:
            in_control_flow += 1
        pair = (c.source, c.target)
        entry = table.get(pair)
        if entry is None:
            table[pair] = [1, nbytes]
        else:
            entry[0] += 1
            entry[1] += nbytes
    pairs = [PairTraffic(source=s, target=t, copies=n, bytes=b) for (s, t), (n, b) in sorted(table.items())]
    return dict(h2d_copies=h2d, h2d_bytes=h2d_bytes, d2h_copies=d2h, d2h_bytes=d2h_bytes, bytes=total,
                symbolic_copies=symbolic, in_control_flow=in_control_flow, pairs=pairs)


def method_transfers(input: str, program: str, method: MethodView, facts: DeviceFacts,
                     findings: Iterable = ()) -> MethodTransfers:
    """The traffic of one method; `findings` are that method's findings (for the savings)."""
    mine = _own(findings, input, program, method.name)
    # Counted once per facts (the summary is made again after the fix trial), without a
    # Copy per copy.
    sizes, counts = facts.derived("summary.table", _table)
    flagged, savings = _flagged_and_savings(sizes, mine)
    return MethodTransfers(input=input, program=program, method=method.name, flagged_bytes=flagged,
                           fixable_savings=savings, **dict(counts, pairs=list(counts["pairs"])))


def named_copy_bytes(facts: DeviceFacts, findings: Iterable) -> dict[str, int]:
    """Bytes per call of each copy the method's `findings` name (their `copies` and
    `removes`), by node name: what `resummarized` counts once some of those findings are
    dropped (a baseline accepts them) where the method itself is no longer at hand (it was
    checked in a worker process)."""
    sizes = facts.derived("summary.table", _table)[0]
    return {n: sizes[n] for f in findings for names in (f.copies, f.removes) for n in names if n in sizes}


def resummarized(transfers: MethodTransfers, sizes: dict[str, int], findings: Iterable) -> MethodTransfers:
    """`transfers` with the flagged bytes and savings of `findings` in place of the ones it
    was made with: what `method_transfers` gives for them, the copies themselves being the
    same. `sizes`: `named_copy_bytes` of the method's findings then (a superset of these)."""
    mine = _own(findings, transfers.input, transfers.program, transfers.method)
    flagged, savings = _flagged_and_savings(sizes, mine)
    return replace(transfers, flagged_bytes=flagged, fixable_savings=savings)


def _own(findings: Iterable, input: str, program: str, method: str) -> list:
    return [f for f in findings if f.method == method and f.program == program and f.input == input]


def _flagged_and_savings(sizes: dict[str, int], mine: list) -> tuple[int, int]:
    """The bytes per call the findings `mine` flag and what their fixes save, each copy once."""
    if not mine:
        return 0, 0
    return (_distinct_bytes(sizes, (n for f in mine for n in f.copies)),
            _distinct_bytes(sizes, (n for f in mine if f.fixable for n in f.removes)))


def _table(facts: DeviceFacts) -> tuple[dict[str, int], dict]:
    """One pass over a method's copy nodes for both things the summary counts: the bytes per
    call of each copy by its node's name (0 when symbolic), what the findings' `copies` and
    `removes` are counted by, and `traffic_counts(copies(facts))`, without a Copy per copy:
    the copies are counted by (kind, source device object, target device object), each
    group's direction and device names worked out once (a method has a handful of groups
    and may have 100,000 copies)."""
    nbytes_of = facts.nbytes
    devices = facts.devices
    d2h = OpKind.D2H  # once: an enum member look-up is ~65 ns
    groups: dict[tuple, Optional[list]] = {}  # key -> [direction, source, target, copies, bytes, symbolic]
    sizes: dict[str, int] = {}
    in_control_flow = 0
    for node in facts.method.nodes:
        kind = node.kind
        if kind not in COPY_KINDS or not node.inputs:
            continue
        source = devices.get(node.inputs[0], UNREACHED)
        target = CPU if kind is d2h else node.device
        key = (kind, id(source), id(target))  # the devices outlive this loop: their ids stay theirs
        group = groups.get(key, _NEW)
        if group is _NEW:
            group = groups[key] = _group(kind, source, target)
        if group is None:  # no target, or a `.to()` that stays on its device
            continue
        nbytes = nbytes_of(node.outputs[0] if node.outputs else None)
        if nbytes is None:
            nbytes = nbytes_of(node.inputs[0])
        sizes[node.name] = nbytes or 0
        group[3] += 1
        if nbytes is None:
            group[5] += 1
        else:
            group[4] += nbytes
        if node.scope:
            in_control_flow += 1
    return sizes, _totals([g for g in groups.values() if g is not None], in_control_flow)


_NEW: list = []  # a group not seen yet (None is a group of no copies)


def _direction(kind: OpKind, source, target: Optional[Device]) -> Optional[str]:
    """H2D, D2H or D2D for a copy node of `kind` from `source` to `target`; None when it
    moves nothing (no target, or a `_to_copy` that stays where it is)."""
    if target is None:
        return None
    if kind == OpKind.TO_DEVICE:
        if not isinstance(source, Device) or source == target:
            return None
        return H2D if source.is_host else D2H if target.is_host else D2D
    return H2D if kind == OpKind.H2D else D2H


def _group(kind: OpKind, source, target: Optional[Device]) -> Optional[list]:
    """A new group's counters, or None when its nodes move nothing (see `_copy`)."""
    direction = _direction(kind, source, target)
    return None if direction is None else [direction, _device_name(source), str(target), 0, 0, 0]


def _totals(groups: list[list], in_control_flow: int) -> dict:
    """The Traffic fields (but savings) from the groups' counters."""
    h2d = h2d_bytes = d2h = d2h_bytes = total = symbolic = 0
    table: dict[tuple[str, str], list[int]] = {}
    for direction, source, target, count, nbytes, unsized in groups:
        total += nbytes
        symbolic += unsized
        if direction == H2D:
            h2d += count
            h2d_bytes += nbytes
        elif direction == D2H:
            d2h += count
            d2h_bytes += nbytes
        entry = table.setdefault((source, target), [0, 0])
        entry[0] += count
        entry[1] += nbytes
    pairs = [PairTraffic(source=s, target=t, copies=n, bytes=b) for (s, t), (n, b) in sorted(table.items())]
    return dict(h2d_copies=h2d, h2d_bytes=h2d_bytes, d2h_copies=d2h, d2h_bytes=d2h_bytes, bytes=total,
                symbolic_copies=symbolic, in_control_flow=in_control_flow, pairs=pairs)


def summarize(methods: Iterable[MethodTransfers]) -> TransferSummary:
    """Totals over methods, sorted by input, program and method."""
    ordered = sorted(methods, key=lambda m: (m.input, m.program, m.method))
    total = {
        key: sum(getattr(m, key) for m in ordered)
        for key in ("h2d_copies", "h2d_bytes", "d2h_copies", "d2h_bytes", "bytes", "symbolic_copies",
                    "in_control_flow", "flagged_bytes", "fixable_savings")
    }
    pairs = _pairs((p.source, p.target, p.copies, p.bytes) for m in ordered for p in m.pairs)
    return TransferSummary(methods=ordered, pairs=pairs, **total)
