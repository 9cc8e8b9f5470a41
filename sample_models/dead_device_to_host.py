"""XF003 dead-device-to-host: a post-processing hook that rewires but forgets the D2H.

Two delegates on cuda:0 with the upstream elision switched off leave a round trip between
them; a hook in `to_out_var_pass` (where TensorRT post-processes copies) rewires the second
delegate to read the device tensor directly and drops the H2D, but never runs dead-code
elimination. The D2H stays in the program, copying 16 KiB to host on every call for
nobody. Expect one XF003.
"""

import torch

from xferlint.testing import lower


class GatedProjection(torch.nn.Module):
    def __init__(self, features: int = 64) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(features, features) / features**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.mm(x, self.weight)
        return torch.sin(h)


def program():
    return lower(GatedProjection(), (torch.randn(64, 64),), devices=["cuda:0"], elide=False,
                 rewire_without_dce=True)
