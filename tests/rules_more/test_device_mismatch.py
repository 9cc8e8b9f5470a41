"""XF007 device-mismatch: real programs where ExecuTorch leaves devices that do not line up
(delegates in control-flow bodies, legacy device mode), their twins, and hand-built graphs
for what ExecuTorch cannot produce on a CPU machine (ops mixing cuda and cpu operands,
a mis-tagged spec, branches that return on different devices)."""

from __future__ import annotations

import operator

import pytest
import torch

from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.lattice import CPU, Device
from xferlint.analyzer.view import MethodView, Node, OpKind, ProgramView, TensorMeta, Value
from xferlint.api import lint, lint_report
from xferlint.findings import Severity

# ExecuTorch warns about every program with a mutated buffer (mutable-buffer); not ours.
pytestmark = pytest.mark.filterwarnings("ignore:Mutation on a buffer:UserWarning")

XF007 = ["XF007"]
CUDA0 = Device("cuda", 0)


def _xf007(program):
    return lint(program, select=XF007)


# --------------------------------------------------------------------------- real programs


def test_a_delegate_inside_a_cond_branch_gets_no_copies(program):
    [finding] = _xf007(program("cond-nested"))
    assert finding.severity == Severity.ERROR
    assert "runs on cuda:0" in finding.detail and "from cpu" in finding.detail
    assert "control-flow body `cond." in finding.detail
    assert "PropagateDevicePass walks only the top-level graph" in finding.detail
    assert finding.steps[-1].role == "consumer" and finding.steps[-1].target == "executorch_call_delegate"
    assert finding.steps[-1].node.startswith("cond.")


def test_the_same_cond_partitioned_at_the_top_level_is_fine(program):
    assert _xf007(program("cond-top")) == []


def test_every_delegate_of_a_map_body_fed_from_the_host(program):
    """sin(x) + y in a map body, both delegated to cuda:0: the sin delegate reads the host
    slice and the add delegate reads the host `y` (its other operand comes from the sin
    delegate, on cuda:0, which is fine)."""
    findings = _xf007(program("map-nested"))
    assert len(findings) == 2
    read = sorted(f.steps[0].node.rsplit("/", 1)[-1] for f in findings)
    assert read == ["xs", "y"]


def test_a_legacy_mode_program_is_one_finding_that_names_the_mode(program):
    """enable_non_cpu_memory_planning=False: inputs tagged cuda:0 but planned in host
    memory, no copies; one root cause, one finding (the host `cos` reading the cuda:0
    result without a copy follows from it and is not reported again)."""
    report = lint_report(program("legacy"), select=XF007)
    [finding] = report.findings
    assert "enable_non_cpu_memory_planning" in finding.detail
    assert "`x` and `y` from cpu" in finding.detail
    assert "tagged cuda:0 (TensorSpec.device) but planned in host memory" in finding.detail
    assert report.summary.transfers.h2d_copies == 0 and report.summary.transfers.d2h_copies == 0


def test_the_same_program_with_device_memory_planning_is_fine(program):
    assert _xf007(program("planned")) == []


def test_inputs_the_caller_passes_on_the_device_are_not_a_mismatch(program):
    """skip_h2d_for_method_inputs with alloc_graph_input=False: the placeholder is tagged
    cuda:0, not planned, and the caller hands a device tensor: no copy is needed."""
    built = program("skip-copies")
    assert _xf007(built) == []
    from xferlint.frontends.executorch import load_graph_program

    view = load_graph_program(built, input="skip", name="program", file=None).view
    method = view.methods[0]
    facts = DeviceFacts.compute(method)
    assert facts.device("x") == CUDA0 and facts.device("y") == CUDA0
    assert method.values["x"].spec_device is None


def test_legacy_inputs_start_in_host_memory(program):
    from xferlint.frontends.executorch import load_graph_program

    view = load_graph_program(program("legacy"), input="legacy", name="program", file=None).view
    x = view.methods[0].values["x"]
    assert x.declared_device == CPU and x.spec_device == CUDA0


def test_clean_programs_from_other_rules_have_no_mismatch(program):
    for key in ("split", "split-two-devices", "fan-in", "fan-out", "mixed-devices", "round-trip", "param-edge",
                "param-workaround", "mutable-buffer", "ones"):
        assert _xf007(program(key)) == [], key


# --------------------------------------------------------------------------- hand-built


def _fake(*shape, device="cpu"):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(allow_non_fake_inputs=True):
        return torch.empty(tuple(shape), device=device)


def _fx_view(build) -> ProgramView:
    """An FX graph built by hand (FakeTensors on cuda are fine on a CPU build; tracing
    `.to("cuda")` is not), read by the graph frontend."""
    from xferlint.frontends.executorch import read_method

    graph = torch.fx.Graph()
    out = build(graph)
    graph.output(out)
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    return ProgramView(input="hand-built", name="program", kind="graph", methods=(read_method("forward", gm, None),))


