"""XF005 host-op-splits-partition.

A *host segment* for device D is a set of host ops (COMPUTE, ALIAS and GETITEM nodes whose
results live on the host, and delegates without a device `target_device`: XNNPACK or any
CPU backend computes on the host exactly as a host op does) that each lie on a path D2H-from-D -> host ops -> H2D-to-D made
of host ops only, grouped into one segment when one of them reads what another writes.
Each segment is one finding: several D2Hs feeding one host op (fan-in) and one segment
feeding several H2Ds (fan-out) stay one finding, while two host paths that share nothing
but the D2H they start from are two (two values return to D through different ops).
A host op that only reads method inputs or constants is never on such a path; a segment
whose values go on to another device is not a split of D (XF002's territory); a direct
`h2d(d2h(x))` has no host op at all (XF001).
"""

from __future__ import annotations

from functools import partial
from operator import attrgetter, itemgetter

from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.lattice import CPU, UNREACHED, Device
from xferlint.analyzer.view import Node, OpKind
from xferlint.records import dataclass
from xferlint.rules._patterns import listed, tick
from xferlint.rules import _words as words
from xferlint.rules.base import Example, Rule, RuleContext, format_bytes

HOST_OP_KINDS = frozenset({OpKind.COMPUTE, OpKind.ALIAS, OpKind.GETITEM})
_SHOWN = 4  # host ops named in a message before "and N more"

# OpKind members as module constants: `OpKind.X` looks the member up through the enum's
# metaclass (~65 ns), and these tests run per node or per finding.
_DELEGATE, _GETITEM, _COMPUTE = OpKind.DELEGATE, OpKind.GETITEM, OpKind.COMPUTE


@dataclass(frozen=True)
class HostSegment:
    """Host ops between D2Hs leaving `device` and H2Ds coming back to it."""

    device: Device
    d2hs: tuple[Node, ...]  # copies that take values off the device into the segment
    host_ops: tuple[Node, ...]  # in program order (getitems of tuple results left out)
    h2ds: tuple[Node, ...]  # copies that bring the segment's results back to the device


def is_cpu_delegate(node: Node) -> bool:
    """A delegate call without a device `target_device`: host compute."""
    return node.kind == _DELEGATE and (node.device is None or node.device.is_host)


def _on_host(device) -> bool:
    return device is CPU or device == CPU  # the solver's host is CPU itself: no __eq__ call


def host_segments(facts: DeviceFacts) -> list[HostSegment]:
    """Every host segment of the method, for every device, in program order."""
    nodes = facts.method.nodes
    devices_of = facts.devices  # facts.device's dict: read once per D2H
    # One pass for every device: the host ops, and the copies leaving and entering each device.
    host: set[int] = set()
    leaving: list[tuple[object, Node]] = []
    entering: list[tuple[Device, Node]] = []
    # A host op: a COMPUTE, ALIAS or GETITEM node or a CPU delegate, every result on the host.
    # Which devices are the host's, by object: the facts hold a few (a Device compares in
    # Python), and every getitem of a device delegate's result would compare with the host.
    on_host = {i for i, d in {id(d): d for d in devices_of.values()}.items() if _on_host(d)}
    d2h, h2d, delegate = OpKind.D2H, OpKind.H2D, _DELEGATE  # once: an enum member look-up is ~65 ns
    for n in nodes:
        kind = n.kind
        if kind is d2h:
            if n.inputs:
                leaving.append((devices_of.get(n.inputs[0], UNREACHED), n))
        elif kind is h2d:
            if n.device is not None and n.inputs:
                entering.append((n.device, n))
        elif kind in HOST_OP_KINDS or (kind is delegate and is_cpu_delegate(n)):
            outputs = n.outputs
            if len(outputs) == 1:  # most host ops: no list to build
                if id(devices_of.get(outputs[0])) in on_host:
                    host.add(n.index)
            elif outputs and all([id(devices_of.get(v)) in on_host for v in outputs]):
                host.add(n.index)
    if not host:  # every segment is made of host ops
        return []
    h2ds = _by_device(entering)
    # (an H2D without an operand names a device too, but no segment can end in it)
    devices = sorted(d for d in h2ds if not d.is_host)
    if not devices:
        return []
    d2hs = _by_device(leaving)
    keyed: list[tuple[tuple[int, str], HostSegment]] = []  # by first host op, then device name
    seen: dict[int, set[int]] = {}  # `sources`, shared by every device: a host op's reads are the same for each
    for device in devices:
        name = str(device)  # once per device, not per segment: Device.__str__ is Python
        found = _segments_for(facts, device, host, d2hs.get(device, []), h2ds.get(device, []), seen)
        keyed.extend([((s.host_ops[0].index, name), s) for s in found])
    keyed.sort(key=itemgetter(0))
    return [s for _, s in keyed]


