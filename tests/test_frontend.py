"""The graph frontend on real ExecuTorch programs.

Out-variant programs (after `to_executorch`: `et_copy._h2d_copy.out` writing a
`memory.alloc`) and functional ones (an EdgeProgramManager, whose copies the frontend
materializes with ExecuTorch's own PropagateDevicePass) must read the same; every method
of a multi-method program is read; `bytes` is numel * itemsize of the moved tensor;
`location` is the model's source line; `nodes`/`devices` follow the transfer path.
"""

from __future__ import annotations

import os

import pytest

from xferlint.analyzer.view import OpKind
from xferlint.rules.base import format_bytes

HERE = os.path.abspath(__file__)


def _marker_line(marker: str) -> int:
    """The line of this file that carries `# <marker>` (models below are located by it)."""
    with open(HERE, encoding="utf-8") as handle:
        hits = [i for i, line in enumerate(handle, start=1) if line.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, marker
    return hits[0]


def _chain_module():
    import torch

    class Chain(torch.nn.Module):
        """mm -> add -> sin: with devices cuda:0, cuda:0, cuda:1 one XF001 and one XF002."""

        def forward(self, x, w, b):
            h = torch.mm(x, w)  # LINE-MM
            h = h + b  # LINE-ADD
            return torch.sin(h)  # LINE-SIN

    return Chain()


CHAIN_DEVICES = ["cuda:0", "cuda:0", "cuda:1"]


def _chain_inputs(dtype=None):
    import torch

    generator = torch.Generator().manual_seed(0)
    dtype = dtype or torch.float32
    return tuple(torch.randn(*s, generator=generator).to(dtype) for s in ((3, 5), (5, 5), (3, 5)))


@pytest.fixture(scope="module")
def chain(lowered_once):
    """The Chain model lowered three ways, each once per session."""
    from xferlint.testing import lower

    return {
        "out_no_elision": lowered_once("chain-out-noelide", lambda: lower(_chain_module(), _chain_inputs(),
                                                                          CHAIN_DEVICES, elide=False)),
        "out": lowered_once("chain-out", lambda: lower(_chain_module(), _chain_inputs(), CHAIN_DEVICES)),
        "edge": lowered_once("chain-edge", lambda: lower(_chain_module(), _chain_inputs(), CHAIN_DEVICES,
                                                         to_executorch=False)),
    }


def _summary(findings):
    return [(f.code, f.nodes, f.devices, f.bytes, f.location, f.message, f.fixable) for f in findings]


def _graph(program):
    return program.exported_program().graph_module.graph


def test_functional_and_out_variant_copies_read_the_same(chain):
    from xferlint.api import lint
    from xferlint.testing import upstream_elision

    # The edge program has no copies yet; the frontend runs PropagateDevicePass on a copy
    # of it. With the elision switched off there too, it must find what the out-variant
    # program lowered without elision shows.
    with upstream_elision(False):
        functional = lint(chain["edge"])
    out_variant = lint(chain["out_no_elision"])
    assert [f.code for f in out_variant] == ["XF001", "XF002"]
    assert _summary(functional) == _summary(out_variant)
    # And with ExecuTorch's elision on (what to_executorch does by default) only the
    # cross-device staging is left, in both readings.
    stock_edge, stock_out = lint(chain["edge"]), lint(chain["out"])
    assert [f.code for f in stock_out] == ["XF002"]
    assert _summary(stock_edge) == _summary(stock_out)


def test_out_variant_buffers_are_not_operands(chain):
    from xferlint.frontends.executorch import load_graph_program

    view = load_graph_program(chain["out_no_elision"], input="chain", name="chain", file=None).view
    (method,) = view.methods
    allocs = {n.output for n in method.nodes if n.kind == OpKind.ALLOC}
    copies = [n for n in method.nodes if n.kind in (OpKind.H2D, OpKind.D2H)]
    assert allocs and copies
    assert all(n.target.endswith(".out") for n in copies)
    for copy in copies:
        assert len(copy.inputs) == 1 and copy.inputs[0] not in allocs, copy
    # An H2D's device comes from its spec (or its out= buffer's), never the host.
    assert all(n.device is not None and not n.device.is_host for n in copies if n.kind == OpKind.H2D)


@pytest.mark.parametrize("variant", ["out_no_elision", "out", "edge"])
def test_nodes_values_and_inner_ops_are_what_their_constructors_make(chain, variant):
    """The frontend builds Nodes, Values and InnerOps without the dataclass __init__
    (xferlint.frozen): each must hold exactly its fields (in order, where it keeps them in
    a dict; every slot set, where it is slotted) and equal the object the constructor makes."""
    from dataclasses import fields

    from xferlint.frontends.executorch import load_graph_program

    view = load_graph_program(chain[variant], input="chain", name="chain", file=None).view
    (method,) = view.methods
    inner = [op for n in method.nodes if n.delegate is not None for op in n.delegate.ops]
    assert inner, "the chain's delegates keep their original graphs"
    for obj in list(method.nodes) + list(method.values.values()) + inner:
        names = [f.name for f in fields(obj)]
        if hasattr(obj, "__dict__"):
            assert list(vars(obj)) == names, type(obj).__name__
        else:  # slotted: reading a slot never set raises AttributeError
            assert [getattr(obj, n) for n in names] and set(type(obj).__slots__) == set(names)
        rebuilt = type(obj)(**{n: getattr(obj, n) for n in names})
        assert rebuilt == obj and hash(rebuilt) == hash(obj)


def _one_delegate_partitioner():
    """A DevicePartitioner that puts every op it takes, and the constants only they read,
    into one cuda:0 delegate."""
    from xferlint.testing import DevicePartitioner

    class OneDelegate(DevicePartitioner):
        def partition(self, exported_program):
            result = super().partition(exported_program)
            spec = next(iter(result.partition_tags.values()))
            for node in exported_program.graph_module.graph.nodes:
                if "delegation_tag" in node.meta:
                    node.meta["delegation_tag"] = "xferlint_one"
            result.partition_tags.clear()
            result.partition_tags["xferlint_one"] = spec
            return result

    return OneDelegate(["cuda:0"])


def test_a_delegate_operand_maps_past_the_constants_it_owns(lowered_once):
    """A delegate that owns its weight has the weight's placeholder before the input's in
    its original graph. The call's one operand is the input: its first reader inside is
    the sin, not the mm that reads the weight."""
    import torch

    from xferlint.frontends.executorch import load_graph_program
    from xferlint.testing import lower

    class SinThenMm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(5, 5))

        def forward(self, x):
            return torch.mm(torch.sin(x), self.w)

    program = lowered_once("sin-then-mm-one-delegate",
                           lambda: lower(SinThenMm(), (torch.randn(3, 5),), ["cuda:0"],
                                         partitioner=_one_delegate_partitioner()))
    (method,) = load_graph_program(program, input="m", name="m", file=None).view.methods
    (call,) = [n for n in method.nodes if n.kind == OpKind.DELEGATE]
    info = call.delegate
    assert [op.target for op in info.ops] == ["aten.sin.default", "aten.mm.default"]
    assert len(call.inputs) == 1, "the weight is the delegate's own, not an operand"
    assert info.reader_of(0).target == "aten.sin.default"
    assert info.writer_of(0).target == "aten.mm.default"


