"""The rules' fast paths against the plain algorithms they replace, on random views.

XF004 pairs only the copies whose source has another reader and finds a source's last
write by a binary search over its writers; XF005 reads each host op's visible writers
once per node; findings and steps are built without their dataclass `__init__`. Each
must give exactly what the straightforward version gives: the reference versions below
are the previous implementations, kept here as the specification.
"""

from __future__ import annotations

import dataclasses
import random
from bisect import bisect_left
from typing import Optional

import pytest

from xferlint.analyzer.cfg import ControlFlowGraph
from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.lattice import Device
from xferlint.analyzer.view import MethodView, Node, OpKind, TensorMeta, Value
from xferlint.findings import Applicability, Finding, Location, Severity, Step
from xferlint.rules import duplicate_transfer as xf004
from xferlint.rules import host_op_splits_partition as xf005
from xferlint.frozen import fast_constructor

CUDA0, CUDA1 = Device("cuda", 0), Device("cuda", 1)
META = TensorMeta(shape=(4, 4), dtype="float32", nbytes=64)


# --------------------------------------------------------------------------- random views


def _random_method(seed: int, cfg: bool) -> MethodView:
    """Inputs, then copies (H2D to cuda:0/1, D2H), host computes, delegates and getitems
    over earlier values; with `cfg`, some nodes overwrite an earlier value (a slot) and a
    few jump back or forward, as a .pte's instructions do."""
    rnd = random.Random(seed)
    nodes: list[Node] = []
    values: dict[str, Value] = {}
    names: list[str] = []

    def add(kind: OpKind, inputs: tuple[str, ...], device: Optional[Device] = None, scope: str = "") -> None:
        index = len(nodes)
        if cfg and names and kind not in (OpKind.INPUT,) and rnd.random() < 0.25:
            out = rnd.choice(names)  # a slot written again
        else:
            out = f"v{index}"
            names.append(out)
            values[out] = Value(id=out, tensor=META if rnd.random() < 0.95 else None,
                                declared_device=device if kind in (OpKind.H2D, OpKind.DELEGATE) else None)
        nodes.append(Node(index=index, name=f"n{index}", kind=kind, target=f"aten.{kind.value}.out",
                          inputs=inputs, outputs=(out,), device=device, scope=scope,
                          mutates=kind is OpKind.COMPUTE and rnd.random() < 0.05))

    for _ in range(rnd.randint(1, 3)):
        add(OpKind.INPUT, ())
    for _ in range(rnd.randint(5, 40)):
        source = rnd.choice(names[-6:] if rnd.random() < 0.7 else names)
        scope = "" if cfg or rnd.random() < 0.8 else "cond.true_graph_0"
        pick = rnd.random()
        if pick < 0.35:
            add(OpKind.H2D, (source,), rnd.choice((CUDA0, CUDA0, CUDA1)), scope)
        elif pick < 0.55:
            add(OpKind.D2H, (source,), None, scope)
        elif pick < 0.75:
            add(OpKind.COMPUTE, tuple(rnd.choice(names) for _ in range(rnd.randint(1, 2))), None, scope)
        elif pick < 0.9:
            add(OpKind.DELEGATE, tuple(rnd.choice(names) for _ in range(rnd.randint(1, 3))),
                rnd.choice((CUDA0, CUDA1, None)), scope)
        else:
            add(OpKind.GETITEM, (source,), None, scope)
    graph = None
    if cfg:
        count = len(nodes)
        successors = []
        for i in range(count):
            succ = [i + 1] if i + 1 < count else []
            if i + 1 < count and rnd.random() < 0.1:
                succ.append(rnd.randrange(count))
            successors.append(tuple(dict.fromkeys(succ)))
        graph = ControlFlowGraph(successors=tuple(successors), exits=frozenset({count - 1}))
    return MethodView(name="forward", nodes=tuple(nodes), values=values,
                      inputs=tuple(n.output for n in nodes if n.kind is OpKind.INPUT),
                      outputs=(nodes[-1].output,), cfg=graph)


