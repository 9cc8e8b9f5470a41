"""XF007 device-mismatch: a cuda:0 delegate inside a `cond` branch gets no copies.

A gated block: when the gate is open, the projection runs; otherwise the input passes
through a host op. The partitioner also partitions the branch bodies (`nested=True`), so
the projection becomes a cuda:0 delegate *inside* the true branch. ExecuTorch's
PropagateDevicePass walks only the top-level graph: the delegate is handed the host
tensor with no host-to-device copy, and its result leaves the branch without a copy back.
Expect one XF007 (an error). The nearest negative twin is cond_top_level.py.
"""

import torch

from xferlint.testing import DevicePartitioner, lower


class GatedProjection(torch.nn.Module):
    def __init__(self, features: int = 16) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(features, features) / features**0.5)

    def forward(self, gate: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        def project(v: torch.Tensor) -> torch.Tensor:
            return torch.sin(v)  # cuda:0, inside the branch

        def passthrough(v: torch.Tensor) -> torch.Tensor:
            return torch.cos(v)  # host

        return torch.cond(gate.sum() > 0, project, passthrough, (torch.mm(x, self.weight),))


def program():
    partitioner = DevicePartitioner(["cuda:0"], nested=True)
    return lower(GatedProjection(), (torch.ones(1), torch.randn(8, 16)), devices=["cuda:0"], partitioner=partitioner)