def _by_device(pairs: list[tuple[object, Node]]) -> dict:
    """The nodes of (device, node) pairs grouped by device, each group in program order.
    Grouped by object first: a Device hashes in Python, and a program has a few device
    objects for 100,000 copies; equal devices that are different objects are merged after."""
    by_object: dict[int, tuple[object, list[Node]]] = {}
    for device, node in pairs:
        group = by_object.get(id(device))  # the devices outlive this call: their ids stay theirs
        if group is None:
            group = by_object[id(device)] = (device, [])
        group[1].append(node)
    grouped: dict = {}
    merged: dict[int, list[Node]] = {}  # the groups that took in another object's nodes, by id
    for device, members in by_object.values():
        group = grouped.get(device)
        if group is None:
            grouped[device] = members
        else:
            group.extend(members)  # the lists are this call's own
            merged[id(group)] = group
    for group in merged.values():  # each once, at the end: not once per object merged in (quadratic)
        group.sort(key=_INDEX)
    return grouped


_INDEX = attrgetter("index")


def _segments_for(facts: DeviceFacts, device: Device, host: set[int], d2hs: list[Node],
                  h2ds: list[Node], seen: dict[int, set[int]]) -> list[HostSegment]:
    nodes = facts.method.nodes
    readers = facts.readers
    ssa = facts.method.cfg is None
    # SSA (graph views): every read sees every write of its value (`reaching_writers` is `writers`)
    reaching = (lambda node, vid: facts.writers(vid)) if ssa else facts.reaching_writers

    def sources(i: int) -> set[int]:
        """The nodes whose writes node `i`'s reads can see (always, in SSA views; over a
        .pte's CFG only the writes that reach the read: a slot written after an H2D read
        it, like a buffer's write-back, is no path to that H2D), once per node: every pass
        below asks. `i` sees `w` exactly when it reads some value `w` writes and that
        write reaches it."""
        found = seen.get(i)
        if found is None:
            node = nodes[i]
            found = seen[i] = {w.index for v in node.inputs for w in reaching(node, v)}
        return found

    # value -> {writer: its host readers}, for a slot with many readers (see `host_readers`)
    seeing: dict[str, dict[int, list[int]]] = {}

    def host_readers(i: int) -> list[int]:
        """The indices of the host ops that read what node `i` writes and see that write,
        in the order of the values' readers. Over a CFG, a slot with many readers has
        them sorted by the writes they see, once: scanning every reader of the slot for
        each of its writes was quadratic in a slot written and read in every block."""
        found: list[int] = []
        for v in nodes[i].outputs:
            users = readers(v)
            if ssa or len(users) <= _SCANNED:
                found += [r.index for r in users if r.index in host and (ssa or i in sources(r.index))]
                continue
            by_writer = seeing.get(v)
            if by_writer is None:
                by_writer = seeing[v] = _by_writer(users, host, sources)
            found += by_writer.get(i, ())
        return found

    # what each copy touches, once: the reaches start there and the segments' copies are found there
    entries_of = {d.index: host_readers(d.index) for d in d2hs}
    # H2Ds whose reads see the same writes (a slot's, where the method is read flow-
    # insensitively: every write of it) share one list of writers, and then one list of
    # host writers, filtered once; the reach starts from each distinct list once
    filtered: dict[int, tuple[list[Node], list[int]]] = {}

    def host_writers(h: Node) -> list[int]:
        writers = reaching(h, h.inputs[0])
        got = filtered.get(id(writers))
        if got is None or got[0] is not writers:  # the pair keeps `writers` (and so its id) alive
            got = filtered[id(writers)] = (writers, [w.index for w in writers if w.index in host])
        return got[1]

    exits_of = {h.index: host_writers(h) for h in h2ds}
    distinct_exits = {id(found): found for found in exits_of.values()}.values()
    forward = _reach([r for found in entries_of.values() for r in found], host_readers)
    # Back from the H2Ds, within what the D2Hs reach: every host op after one of those is
    # reached too, so the walk finds all of the split and goes nowhere else (a long host
    # chain that only feeds the device, from the method's inputs, is not walked per device).
    split = _reach([w for found in distinct_exits for w in found if w in forward],
                   lambda i: [w for w in sources(i) if w in forward])
    if not split:
        return []

    parent = {i: i for i in split}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in split:
        for w in sources(i):
            if w in split:
                parent[find(i)] = find(w)

    groups: dict[int, list[int]] = {}
    for i in sorted(split):
        groups.setdefault(find(i), []).append(i)
    # Each copy joins the segments it touches, in program order: one pass over the copies,
    # not one per segment (quadratic in a program with thousands of segments).
    entries: dict[int, list[Node]] = {}
    for d in d2hs:
        for root in _roots(entries_of[d.index], split, find):
            entries.setdefault(root, []).append(d)
    exits: dict[int, list[Node]] = {}
    exit_roots: dict[int, list[int]] = {}  # by id of a shared list of host writers (`host_writers`)
    for h in h2ds:
        members = exits_of[h.index]
        roots = exit_roots.get(id(members))
        if roots is None:
            roots = exit_roots[id(members)] = _roots(members, split, find)
        for root in roots:
            exits.setdefault(root, []).append(h)
    result = []
    for root, members in groups.items():
        entry, exit_ = tuple(entries.get(root, ())), tuple(exits.get(root, ()))
        # getitems of a host op's tuple result connect the segment but are not ops of their own
        ops = tuple(nodes[i] for i in members if nodes[i].kind != _GETITEM) or tuple(nodes[i] for i in members)
        result.append(HostSegment(device=device, d2hs=entry, host_ops=ops, h2ds=exit_))
    return result


