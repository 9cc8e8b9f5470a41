"""Negative twin of host_op_splits_partition.py: the host op runs before the device work.

The same running sum, taken over the input instead of the projection: it runs on the host
before anything is copied to cuda:0, so the device work stays one unbroken stretch (the
projection's result goes straight on to the activation on cuda:0). Expect no XF005.
"""

import torch

from xferlint.testing import lower


class RunningProjection(torch.nn.Module):
    def __init__(self, features: int = 32) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(features, features) / features**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.cumsum(x, dim=0)  # host, before the device partition
        h = torch.mm(x, self.weight)  # cuda:0
        return torch.sin(h)  # cuda:0


def program():
    return lower(RunningProjection(), (torch.randn(16, 32),), devices=["cuda:0"])
