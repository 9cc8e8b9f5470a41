"""XF004 on the cases ExecuTorch cannot produce on CPU, as hand-built views.

PropagateDevicePass only walks the top-level graph, so real programs never have copies in
`cond` branches or `map` bodies, and in-place writes are functionalized away before
copies exist; custom passes and `.pte` files can have both. The questions: is the first
copy certain to have run (same graph, same basic block) on the same bytes, and can the
readers share it (nobody writes it in place)?
"""

from __future__ import annotations

from typing import Optional

from xferlint.analyzer.cfg import ControlFlowGraph
from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.lattice import Device
from xferlint.analyzer.view import MethodView, Node, OpKind, ProgramView, TensorMeta, Value
from xferlint.findings import Applicability
from xferlint.fixes.engine import plan_method
from xferlint.rules.duplicate_transfer import DuplicateTransfer, duplicate_copies

CUDA0 = Device("cuda", 0)
META = TensorMeta(shape=(4, 4), dtype="float32", nbytes=64)


def _method(specs, outputs=("out",), cfg: Optional[ControlFlowGraph] = None) -> MethodView:
    """specs: (name, kind, inputs, device, scope, mutates) per node; each writes `name`."""
    nodes, values = [], {}
    for i, (name, kind, inputs, device, scope, mutates) in enumerate(specs):
        nodes.append(Node(index=i, name=name, kind=kind, target=kind.value, inputs=tuple(inputs), outputs=(name,),
                          device=device, scope=scope, mutates=mutates))
        declared = device if kind != OpKind.INPUT else Device("cpu", 0)
        values[name] = Value(id=name, tensor=META, declared_device=declared)
    return MethodView(name="forward", nodes=tuple(nodes), values=values,
                      inputs=tuple(n.name for n in nodes if n.kind == OpKind.INPUT), outputs=tuple(outputs), cfg=cfg)


def _delegate(name, *inputs, scope=""):
    return (name, OpKind.DELEGATE, inputs, CUDA0, scope, False)


def _h2d(name, source, scope=""):
    return (name, OpKind.H2D, (source,), CUDA0, scope, False)


def _duplicates(method):
    return [(d.first.name, d.duplicate.name) for d in duplicate_copies(DeviceFacts.compute(method))]


X = ("x", OpKind.INPUT, (), None, "", False)


def test_copies_in_the_same_graph_are_paired():
    method = _method([X, _h2d("a", "x"), _delegate("d1", "a"), _h2d("b", "x"), _delegate("d2", "b"),
                      ("out", OpKind.COMPUTE, ("d1", "d2"), CUDA0, "", False)])
    assert _duplicates(method) == [("a", "b")]


def test_a_copy_in_a_branch_never_stands_in_for_one_outside_it():
    branch = "cond.true_graph_0"
    method = _method([X, ("xb", OpKind.MOVE, ("x",), None, branch, False), _h2d("a", "xb", scope=branch),
                      _delegate("d1", "a", scope=branch), _h2d("b", "x"), _delegate("d2", "b"),
                      ("out", OpKind.COMPUTE, ("d2",), CUDA0, "", False)])
    assert _duplicates(method) == []
    # two copies of the branch's own value in that branch: the first always runs first
    method = _method([X, ("xb", OpKind.MOVE, ("x",), None, branch, False), _h2d("a", "xb", scope=branch),
                      _h2d("b", "xb", scope=branch), _delegate("d1", "a", "b", scope=branch),
                      ("out", OpKind.MOVE, ("d1",), None, "", False)])
    assert _duplicates(method) == [("a", "b")]


def _cfg(successors):
    return ControlFlowGraph(successors=tuple(tuple(s) for s in successors), exits=frozenset({len(successors) - 1}))


def test_over_a_cfg_the_copies_must_share_a_basic_block():
    specs = [X, ("jf", OpKind.CONTROL, ("x",), None, "", False), _h2d("a", "x"), _h2d("b", "x"),
             _delegate("out", "a", "b")]
    # 1 jumps over 2 (a branch): `a` may not have run when `b` does
    branchy = _method(specs, cfg=_cfg([[1], [2, 3], [3], [4], []]))
    assert _duplicates(branchy) == []
    straight = _method(specs, cfg=_cfg([[1], [2], [3], [4], []]))
    assert _duplicates(straight) == [("a", "b")]


def test_over_a_cfg_a_rewritten_source_is_not_the_same_bytes():
    specs = [X, _h2d("a", "x"), ("x", OpKind.COMPUTE, ("x",), None, "", False), _h2d("b", "x"),
             _delegate("out", "a", "b")]
    method = _method(specs, cfg=_cfg([[1], [2], [3], [4], []]))
    assert _duplicates(method) == []


def test_a_reader_that_writes_in_place_blocks_the_fix():
    method = _method([X, _h2d("a", "x"), ("w", OpKind.COMPUTE, ("a",), CUDA0, "", True), _h2d("b", "x"),
                      _delegate("out", "a", "b")])
    program = ProgramView(input="hand-built", name="program", kind="graph", methods=(method,))
    planning = plan_method(program, method, [DuplicateTransfer()])
    (finding,) = planning.findings
    assert not finding.fixable and finding.fix_applicability is None
    assert "writes the first copy in place" in finding.detail
    assert planning.plans == []


def test_a_returned_duplicate_is_an_unsafe_fix():
    method = _method([X, _h2d("a", "x"), _delegate("d1", "a"), _h2d("b", "x")], outputs=("d1", "b"))
    program = ProgramView(input="hand-built", name="program", kind="graph", methods=(method,))
    safe = plan_method(program, method, [DuplicateTransfer()])
    assert [f.fix_applicability for f in safe.findings] == [Applicability.UNSAFE]
    assert safe.plans == [] and [p.code for p in safe.unsafe] == ["XF004"]
    unsafe = plan_method(program, method, [DuplicateTransfer()], unsafe_fixes=True)
    (plan,) = unsafe.plans
    assert plan.removes == ("b",) and plan.copies[0].nbytes == 64


def test_a_source_written_between_the_copies_blocks_the_fix_but_not_after():
    between = _method([X, _h2d("a", "x"), ("w", OpKind.COMPUTE, ("x",), None, "", True), _h2d("b", "x"),
                       _delegate("out", "a", "b")])
    after = _method([X, _h2d("a", "x"), _h2d("b", "x"), _delegate("out", "a", "b"),
                     ("w", OpKind.COMPUTE, ("x",), None, "", True)])
    for method, fixable in ((between, False), (after, True)):
        program = ProgramView(input="hand-built", name="program", kind="graph", methods=(method,))
        planning = plan_method(program, method, [DuplicateTransfer()])
        (finding,) = planning.findings
        assert finding.fixable is fixable, finding.message
        assert [p.removes for p in planning.plans] == ([("b",)] if fixable else [])
    assert "writes the source in place between the copies" in plan_method(
        ProgramView(input="h", name="p", kind="graph", methods=(between,)), between,
        [DuplicateTransfer()]).findings[0].detail
