"""The transfer summary's fast paths against their plain equivalents: a Copy built without
its dataclass `__init__`, and the device pairs counted inside `traffic_counts`."""

from __future__ import annotations

import random

from xferlint.analyzer import summary
from xferlint.analyzer.view import Node, OpKind


def _copies(seed: int) -> list[summary.Copy]:
    rnd = random.Random(seed)
    devices = ["cpu", "cuda:0", "cuda:1", "unknown"]
    out = []
    for i in range(rnd.randint(0, 40)):
        node = Node(index=i, name=f"n{i}", kind=rnd.choice([OpKind.H2D, OpKind.D2H, OpKind.TO_DEVICE]),
                    target="t", inputs=("a",), outputs=("b",), scope=rnd.choice(["", "loop 1-3"]))
        out.append(summary.Copy(node=node, direction=rnd.choice([summary.H2D, summary.D2H, summary.D2D]),
                                source=rnd.choice(devices), target=rnd.choice(devices),
                                nbytes=rnd.choice([None, 0, 4, 1 << 40])))
    return out


def test_a_copy_built_without_init_is_the_constructors():
    node = Node(index=0, name="n", kind=OpKind.H2D, target="t", inputs=("a",), outputs=("b",))
    fast = summary._new_copy(node, summary.H2D, "cpu", "cuda:0", 16)
    plain = summary.Copy(node=node, direction=summary.H2D, source="cpu", target="cuda:0", nbytes=16)
    assert fast == plain and hash(fast) == hash(plain)
    assert list(vars(fast).items()) == list(vars(plain).items())


def test_traffic_counts_pairs_are_the_pairs_of_the_copies():
    for seed in range(200):
        found = _copies(seed)
        counted = summary.traffic_counts(found)
        assert counted["pairs"] == summary._pairs((c.source, c.target, 1, c.nbytes or 0) for c in found)
        assert counted["h2d_copies"] == sum(c.direction == summary.H2D for c in found)
        assert counted["bytes"] == sum(c.nbytes or 0 for c in found)


def _random_facts(seed: int):
    """A method of copies of every kind (`.to()`s that stay put, copies without operands,
    of symbolic or non-tensor values, in and out of control flow) over a few devices."""
    from xferlint.analyzer.facts import DeviceFacts
    from xferlint.analyzer.lattice import Device
    from xferlint.analyzer.view import MethodView, TensorMeta, Value

    rnd = random.Random(seed)
    devices = [Device("cpu", 0), Device("cuda", 0), Device("cuda", 1), None]
    kinds = [OpKind.INPUT, OpKind.H2D, OpKind.D2H, OpKind.TO_DEVICE, OpKind.COMPUTE, OpKind.DELEGATE]
    nodes, values = [], {}
    for i in range(rnd.randint(1, 50)):
        kind = OpKind.INPUT if i == 0 else rnd.choice(kinds)
        out = f"v{i}"
        sizes = rnd.choice([64, None, "none"])
        values[out] = Value(id=out, tensor=None if sizes == "none" else TensorMeta((4,), "f32", sizes),
                            declared_device=rnd.choice(devices))
        inputs = () if kind is OpKind.INPUT or rnd.random() < 0.05 else (f"v{rnd.randrange(i)}",)
        nodes.append(Node(index=i, name=f"n{i % 40}", kind=kind, target="t", inputs=inputs, outputs=(out,),
                          device=rnd.choice(devices), scope=rnd.choice(["", "loop 1-3"])))
    return DeviceFacts.compute(MethodView(name="forward", nodes=tuple(nodes), values=values))


def test_traffic_counted_without_copies_is_the_copies_traffic():
    for seed in range(300):
        facts = _random_facts(seed)
        found = summary.copies(facts)
        assert summary._table(facts)[1] == summary.traffic_counts(found)
