"""Negative twin of cpu_delegate_splits_partition.py: the same decoder block, CUDA only.

With ExecuTorch's real `CudaPartitioner` alone, the whole block (softmax included) is one
cuda:0 partition that owns its weights: one H2D for the input, one D2H for the output,
nothing to report. Expect no finding.
"""

import torch

from xferlint.testing.cuda import lower_cuda


class DecoderBlock(torch.nn.Module):
    def __init__(self, dim: int = 32) -> None:
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(dim)
        self.ln2 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.fc1 = torch.nn.Linear(dim, 4 * dim)
        self.fc2 = torch.nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        scores = q @ k.transpose(-1, -2) * 0.17
        attn = torch.softmax(scores, dim=-1)  # cuda:0, with everything else
        x = x + self.proj(attn @ v)
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


def program():
    return lower_cuda(DecoderBlock(), (torch.randn(1, 8, 32),))