def _placeholder(graph, name, val):
    node = graph.placeholder(name)
    node.meta["val"] = val
    return node


def _call(graph, target, args, val):
    node = graph.call_function(target, args)
    node.meta["val"] = val
    return node


def test_an_op_reading_cuda_and_cpu_operands_is_a_mismatch():
    def build(g):
        x = _placeholder(g, "x", _fake(4, 4, device="cuda:0"))
        y = _placeholder(g, "y", _fake(4, 4))
        s = _call(g, torch.ops.aten.add.Tensor, (x, y), _fake(4, 4, device="cuda:0"))
        return (_call(g, torch.ops.aten.sin.default, (s,), _fake(4, 4, device="cuda:0")),)

    [finding] = _xf007(_fx_view(build))
    assert finding.nodes[-1] == "add_tensor" and "`x` on cuda:0, `y` on cpu" in finding.detail
    assert "reads garbage or faults" in finding.detail


def test_a_host_scalar_operand_rides_along():
    def build(g):
        x = _placeholder(g, "x", _fake(4, 4, device="cuda:0"))
        s = _placeholder(g, "s", _fake())
        return (_call(g, torch.ops.aten.mul.Tensor, (x, s), _fake(4, 4, device="cuda:0")),)

    assert _xf007(_fx_view(build)) == []


def test_a_value_declared_on_the_wrong_device_is_reported_where_it_starts():
    """cos reads a cuda:0 tensor but its metadata says cpu (a pass tagged it wrong); the
    relu after it inherits the disagreement and is not reported again."""

    def build(g):
        x = _placeholder(g, "x", _fake(4, 4, device="cuda:0"))
        c = _call(g, torch.ops.aten.cos.default, (x,), _fake(4, 4))
        return (_call(g, torch.ops.aten.relu.default, (c,), _fake(4, 4)),)

    [finding] = _xf007(_fx_view(build))
    assert finding.nodes[-1] == "cos_default"
    assert "declared on cpu (TensorSpec.device) but its data lives on cuda:0" in finding.detail
    assert "because it reads `x` on cuda:0" in finding.detail


def _method(nodes, values, outputs):
    return ProgramView(input="hand-built", name="program", kind="graph",
                       methods=(MethodView(name="forward", nodes=tuple(nodes), values=values, outputs=outputs),))


MATRIX = TensorMeta(shape=(4, 4), dtype="float32", nbytes=64)


def test_branches_that_return_on_different_devices():
    """A cond whose true branch returns a cuda:0 tensor and whose false branch returns a
    host one: after the branch, no single device holds the result."""
    values = {v: Value(id=v, tensor=MATRIX, declared_device=d) for v, d in
              (("x", CPU), ("h", CUDA0), ("c", CPU), ("r", None))}
    values["p"] = Value(id="p", tensor=TensorMeta(shape=(), dtype="bool", nbytes=1), declared_device=CPU)
    nodes = [
        Node(0, "p", OpKind.INPUT, "input", outputs=("p",)),
        Node(1, "x", OpKind.INPUT, "input", outputs=("x",)),
        Node(2, "cond", OpKind.CONTROL, "cond", inputs=("p", "x"), outputs=("r",)),
        Node(3, "cond.true/h2d", OpKind.H2D, "et_copy._h2d_copy.default", inputs=("x",), outputs=("h",),
             device=CUDA0, scope="cond.true"),
        Node(4, "cond:merge", OpKind.MOVE, "merge", inputs=("h",), outputs=("r",)),
        Node(5, "cond.false/cos", OpKind.COMPUTE, "aten.cos.default", inputs=("x",), outputs=("c",),
             scope="cond.false"),
        Node(6, "cond:merge", OpKind.MOVE, "merge", inputs=("c",), outputs=("r",)),
    ]
    [finding] = _xf007(_method(nodes, values, ("r",)))
    assert "(`h` on cuda:0, `c` on cpu)" in finding.detail
    assert [s.role for s in finding.steps] == ["merge", "merge"]


def test_a_tagged_input_read_only_by_host_code():
    """An input whose spec says cuda:0 but that the frontend knows starts in host memory,
    read by a host op only: the declared-vs-inferred kind, on the input itself."""
    values = {"x": Value(id="x", tensor=MATRIX, declared_device=CPU, spec_device=CUDA0),
              "c": Value(id="c", tensor=MATRIX, declared_device=CPU)}
    nodes = [Node(0, "x", OpKind.INPUT, "input", outputs=("x",)),
             Node(1, "cos", OpKind.COMPUTE, "aten.cos.default", inputs=("x",), outputs=("c",))]
    [finding] = _xf007(_method(nodes, values, ("c",)))
    assert finding.detail.startswith("method input `x` is tagged cuda:0")