def test_edge_program_is_read_with_materialized_copies_and_left_untouched(chain):
    from xferlint.frontends.executorch import load_graph_program

    edge = chain["edge"]
    before = [str(n.target) for n in _graph(edge).nodes]
    assert not any("_h2d_copy" in t or "_d2h_copy" in t for t in before)
    view = load_graph_program(edge, input="chain", name="chain", file=None).view
    assert any("PropagateDevicePass" in note for note in view.notes)
    (method,) = view.methods
    copies = [n for n in method.nodes if n.kind in (OpKind.H2D, OpKind.D2H)]
    assert copies and all(n.target.endswith(".default") for n in copies)
    assert not any(n.kind == OpKind.ALLOC for n in method.nodes)
    # Linting reads a copy: the user's edge program is not mutated.
    assert [str(n.target) for n in _graph(edge).nodes] == before


def test_exported_program_without_delegates_is_clean():
    import torch

    from xferlint.api import lint
    from xferlint.frontends.executorch import load_graph_program

    class HostOnly(torch.nn.Module):
        def forward(self, x):
            return torch.cos(x).relu()

    exported = torch.export.export(HostOnly(), (torch.randn(2, 3),))
    assert lint(exported) == []
    (method,) = load_graph_program(exported, input="e", name="e", file=None).view.methods
    assert method.inputs == ("x",)
    assert all(n.kind in (OpKind.INPUT, OpKind.COMPUTE) for n in method.nodes)


@pytest.fixture(scope="module")
def multi_method(lowered_once):
    def build():
        import torch
        from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

        from xferlint.testing import DevicePartitioner, upstream_elision

        class Decode(torch.nn.Module):
            def forward(self, x):
                return torch.sin(x + x)

        exported = {
            "prefill": torch.export.export(_chain_module(), _chain_inputs()),
            "decode": torch.export.export(Decode(), (torch.randn(2, 2),)),
        }
        edge = to_edge_transform_and_lower(
            exported,
            partitioner={"prefill": [DevicePartitioner(CHAIN_DEVICES)], "decode": [DevicePartitioner(["cuda:1"])]},
            compile_config=EdgeCompileConfig(_check_ir_validity=False),
        )
        with upstream_elision(False):
            return edge.to_executorch()

    return lowered_once("multi-method", build)