_SCANNED = 16  # a value with more readers than this has them indexed by the writes they see


def _by_writer(users: list[Node], host: set[int], sources) -> dict[int, list[int]]:
    """{w: the host ops among `users` whose reads see node w's writes}, each list in the
    order of `users` (a reader listed twice, reading the value twice, is listed twice)."""
    found: dict[int, list[int]] = {}
    for r in users:
        index = r.index
        if index in host:
            for w in sources(index):
                found.setdefault(w, []).append(index)
    return found


def _roots(members: list[int], split: set[int], find) -> list[int]:
    """The segments (by root) that the nodes `members` of a copy's touch, each once, in order."""
    if not members:  # a copy of a direct round trip touches no host op
        return []
    if len(members) == 1:  # most copies touch one host op
        return [find(members[0])] if members[0] in split else []
    return list(dict.fromkeys(find(i) for i in members if i in split))


def _reach(start, step) -> set[int]:
    seen: set[int] = set()
    work = list(start)
    while work:
        i = work.pop()
        if i in seen:
            continue
        seen.add(i)
        work.extend(step(i))
    return seen


# --------------------------------------------------------------------------- examples


def _build(kind: str):
    import torch

    from xferlint.testing import lower

    class SplitByCumsum(torch.nn.Module):
        """add (cuda:0) -> cumsum (host) -> sin (cuda:0): the host op splits the partition."""

        def forward(self, x, y):
            return torch.sin(torch.cumsum(x + y, 0))

    class CumsumFirst(torch.nn.Module):
        """cumsum (host) runs on the input before the device partition: nothing comes back."""

        def forward(self, x, y):
            return torch.sin(torch.cumsum(x, 0) + y)

    inputs = (torch.randn(8, 8), torch.randn(8, 8))
    if kind == "split":
        return lower(SplitByCumsum(), inputs, ["cuda:0"])
    if kind == "two-devices":
        return lower(SplitByCumsum(), inputs, ["cuda:0", "cuda:1"])
    return lower(CumsumFirst(), inputs, ["cuda:0"])


