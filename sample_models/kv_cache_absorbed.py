"""Negative twin of kv_cache_staged.py: the CUDA partition owns the KV cache.

The same decode step lowered with ExecuTorch's stock `CudaPartitioner`, which calls
`tag_mutated_buffer`: the caches are lowered into the cuda:0 delegate and stay on the
device across calls. Only the token and its position go in and the result comes out.
Expect no finding.
"""

import torch

from xferlint.testing.cuda import lower_cuda


class DecodeStep(torch.nn.Module):
    def __init__(self, dim: int = 32, max_seq: int = 64) -> None:
        super().__init__()
        self.wk = torch.nn.Linear(dim, dim)
        self.wv = torch.nn.Linear(dim, dim)
        self.register_buffer("k_cache", torch.zeros(1, max_seq, dim))
        self.register_buffer("v_cache", torch.zeros(1, max_seq, dim))

    def forward(self, x: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        k, v = self.wk(x), self.wv(x)
        self.k_cache.index_put_((torch.zeros_like(input_pos), input_pos), k[0])
        self.v_cache.index_put_((torch.zeros_like(input_pos), input_pos), v[0])
        attn = torch.softmax(x @ self.k_cache.transpose(-1, -2), dim=-1)
        return attn @ self.v_cache


def program():
    return lower_cuda(DecodeStep(), (torch.randn(1, 1, 32), torch.tensor([3])))
