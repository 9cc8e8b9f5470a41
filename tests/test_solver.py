"""The solver: devices of every value, to a fixed point.

Hand-built MethodViews for the lattice mechanics (branch merges, loops closed by a MOVE
back edge, unmodelled ops, 0-dim host scalars), a reference round-robin iteration that
the sparse solver must agree with on random views, and real ExecuTorch programs with
`torch.cond`, `map` and `scan` whose bodies the graph frontend inlines. Strict mode turns
an unmodelled op into an UnmodelledOpError; the default treats it as CONFLICT.
"""

from __future__ import annotations

import operator
import random
from typing import Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.lattice import CONFLICT, CPU, UNREACHED, Device, join_all
from xferlint.analyzer.solver import solve
from xferlint.analyzer.transfer import transfer
from xferlint.analyzer.view import MethodView, Node, OpKind, ProgramView, TensorMeta, Value

CUDA0, CUDA1 = Device("cuda", 0), Device("cuda", 1)
MATRIX = TensorMeta(shape=(4, 4), dtype="float32", nbytes=64)
SCALAR = TensorMeta(shape=(), dtype="float32", nbytes=4)


class ViewBuilder:
    """Builds a MethodView node by node: `b.op(kind, out, *inputs, device=...)`."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.values: dict[str, Value] = {}

    def value(self, vid: str, tensor: Optional[TensorMeta] = MATRIX, declared: Optional[Device] = None) -> None:
        if vid not in self.values:
            self.values[vid] = Value(id=vid, tensor=tensor, declared_device=declared)

    def op(self, kind: OpKind, out: Optional[str], *inputs: str, device: Optional[Device] = None,
           tensor: Optional[TensorMeta] = MATRIX, declared: Optional[Device] = None, name: Optional[str] = None) -> Node:
        outputs = (out,) if out else ()
        if out:
            self.value(out, tensor, declared)
        node = Node(index=len(self.nodes), name=name or f"n{len(self.nodes)}_{out or kind.value}", kind=kind,
                    target=kind.value, inputs=tuple(inputs), outputs=outputs, device=device)
        self.nodes.append(node)
        return node

    def view(self, outputs: tuple[str, ...] = ()) -> MethodView:
        inputs = tuple(n.outputs[0] for n in self.nodes if n.kind == OpKind.INPUT)
        return MethodView(name="forward", nodes=tuple(self.nodes), values=dict(self.values),
                          inputs=inputs, outputs=outputs)


def reference_solve(method: MethodView) -> dict[str, object]:
    """Round-robin iteration from bottom until nothing changes: the least fixed point,
    computed the slow obvious way the sparse worklist must agree with."""
    state: dict[str, object] = {}
    changed = True
    while changed:
        changed = False
        for node in method.nodes:
            result = transfer(node, lambda v: state.get(v, UNREACHED), method.values)
            for vid in node.outputs:
                new = join_all([state.get(vid, UNREACHED), result])
                if new is not UNREACHED and new != state.get(vid, UNREACHED):
                    state[vid] = new
                    changed = True
    return state


# --------------------------------------------------------------------------- hand-built


def _branches(true_device: Device, false_device: Device) -> MethodView:
    b = ViewBuilder()
    b.op(OpKind.INPUT, "x")
    b.op(OpKind.H2D, "t", "x", device=true_device)  # true branch
    b.op(OpKind.MOVE, "r", "t")
    b.op(OpKind.H2D, "f", "x", device=false_device)  # false branch
    b.op(OpKind.MOVE, "r", "f")
    b.op(OpKind.COMPUTE, "after", "r")
    return b.view(outputs=("after",))


@pytest.mark.parametrize(
    "true_device, false_device, merged",
    [(CUDA0, CUDA0, CUDA0), (CUDA0, CUDA1, CONFLICT), (CUDA1, CPU, CONFLICT), (CPU, CPU, CPU)],
)
def test_branch_merge_is_the_join(true_device, false_device, merged):
    devices = solve(_branches(true_device, false_device))
    assert devices["t"] == true_device and devices["f"] == false_device
    assert devices["r"] == merged
    assert devices["after"] == merged  # a compute op on a CONFLICT operand is CONFLICT


def _loop(back_edge_device: Optional[Device]) -> MethodView:
    """init (cuda:0) -> carry; body: y = compute(carry) [-> H2D to back_edge_device]; MOVE back."""
    b = ViewBuilder()
    b.op(OpKind.INPUT, "x")
    b.op(OpKind.H2D, "init", "x", device=CUDA0)
    b.op(OpKind.MOVE, "carry", "init")  # loop entry
    b.op(OpKind.COMPUTE, "y", "carry")  # body reads the carry before the back edge writes it
    b.op(OpKind.COMPUTE, "z", "y", "carry")
    nxt = "z"
    if back_edge_device is not None:
        b.op(OpKind.H2D, "moved", "z", device=back_edge_device)
        nxt = "moved"
    b.op(OpKind.MOVE, "carry", nxt)  # the back edge, after its reader in program order
    b.op(OpKind.MOVE, "result", nxt)  # loop exit
    return b.view(outputs=("result",))


def test_loop_on_one_device_stays_there():
    devices = solve(_loop(None))
    assert devices["carry"] == CUDA0
    assert devices["y"] == devices["z"] == devices["result"] == CUDA0


def test_loop_back_edge_to_another_device_reaches_conflict():
    view = _loop(CUDA1)
    devices = solve(view)
    # First pass: carry = cuda:0; the back edge then brings cuda:1, so the carry (and all
    # that reads it) rises to CONFLICT; the H2D itself still targets cuda:1.
    assert devices["moved"] == CUDA1
    assert devices["carry"] is CONFLICT
    assert devices["y"] is CONFLICT and devices["z"] is CONFLICT
    assert devices == reference_solve(view)


def test_solution_is_a_fixed_point():
    view = _loop(CUDA1)
    devices = solve(view)
    for vid in view.values:
        writers = [n for n in view.nodes if vid in n.outputs]
        expected = join_all(transfer(n, lambda v: devices.get(v, UNREACHED), view.values) for n in writers)
        assert devices.get(vid, UNREACHED) == expected, vid


def test_unknown_op_is_conflict_and_spreads():
    b = ViewBuilder()
    b.op(OpKind.INPUT, "x")
    b.op(OpKind.H2D, "xd", "x", device=CUDA0)
    b.op(OpKind.UNKNOWN, "u", "xd")
    b.op(OpKind.COMPUTE, "after", "u")
    b.op(OpKind.D2H, "host", "u")
    devices = solve(b.view(outputs=("after", "host")))
    assert devices["u"] is CONFLICT
    assert devices["after"] is CONFLICT
    assert devices["host"] == CPU  # a D2H's result is on the host whatever its source


def test_zero_dim_host_scalars_do_not_count():
    b = ViewBuilder()
    b.op(OpKind.INPUT, "x")
    b.op(OpKind.H2D, "xd", "x", device=CUDA0)
    b.op(OpKind.INPUT, "s", tensor=SCALAR)  # a 0-dim cpu tensor
    b.op(OpKind.INPUT, "v", tensor=TensorMeta(shape=(1,), dtype="float32", nbytes=4))  # 1-dim: counts
    b.op(OpKind.CONSTANT, "n", tensor=None)  # a python number: not a tensor at all
    b.op(OpKind.COMPUTE, "scaled", "xd", "s", "n")
    b.op(OpKind.COMPUTE, "mixed", "xd", "v")
    b.op(OpKind.COMPUTE, "scalar_only", "s", "n", tensor=SCALAR)
    b.op(OpKind.H2D, "sd", "s", device=CUDA1, tensor=SCALAR)  # 0-dim on a device does count
    b.op(OpKind.COMPUTE, "device_scalar", "x", "sd")
    devices = solve(b.view())
    assert devices["scaled"] == CUDA0
    assert devices["mixed"] is CONFLICT
    assert devices["scalar_only"] == CPU
    assert devices["device_scalar"] is CONFLICT


def test_factory_without_tensor_operands_runs_where_declared():
    b = ViewBuilder()
    b.op(OpKind.COMPUTE, "full_dev", declared=CUDA1)
    b.op(OpKind.COMPUTE, "full_host")
    b.op(OpKind.ALLOC, "buffer", declared=CUDA0)
    devices = solve(b.view())
    assert devices["full_dev"] == CUDA1 and devices["full_host"] == CPU and devices["buffer"] == CUDA0


def test_fixed_devices_of_copies_and_delegates():
    b = ViewBuilder()
    b.op(OpKind.INPUT, "x", declared=CUDA1)  # a declared input device is honoured
    b.op(OpKind.DELEGATE, "d0", "x", device=CUDA0)
    b.op(OpKind.DELEGATE, "d_host", "x")  # no target_device compile spec: host
    b.op(OpKind.GETITEM, "g", "d0")
    b.op(OpKind.ALIAS, "view", "g")
    b.op(OpKind.TO_DEVICE, "moved", "view", device=CUDA1)
    b.op(OpKind.CONTROL, "ctl", "x")
    devices = solve(b.view())
    assert devices["x"] == CUDA1
    assert devices["d0"] == devices["g"] == devices["view"] == CUDA0
    assert devices["d_host"] == CPU
    assert devices["moved"] == CUDA1
    assert "ctl" not in devices  # a control node's results are written by its MOVEs only


def test_facts_liveness_and_readers():
    b = ViewBuilder()
    b.op(OpKind.INPUT, "x")
    b.op(OpKind.H2D, "xd", "x", device=CUDA0)
    b.op(OpKind.DELEGATE, "d", "xd", device=CUDA0)
    b.op(OpKind.D2H, "dead", "d")
    b.op(OpKind.COMPUTE, "dead_too", "dead")
    b.op(OpKind.D2H, "out", "d")
    facts = DeviceFacts.compute(b.view(outputs=("out",)))
    assert facts.is_live("xd") and facts.is_live("d") and facts.is_live("out")
    assert not facts.is_live("dead") and not facts.is_live("dead_too")
    assert [n.outputs[0] for n in facts.readers("d")] == ["dead", "out"]
    assert facts.writer("d").kind == OpKind.DELEGATE
    assert facts.nbytes("d") == 64


# --------------------------------------------------------------------------- random views

_KINDS = [OpKind.COMPUTE, OpKind.COMPUTE, OpKind.MOVE, OpKind.H2D, OpKind.D2H, OpKind.ALIAS, OpKind.UNKNOWN,
          OpKind.DELEGATE]


def _random_view(seed: int) -> MethodView:
    """Random nodes over a small pool of values; values may be written several times and
    read before they are written (loops), as inlined control flow produces."""
    rnd = random.Random(seed)
    b = ViewBuilder()
    pool = ["x0", "x1"]
    b.op(OpKind.INPUT, "x0")
    b.op(OpKind.INPUT, "x1", declared=rnd.choice([None, CUDA0]))
    for i in range(rnd.randint(3, 25)):
        kind = rnd.choice(_KINDS)
        # MOVE nodes write back into existing values: branch merges and loop back edges.
        out = rnd.choice(pool) if kind == OpKind.MOVE and rnd.random() < 0.6 else f"v{i}"
        arity = 1 if kind in (OpKind.MOVE, OpKind.H2D, OpKind.D2H, OpKind.ALIAS) else rnd.randint(1, 3)
        inputs = [rnd.choice(pool + [f"v{i + 1}"]) for _ in range(arity)]  # sometimes a later value
        device = rnd.choice([CUDA0, CUDA1]) if kind in (OpKind.H2D, OpKind.DELEGATE) else None
        tensor = SCALAR if rnd.random() < 0.15 else MATRIX
        b.op(kind, out, *inputs, device=device, tensor=tensor)
        if out not in pool:
            pool.append(out)
    return b.view()


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_sparse_solver_agrees_with_round_robin(seed):
    view = _random_view(seed)
    assert solve(view) == reference_solve(view)


# --------------------------------------------------------------------------- real programs
# ExecuTorch lowers cond/map/scan bodies as separate graph modules; a partitioner that
# tags nodes inside them (ExecuTorch's lowering recurses into control-flow submodules)
# puts device delegates in the bodies.


def _deep_partitioner(devices):
    """A DevicePartitioner that also tags ops inside cond/map/scan bodies."""
    from xferlint.testing import DevicePartitioner

    return DevicePartitioner(devices, nested=True)


def _cond_module(true_op: str, false_op: str):
    import torch

    ops = {"sin": torch.sin, "cos": torch.cos, "double": lambda a: a + a}

    class CondModel(torch.nn.Module):
        def forward(self, x, y):
            branch = torch.cond(x.sum() > 0, lambda a: ops[true_op](a), lambda a: ops[false_op](a), (x,))
            return torch.cos(branch) * y

    return CondModel()


def _method(program):
    from xferlint.frontends.executorch import load_graph_program

    view = load_graph_program(program, input="test", name="test", file=None).view
    assert len(view.methods) == 1
    method = view.methods[0]
    return method, DeviceFacts.compute(method)


def _by_name(method: MethodView, suffix: str, kind: OpKind, scope_prefix: Optional[str] = None) -> list[Node]:
    return [n for n in method.nodes if n.kind == kind and n.name.endswith(suffix)
            and (scope_prefix is None or n.scope.startswith(scope_prefix))]


@pytest.fixture(scope="module")
def cond_programs(lowered_once):
    import torch

    from xferlint.testing import lower

    inputs = (torch.randn(4, 4), torch.randn(4, 4))

    def build(true_op, false_op, devices):
        return lowered_once(
            f"solver-cond-{true_op}-{false_op}-{devices}",
            lambda: lower(_cond_module(true_op, false_op), inputs, None, partitioner=_deep_partitioner(devices)),
        )

    return {
        "same": build("sin", "double", ["cuda:0", "cuda:0"]),  # both branches delegate to cuda:0
        "split": build("sin", "cos", ["cuda:1"]),  # cuda:1 in one branch, host cos in the other
        "host": build("cos", "cos", []),  # no delegates at all
    }


def _merge_device(method, facts):
    merges = [n for n in method.nodes if n.kind == OpKind.MOVE and n.target == "merge"]
    assert len(merges) == 2, "one merge MOVE per branch"
    assert merges[0].outputs == merges[1].outputs
    return facts.device(merges[0].outputs[0])


def test_cond_bodies_are_inlined_and_merged(cond_programs):
    method, facts = _method(cond_programs["same"])
    scopes = {n.scope for n in method.nodes if n.scope}
    assert len(scopes) == 2 and all(s.startswith("cond.") for s in scopes), scopes
    delegates = [n for n in method.nodes if n.kind == OpKind.DELEGATE]
    assert len(delegates) == 2 and all(d.scope for d in delegates)
    assert all(d.device == CUDA0 for d in delegates)
    # The branch operand is bound to the bodies' placeholders by MOVE nodes.
    binds = [n for n in method.nodes if n.kind == OpKind.MOVE and n.target == "bind"]
    assert {n.scope for n in binds} == scopes and all(n.inputs == ("x",) for n in binds)
    assert _merge_device(method, facts) == CUDA0


def test_cond_merge_of_device_and_host_is_conflict(cond_programs):
    method, facts = _method(cond_programs["split"])
    (delegate,) = [n for n in method.nodes if n.kind == OpKind.DELEGATE]
    assert delegate.scope and delegate.device == CUDA1
    assert facts.device(delegate.outputs[0]) == CUDA1
    (host_cos,) = [n for n in method.nodes if n.target.startswith("aten.cos") and n.scope]
    assert facts.device(host_cos.outputs[0]) == CPU
    assert _merge_device(method, facts) is CONFLICT


def test_cond_on_host_stays_on_host(cond_programs):
    method, facts = _method(cond_programs["host"])
    assert not any(n.kind == OpKind.DELEGATE for n in method.nodes)
    assert _merge_device(method, facts) == CPU
    assert all(facts.device(v) in (CPU, UNREACHED) for n in method.nodes for v in n.outputs)


def test_map_body_is_inlined(lowered_once):
    import torch
    from torch._higher_order_ops.map import map as map_hop

    from xferlint.testing import lower

    class MapModel(torch.nn.Module):
        def forward(self, xs, y):
            return map_hop(lambda x, y: torch.sin(x) + y, xs, y)

    program = lowered_once(
        "solver-map",
        lambda: lower(MapModel(), (torch.randn(3, 4), torch.randn(4)), None,
                      partitioner=_deep_partitioner(["cuda:0", "cuda:0"])),
    )
    method, facts = _method(program)
    body = [n for n in method.nodes if n.scope.startswith("map_impl.")]
    delegates = [n for n in body if n.kind == OpKind.DELEGATE]
    assert len(delegates) == 2 and all(d.device == CUDA0 for d in delegates)
    # Inside the body the two delegates hand over on cuda:0 (PropagateDevicePass does not
    # walk bodies, so there are no copies there) and the stacked result is on cuda:0.
    assert not any(n.kind in (OpKind.H2D, OpKind.D2H) for n in body)
    (stack,) = [n for n in method.nodes if n.kind == OpKind.MOVE and n.target == "stack"]
    assert facts.device(stack.outputs[0]) == CUDA0
    # The body's inputs are the map's operands, bound from the host.
    binds = [n for n in body if n.kind == OpKind.MOVE and n.target == "bind"]
    assert [n.inputs for n in binds] == [("xs",), ("y",)]
    assert all(facts.device(n.outputs[0]) == CPU for n in binds)


@pytest.mark.parametrize("devices, carry", [(["cuda:0"], CONFLICT), ([None], CPU)])
def test_scan_loop_reaches_a_fixed_point(lowered_once, devices, carry):
    import torch
    from torch._higher_order_ops.scan import scan

    from xferlint.testing import lower

    class ScanModel(torch.nn.Module):
        def forward(self, init, xs):
            def combine(carry, x):
                nxt = carry + x
                return nxt, torch.cos(nxt)

            return scan(combine, init, xs)

    program = lowered_once(
        f"solver-scan-{devices}",
        lambda: lower(ScanModel(), (torch.randn(4), torch.randn(3, 4)), None, partitioner=_deep_partitioner(devices)),
    )
    method, facts = _method(program)
    (back_edge,) = [n for n in method.nodes if n.kind == OpKind.MOVE and n.target == "loop"]
    carry_in = back_edge.outputs[0]
    # The carry placeholder has two writers: the entry binding (init, on the host) and the
    # back edge (the body's next carry). With the add on cuda:0 they disagree.
    assert len(facts.writers(carry_in)) == 2
    assert facts.device(carry_in) == carry
    assert facts.device(back_edge.inputs[0]) == (CUDA0 if devices[0] else CPU)
    assert solve(method) == reference_solve(method)


# --------------------------------------------------------------------------- strict mode


def host_callback(x):
    """A plain Python function: no schema, no transfer function."""
    return x * 2


@pytest.fixture(scope="module")
def program_with_python_call(lowered_once):
    """A real lowered program with a python-function call_function spliced in after the
    first delegate's D2H (torch.export never emits one; hand-written FX passes can)."""
    import copy

    import torch

    from xferlint.testing import lower
    from xferlint.testing.models import AddSinCos, example_inputs

    program = copy.deepcopy(lowered_once("AddSinCos-cuda0", lambda: lower(AddSinCos(), example_inputs(), ["cuda:0"])))
    gm = program.exported_program().graph_module
    d2h = next(n for n in gm.graph.nodes if "_d2h_copy" in str(n.target))
    with gm.graph.inserting_after(d2h):
        call = gm.graph.call_function(host_callback, (d2h,))
    call.meta = dict(d2h.meta)
    d2h.replace_all_uses_with(call, delete_user_cb=lambda user: user is not call)
    gm.recompile()
    return program