# --------------------------------------------------------------------------- the rule


class HostOpSplitsPartition(Rule):
    """A value leaves a device for host ops and comes back to the same device.

    ## What it does
    Flags every *host segment*: host ops that sit on a path device -> `_d2h_copy` -> one or
    more host ops -> `_h2d_copy` -> the same device (same type and index). Each finding
    names the host ops and their source lines, the delegates on either side and the bytes
    moved both ways per call. Host ops connected to each other form one segment, so
    several values leaving the device into one op, or one result going back to several
    delegates, is one finding.

    It does not flag a direct `_h2d_copy(_d2h_copy(x))` with no host op between (that is
    XF001), a value that comes back to a *different* device (XF002's kind of move), or
    host ops that only read method inputs or constants.

    ## Why is this bad?
    A partitioner hands a backend the ops it supports; one op it cannot take (a `cumsum`,
    a custom op, a data-dependent shape) splits what would have been one device partition
    into two delegates with a round trip through host memory between them. Every call
    then copies the value off the device, waits for the stream, runs the op on the CPU
    and copies the result back: two bus crossings and two synchronizations, usually far
    more expensive than the op itself. ExecuTorch cannot elide these copies: they are
    needed for the host op to run.

    ## Example
    ```python
    a = x + y                 # delegate on cuda:0
    b = torch.cumsum(a, 0)    # no cuda:0 kernel: runs on host
    return torch.sin(b)       # delegate on cuda:0
    # lowered: getitem (cuda:0) -> _d2h_copy -> cumsum -> _h2d_copy (cuda:0) -> delegate_1
    ```

    ## Use instead
    Let the device backend take the op (a backend or partitioner that supports it, a
    custom kernel, or a rewrite into ops it supports), or move the op off the hot path:
    before the first device partition or after the last one, where its input or output
    crosses the bus anyway.

    ```python
    b = torch.cumsum(x, 0)    # on host, before anything runs on cuda:0
    return torch.sin(b + y)   # one partition on cuda:0
    ```

    ## References
    - ExecuTorch `PropagateDevicePass` (a D2H after every device output, an H2D before
      every device input)
    - https://pytorch.org/executorch/
    """

    code = "XF005"
    name = "host-op-splits-partition"
    examples = (
        Example(partial(_build, "split"), 1, "cumsum on host between two cuda:0 delegates"),
        Example(partial(_build, "host-first"), 0, "the host op runs before the device partition"),
        Example(partial(_build, "two-devices"), 0, "the value goes on to cuda:1, not back to cuda:0"),
    )

    def check(self, ctx: RuleContext):
        for segment in host_segments(ctx.facts):
            yield self._finding(ctx, segment)

    def _finding(self, ctx: RuleContext, seg: HostSegment):
        facts = ctx.facts
        device = ctx.device_text(seg.device)  # once: the texts name it seven times
        d2hs, h2ds = list(seg.d2hs), list(seg.h2ds)
        producers = _unique([w for d in d2hs for w in facts.writers(d.inputs[0])])
        delegates_before = _unique([_delegate_behind(facts, p) for p in producers])
        readers = facts.readers
        consumers = _unique([r for h in h2ds for r in readers(h.output)])
        out_bytes = _sum([ctx.copy_bytes(d) for d in d2hs])
        back_bytes = _sum([ctx.copy_bytes(h) for h in h2ds])

        values = listed(d2hs, ", ", lambda d: tick(d.inputs[0]))
        before = _names(delegates_before or producers, partial(_where, ctx))
        after = _names(consumers, ctx.describe)
        ops = _host_ops(seg.host_ops)
        cpu_delegates = [n for n in seg.host_ops if is_cpu_delegate(n)]
        kinds = _op_kinds(seg.host_ops) if cpu_delegates else _host_kinds(seg.host_ops)
        plural = len(seg.host_ops) > 1
        what = "host ops" if plural else ("a CPU delegate" if cpu_delegates else "host op")
        take = ", ".join([f"`{k}`" for k in kinds[:_SHOWN]]) or "the ops it delegated"
        advice = (
            f"Let the {device} backend take {take} (a partitioner or kernel that supports it), or move "
            f"the op off the hot path, before the first or after the last {device} partition."
        )
        if cpu_delegates:
            backends = ", ".join(dict.fromkeys(f"`{_backend(n)}`" for n in cpu_delegates))
            advice = (
                f"The {backends} partitioner that runs before the {device} one claims {take}: drop it, or "
                f"limit it (e.g. `XnnpackPartitioner(configs=...)`) so the {device} partitioner takes "
                f"{'it' if len(kinds) == 1 else 'them'} and the partition stays whole, or move the op before the "
                f"first or after the last {device} partition."
            )
        detail = (
            f"{values} (from {before}) leave{'s' if len(seg.d2hs) == 1 else ''} {device} for {what} "
            f"{ops}, and the result comes back to {device} for {after}: "
            f"{_subject(plural, bool(cpu_delegates))} one {device} partition in two, moving "
            f"{format_bytes(out_bytes)} to host and {format_bytes(back_bytes)} back per call "
            f"({len(seg.d2hs)} D2H, {len(seg.h2ds)} H2D), with a stream sync at each crossing. {advice}"
        )
        path = [(p, "producer") for p in producers]
        path += [(d, "d2h") for d in d2hs]
        path += [(n, "host-op") for n in seg.host_ops]
        path += [(h, "h2d") for h in h2ds]
        path += [(c, "consumer") for c in consumers]
        # the copies' bytes, each copy once: the D2Hs and H2Ds are distinct nodes, each listed once
        both = None if out_bytes is None or back_bytes is None else out_bytes + back_bytes
        message = (f"{_short_ops(seg.host_ops, kinds, cpu_delegates)} split{'' if plural else 's'} a "
                   f"{device} partition: {format_bytes(both if d2hs or h2ds else None)} per call")
        copies = d2hs + h2ds
        return ctx.finding(self, message, path, anchor=_first_located(ctx, seg.host_ops),
                           location=_first_location(seg.host_ops), copies=copies, detail=detail)