def test_every_method_of_a_multi_method_program_is_read(multi_method):
    from xferlint.api import lint
    from xferlint.frontends.executorch import load_graph_program

    view = load_graph_program(multi_method, input="mm", name="mm", file=None).view
    assert [m.name for m in view.methods] == ["decode", "prefill"]
    found = sorted((f.method, f.code, tuple(f.devices)) for f in lint(multi_method))
    assert found == [
        ("decode", "XF001", ("cuda:1", "cpu", "cuda:1", "cuda:1")),
        ("prefill", "XF001", ("cuda:0", "cpu", "cuda:0", "cuda:0")),
        ("prefill", "XF002", ("cuda:0", "cpu", "cuda:1", "cuda:1")),
    ]
    by_method = {f.method: f for f in lint(multi_method, select=["XF001"])}
    # each round trip moves its tensor to host and back
    assert by_method["decode"].bytes == 2 * (2 * 2 * 4) and by_method["prefill"].bytes == 2 * (3 * 5 * 4)


@pytest.mark.parametrize("dtype_name", ["float32", "float16", "float64"])
def test_bytes_are_numel_times_itemsize(lowered_once, dtype_name):
    import torch

    from xferlint.api import lint_report
    from xferlint.testing import lower

    dtype = getattr(torch, dtype_name)
    inputs = _chain_inputs(dtype)
    program = lowered_once(f"chain-{dtype_name}",
                           lambda: lower(_chain_module(), inputs, CHAIN_DEVICES, elide=False))
    report = lint_report(program)
    findings = report.findings
    moved = torch.mm(inputs[0], inputs[1])  # every flagged transfer moves a (3, 5) result
    expected = moved.numel() * moved.element_size()
    assert [f.code for f in findings] == ["XF001", "XF002"]
    # a round trip and a staged move: each copies the result to host and back out
    assert [f.bytes for f in findings] == [2 * expected, 2 * expected]
    assert report.summary.bytes_flagged == 4 * expected
    # the short message shows the finding's own bytes, as format_bytes writes them
    assert all(format_bytes(f.bytes) in f.message for f in findings)


def test_location_is_the_model_source_line(chain):
    from xferlint.api import lint

    xf001, xf002 = lint(chain["out_no_elision"])
    # XF001: the mm result goes host and back for the add; XF002: the add result goes
    # cuda:0 -> host -> cuda:1 for the sin. Each is anchored at the producing line.
    for finding, marker, code in ((xf001, "LINE-MM", "h = torch.mm(x, w)"), (xf002, "LINE-ADD", "h = h + b")):
        loc = finding.location
        assert loc is not None, finding
        assert os.path.abspath(loc.file) == HERE
        assert loc.line == _marker_line(marker)
        assert loc.code is not None and loc.code.startswith(code)
        with open(HERE, encoding="utf-8") as handle:
            text = handle.read().splitlines()[loc.line - 1]
        assert loc.column == len(text) - len(text.lstrip()) + 1
        assert loc.function == "forward"
    # The message names the consumer by its source line too.
    assert f"line {_marker_line('LINE-ADD')}" in xf001.detail
    assert f"line {_marker_line('LINE-SIN')}" in xf002.detail


def test_nodes_and_devices_follow_the_transfer_path(chain):
    import torch

    from xferlint.api import lint

    graph_nodes = {n.name: n for n in _graph(chain["out_no_elision"]).nodes}
    for finding in lint(chain["out_no_elision"]):
        assert len(finding.nodes) == len(finding.devices) == len(finding.steps) == 4
        assert [s.role for s in finding.steps] == ["producer", "d2h", "h2d", "consumer"]
        path = [graph_nodes[name] for name in finding.nodes]
        # Each node reads the one before it, in the lowered program itself.
        for before, after in zip(path, path[1:]):
            operands = [a for a in after.args if isinstance(a, torch.fx.Node)]
            assert before in operands, (before.name, after.name)
        assert "_d2h_copy" in str(path[1].target) and "_h2d_copy" in str(path[2].target)
        # The devices are the ExecuTorch TensorSpecs' along the path.
        spec_devices = []
        for node in path[:3]:
            spec = node.meta["spec"]
            spec_devices.append("cpu" if spec.device.name == "CPU" else f"cuda:{spec.device_index}")
        assert finding.devices[:3] == spec_devices
        assert finding.devices[2] == finding.devices[3]  # the consumer runs where the H2D goes
        assert finding.devices[1] == "cpu"