CASES = [(seed, cfg) for seed in range(150) for cfg in (False, True)]


# --------------------------------------------------------------------------- XF004


def _reference_duplicates(facts: DeviceFacts):
    """The pass over every node with a per-value last-write map (the previous version)."""
    cfg = facts.method.cfg
    earlier: dict[tuple, list] = {}
    last_write: dict[str, int] = {}
    for node in facts.method.nodes:
        target = xf004.copy_target(node)
        if target is not None and len(node.inputs) == 1 and len(node.outputs) == 1:
            key = (node.kind, node.scope, node.inputs[0], target.type, target.index)
            seen = earlier.get(key)
            first = None
            if seen is not None:
                if cfg is None:
                    first = seen[0][0] if seen[0] else None
                else:
                    block_start = cfg.blocks[cfg.block_of[node.index]][0]
                    bound = max(block_start, last_write.get(node.inputs[0], -1))
                    k = bisect_left(seen[2], bound)
                    first = seen[1][k] if k < len(seen[1]) else None
            if first is None:
                if seen is None:
                    seen = earlier[key] = ([], [], [])
                seen[0].append(node)
                if cfg is not None and len(facts.writers(node.output)) == 1:
                    seen[1].append(node)
                    seen[2].append(node.index)
            elif node.kind != OpKind.H2D or not xf004._same_device_trip(facts, node):
                yield first.name, node.name
        if cfg is not None:
            for vid in node.outputs:
                last_write[vid] = node.index


@pytest.mark.parametrize("seed,cfg", CASES)
def test_duplicate_copies_match_the_plain_pass(seed, cfg):
    facts = DeviceFacts.compute(_random_method(seed, cfg))
    fast = [(d.first.name, d.duplicate.name) for d in xf004.duplicate_copies(facts)]
    assert fast == list(_reference_duplicates(facts))


def test_the_random_views_have_duplicates_to_find():
    """The comparison above is not vacuous."""
    found = sum(bool(list(xf004.duplicate_copies(DeviceFacts.compute(_random_method(s, c))))) for s, c in CASES)
    assert found > len(CASES) // 4


# --------------------------------------------------------------------------- XF005


def _reference_segments_for(facts, device, host, d2hs, h2ds, seen=None):
    """The previous `_segments_for`: a reaching-writers look-up per read, per pass."""
    nodes = facts.method.nodes
    seen: dict = {}

    def reaching_writers(reader, vid):
        key = (reader.index, vid)
        if key not in seen:
            seen[key] = facts.reaching_writers(reader, vid)
        return seen[key]

    def sees(reader, vid, writer):
        return any(w.index == writer.index for w in reaching_writers(reader, vid))

    forward = xf005._reach(
        (r.index for d in d2hs for v in d.outputs for r in facts.readers(v) if r.index in host and sees(r, v, d)),
        lambda i: (r.index for v in nodes[i].outputs for r in facts.readers(v)
                   if r.index in host and sees(r, v, nodes[i])),
    )
    backward = xf005._reach(
        (w.index for h in h2ds for w in reaching_writers(h, h.inputs[0]) if w.index in host),
        lambda i: (w.index for v in nodes[i].inputs for w in reaching_writers(nodes[i], v) if w.index in host),
    )
    split = forward & backward
    if not split:
        return []
    parent = {i: i for i in split}

    def find(i):
        while parent[i] != i:
            i = parent[i]
        return i

    for i in split:
        for v in nodes[i].inputs:
            for w in reaching_writers(nodes[i], v):
                if w.index in split:
                    parent[find(i)] = find(w.index)
    groups: dict = {}
    for i in sorted(split):
        groups.setdefault(find(i), []).append(i)
    entries: dict = {}
    for d in d2hs:
        for root in dict.fromkeys(find(r.index) for v in d.outputs for r in facts.readers(v)
                                  if r.index in split and sees(r, v, d)):
            entries.setdefault(root, []).append(d)
    exits: dict = {}
    for h in h2ds:
        for root in dict.fromkeys(find(w.index) for w in reaching_writers(h, h.inputs[0]) if w.index in split):
            exits.setdefault(root, []).append(h)
    result = []
    for root, members in groups.items():
        ops = tuple(nodes[i] for i in members if nodes[i].kind != OpKind.GETITEM) or tuple(nodes[i] for i in members)
        result.append(xf005.HostSegment(device=device, d2hs=tuple(entries.get(root, ())), host_ops=ops,
                                        h2ds=tuple(exits.get(root, ()))))
    return result


