"""Real device programs for the `.pte` tests, each lowered by ExecuTorch's own pipeline.

`PROGRAMS` maps a name to a zero-argument builder returning an ExecutorchProgramManager
(`.buffer` is its `.pte`). They cover what the `.pte` frontend must read like the graph
frontend: back-to-back delegates with and without ExecuTorch's elision, dead copies left
by a post-processing hook, cross-device staging, a host tensor copied twice, delegates with
several outputs, parameters, delegates inside `cond` branches and `map` bodies, and a
program with two methods.

Torch is imported lazily, inside the builders.
"""

from __future__ import annotations

from typing import Any, Callable, Optional


def _torch():
    import torch

    return torch


# --------------------------------------------------------------------------- models


def mixed_module():
    torch = _torch()

    class Mixed(torch.nn.Module):
        """Delegable ops (add, sin, mm) around host ops (cos): several boundaries."""

        def forward(self, x, y):
            a = x + y
            b = torch.sin(a)
            c = torch.cos(b)
            d = torch.mm(c, y)
            e = d + a
            f = torch.sin(e)
            return f, torch.cos(d)

    return Mixed()


def shared_input_module():
    torch = _torch()

    class SharedInput(torch.nn.Module):
        """One host input read by three delegates: one H2D per delegate argument."""

        def forward(self, x, y):
            return torch.sin(x) + torch.mm(x, y) + (x + y)

    return SharedInput()


def linear_stack_module(features: int = 16, layers: int = 3):
    torch = _torch()

    class LinearStack(torch.nn.Module):
        """mm with parameters, then a host op, per layer."""

        def __init__(self) -> None:
            super().__init__()
            gen = torch.Generator().manual_seed(1)
            self.weights = torch.nn.ParameterList(
                [torch.nn.Parameter(torch.randn(features, features, generator=gen) / features) for _ in range(layers)]
            )

        def forward(self, x):
            for w in self.weights:
                x = torch.sin(torch.mm(x, w))
                x = torch.relu(x)
            return x

    return LinearStack()


def cond_module():
    torch = _torch()
    from functorch.experimental.control_flow import cond

    class Cond(torch.nn.Module):
        """A `cond` whose true branch has two back-to-back delegable ops."""

        def forward(self, x, y):
            def true_fn(x, y):
                return torch.sin(x + y)

            def false_fn(x, y):
                return torch.cos(x) + y

            return cond(x.sum() > 0, true_fn, false_fn, (x, y))

    return Cond()


def map_module():
    torch = _torch()
    from functorch.experimental.control_flow import map as cf_map

    class Map(torch.nn.Module):
        """A `map` whose body has two back-to-back delegable ops."""

        def forward(self, xs, y):
            def body(x, y):
                return torch.sin(x + y)

            return cf_map(body, xs, y)

    return Map()


def square_inputs(count: int = 2, shape=(4, 4), seed: int = 0):
    torch = _torch()
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*shape, generator=gen) for _ in range(count))


# --------------------------------------------------------------------------- partitioners


def nested_partitioner(devices):
    """A DevicePartitioner that also tags ops inside control-flow bodies (ExecuTorch's
    to_backend lowers tagged nodes in `cond` / `map` submodules too)."""
    from xferlint.testing import DevicePartitioner

    return DevicePartitioner(devices, nested=True)


def group_partitioner(groups: dict[int, tuple[str, str]]):
    """Ops (by position among the supported ops) grouped into delegates: `{position: (tag,
    device)}`; ops with one tag form one delegate, which then has several outputs."""
    from xferlint.testing import CompileSpec, DelegationSpec, DevicePartitioner, PartitionResult

    class GroupPartitioner(DevicePartitioner):
        def partition(self, exported_program):
            tags = {}
            position = 0
            for node in exported_program.graph_module.graph.nodes:
                if node.op != "call_function" or node.target not in self.ops:
                    continue
                if position in groups:
                    tag, device = groups[position]
                    node.meta["delegation_tag"] = tag
                    tags[tag] = DelegationSpec(
                        self.backend, self.extra_specs + [CompileSpec("target_device", device.encode())]
                    )
                position += 1
            return PartitionResult(tagged_exported_program=exported_program, partition_tags=tags)

    return GroupPartitioner([None])


