"""The modules the XF005-XF007/XF009 and transfer-summary tests lower, and their builds.

They live in a module of their own, not in conftest.py: torch.compile resolves a model's
globals through `sys.modules[cls.__module__]`, and several `conftest` modules in one
session shadow each other there (which broke tracing `torch.cond` in a full run).
"""

from __future__ import annotations

import torch
from functorch.experimental import control_flow


class SplitByCumsum(torch.nn.Module):
    """add (D) -> cumsum (host) -> sin (D)."""

    def forward(self, x, y):
        return torch.sin(torch.cumsum(x + y, 0))


class CumsumFirst(torch.nn.Module):
    """cumsum on the input (host), then add and sin: nothing comes back."""

    def forward(self, x, y):
        return torch.sin(torch.cumsum(x, 0) + y)


class FanIn(torch.nn.Module):
    """Two delegates' results meet in one host op, whose result goes back."""

    def forward(self, x, y):
        a = x + y
        b = torch.sin(x)
        return torch.sin(a * b)


class FanOut(torch.nn.Module):
    """One host result goes back to two delegates."""

    def forward(self, x, y):
        b = torch.cumsum(x + y, 0)
        return torch.sin(b), b + y


class TwoPaths(torch.nn.Module):
    """One device value leaves for two unrelated host ops, each of which comes back."""

    def forward(self, x, y):
        a = x + y
        return torch.sin(torch.cos(a)), torch.sin(torch.relu(a))


class ChainOfHostOps(torch.nn.Module):
    """Three host ops in a row between two delegates: one segment."""

    def forward(self, x, y):
        a = x + y
        b = torch.relu(torch.cos(torch.cumsum(a, 0)))
        return torch.sin(b)


class Projection(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(8, 8))

    def forward(self, x):
        return torch.mm(x, self.weight)


class ScaledProjection(torch.nn.Module):
    """The weight goes through a host op first: cos(weight) is the same every call."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(8, 8))

    def forward(self, x):
        return torch.mm(x, torch.cos(self.weight))


class InputScaledProjection(torch.nn.Module):
    """The weight is mixed with the input on host: different every call."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(8, 8))

    def forward(self, x):
        return torch.mm(x, self.weight * x)


class BufferBias(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("bias", torch.randn(8, 8))

    def forward(self, x):
        return x + self.bias


class RunningState(torch.nn.Module):
    """A buffer the program writes every call: state, not a constant."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("state", torch.zeros(8, 8))

    def forward(self, x):
        self.state.add_(1.0)
        return torch.sin(x) + torch.cos(self.state)


class OnesBias(torch.nn.Module):
    def forward(self, x):
        return x + torch.ones(8, 8)


class BranchOnDevice(torch.nn.Module):
    def forward(self, flag, x):
        return torch.cond(flag.sum() > 0, lambda v: torch.sin(v), lambda v: torch.cos(v), (x,))


class MapBody(torch.nn.Module):
    def forward(self, xs, y):
        return control_flow.map(lambda x, y: torch.sin(x) + y, xs, y)


class AddSinCos(torch.nn.Module):
    def forward(self, x, y):
        a = x + y
        return torch.sin(a), torch.cos(a)


class AddSin(torch.nn.Module):
    def forward(self, x, y):
        return torch.sin(x + y)


def _pair(n: int = 4):
    g = torch.Generator().manual_seed(0)
    return (torch.randn(n, n, generator=g), torch.randn(n, n, generator=g))


def _one():
    return (torch.randn(8, 8, generator=torch.Generator().manual_seed(1)),)


def build(key: str):
    from executorch.exir import ExecutorchBackendConfig
    from executorch.exir.passes import MemoryPlanningPass, ToOutVarPass
    from executorch.exir.passes.propagate_device_config import PropagateDeviceConfig

    from xferlint.testing import DevicePartitioner, PlanConstantCopies, ThenPass, lower

    unabsorbed = DevicePartitioner(["cuda:0"], absorb_constants=False)
    builders = {
        "split": lambda: lower(SplitByCumsum(), _pair(8), ["cuda:0"]),
        "split-two-devices": lambda: lower(SplitByCumsum(), _pair(8), ["cuda:0", "cuda:1"]),
        "split-cuda1": lambda: lower(SplitByCumsum(), _pair(8), ["cuda:1"]),
        "host-first": lambda: lower(CumsumFirst(), _pair(8), ["cuda:0"]),
        "fan-in": lambda: lower(FanIn(), _pair(), ["cuda:0"]),
        "fan-out": lambda: lower(FanOut(), _pair(), ["cuda:0"]),
        "two-paths": lambda: lower(TwoPaths(), _pair(), ["cuda:0"]),
        "chain": lambda: lower(ChainOfHostOps(), _pair(), ["cuda:0"]),
        # add on cuda:0, sin on cuda:1, their product on host, then sin on cuda:0
        "mixed-devices": lambda: lower(FanIn(), _pair(), ["cuda:0", "cuda:1", "cuda:0"]),
        "round-trip": lambda: lower(AddSin(), _pair(), ["cuda:0"], elide=False),
        "param-edge": lambda: lower(Projection(), _one(), ["cuda:0"], partitioner=unabsorbed, to_executorch=False),
        "param-workaround": lambda: lower(
            Projection(), _one(), ["cuda:0"], partitioner=unabsorbed,
            backend_config=ExecutorchBackendConfig(
                to_out_var_pass=ThenPass(PlanConstantCopies(), ToOutVarPass(ignore_to_out_var_failure=False)))),
        "param-absorbed": lambda: lower(Projection(), _one(), ["cuda:0"]),
        "param-through-host-op": lambda: lower(ScaledProjection(), _one(), ["cuda:0"]),
        "param-times-input": lambda: lower(InputScaledProjection(), _one(), ["cuda:0"]),
        "buffer-edge": lambda: lower(BufferBias(), _one(), ["cuda:0"], partitioner=unabsorbed, to_executorch=False),
        "mutable-buffer": lambda: lower(RunningState(), _one(), ["cuda:0"]),
        "ones": lambda: lower(OnesBias(), _one(), ["cuda:0"]),
        "cond-nested": lambda: lower(BranchOnDevice(), (torch.ones(1), torch.randn(4, 4)), ["cuda:0"],
                                     partitioner=DevicePartitioner(["cuda:0"], nested=True)),
        "cond-top": lambda: lower(BranchOnDevice(), (torch.ones(1), torch.randn(4, 4)), ["cuda:0"]),
        "map-nested": lambda: lower(MapBody(), (torch.randn(3, 4, 4), torch.randn(4, 4)), ["cuda:0"],
                                    partitioner=DevicePartitioner(["cuda:0"], nested=True)),
        "legacy": lambda: lower(AddSinCos(), _pair(8), ["cuda:0"],
                                backend_config=ExecutorchBackendConfig(enable_non_cpu_memory_planning=False)),
        "planned": lambda: lower(AddSinCos(), _pair(8), ["cuda:0"],
                                 backend_config=ExecutorchBackendConfig(enable_non_cpu_memory_planning=True)),
        "skip-copies": lambda: lower(AddSin(), _pair(8), ["cuda:0"], backend_config=ExecutorchBackendConfig(
            propagate_device_config=PropagateDeviceConfig(skip_h2d_for_method_inputs=True,
                                                          skip_d2h_for_method_outputs=True),
            enable_non_cpu_memory_planning=True,
            memory_planning_pass=MemoryPlanningPass(alloc_graph_input=False, alloc_graph_output=False))),
    }
    return builders[key]()
