"""Negative twin of delegate_in_cond.py: only the top-level graph is partitioned.

The same gated block; the partitioner leaves the branch bodies on the host (the default),
so the only cuda:0 delegate is the projection in front of the `cond`, and ExecuTorch
inserts its copies. Expect no XF007.
"""

import torch

from xferlint.testing import lower


class GatedProjection(torch.nn.Module):
    def __init__(self, features: int = 16) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(features, features) / features**0.5)

    def forward(self, gate: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        def project(v: torch.Tensor) -> torch.Tensor:
            return torch.sin(v)  # host: the branch is not partitioned

        def passthrough(v: torch.Tensor) -> torch.Tensor:
            return torch.cos(v)  # host

        return torch.cond(gate.sum() > 0, project, passthrough, (torch.mm(x, self.weight),))


def program():
    return lower(GatedProjection(), (torch.ones(1), torch.randn(8, 16)), devices=["cuda:0"])
