"""XF007 device-mismatch: a program lowered in ExecuTorch's legacy device mode.

`ExecutorchBackendConfig(enable_non_cpu_memory_planning=False)` (the default before
ExecuTorch 1.4) tags the specs of a device delegate's inputs and outputs with cuda:0 but
inserts no copies and plans every tensor in host memory. The method inputs are then
declared on cuda:0 while their bytes are in host memory, and the cuda:0 delegate reads
them with no copy. Expect one XF007 (an error) that names the legacy mode. The nearest
negative twin is device_memory_planned.py.
"""

import torch
from executorch.exir import ExecutorchBackendConfig

from xferlint.testing import lower


class ResidualGate(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = x + y  # cuda:0
        return torch.sin(a), torch.cos(a)  # sin on cuda:0, cos on host


def program():
    config = ExecutorchBackendConfig(enable_non_cpu_memory_planning=False)
    return lower(ResidualGate(), (torch.randn(8, 8), torch.randn(8, 8)), devices=["cuda:0"], backend_config=config)
