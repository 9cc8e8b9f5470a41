"""Models and graph readers the fix tests share (ground truth from FX graphs and TensorSpecs)."""

from __future__ import annotations

from typing import Any

import torch


class Chain(torch.nn.Module):
    """mm -> add -> sin, all delegable: back-to-back delegates."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(4, 4))

    def forward(self, x, bias):
        h = torch.mm(x, self.weight)
        h = h + bias
        return torch.sin(h)


class SharedInput(torch.nn.Module):
    """`x` feeds two delegates (sin and mm): stock ExecuTorch copies it twice."""

    def forward(self, x, y):
        return torch.sin(x) + torch.mm(x, y)


class HostReader(torch.nn.Module):
    """`a` feeds a delegate (sin) and host code (cos)."""

    def forward(self, x, y):
        a = x + y
        return torch.sin(a), torch.cos(a)


class ReturnedAndReused(torch.nn.Module):
    """`a` is a method output and feeds the next delegate."""

    def forward(self, x, y):
        a = x + y
        return a, torch.sin(a)


def inputs(count: int = 2, seed: int = 0) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(4, 4, generator=generator) for _ in range(count))


BUILDS = {
    # (module, devices, lower() options)
    "chain_off": (Chain, ["cuda:0"], {"elide": False}),
    "chain_on": (Chain, ["cuda:0"], {}),
    "shared_stock": (SharedInput, ["cuda:0"], {}),
    "shared_off": (SharedInput, ["cuda:0"], {"elide": False}),
    "shared_two_devices": (SharedInput, ["cuda:0", "cuda:1", "cuda:0"], {"elide": False}),
    "host_reader_off": (HostReader, ["cuda:0"], {"elide": False}),
    "returned_off": (ReturnedAndReused, ["cuda:0"], {"elide": False}),
    "dead_d2h": (Chain, ["cuda:0"], {"elide": False, "rewire_without_dce": True}),
    "shared_edge": (SharedInput, ["cuda:0"], {"to_executorch": False}),
    "chain_edge_off": (Chain, ["cuda:0"], {"to_executorch": False}),
}


def copies(program: Any) -> dict[str, list[torch.fx.Node]]:
    """The et_copy nodes of a program's top-level final graph, by kind."""
    graph = program.exported_program().graph_module.graph
    out: dict[str, list[torch.fx.Node]] = {"h2d": [], "d2h": []}
    for node in graph.nodes:
        name = str(node.target)
        if node.op == "call_function" and "et_copy" in name:
            out["h2d" if "_h2d_copy" in name else "d2h"].append(node)
    return out


def spec_nbytes(node: torch.fx.Node) -> int:
    """Bytes of a node's tensor, from ExecuTorch's TensorSpec (not through xferlint)."""
    return int(node.meta["spec"].nbytes())


def _device(node: torch.fx.Node) -> str:
    spec = node.meta["spec"]
    return f"{spec.device.name.lower()}:{int(spec.device_index or 0)}"


def copy_signature(program: Any) -> set[tuple]:
    """Every copy node with its kind, what it reads and who reads it, by name."""
    out = set()
    for kind, nodes in copies(program).items():
        for node in nodes:
            out.add((kind, node.name, node.args[0].name, tuple(sorted(u.name for u in node.users))))
    return out


def round_trip_pairs(program: Any) -> list[tuple[str, str, str, str]]:
    """(d2h, h2d, device before, device after) of every h2d(d2h(x)) in the final graph."""
    pairs = []
    for h2d in copies(program)["h2d"]:
        src = h2d.args[0]
        if isinstance(src, torch.fx.Node) and "_d2h_copy" in str(src.target):
            pairs.append((src.name, h2d.name, _device(src.args[0]), _device(h2d)))
    return pairs
