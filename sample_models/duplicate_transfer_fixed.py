"""Negative twin of duplicate_transfer.py: the same model, lowered with xferlint's fix pass.

`FixTransfersPass` wraps ExecuTorch's default `to_out_var_pass`: after PropagateDevicePass
has inserted the copies and before memory planning, it rewires the key projection to the
query projection's copy of `x` and drops the duplicate, so the memory planner never sees
it. Expect no findings.
"""

import torch
from executorch.exir import ExecutorchBackendConfig

from xferlint.fixes import FixTransfersPass
from xferlint.testing import lower


class QueryKeyScores(torch.nn.Module):
    def __init__(self, features: int = 64) -> None:
        super().__init__()
        self.wq = torch.nn.Parameter(torch.randn(features, features) / features**0.5)
        self.wk = torch.nn.Parameter(torch.randn(features, features) / features**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = torch.mm(x, self.wq)
        k = torch.mm(x, self.wk)
        return q + k


def program():
    config = ExecutorchBackendConfig(to_out_var_pass=FixTransfersPass())
    return lower(QueryKeyScores(), (torch.randn(64, 64),), devices=["cuda:0"], backend_config=config)