# --------------------------------------------------------------------------- programs


def _lower(module, inputs, devices, **kwargs):
    from xferlint.testing import lower

    return lower(module, inputs, devices, **kwargs)


def two_methods(elide: bool = False):
    """A program with methods `forward` and `encode`, lowered together."""
    torch = _torch()
    from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig, to_edge_transform_and_lower

    from xferlint.testing import DevicePartitioner, upstream_elision
    from xferlint.testing.models import AddSin

    class Encode(torch.nn.Module):
        def forward(self, x):
            return torch.sin(torch.mm(x, x))

    programs = {
        "forward": torch.export.export(AddSin(), square_inputs(2), strict=False),
        "encode": torch.export.export(Encode(), square_inputs(1), strict=False),
    }
    edge = to_edge_transform_and_lower(
        programs,
        partitioner={"forward": [DevicePartitioner(["cuda:0"])], "encode": [DevicePartitioner(["cuda:0"])]},
        compile_config=EdgeCompileConfig(_check_ir_validity=False),
    )
    with upstream_elision(elide):
        return edge.to_executorch(ExecutorchBackendConfig())


def skip_io_program(alloc: bool):
    """Method inputs and outputs left on the device (`PropagateDeviceConfig(
    skip_h2d_for_method_inputs=True, skip_d2h_for_method_outputs=True)`); `alloc=True`
    keeps MemoryPlanningPass's default, which plans them anyway (the runtime then
    host-memcpys into device memory); `alloc=False` is the documented setup."""
    from executorch.exir import ExecutorchBackendConfig
    from executorch.exir.passes import MemoryPlanningPass
    from executorch.exir.passes.propagate_device_config import PropagateDeviceConfig

    from xferlint.testing.models import AddSin

    config = ExecutorchBackendConfig(
        memory_planning_pass=MemoryPlanningPass(alloc_graph_input=alloc, alloc_graph_output=alloc),
        propagate_device_config=PropagateDeviceConfig(skip_h2d_for_method_inputs=True,
                                                      skip_d2h_for_method_outputs=True),
    )
    return _lower(AddSin(), square_inputs(2), ["cuda:0", "cuda:0"], backend_config=config)


def _naive_config():
    from executorch.exir import ExecutorchBackendConfig
    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, naive
    from executorch.exir.passes import MemoryPlanningPass

    return ExecutorchBackendConfig(
        memory_planning_pass=MemoryPlanningPass(memory_planning_algo=MemoryPlanningAlgorithmSuite([naive])))


def naive_planned(model: str = "AddSin", **kwargs):
    """Memory planned without reuse (ExecuTorch's `naive` algorithm): every tensor has its
    own bytes, so a fix that makes a tensor live longer keeps the plan valid."""
    from xferlint.testing import models

    config = _naive_config()
    module = shared_input_module() if model == "SharedInput" else getattr(models, model)()
    return _lower(module, square_inputs(2), ["cuda:0", "cuda:0"], backend_config=config, **kwargs)


def cond_after_dead_copy():
    """A dead D2H (left by a rewiring hook) before a `cond`: removing it renumbers jumps."""
    torch = _torch()
    from functorch.experimental.control_flow import cond

    class Tail(torch.nn.Module):
        def forward(self, x, y):
            b = torch.sin(x + y)
            return cond(b.sum() > 0, lambda v: torch.cos(v), lambda v: v * 2.0, (b,))

    return _lower(Tail(), square_inputs(2), ["cuda:0", "cuda:0"], elide=False, rewire_without_dce=True)


def legacy_program():
    """ExecuTorch's legacy device mode: specs tagged, no copies, every buffer on the host."""
    from executorch.exir import ExecutorchBackendConfig

    from xferlint.testing.models import AddSinCos

    config = ExecutorchBackendConfig(enable_non_cpu_memory_planning=False)
    return _lower(AddSinCos(), square_inputs(2), ["cuda:0", "cuda:0"], backend_config=config)


