"""XF002 cross-device-staging: a two-stage pipeline split over cuda:0 and cuda:1.

Stage one (projection) runs on cuda:0 and stage two (activation) on cuda:1, the way
TensorRT's partitioner assigns one device per engine. ExecuTorch has no device-to-device
copy, so the activation input goes cuda:0 -> host -> cuda:1. Stock ExecuTorch 1.5.1 keeps
this pair on purpose (it is a real move): expect one XF002 and no XF001. This is also the
nearest negative twin of redundant_round_trip.py.
"""

import torch

from xferlint.testing import lower


class TwoStagePipeline(torch.nn.Module):
    def __init__(self, features: int = 64) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(features, features) / features**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.mm(x, self.weight)  # stage 1: cuda:0
        return torch.sin(h)  # stage 2: cuda:1


def program():
    return lower(TwoStagePipeline(), (torch.randn(16, 64),), devices=["cuda:0", "cuda:1"])
