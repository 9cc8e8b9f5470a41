"""A model whose source lines the `.pte` source-location tests look for (it must live
outside the xferlint package: frames inside xferlint count as library frames)."""

import torch


class Chain(torch.nn.Module):
    def forward(self, x, y):
        a = x + y  # LINE-ADD
        b = torch.sin(a)  # LINE-SIN
        return torch.cos(b) + torch.sin(b)  # LINE-OUT