def _short_ops(nodes, op_kinds: list[str], cpu_delegates) -> str:
    """The host side of a split in a few words, by the ops' user-facing names (the line it is
    reported at is the first host op's): `host op aten.cumsum`, `the XnnpackBackend delegate
    (aten._softmax)`, `3 host ops (aten.cumsum, aten.sort, ...)`. `op_kinds`: `_op_kinds(nodes)`."""
    kinds = ", ".join(op_kinds[:2]) + (", ..." if len(op_kinds) > 2 else "")
    if len(nodes) > 1:
        return f"{len(nodes)} host ops ({kinds})"
    if cpu_delegates:
        return f"{words.op_name(nodes[0])} ({kinds})" if kinds else words.op_name(nodes[0])
    return f"host op {kinds or words.op_name(nodes[0])}"


def _subject(plural: bool, delegates: bool) -> str:
    if plural:
        return "they split" if delegates else "the host ops split"
    return "the CPU delegate splits" if delegates else "the host op splits"


def _backend(node: Node) -> str:
    return node.delegate.backend if node.delegate is not None else "unknown"


def _host_kinds(nodes) -> list[str]:
    """`_op_kinds` of host ops none of which is a CPU delegate."""
    kinds = {op_name(n.target) for n in nodes if n.kind is _COMPUTE}
    if not kinds and nodes:
        return [op_name(nodes[0].target)]
    return sorted(kinds)


def _op_kinds(nodes) -> list[str]:
    """The operators a segment runs on the host: its host ops', and the ops inside its CPU
    delegates (their original graphs; none known on a `.pte`)."""
    kinds: list[str] = []
    for n in nodes:
        if is_cpu_delegate(n):
            kinds.extend(_inner_kinds(n))
        elif n.kind == _COMPUTE:
            kinds.append(op_name(n.target))
    if not kinds and nodes and not is_cpu_delegate(nodes[0]):
        kinds.append(op_name(nodes[0].target))
    return sorted(set(kinds))


