"""XF005 host-op-splits-partition: XNNPACK takes the softmax out of a CUDA decoder block.

A decoder block (layer norms, attention, an MLP with a GELU) lowered with
`partitioner=[XnnpackPartitioner(configs=[SoftmaxConfig]), CudaPartitioner([])]`: XNNPACK
runs first and claims the softmax, so ExecuTorch's real CudaPartitioner (which refuses no
op) is left with two partitions around it, and the attention scores go cuda:0 -> host ->
XNNPACK (a CPU delegate) -> host -> cuda:0 on every call. Expect one XF005 naming the
`XnnpackBackend` delegate, `aten._softmax` and its line (and an XF004: the residual input is
copied to cuda:0 once per partition). The nearest negative twin is cuda_partition_whole.py.

The CUDA backend's AOTInductor compile is replaced by a stub (xferlint.testing.cuda), the
partitioning, copies and memory plan are ExecuTorch's own.
"""

import torch

from xferlint.testing.cuda import lower_cuda, xnnpack_first


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
        attn = torch.softmax(scores, dim=-1)  # XNNPACK's: a CPU delegate between cuda:0 partitions
        x = x + self.proj(attn @ v)
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


def program():
    return lower_cuda(DecoderBlock(), (torch.randn(1, 8, 32),), before=[xnnpack_first("SoftmaxConfig")])
