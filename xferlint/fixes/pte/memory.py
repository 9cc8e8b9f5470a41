"""Does a memory plan stay valid when a fix makes instructions read other tensors?

A `.pte`'s memory plan lets tensors whose lifetimes do not overlap share bytes of a planned
buffer. A fix that removes a copy makes the copy's readers read the tensor it copied (XF001:
the device tensor; XF004: the first copy) instead, so that tensor must now stay alive until
those readers run: its lifetime grows. That is safe only if nothing else planned into the
same bytes is written while it is still to be read.

`conflicts(method, edits, value)` answers that over the method's CFG, on the method as the
edits leave it: removed nodes neither read nor write, rewired readers read the new value.
The tensor is live at a node when some path from there reaches a read of it (or of a view
of it) before it is written again; a conflict is a node where it is live (read later, or
read by that very node) that writes another planned tensor overlapping its bytes. Only
conflicts the original program did not already have count (in-place kernels and the
emitter's own aliasing are ExecuTorch's business, not the fix's).
"""

from typing import Iterable, NamedTuple, Optional

from xferlint.analyzer.view import MethodView, Node, OpKind


class Edits(NamedTuple):
    """What the accepted fixes do to a method: reads swapped per reader, nodes removed."""

    rewires: dict[int, dict[str, str]]  # node index -> {old value: new value}
    removed: frozenset[int]
    outputs: dict[str, str]  # method outputs swapped

    @classmethod
    def none(cls) -> "Edits":
        return cls({}, frozenset(), {})


class Conflict(NamedTuple):
    value: str  # the tensor kept alive
    writer: Node  # writes `other` while `value` is still to be read
    other: str
    reader: Node  # a read of `value` that `writer` comes before (or is)


def _uses(node: Node, edits: Edits) -> tuple[str, ...]:
    if node.index in edits.removed:
        return ()
    swap = edits.rewires.get(node.index)
    return tuple(swap.get(v, v) for v in node.inputs) if swap else node.inputs


def _defs(node: Node, edits: Edits) -> tuple[str, ...]:
    return () if node.index in edits.removed else node.outputs


def _overlaps(method: MethodView, a: str, b: str) -> bool:
    pa, pb = method.values[a].placement, method.values[b].placement
    if pa is None or pb is None or pa.buffer != pb.buffer:
        return False  # unplanned memory (the caller's, or allocated at run time) is not shared
    if pa.nbytes is None or pb.nbytes is None:
        return True  # a size xferlint cannot compute: assume the worst
    return pa.offset < pb.offset + pb.nbytes and pb.offset < pa.offset + pa.nbytes


class _Index(NamedTuple):
    """Per method, built once: who reads each value, and the alias nodes in order."""

    method: MethodView
    readers: dict[str, list[int]]  # value -> indices of the nodes that read it, ascending
    aliases: tuple[Node, ...]


_INDEXES: dict[int, _Index] = {}


def _index(method: MethodView) -> _Index:
    index = _INDEXES.get(id(method))
    if index is not None and index.method is method:
        return index
    readers: dict[str, list[int]] = {}
    for node in method.nodes:
        for v in dict.fromkeys(node.inputs):
            readers.setdefault(v, []).append(node.index)
    index = _Index(method, readers, tuple(n for n in method.nodes if n.kind == OpKind.ALIAS))
    if len(_INDEXES) >= 8:
        del _INDEXES[next(iter(_INDEXES))]
    _INDEXES[id(method)] = index
    return index


def _readers(method: MethodView, edits: Edits, family: set[str]) -> list[Node]:
    """The nodes that read a value of `family` after `edits`, in node order."""
    readers = _index(method).readers
    found = {i for v in family for i in readers.get(v, ()) if i not in edits.removed and i not in edits.rewires}
    found.update(i for i in edits.rewires if i not in edits.removed
                 and any(v in family for v in _uses(method.nodes[i], edits)))
    return [method.nodes[i] for i in sorted(found)]


def _aliases(method: MethodView, edits: Edits, value: str) -> set[str]:
    """The value and every view of it (alias nodes share its storage)."""
    family = {value}
    changed = True
    while changed:
        changed = False
        for node in _index(method).aliases:
            if any(v in family for v in _uses(node, edits)):
                for out in _defs(node, edits):
                    if out not in family:
                        family.add(out)
                        changed = True
    return family


def conflicts(method: MethodView, edits: Edits, value: str) -> list[Conflict]:
    """Nodes that overwrite `value`'s bytes while it is still to be read, after `edits`."""
    cfg = method.cfg
    if cfg is None or method.values.get(value) is None or method.values[value].placement is None:
        return []
    family = _aliases(method, edits, value)
    nodes = method.nodes
    preds = cfg.predecessors
    # Backward from each read: every node from which a read is reachable before `value`
    # is written again; remember the read for the message.
    live_before: dict[int, Node] = {}  # node -> a read it leads to (value live after it)
    work: list[tuple[int, Node]] = []
    readers = _readers(method, edits, family)
    returned = any(edits.outputs.get(v, v) in family for v in method.outputs if v is not None)
    for reader in readers:
        for p in preds[reader.index]:
            work.append((p, reader))
    if returned:
        for e in cfg.exits:
            if e not in live_before:
                live_before[e] = nodes[e]
                if value not in _defs(nodes[e], edits):
                    work.extend((p, nodes[e]) for p in preds[e])
    while work:
        i, reader = work.pop()
        if i in live_before:
            continue
        live_before[i] = reader
        if value in _defs(nodes[i], edits):
            continue  # written here: earlier points see another lifetime
        work.extend((p, reader) for p in preds[i])
    found: list[Conflict] = []
    candidates = set(live_before) | {r.index for r in readers}
    for i in sorted(candidates):
        node = nodes[i]
        for other in _defs(node, edits):
            if other in family or other == value:
                continue
            if _overlaps(method, value, other):
                reader = live_before.get(i, node)
                found.append(Conflict(value=value, writer=node, other=other, reader=reader))
    return found


def new_conflicts(method: MethodView, edits: Edits, values: Iterable[str]) -> list[Conflict]:
    """Conflicts the edits introduce for `values` (those the original already has do not count)."""
    out: list[Conflict] = []
    for value in dict.fromkeys(values):
        before = {(c.writer.index, c.other) for c in conflicts(method, Edits.none(), value)}
        out.extend(c for c in conflicts(method, edits, value) if (c.writer.index, c.other) not in before)
    return out


def describe(method: MethodView, conflict: Conflict) -> str:
    placement = method.values[conflict.value].placement
    other = method.values[conflict.other].placement
    where = f"buffer {placement.buffer}, bytes {placement.offset}-{placement.offset + (placement.nbytes or 0)}"
    theirs = f"bytes {other.offset}-{other.offset + (other.nbytes or 0)}" if other is not None else "the same bytes"
    same = conflict.writer.index == conflict.reader.index
    when = "the very instruction that reads it" if same else f"before `{conflict.reader.name}` reads it"
    return (
        f"`{conflict.value}` ({where}) would have to stay alive for `{conflict.reader.name}`, but "
        f"`{conflict.writer.name}` writes `{conflict.other}` into {theirs} of that buffer, {when}"
    )


def first(items: list[Conflict]) -> Optional[Conflict]:
    return items[0] if items else None
