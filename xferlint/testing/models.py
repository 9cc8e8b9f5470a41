"""Small modules the rules' examples and the tests lower with `xferlint.testing.lower`."""

from __future__ import annotations

import torch


class AddSin(torch.nn.Module):
    """Two delegable ops in a row: `sin(x + y)`."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        a = x + y
        return torch.sin(a)


class AddSinCos(torch.nn.Module):
    """`x + y` feeds a delegable `sin` and a host-only `cos`."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = x + y
        return torch.sin(a), torch.cos(a)


def example_inputs(shape: tuple[int, ...] = (4, 4), count: int = 2) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(0)
    return tuple(torch.randn(*shape, generator=generator) for _ in range(count))


def lowered(model: str, devices, **kwargs):
    """Lower one of this module's models by name (lazily: builders in rule modules call
    this so that discovering rules imports no torch)."""
    from xferlint.testing import lower

    module = {"AddSin": AddSin, "AddSinCos": AddSinCos}[model]()
    return lower(module, example_inputs(), devices, **kwargs)