def test_strict_mode_raises_on_unmodelled_op(program_with_python_call):
    from xferlint.api import lint
    from xferlint.errors import UnmodelledOpError

    with pytest.raises(UnmodelledOpError, match="host_callback") as info:
        lint(program_with_python_call, strict=True)
    assert "host_callback" in str(info.value) and "strict" in str(info.value)


def test_non_strict_mode_gives_conflict(program_with_python_call):
    from xferlint.api import lint

    method, facts = _method(program_with_python_call)
    (unknown,) = [n for n in method.nodes if n.kind == OpKind.UNKNOWN]
    assert unknown.target == "host_callback"
    assert facts.device(unknown.outputs[0]) is CONFLICT
    readers = [r for r in facts.readers(unknown.outputs[0]) if r.kind == OpKind.COMPUTE]
    assert readers and all(facts.device(r.outputs[0]) is CONFLICT for r in readers)
    # The unmodelled op keeps its operand live: nothing upstream of it is reported dead.
    assert lint(program_with_python_call, select=["XF003"]) == []


def test_strict_mode_on_a_plain_fx_graph():
    import torch
    import torch.fx

    from xferlint.errors import UnmodelledOpError
    from xferlint.frontends.executorch import read_method

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    called = graph.call_function(host_callback, (x,))
    graph.output(graph.call_function(torch.ops.aten.sin.default, (called,)))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    with pytest.raises(UnmodelledOpError, match="host_callback"):
        read_method("forward", gm, None, strict=True)
    method = read_method("forward", gm, None, strict=False)
    (unknown,) = [n for n in method.nodes if n.kind == OpKind.UNKNOWN]
    assert solve(method)[unknown.outputs[0]] is CONFLICT


