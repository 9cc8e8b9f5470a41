"""Small decoder-style modules for the real CUDA partitioner tests and sample models.

- `DecoderBlock`: layer norms, attention (softmax), an MLP with a GELU: what one
  transformer layer of an LLM export looks like, small enough to lower in a second;
- `KVCacheStep`: one decode step writing a key/value cache in place (`index_put_`), with a
  step counter; the cache is a mutated buffer (`graph_signature.buffers_to_mutate`).
"""

from __future__ import annotations

import torch


class DecoderBlock(torch.nn.Module):
    def __init__(self, dim: int = 32) -> None:
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(dim)
        self.ln2 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.fc1 = torch.nn.Linear(dim, 4 * dim)
        self.fc2 = torch.nn.Linear(4 * dim, dim)
        self.scale = dim ** -0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        attn = torch.softmax(q @ k.transpose(-1, -2) * self.scale, dim=-1)
        x = x + self.proj(attn @ v)
        h = self.fc1(self.ln2(x))
        h = torch.nn.functional.gelu(h)
        return x + self.fc2(h)


class KVCacheStep(torch.nn.Module):
    """Writes this step's key and value into the caches at `input_pos`, attends over them."""

    def __init__(self, dim: int = 32, max_seq: int = 64) -> None:
        super().__init__()
        self.wk = torch.nn.Linear(dim, dim)
        self.wv = torch.nn.Linear(dim, dim)
        self.register_buffer("k_cache", torch.zeros(1, max_seq, dim))
        self.register_buffer("v_cache", torch.zeros(1, max_seq, dim))

    def forward(self, x: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        k = self.wk(x)
        v = self.wv(x)
        self.k_cache.index_put_((torch.zeros_like(input_pos), input_pos), k[0])
        self.v_cache.index_put_((torch.zeros_like(input_pos), input_pos), v[0])
        attn = torch.softmax(x @ self.k_cache.transpose(-1, -2), dim=-1)
        return attn @ self.v_cache


class GatedBlock(torch.nn.Module):
    """A data-dependent branch (`torch.cond`) between two MLP paths, as gated layers have."""

    def __init__(self, dim: int = 32) -> None:
        super().__init__()
        self.up = torch.nn.Linear(dim, dim)
        self.down = torch.nn.Linear(dim, dim)

    def forward(self, gate: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(gate.sum() > 0, self._wide, self._narrow, (x,)).relu()

    def _wide(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.nn.functional.gelu(self.up(x)))

    def _narrow(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(x)


def gated_inputs(dim: int = 32) -> tuple[torch.Tensor, ...]:
    return (torch.ones(4), torch.randn(1, 8, dim, generator=torch.Generator().manual_seed(0)))


def decoder_inputs(dim: int = 32, seq: int = 8) -> tuple[torch.Tensor, ...]:
    return (torch.randn(1, seq, dim, generator=torch.Generator().manual_seed(0)),)


def kv_inputs(dim: int = 32) -> tuple[torch.Tensor, ...]:
    return (torch.randn(1, 1, dim, generator=torch.Generator().manual_seed(0)), torch.tensor([3]))


def prefill_decode(module: torch.nn.Module, dim: int = 32, prompt: int = 8) -> dict:
    """`{"prefill": (module, inputs), "decode": (module, inputs)}`: one module (its buffers, a
    KV cache, shared by both methods) exported twice, as LLM exports lower it
    (`to_edge_transform_and_lower({"prefill": ep1, "decode": ep2}, ...)`): the prompt's
    `prompt` tokens at positions 0.., then one token at position `prompt`."""
    g = torch.Generator().manual_seed(0)
    return {"prefill": (module, (torch.randn(1, prompt, dim, generator=g), torch.arange(prompt))),
            "decode": (module, (torch.randn(1, 1, dim, generator=g), torch.tensor([prompt])))}