def stacktrace_program():
    """A host-only program emitted with `emit_stacktrace=True`: each instruction carries its
    frames (ExecuTorch's emitter cannot emit them beside device copies)."""
    torch = _torch()
    from executorch.exir import ExecutorchBackendConfig, to_edge

    from xferlint.testing.models import AddSin

    exported = torch.export.export(AddSin(), square_inputs(2), strict=False)
    return to_edge(exported).to_executorch(ExecutorchBackendConfig(emit_stacktrace=True))


PROGRAMS: dict[str, Callable[[], Any]] = {
    "addsin-elided": lambda: _lower(__import__("xferlint.testing.models", fromlist=["AddSin"]).AddSin(),
                                    square_inputs(2), ["cuda:0", "cuda:0"]),
    "addsin-noelide": lambda: _lower(__import__("xferlint.testing.models", fromlist=["AddSin"]).AddSin(),
                                     square_inputs(2), ["cuda:0", "cuda:0"], elide=False),
    "addsin-rewired": lambda: _lower(__import__("xferlint.testing.models", fromlist=["AddSin"]).AddSin(),
                                     square_inputs(2), ["cuda:0", "cuda:0"], elide=False, rewire_without_dce=True),
    "addsin-cross": lambda: _lower(__import__("xferlint.testing.models", fromlist=["AddSin"]).AddSin(),
                                   square_inputs(2), ["cuda:0", "cuda:1"]),
    "mixed-noelide": lambda: _lower(mixed_module(), square_inputs(2), ["cuda:0"], elide=False),
    "mixed-elided": lambda: _lower(mixed_module(), square_inputs(2), ["cuda:0"]),
    "mixed-rewired": lambda: _lower(mixed_module(), square_inputs(2), ["cuda:0"], elide=False,
                                    rewire_without_dce=True),
    "mixed-two-devices": lambda: _lower(mixed_module(), square_inputs(2), ["cuda:0", "cuda:1", None, "cuda:1"],
                                        elide=False),
    "shared-input": lambda: _lower(shared_input_module(), square_inputs(2), ["cuda:0"]),
    "linear-stack": lambda: _lower(linear_stack_module(), square_inputs(1, (4, 16)), ["cuda:0"], elide=False),
    "multi-output": lambda: _lower(mixed_module(), square_inputs(2), None, elide=False,
                                   partitioner=group_partitioner({0: ("g0", "cuda:0"), 1: ("g0", "cuda:0"),
                                                                  2: ("g1", "cuda:0"), 3: ("g1", "cuda:0"),
                                                                  4: ("g2", "cuda:0")})),
    "cond-nested": lambda: _lower(cond_module(), square_inputs(2), None, elide=False,
                                  partitioner=nested_partitioner(["cuda:0"])),
    "map-nested": lambda: _lower(map_module(), (square_inputs(1, (3, 4, 4))[0], square_inputs(1)[0]), None,
                                 elide=False, partitioner=nested_partitioner(["cuda:0"])),
    "cond-host": lambda: _lower(cond_module(), square_inputs(2), ["cuda:0"], elide=False),
    "two-methods": lambda: two_methods(elide=False),
    "addsin-legacy": lambda: legacy_program(),
    "addsin-noelide-naive": lambda: naive_planned("AddSin", elide=False),
    "mixed-noelide-naive": lambda: _lower(mixed_module(), square_inputs(2), ["cuda:0"], elide=False,
                                          backend_config=_naive_config()),
    "shared-input-naive": lambda: naive_planned("SharedInput"),
    "cond-after-dead-copy": lambda: cond_after_dead_copy(),
    "skip-io-planned": lambda: skip_io_program(alloc=True),
    "skip-io-unplanned": lambda: skip_io_program(alloc=False),
    "host-stacktrace": lambda: stacktrace_program(),
}


def build(name: str) -> Any:
    return PROGRAMS[name]()


def pte_bytes(program: Any) -> bytes:
    return bytes(program.buffer)


def optional(name: str) -> Optional[Callable[[], Any]]:
    return PROGRAMS.get(name)