def test_values_read_their_own_specs():
    """Each value's TensorMeta, device and placement come from its own TensorSpec (and
    traced tensor): the frontend memoises them on what they are read from, so specs that
    differ only in shape, dtype, device or plan slot must not share them, with or without a
    traced `val`."""
    import torch
    from executorch.exir.schema import DeviceType
    from executorch.exir.tensor import TensorSpec

    from xferlint.frontends.executorch import read_method

    specs = {
        "a": TensorSpec(torch.float32, torch.Size([2, 3])),
        "b": TensorSpec(torch.float32, torch.Size([4, 5])),
        "c": TensorSpec(torch.int64, torch.Size([4, 5])),
        "d": TensorSpec(torch.float32, torch.Size([4, 5])),
    }
    specs["d"].device, specs["d"].device_index = DeviceType.CUDA, 1
    for planned in (False, True):
        graph = torch.fx.Graph()
        for offset, (name, spec) in enumerate(specs.items()):
            spec.mem_id, spec.mem_offset = 1, 64 * offset
            for suffix, val in (("", None), ("_traced", torch.empty(tuple(spec.shape), dtype=spec.dtype))):
                node = graph.placeholder(name + suffix)
                node.meta["spec"] = spec
                if val is not None:
                    node.meta["val"] = val
        graph.output(())
        gm = torch.fx.GraphModule(torch.nn.Module(), graph)
        if planned:
            gm.meta["non_const_buffer_sizes"] = [0, 1024]
        values = read_method("forward", gm, None).values
        for name, spec in specs.items():
            for vid in (name, name + "_traced"):
                value = values[vid]
                assert value.tensor.shape == tuple(spec.shape) and value.tensor.dtype == str(spec.dtype)[6:], vid
                # (a planned input starts in its arena, host here: the spec's device is spec_device)
                assert str(value.spec_device or value.declared_device) == ("cuda:1" if name == "d" else "cpu"), vid
                assert (value.placement is not None) == planned, vid
                if planned:
                    assert value.placement.offset == spec.mem_offset, vid


def test_symbolic_sizes_give_no_bytes():
    """A transfer whose shape is not static has `bytes: null` (hand-built view: the demo
    lowering specializes shapes on this machine)."""
    from xferlint.analyzer.lattice import Device
    from xferlint.analyzer.view import MethodView, Node, ProgramView, TensorMeta, Value
    from xferlint.api import lint

    cuda = Device("cuda", 0)
    symbolic = TensorMeta(shape=(None, 4), dtype="float32", nbytes=None)
    values = {v: Value(id=v, tensor=symbolic) for v in ("x", "xd", "d", "dh", "back", "e")}
    nodes = [
        Node(0, "x", OpKind.INPUT, "input", (), ("x",)),
        Node(1, "h2d_x", OpKind.H2D, "et_copy._h2d_copy.default", ("x",), ("xd",), device=cuda),
        Node(2, "delegate_0", OpKind.DELEGATE, "executorch_call_delegate", ("xd",), ("d",), device=cuda),
        Node(3, "d2h", OpKind.D2H, "et_copy._d2h_copy.default", ("d",), ("dh",)),
        Node(4, "h2d_back", OpKind.H2D, "et_copy._h2d_copy.default", ("dh",), ("back",), device=cuda),
        Node(5, "delegate_1", OpKind.DELEGATE, "executorch_call_delegate", ("back",), ("e",), device=cuda),
    ]
    method = MethodView(name="forward", nodes=tuple(nodes), values=values, inputs=("x",), outputs=("e",))
    (finding,) = lint(ProgramView(input="v", name="v", kind="graph", methods=(method,)))
    assert finding.code == "XF001" and finding.bytes is None
    assert "symbolic" in finding.message


def test_a_location_recorded_on_another_machine_is_found_beside_the_archive(tmp_path):
    """A .pt2 exported elsewhere records absolute paths that do not exist here: the file
    with the same path tail next to the archive (or above it) is used, column included."""
    from xferlint.analyzer.view import SourceLocation
    from xferlint.frontends.source import relocate

    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "net.py").write_text("import torch\n\ndef f(x):\n    return x.cpu()\n")
    archive = tmp_path / "models" / "pt2" / "net.pt2"
    recorded = SourceLocation(file="/elsewhere/build/models/net.py", line=4, column=1, function="f",
                              code="return x.cpu()")
    moved = relocate(recorded, str(archive), {})
    assert moved.file == str(tmp_path / "models" / "net.py") and moved.line == 4 and moved.column == 5
    missing = SourceLocation(file="/elsewhere/other.py", line=1, column=1, function="f", code=None)
    assert relocate(missing, str(archive), {}) == missing