@pytest.mark.parametrize("seed,cfg", CASES)
def test_host_segments_match_the_per_read_passes(seed, cfg, monkeypatch):
    facts = DeviceFacts.compute(_random_method(seed, cfg))
    fast = xf005.host_segments(facts)
    monkeypatch.setattr(xf005, "_segments_for", _reference_segments_for)
    assert fast == xf005.host_segments(facts)


@pytest.mark.parametrize("seed", range(0, 150, 3))
def test_host_segments_by_the_writes_each_reader_sees_match_the_per_read_passes(seed, monkeypatch):
    """Every slot's readers indexed by the writes they see (what a slot with many readers
    gets), against the per-read reference."""
    facts = DeviceFacts.compute(_random_method(seed, True))
    monkeypatch.setattr(xf005, "_SCANNED", 0)
    indexed = xf005.host_segments(facts)
    monkeypatch.setattr(xf005, "_segments_for", _reference_segments_for)
    assert indexed == xf005.host_segments(facts)


def test_the_random_views_have_segments_to_find():
    found = sum(bool(xf005.host_segments(DeviceFacts.compute(_random_method(s, c)))) for s, c in CASES)
    assert found >= 10  # a host op between a D2H and an H2D to the same device: rarer by chance



def _fresh_devices(method: MethodView) -> MethodView:
    """The same method with a Device object of its own per node and value (equal, not the
    same), as a frontend that parses each delegate's target_device apart would build."""
    fresh = (lambda d: Device(d.type, d.index) if isinstance(d, Device) else d)
    nodes = tuple(dataclasses.replace(n, device=fresh(n.device)) for n in method.nodes)
    values = {k: dataclasses.replace(v, declared_device=fresh(v.declared_device)) for k, v in method.values.items()}
    return dataclasses.replace(method, nodes=nodes, values=values)


@pytest.mark.parametrize("seed,cfg", CASES[::5])
def test_host_segments_are_the_same_with_a_device_object_per_copy(seed, cfg):
    method = _random_method(seed, cfg)
    shared = xf005.host_segments(DeviceFacts.compute(method))
    assert shared == xf005.host_segments(DeviceFacts.compute(_fresh_devices(method)))


class _CountedNode:
    """A copy whose `index` reads are counted: how often grouping sorts."""

    reads = 0

    def __init__(self, index: int) -> None:
        self._index = index

    @property
    def index(self) -> int:
        _CountedNode.reads += 1
        return self._index


def test_copies_of_equal_devices_are_grouped_in_one_sort_per_device():
    """n copies, each with its own (equal) Device object, alternating cuda:0 / cuda:1:
    every group is in program order, and merging the objects reads each index about once
    (re-sorting a group at every object merged into it read ~n**2/8 of them)."""
    n = 2000
    _CountedNode.reads = 0
    nodes = [_CountedNode(i) for i in range(n)]
    grouped = xf005._by_device([(Device("cuda", i % 2), node) for i, node in enumerate(nodes)])
    assert {d: [c._index for c in group] for d, group in grouped.items()} == {
        CUDA0: list(range(0, n, 2)), CUDA1: list(range(1, n, 2))}
    assert _CountedNode.reads <= 2 * n


