"""XF004 duplicate-transfer: two attention projections read the same input on one GPU.

The query and key projections each become their own cuda:0 delegate (as a partitioner that
cannot fuse them leaves them). Stock ExecuTorch 1.5.1's PropagateDevicePass inserts one
H2D copy per (delegate, argument) and never shares them, so `x` is copied to cuda:0 twice
on every call. Expect one XF004 (16 KiB per call); `xferlint fix` reuses the first copy.
"""

import torch

from xferlint.testing import lower


class QueryKeyScores(torch.nn.Module):
    def __init__(self, features: int = 64) -> None:
        super().__init__()
        self.wq = torch.nn.Parameter(torch.randn(features, features) / features**0.5)
        self.wk = torch.nn.Parameter(torch.randn(features, features) / features**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = torch.mm(x, self.wq)  # delegate on cuda:0, reads x
        k = torch.mm(x, self.wk)  # delegate on cuda:0, reads x again
        return q + k


def program():
    return lower(QueryKeyScores(), (torch.randn(64, 64),), devices=["cuda:0"])
