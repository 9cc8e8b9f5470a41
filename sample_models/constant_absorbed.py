"""Negative twin of constant_transfer.py: the delegate owns its weight.

The same classifier, partitioned the way real device partitioners do it: the weight is
used only by the cuda:0 delegate, so `tag_constant_data` lowers it into the delegate (it is
uploaded once, at load) and only the input crosses the bus per call. Expect no XF006.
"""

import torch

from xferlint.testing import lower


class Classifier(torch.nn.Module):
    def __init__(self, features: int = 64) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(features, features) / features**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mm(x, self.weight)  # cuda:0, weight absorbed


def program():
    return lower(Classifier(), (torch.randn(8, 64),), devices=["cuda:0"])