def test_python_scalar_builtins_are_modelled():
    """operator.add & co on host scalars (symbolic shapes) are not unmodelled ops."""
    import torch.fx

    from xferlint.frontends.executorch import read_method

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    y = graph.call_function(operator.add, (x, 1))
    graph.output(y)
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    method = read_method("forward", gm, None, strict=True)
    assert [n.kind for n in method.nodes] == [OpKind.INPUT, OpKind.COMPUTE]


def test_views_are_accepted_by_lint():
    """A hand-built ProgramView goes through the same pipeline as a lowered program."""
    from xferlint.api import lint

    b = ViewBuilder()
    b.op(OpKind.INPUT, "x")
    b.op(OpKind.H2D, "xd", "x", device=CUDA0, name="h2d_in")
    b.op(OpKind.DELEGATE, "d", "xd", device=CUDA0, name="delegate_0")
    b.op(OpKind.D2H, "dh", "d", name="d2h")
    b.op(OpKind.H2D, "back", "dh", device=CUDA0, name="h2d_back")
    b.op(OpKind.DELEGATE, "e", "back", device=CUDA0, name="delegate_1")
    b.op(OpKind.D2H, "out", "e", name="d2h_out")
    view = ProgramView(input="hand.py", name="hand", kind="graph", methods=(b.view(outputs=("out",)),))
    findings = lint(view, select=["XF001"])
    assert [f.nodes for f in findings] == [["delegate_0", "d2h", "h2d_back", "delegate_1"]]
    assert findings[0].devices == ["cuda:0", "cpu", "cuda:0", "cuda:0"]


