"""Semantic equivalence: fixed programs compute what the originals compute.

The programs have XNNPACK delegates with a `target_device` spec (real device programs:
PropagateDevicePass inserts the H2D/D2H copies a GPU backend gets), and ExecuTorch's own
runtime runs them on this CPU-only machine (xferlint.testing.xnnpack.run_on_cpu: device
tensors moved to CPU, et_copy ops as plain copies). Each program runs before and after
`xferlint.fix` on random inputs; the outputs must agree, and the original must agree with
eager PyTorch (so the harness really runs the model). A deliberately wrong fix shows that
the comparison catches a mistake the static checks cannot.
"""

from __future__ import annotations

import copy

import pytest
import torch

import randmodels
import xferlint
from xferlint.findings import Applicability
from xferlint.fixes.plan import FixPlan, Rewire
from xferlint.fixes.planners import PLANNERS

xnnpack = pytest.importorskip("xferlint.testing.xnnpack")


class Mixed(torch.nn.Module):
    """`x` feeds two linear layers (two delegates), a host op (cumsum) splits the first."""

    def __init__(self) -> None:
        super().__init__()
        self.l1 = torch.nn.Linear(8, 8)
        self.l2 = torch.nn.Linear(8, 8)

    def forward(self, x, y):
        a = self.l1(x)
        b = torch.cumsum(a, 0)
        c = self.l2(x) * y
        return b + c, torch.relu(a)


class Stateful(torch.nn.Module):
    """A mutable buffer read by two delegates, then written back (the write-back comes
    after both copies of it, so they may be shared)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("state", torch.ones(4, 4))

    def forward(self, x):
        a = x + self.state
        self.state.mul_(2.0)
        return torch.relu(a) * x


RANDOM_SEEDS = (3001, 3011)  # each has round trips and a duplicate with per-op delegates


def _variants(module, inputs, partitioner, elisions=(False, True), config=None):
    """One edge lowering, then to_executorch with the upstream elision off and/or on."""
    from xferlint.testing import lower, upstream_elision

    edge = lower(module, inputs, None, partitioner=partitioner, to_executorch=False)
    out = {}
    for elide in elisions:
        with upstream_elision(elide):
            out[elide] = copy.deepcopy(edge).to_executorch(config)
    return out


def _cases():
    torch.manual_seed(0)
    mixed = Mixed().eval()
    mixed_inputs = (torch.randn(4, 8), torch.randn(4, 8))
    yield "mixed-whole-partitions", mixed, _variants(mixed, mixed_inputs, xnnpack.XnnpackDevicePartitioner(),
                                                     (True,))[True]
    per_op = _variants(mixed, mixed_inputs, xnnpack.xnnpack_per_op(["cuda:0"]))
    yield "mixed-per-op-elision-off", mixed, per_op[False]
    yield "mixed-per-op-stock", mixed, per_op[True]
    from executorch.exir import ExecutorchBackendConfig
    from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass

    stateful = Stateful()
    # The buffer's initial value is serialized (ExecuTorch leaves it undefined otherwise).
    config = ExecutorchBackendConfig(passes=[InitializedMutableBufferPass(["state"])])
    yield "mutable-buffer", stateful, _variants(stateful, (torch.randn(4, 4),), xnnpack.xnnpack_per_op(["cuda:0"]),
                                                (True,), config)[True]
    for seed in RANDOM_SEEDS:
        spec = randmodels.generate(seed)
        devices = list(spec.devices) or [None]
        module = randmodels.RandomModel(spec)
        program = _variants(module, randmodels.example_inputs(spec), xnnpack.xnnpack_per_op(devices), (False,))[False]
        yield f"random-{seed}", module, program


@pytest.fixture(scope="module")
def cases():
    return {name: (module, program) for name, module, program in _cases()}


def _random_inputs(module, program, seed):
    generator = torch.Generator().manual_seed(seed)
    shapes = [tuple(n.meta["val"].shape) for n in program.exported_program().graph_module.graph.nodes
              if n.op == "placeholder" and n.name in program.exported_program().graph_signature.user_inputs]
    return tuple(torch.randn(*shape, generator=generator) for shape in shapes)


def _eager(module, inputs):
    """Eager outputs from a fresh copy (a stateful module must start where the program does)."""
    out = copy.deepcopy(module)(*inputs)
    return out if isinstance(out, (tuple, list)) else (out,)


def _assert_same(actual, expected, what):
    assert len(actual) == len(expected), what
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-5, msg=lambda m: f"{what}: {m}")


@pytest.mark.parametrize("name", ["mixed-whole-partitions", "mixed-per-op-elision-off", "mixed-per-op-stock",
                                  "mutable-buffer", *(f"random-{s}" for s in RANDOM_SEEDS)])
def test_fixed_program_computes_the_same(cases, name):
    module, program = cases[name]
    result = xferlint.fix(program, name=name)
    assert result.changed, f"{name}: expected something to fix"
    if name != "mixed-per-op-elision-off" and not name.startswith("random"):
        assert {p.code for p in result.applied} == {"XF004"}
    if name == "mutable-buffer":  # the re-emitted program still writes the buffer back and returns the output
        assert [p.finding[0] for p in result.applied] == ["b_state", "x"]
    for seed in (1, 2):
        inputs = _random_inputs(module, program, seed)
        original = xnnpack.run_on_cpu(program, inputs)
        _assert_same(original, list(_eager(module, inputs)), f"{name}: the original against eager")
        _assert_same(xnnpack.run_on_cpu(result.program, inputs), original, f"{name}: fixed against original")


def test_the_comparison_catches_a_wrong_fix(cases, monkeypatch):
    """A planner bug that feeds a round trip's readers another device tensor of the same
    shape, defined earlier, passes every static check (the graph is well formed and nothing
    is left to report); the outputs give it away."""

    def wrong(ctx, finding):
        roles = {s.role: s.node for s in finding.steps}
        h2d = next(n for n in ctx.method.nodes if n.name == roles["h2d"])
        right = ctx.facts.writer(h2d.inputs[0]).inputs[0]
        shape = ctx.facts.value(right).tensor.shape
        readers = ctx.facts.readers(h2d.output)
        other = next(n.output for n in ctx.method.nodes[:min(r.index for r in readers)]
                     if n.kind.value == "getitem" and n.output != right
                     and ctx.facts.value(n.output).tensor.shape == shape)
        return FixPlan(code=finding.code, name=finding.name, method=finding.method, finding=tuple(finding.nodes),
                       applicability=Applicability.SAFE, summary="wrong",
                       rewires=tuple(Rewire(r.name, h2d.output, other) for r in readers), removes=(h2d.name,))

    module, program = cases["mixed-per-op-elision-off"]
    monkeypatch.setitem(PLANNERS, "XF001", wrong)
    result = xferlint.fix(program, select=["XF001"])
    assert "wrong" in [p.summary for p in result.applied]
    inputs = _random_inputs(module, program, 1)
    fixed, original = xnnpack.run_on_cpu(result.program, inputs), xnnpack.run_on_cpu(program, inputs)
    with pytest.raises(AssertionError):
        _assert_same(fixed, original, "wrong fix")
