"""Negative twin of legacy_device_tags.py: the same program with device memory planning.

With `enable_non_cpu_memory_planning=True` (the default since ExecuTorch 1.4) ExecuTorch
inserts a host-to-device copy in front of the cuda:0 delegate, a device-to-host copy for
the host `cos`, and plans the device tensors in a cuda:0 buffer. Expect no XF007.
"""

import torch
from executorch.exir import ExecutorchBackendConfig

from xferlint.testing import lower


class ResidualGate(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = x + y  # cuda:0
        return torch.sin(a), torch.cos(a)  # sin on cuda:0, cos on host


def program():
    config = ExecutorchBackendConfig(enable_non_cpu_memory_planning=True)
    return lower(ResidualGate(), (torch.randn(8, 8), torch.randn(8, 8)), devices=["cuda:0"], backend_config=config)
