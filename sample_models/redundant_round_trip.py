"""XF001 redundant-round-trip: a projection, a bias and an activation on one GPU.

The partitioner hands each op to its own cuda:0 delegate (as one that cannot fuse them
does). ExecuTorch's PropagateDevicePass copies every delegate output to host and every
delegate input back to the device; ExecuTorch 1.5.1 elides the adjacent pairs itself, so
this sample lowers with that elision switched off, reproducing a pipeline without it
(ExecuTorch < 1.5, or a custom PropagateDevicePass). Expect two XF001 findings: mm -> add
and add -> sin each bounce through host memory.
"""

import torch

from xferlint.testing import lower


class ProjectionBlock(torch.nn.Module):
    def __init__(self, features: int = 64) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(features, features) / features**0.5)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        h = torch.mm(x, self.weight)
        h = h + bias
        return torch.sin(h)


def program():
    inputs = (torch.randn(32, 64), torch.randn(32, 64))
    return lower(ProjectionBlock(), inputs, devices=["cuda:0"], elide=False)
