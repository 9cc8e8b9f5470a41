"""XF011 in a two-method LLM export: `prefill` and `decode` share one KV cache.

LLM exports lower one module twice, `to_edge_transform_and_lower({"prefill": ep1,
"decode": ep2}, ...)`: the prompt, then one token per call, both writing the same caches.
Every method is linted and each finding names its method. `staged` is lowered with
ExecuTorch's CudaPartitioner with its `tag_mutated_buffer` call skipped: each method copies
both caches to cuda:0 and back every call, so expect two XF011 (`k_cache`, `v_cache`,
8.0 KiB each way, at the line that writes them) in `prefill` and two in `decode`.
`absorbed`, its negative twin, lets the partition own the caches: no finding.
"""

import torch

from xferlint.testing.cuda import lower_cuda
from xferlint.testing.decoder import prefill_decode


class CachedAttention(torch.nn.Module):
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
    module = CachedAttention()
    return {
        "staged": lower_cuda(None, (), methods=prefill_decode(module), absorb_mutable_buffers=False),
        "absorbed": lower_cuda(None, (), methods=prefill_decode(module)),
    }