def test_while_loop_exit_joins_the_initial_carry():
    """A while_loop may run zero times: its result is the carry as the condition sees it,
    the join of the initial value and the back edge, not the body's last output.

    torch.export cannot trace a `.to("cuda")` on this machine, so the exported body gets
    an `aten._to_copy(device=cuda:0)` spliced in after the fact (ExecuTorch's emitter
    refuses while_loop, but ExportedPrograms reach the frontend as they are)."""
    import torch
    from torch._higher_order_ops.while_loop import while_loop

    from xferlint.frontends.executorch import load_graph_program

    class Loop(torch.nn.Module):
        def forward(self, i, x):
            return while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, torch.sin(x)), (i, x))

    exported = torch.export.export(Loop(), (torch.tensor(0), torch.randn(4)))
    loop = next(n for n in exported.graph_module.graph.nodes if n.op == "call_function" and "while_loop" in n.name)
    body = getattr(exported.graph_module, loop.args[1].target)
    sin = next(n for n in body.graph.nodes if n.target == torch.ops.aten.sin.default)
    with body.graph.inserting_after(sin):
        moved = body.graph.call_function(torch.ops.aten._to_copy.default, (sin,), {"device": torch.device("cuda", 0)})
    moved.meta = dict(sin.meta)
    sin.replace_all_uses_with(moved, delete_user_cb=lambda user: user is not moved)
    body.recompile()

    (method,) = load_graph_program(exported, input="loop", name="loop", file=None).view.methods
    facts = DeviceFacts.compute(method)
    (to_device,) = [n for n in method.nodes if n.kind == OpKind.H2D]  # sin's result is on cpu
    assert to_device.device == CUDA0 and facts.device(to_device.outputs[0]) == CUDA0
    (control,) = [n for n in method.nodes if n.kind == OpKind.CONTROL]
    counter, carried = control.outputs
    assert facts.device(counter) == CPU
    assert facts.device(carried) is CONFLICT  # cpu if the loop never runs, cuda:0 otherwise
    # Both the condition's and the body's carry placeholders see the back edge.
    carry_placeholders = [n.outputs[0] for n in method.nodes if n.kind == OpKind.MOVE and n.target == "bind"
                          and n.inputs == ("x",)]
    assert len(carry_placeholders) == 2
    assert all(facts.device(v) is CONFLICT for v in carry_placeholders)