_PLUMBING = ("aten.view_copy", "aten.permute_copy", "aten.clone", "aten._to_copy", "aten.expand_copy",
             "aten.unsqueeze_copy", "aten.squeeze_copy", "dim_order_ops._to_dim_order_copy", "aten.alias_copy")


def _inner_kinds(node: Node) -> list[str]:
    """Operators inside a delegate, layout plumbing (views, permutes, clones) left out
    unless it is all the delegate runs."""
    names = list(dict.fromkeys(op_name(op.target) for op in (node.delegate.ops if node.delegate else ())))
    real = [n for n in names if n not in _PLUMBING]
    return real or names


def op_name(target: str) -> str:
    """`aten.cumsum.out` (or `.default`) -> `aten.cumsum`: the operator, whichever overload runs."""
    head, _, overload = target.rpartition(".")
    return head if head and (overload in ("out", "default") or overload.endswith("_out")) else target


def _delegate_behind(facts: DeviceFacts, node: Node):
    """The delegate whose result `node` (a getitem, usually) carries, else the node."""
    if node.kind == _GETITEM and node.inputs:
        writer = facts.writer(node.inputs[0])
        if writer is not None and writer.kind == _DELEGATE:
            return writer
    return node


def _unique(nodes: list) -> list[Node]:
    """The nodes, None left out, each once, in program order."""
    if len(nodes) == 1:  # a segment's usual one producer, one consumer
        return nodes if nodes[0] is not None else []
    seen: dict[int, Node] = {}
    for node in nodes:
        if node is not None:
            seen.setdefault(node.index, node)
    return [seen[i] for i in sorted(seen)]


def _sum(values: list):
    """The sum of the sizes, None when any is (symbolic)."""
    total = 0
    for value in values:
        if value is None:
            return None
        total += value
    return total


def _where(ctx: RuleContext, node: Node) -> str:
    """`name`, line 12: `code` (no parentheses, to nest in a sentence's own)."""
    loc = ctx.locate(node)
    if loc is None:
        return tick(node.name)
    return f"{tick(node.name)}, line {loc.line}" + (f": `{loc.code}`" if loc.code else "")


def _names(nodes: list[Node], describe) -> str:
    if not nodes:
        return "an unknown node"
    if len(nodes) == 1:
        return describe(nodes[0])
    shown = [describe(n) for n in nodes[:_SHOWN]]
    more = f" and {len(nodes) - _SHOWN} more" if len(nodes) > _SHOWN else ""
    return ", ".join(shown) + more


def _line(loc) -> str:
    """`, line 12: `code`` of a host op's location ('' when it has none)."""
    if loc is None:
        return ""
    return f", line {loc.line}: `{loc.code}`" if loc.code else f", line {loc.line}"


def _host_op(node: Node) -> str:
    """One host op as a message names it: operator, node and line; a CPU delegate with the
    ops it runs."""
    if is_cpu_delegate(node):
        inner = node.delegate.ops if node.delegate is not None else ()
        kinds = set(_inner_kinds(node))  # once, not once per op: a delegate may run thousands
        runs = [op for op in inner if op_name(op.target) in kinds]
        shown = runs[:_SHOWN]
        running = "; ".join(f"`{op_name(op.target)}`{_line(op.location)}" for op in shown)
        more = len(runs) - len(shown)
        running += f" and {more} more" if more > 0 else ""
        return f"`{_backend(node)}` ({tick(node.name)}" + (f", running {running})" if running else ")")
    return f"`{op_name(node.target)}` ({tick(node.name)}{_line(node.location)})"


def _host_ops(nodes: tuple[Node, ...]) -> str:
    return _names(list(nodes), _host_op) if nodes else ""


def _first_location(nodes):
    """The first source line among the host ops and the ops inside the CPU delegates."""
    for node in nodes:
        if node.location is not None:
            return node.location
        for op in (node.delegate.ops if is_cpu_delegate(node) and node.delegate is not None else ()):
            if op.location is not None:
                return op.location
    return None


def _first_located(ctx: RuleContext, nodes) -> Node:
    return next((n for n in nodes if n.location is not None), nodes[0])
