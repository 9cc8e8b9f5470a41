"""Negative twin of redundant_round_trip.py: the same block, lowered by stock ExecuTorch.

ExecuTorch 1.5.1's PropagateDevicePass elides `_h2d_copy(_d2h_copy(x))` when x already
lives on the H2D's device, so consecutive cuda:0 delegates hand tensors over directly.
Expect no findings.
"""

import torch

from xferlint.testing import lower


class ProjectionBlock(torch.nn.Module):
    def __init__(self, features: int = 64) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(features, features) / features**0.5)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        h = torch.mm(x, self.weight)
        h = h + bias
        return torch.sin(h)


def program():
    inputs = (torch.randn(32, 64), torch.randn(32, 64))
    return lower(ProjectionBlock(), inputs, devices=["cuda:0"])
