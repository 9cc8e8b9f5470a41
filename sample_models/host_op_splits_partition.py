"""XF005 host-op-splits-partition: a cumulative sum the GPU backend cannot take.

A projection, a running sum over the sequence and an activation, all meant for cuda:0. The
backend takes `mm` and `sin` but has no `cumsum`, so the partitioner leaves it on the host
and the cuda:0 work is split into two delegates: the projection's result is copied to host,
summed there and copied back, on every call. Stock ExecuTorch 1.5.1 cannot elide these
copies (the host op needs them). Expect one XF005 naming `aten.cumsum` and its line.
The nearest negative twin is host_op_before_partition.py.
"""

import torch

from xferlint.testing import lower


class RunningProjection(torch.nn.Module):
    def __init__(self, features: int = 32) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(features, features) / features**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.mm(x, self.weight)  # cuda:0
        h = torch.cumsum(h, dim=0)  # no cuda:0 kernel: host
        return torch.sin(h)  # cuda:0


def program():
    return lower(RunningProjection(), (torch.randn(16, 32),), devices=["cuda:0"])