# --------------------------------------------------------------------------- constructors


def test_fast_constructors_build_what_the_classes_build():
    loc = dict(file="m.py", line=3)
    assert fast_constructor(Location)(**loc) == Location(**loc)
    step = dict(node="n", target="t", role="d2h", device=None, location=Location(**loc))
    assert fast_constructor(Step)(**step) == Step(**step)
    required = dict(code="XF001", name="x", severity=Severity.WARNING, message="m", input="i", program="p",
                    method="f", nodes=["n"], devices=["cpu"], bytes=None, location=None, fixable=True)
    make = fast_constructor(Finding)
    assert make(**required) == Finding(**required)
    full = dict(required, file="/f", fix_applicability=Applicability.SAFE, steps=[Step(**step)], copies=["n"],
                saves_bytes=3, removes=["n"], fix_refused="no", detail="d")
    assert make(**full) == Finding(**full)
    # default factories give each instance its own list, as the class does
    assert make(**required).steps is not make(**required).steps
    with pytest.raises(TypeError):
        make(code="XF001")
    with pytest.raises(TypeError):
        make(**required, colour="red")
    with pytest.raises(AttributeError):  # still frozen
        make(**required).code = "XF002"


def test_slotted_instances_are_filled_as_a_twin_and_become_the_class():
    """A slotted class's instances are built as a plain class with its slots, then given
    the class (`frozen._twin`): what comes out is the class's own instance, equal, hashing
    and pickling as the constructor's, and frozen. A class whose base sets attributes its
    own way (a frozen base) gets no twin and is built through the slots' descriptors."""
    import pickle

    from xferlint import frozen, records
    from xferlint.analyzer.view import Value

    fields = dict(index=3, name="n", kind=OpKind.H2D, target="t", inputs=("a",), outputs=("b",), device=CUDA0)
    assert frozen._twin(Node) is not None and frozen._twin(Value) is not None
    made = fast_constructor(Node)(**fields)
    assert type(made) is Node and made == Node(**fields) and hash(made) == hash(Node(**fields))
    assert pickle.loads(pickle.dumps(made)) == made
    with pytest.raises(AttributeError):
        made.name = "m"
    like = frozen.Frozen(Value).like(Value(id="x", mutable=True), id="y")
    assert type(like) is Value and like == Value(id="y", mutable=True)

    @records.dataclass(frozen=True, slots=True)
    class Base:
        a: int

    @records.dataclass(frozen=True, slots=True)
    class Child(Base):
        b: int = 2

    assert frozen._twin(Base) is not None and frozen._twin(Child) is None

    @records.dataclass(frozen=True, slots=True)
    class Named:  # fields named as the generated constructor's own locals
        obj: int
        state: str = "s"

    assert fast_constructor(Named)(obj=1) == Named(1, "s") and fast_constructor(Named)(obj=2).obj == 2
    for cls, kw in ((Base, dict(a=1)), (Child, dict(a=1)), (Child, dict(a=1, b=5))):
        obj = fast_constructor(cls)(**kw)
        assert type(obj) is cls and obj == cls(**kw)
        with pytest.raises(AttributeError):
            obj.a = 9


def test_a_refused_finding_is_the_finding_with_its_fix_withdrawn():
    """`Frozen.like` of a slotted class with default factories (Finding: steps, copies,
    removes) copies every slot as `dataclasses.replace` does, without calling replace."""
    import dataclasses

    from xferlint import frozen
    from xferlint.fixes.driver import _unfixable

    loc = Location(file="m.py", line=3)
    finding = Finding(code="XF001", name="x", severity=Severity.WARNING, message="m", input="i", program="p",
                      method="f", nodes=["a", "b"], devices=["cuda:0", "cpu"], bytes=64, location=loc,
                      fixable=True, fix_applicability=Applicability.SAFE, steps=[Step(node="a", target="t",
                      role="d2h", device="cpu", location=loc)], copies=["a"], saves_bytes=64, removes=["a"],
                      detail="d")
    assert frozen.Frozen(Finding).slotted is not None
    refused = _unfixable(finding, "the plan does not fit")
    assert refused == dataclasses.replace(finding, fixable=False, fix_applicability=None, saves_bytes=None,
                                          fix_refused="the plan does not fit")
    assert type(refused) is Finding and refused.steps is finding.steps and finding.fixable


