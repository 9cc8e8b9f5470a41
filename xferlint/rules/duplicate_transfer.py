"""XF004 duplicate-transfer."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from functools import partial
from operator import attrgetter
from typing import Iterator, Optional

from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.lattice import CPU, Device
from xferlint.analyzer.view import COPY_KINDS, Node, OpKind
from xferlint.findings import Applicability
from xferlint.records import dataclass
from xferlint.rules._patterns import round_trip_at, tick
from xferlint.rules import _words as words
from xferlint.rules.base import Example, Rule, format_bytes

# Node kinds whose operands a fix may rewrite in place; control-flow operands and the
# MOVE nodes that bind them are left alone.
REWIRABLE = frozenset(
    {OpKind.COMPUTE, OpKind.DELEGATE, OpKind.H2D, OpKind.D2H, OpKind.TO_DEVICE, OpKind.ALIAS, OpKind.GETITEM}
)

# OpKind members as module constants: `OpKind.X` looks the member up through the enum's
# metaclass (~65 ns), and these tests run per node or per finding.
_H2D, _TO_DEVICE, _D2H, _UNKNOWN = OpKind.H2D, OpKind.TO_DEVICE, OpKind.D2H, OpKind.UNKNOWN


@dataclass(frozen=True)
class DuplicateCopy:
    """`duplicate` copies the same value to the same device as the earlier `first`."""

    first: Node
    duplicate: Node
    value: str  # what both copy
    device: Device  # where both copy it to


def copy_target(node: Node) -> Optional[Device]:
    """Where a copy node puts its result: the H2D's (or a device-to-device `.to()`'s)
    device, host for a D2H."""
    if node.kind in (_H2D, _TO_DEVICE):
        return node.device
    if node.kind == _D2H:
        return CPU
    return None


def duplicate_copies(facts: DeviceFacts) -> Iterator[DuplicateCopy]:
    """Every copy that repeats an earlier one: same kind, same source value, same target
    device, and the earlier copy has always run, on the same bytes, when the later one
    runs (see `_Earlier.first_before`). Same-device round trips are XF001's, not ours.

    One pass in program order over the copies whose source something else reads too (a
    copy whose source it alone reads repeats nothing: most copies of a wide delegate's
    operands): per (kind, scope, source, target) the earlier copies that found no first of
    their own; each copy finds its first by a binary search, so the pass is O(N log N)
    however many copies share a source (pairing each copy with every earlier one, scanning
    the nodes between, was cubic on a `.pte` whose source is written between its copies)."""
    earlier: dict[tuple, _Earlier] = {}
    for node in _shared_source_copies(facts):
        target = copy_target(node)
        # the device by its parts: a Device hashes in Python, and each copy is looked up
        key = (node.kind, node.scope, node.inputs[0], target.type, target.index)
        seen = earlier.get(key)
        first = seen.first_before(facts, node) if seen is not None else None
        if first is None:
            if seen is None:
                seen = earlier[key] = _Earlier()
            seen.add(facts, node)
        elif node.kind != _H2D or not _same_device_trip(facts, node):
            yield DuplicateCopy(first=first, duplicate=node, value=node.inputs[0], device=target)


def _shared_source_copies(facts: DeviceFacts) -> list[Node]:
    """The copies (one operand, one result, a known target) whose source has another
    reader, in program order: the only ones that can repeat, or be repeated by, a copy."""
    readers = facts.readers
    return [n for n in facts.method.nodes
            if n.kind in COPY_KINDS and len(n.inputs) == 1 and len(n.outputs) == 1
            and len(readers(n.inputs[0])) > 1 and copy_target(n) is not None]


def _last_write_before(facts: DeviceFacts, vid: str, index: int) -> int:
    """The index of the last node before node `index` that writes `vid`; -1 if none.
    The writers are in program order: a binary search, however many there are."""
    writers = facts.writers(vid)
    k = bisect_left(writers, index, key=_INDEX)
    return writers[k - 1].index if k else -1


_INDEX = attrgetter("index")


def _same_device_trip(facts: DeviceFacts, h2d: Node) -> bool:
    trip = round_trip_at(facts, h2d)
    return trip is not None and trip.same_device  # XF001 removes both copies; reusing one would hide that


class _Earlier:
    """The earlier copies of one (kind, scope, source, target), in program order.

    Graph views are SSA with control flow inlined per body: two copies in the same body
    (`scope`, part of the key) run together, in order, so the first of them is the first.
    Views with a CFG (`.pte` slots) must show that the first copy runs, on the same source
    bytes, every time the later one runs, and that its result is still there for the later
    one's readers: both in one basic block, no write of the source in between, one writer
    of the first's result. The first two conditions are a lower bound on the first's index
    (the block's first node, the source's last write before the later copy); the third is
    a property of the copy alone, so only copies that have it are searched."""

    __slots__ = ("nodes", "single", "single_index")

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.single: list[Node] = []  # copies whose result has no other writer
        self.single_index: list[int] = []

    def add(self, facts: DeviceFacts, node: Node) -> None:
        self.nodes.append(node)
        if facts.method.cfg is not None and len(facts.writers(node.output)) == 1:
            self.single.append(node)
            self.single_index.append(node.index)

    def first_before(self, facts: DeviceFacts, later: Node) -> Optional[Node]:
        cfg = facts.method.cfg
        if cfg is None:
            return self.nodes[0] if self.nodes else None
        block_start = cfg.blocks[cfg.block_of[later.index]][0]
        bound = max(block_start, _last_write_before(facts, later.inputs[0], later.index))
        k = bisect_left(self.single_index, bound)
        return self.single[k] if k < len(self.single) else None


def sharing_blocker(facts: DeviceFacts, dup: DuplicateCopy) -> Optional[str]:
    """Why the duplicate's readers cannot read the first copy instead (None: they can).

    The source may be written in place, but not between the two copies (a buffer's
    write-back after both is fine); nothing may write either copy in place."""
    writer = _writer_between(facts, dup.value, dup.first.index, dup.duplicate.index)
    if writer is not None:
        return f"{tick(writer.name)} writes the source in place between the copies, so they hold different bytes"
    for vid, role in ((dup.first.output, "the first copy"), (dup.duplicate.output, "the duplicate")):
        reader = facts.in_place_reader(vid)  # cached: one source may have thousands of copies
        if reader is not None:
            what = "writes" if reader.mutates else "may write (unmodelled operator)"
            return f"{tick(reader.name)} {what} {role} in place, so the copies may hold different bytes"
    for reader in facts.readers(dup.duplicate.output):
        if reader.kind not in REWIRABLE:
            return f"the duplicate feeds control flow ({tick(reader.name)}), which the fix does not rewrite"
    return None


def _writer_between(facts: DeviceFacts, vid: str, start: int, end: int) -> Optional[Node]:
    """The first node that writes `vid` in place (or may: unmodelled) after node `start`
    and before node `end`, in program order."""
    if facts.in_place_reader(vid) is None:  # the common case, cached
        return None
    writers = _in_place_writers(facts, vid)
    k = bisect_right(writers, start, key=_INDEX)
    return writers[k] if k < len(writers) and writers[k].index < end else None


def _in_place_writers(facts: DeviceFacts, vid: str) -> list[Node]:
    """The readers of `vid` that write it in place (or may), in program order; listed once
    per value and searched per pair of copies: a buffer written and copied in each of n
    blocks has n pairs, and scanning its readers per pair was quadratic."""
    memo = facts.derived("duplicate_transfer.in_place_writers", _new_memo)
    found = memo.get(vid)
    if found is None:
        found = memo[vid] = [r for r in facts.readers(vid) if r.mutates or r.kind == _UNKNOWN]
    return found


def _new_memo(facts: DeviceFacts) -> dict[str, list[Node]]:
    return {}


def applicability(facts: DeviceFacts, dup: DuplicateCopy) -> Optional[Applicability]:
    """Safe in a functional graph; unsafe when the duplicate is a method output (the
    output would then share storage with the first copy's other readers); None when
    sharing would change what a reader sees."""
    if sharing_blocker(facts, dup) is not None:
        return None
    if facts.is_output(dup.duplicate.output):
        return Applicability.UNSAFE
    return Applicability.SAFE


def _build(devices, **kwargs):
    import torch

    from xferlint.testing import lower

    class SharedInput(torch.nn.Module):
        """`x` feeds two delegates: sin(x) and mm(x, y)."""

        def forward(self, x, y):
            return torch.sin(x) + torch.mm(x, y)

    class SharedDeviceValue(torch.nn.Module):
        """A delegate's result feeds two more delegates."""

        def forward(self, x, y):
            a = x + y
            return torch.sin(a), torch.mm(a, a)

    model = SharedDeviceValue() if kwargs.pop("device_value", False) else SharedInput()
    inputs = (torch.randn(4, 4), torch.randn(4, 4))
    return lower(model, inputs, devices, **kwargs)


class DuplicateTransfer(Rule):
    """The same value is copied to the same device more than once per call.

    ## What it does
    Flags a host-to-device (or device-to-host) copy of a value that an earlier copy in the
    same graph already moved to the same device (same type and index).

    ## Why is this bad?
    Every copy crosses the bus and, on most backends, synchronizes the stream; a second
    copy of the same bytes to the same device is pure overhead, and its buffer doubles the
    device memory the value takes. ExecuTorch's `PropagateDevicePass` inserts one H2D per
    (delegate, argument) and never shares them, so stock ExecuTorch 1.5.1 produces this
    whenever one host tensor (a method input, say) feeds two delegates on one device.

    ## Example
    ```python
    q = torch.mm(x, wq)   # delegate on cuda:0
    k = torch.mm(x, wk)   # delegate on cuda:0
    # lowered: _h2d_copy(x) -> delegate_0 and, again, _h2d_copy(x) -> delegate_1
    ```

    ## Use instead
    Copy once and let both delegates read the copy: run `xferlint fix` (or put
    `xferlint.fixes.FixTransfersPass()` into `ExecutorchBackendConfig.to_out_var_pass`),
    or let one partition take both consumers.

    ## Fix safety
    Safe in a functional graph: the readers of the duplicate are rewired to the first copy,
    which holds the same bytes on the same device, and the duplicate (with its buffer) is
    removed. The first copy runs before the duplicate in the same graph, so it has always
    run when they read it; copies in different branches or loop bodies are never paired.
    The first copy's buffer now lives until the last of those readers, which is why fixed
    programs are memory-planned again rather than keeping the old plan. Not fixed at all
    when the source is written in place between the two copies (a buffer's write-back
    after both is fine), when either copy is written in place, or when the duplicate feeds
    control flow. Unsafe when the duplicate is a method output: the caller would get a
    tensor that shares storage with another consumer's input (and with another output,
    when the first copy is one too).

    ## References
    - ExecuTorch `PropagateDevicePass._insert_h2d_copies` (one copy per delegate argument)
    - https://pytorch.org/executorch/
    """

    code = "XF004"
    name = "duplicate-transfer"
    fix_applicability = Applicability.SAFE
    examples = (
        Example(partial(_build, ["cuda:0"]), 1, "stock ExecuTorch: a method input feeds two cuda:0 delegates"),
        Example(partial(_build, ["cuda:0", "cuda:1", "cuda:0"]), 0,
                "the input goes to cuda:0 once and to cuda:1 once"),
        Example(partial(_build, ["cuda:0"], elide=False, device_value=True), 0,
                "same-device round trips are XF001's, even when two of them copy the same value"),
    )

    def check(self, ctx):
        facts = ctx.facts
        for dup in duplicate_copies(facts):
            device = ctx.device_text(dup.device)  # str(Device) is Python
            nbytes = facts.nbytes(dup.duplicate.output) or facts.nbytes(dup.value)
            consumers = facts.readers(dup.duplicate.output)
            consumer = f" for {ctx.describe(consumers[0])}" if consumers else ""
            fix = applicability(facts, dup)
            advice = (
                f"Reuse {tick(dup.first.name)}"
                if fix == Applicability.SAFE
                else f"Reuse {tick(dup.first.name)} (`xferlint fix --unsafe-fixes`: the duplicate is a method output)"
                if fix == Applicability.UNSAFE
                else f"Reuse {tick(dup.first.name)} by hand once that is sorted out (no automatic fix: "
                f"{sharing_blocker(facts, dup)})"
            )
            detail = (
                f"{tick(dup.value)} is copied to {device} twice per call: {tick(dup.first.name)} already "
                f"holds it there, and {tick(dup.duplicate.name)} copies the same "
                f"{format_bytes(nbytes)} again{consumer}. {advice}, or let one partition take both consumers."
            )
            path = [(dup.first, "copy"), (dup.duplicate, "duplicate")] + [(c, "consumer") for c in consumers[:1]]
            producer = facts.writer(dup.value)
            if producer is not None:
                path.insert(0, (producer, "producer"))
            message = (f"{words.value_subject(ctx, dup.value)} is copied to {device} again: "
                       f"{format_bytes(ctx.copies_bytes([dup.duplicate]))} per call")
            yield ctx.finding(self, message, path, anchor=dup.duplicate, copies=[dup.duplicate],
                              removes=[dup.duplicate] if fix is not None else (), detail=detail, applicability=fix)
