"""XF011 mutable-state-round-trip: a KV cache the device partition does not own.

One decode step writes this token's key and value into the caches (`index_put_`) and
attends over them, all on cuda:0. The partitioner here is ExecuTorch's CudaPartitioner
with its `tag_mutated_buffer` call skipped, as partitioners that leave state outside do
(TensorRT's ExecuTorch integration): the caches stay host buffers, so every call copies
both whole caches to cuda:0 and their new values back into host memory. Expect two XF011
(`k_cache`, `v_cache`), each with the line that writes it and 8.0 KiB each way.
The nearest negative twin is kv_cache_absorbed.py.
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
    return lower_cuda(DecodeStep(), (torch.randn(1, 1, 32), torch.tensor([3])), absorb_mutable_buffers=False)