def test_frozen_builds_slotted_classes_slot_by_slot():
    """Node and Value are slotted: Frozen's whole / of / like / renamed set every slot and
    give what the constructor and `dataclasses.replace` give, still frozen."""
    import dataclasses

    from xferlint.analyzer.view import Value
    from xferlint.frozen import Frozen

    node_fields = dict(index=3, name="n", kind=OpKind.H2D, target="t", inputs=("a",), outputs=("b",), device=CUDA0,
                       location=None, delegate=None, scope="", mutates=False)
    made = Frozen(Node)
    assert made.slotted is not None and not made.direct
    whole = made.whole(dict(node_fields))
    assert whole == Node(**node_fields) and hash(whole) == hash(Node(**node_fields))
    assert made.of({"index": 1, "name": "m", "kind": OpKind.D2H, "target": "u"}) == Node(
        index=1, name="m", kind=OpKind.D2H, target="u")  # the defaults fill the rest
    assert made.like(whole, name="z", scope="body") == dataclasses.replace(whole, name="z", scope="body")
    values = Frozen(Value)
    proto = Value(id="", declared_device=CUDA1, mutable=True)
    named = Value(id="z", declared_device=CUDA0)
    renamed = values.renamed([("x", proto), ("y", proto), ("z", named)])
    assert renamed == {"x": dataclasses.replace(proto, id="x"), "y": dataclasses.replace(proto, id="y"), "z": named}
    assert renamed["z"] is named and renamed["x"] is not proto  # one that has its id already is kept
    assert [(f.name, getattr(renamed["y"], f.name)) for f in dataclasses.fields(Value) if f.name != "id"] == [
        (f.name, getattr(proto, f.name)) for f in dataclasses.fields(Value) if f.name != "id"]
    with pytest.raises(AttributeError):
        whole.name = "w"
    with pytest.raises(TypeError):  # a field without a default that is missing is an error, as in `Node(...)`
        made.whole({"index": 0})


def test_fast_constructor_of_a_dict_backed_dataclass():
    """RoundTrip (not slotted): the instance dict `__init__` leaves, so equality, hashing
    and cached properties behave the same."""
    from xferlint.rules._patterns import RoundTrip

    node = Node(index=0, name="n", kind=OpKind.D2H, target="t")
    fields = dict(producer=None, d2h=node, h2d=node, consumers=(node,), value="v", source=CUDA0, target=CUDA0)
    fast, slow = fast_constructor(RoundTrip)(**fields), RoundTrip(**fields)
    assert fast == slow and hash(fast) == hash(slow) and vars(fast) == vars(slow)
    assert fast.same_device and not fast_constructor(RoundTrip)(**dict(fields, target=CUDA1)).same_device


def test_delegates_lowered_for_one_device_share_its_device_object():
    """Every delegate's target_device is parsed to one Device object per spelling, so the
    rules' grouping by object (above) sees a program's few devices, not one per delegate."""
    from xferlint.frontends.compile_specs import decode_compile_specs

    first = decode_compile_specs([("target_device", b"cuda:1"), ("other", b"\x00\x01")])
    second = decode_compile_specs([("target_device", "cuda:1")])
    assert first == ((("target_device", "cuda:1"), ("other", "0001")), CUDA1)
    assert first[1] is second[1]
    assert decode_compile_specs([("target_device", "cuda:0")])[1] == CUDA0
    assert decode_compile_specs([("target_device", "not a device!")])[1] is None
