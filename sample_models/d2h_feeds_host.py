"""Negative twin of dead_device_to_host.py: a D2H that still feeds host code is not dead.

The projection runs on cuda:0; its result goes to a delegate on cuda:0 (the residual add)
and to `torch.cos`, which the backend cannot take and so runs on host. Stock ExecuTorch
elides the device -> host -> device bounce into the add but keeps the D2H, because the
host `cos` reads it. Expect no XF001 and no XF003 (`x` itself feeds two cuda:0 delegates,
the mm and the add, so stock ExecuTorch copies it twice: one XF004).
"""

import torch

from xferlint.testing import lower


class ProjectionWithHostGate(torch.nn.Module):
    def __init__(self, features: int = 32) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(features, features) / features**0.5)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.mm(x, self.weight)
        return h + x, torch.cos(h)


def program():
    return lower(ProjectionWithHostGate(), (torch.randn(8, 32),), devices=["cuda:0"])
