"""torch.export sample models: one anti-pattern each on ATen, with its negative twin (`*_ok`).

Not an entry point itself (no top-level `program`): `aten_programs.py` exports the models
that trace on fake cuda as entry points, and `pt2/` holds every model saved as a `.pt2`
(`python -m xferlint.testing.aten sample_models/pt2` rebuilds them). Lines in these classes
are what findings point at.
"""

from __future__ import annotations

import torch
from torch._higher_order_ops.map import map as map_hop
from torch._higher_order_ops.scan import scan
from torch._higher_order_ops.while_loop import while_loop

DEV = "cuda:0"


class RoundTrip(torch.nn.Module):
    """XF001: `.cpu()` then straight back to the device."""

    def forward(self, x):
        y = torch.sin(x)
        return torch.cos(y.cpu().to(DEV))


class RoundTripOk(torch.nn.Module):
    def forward(self, x):
        return torch.cos(torch.sin(x))


class Staging(torch.nn.Module):
    """XF002: cuda:0 -> host -> cuda:1."""

    def forward(self, x):
        return torch.sin(x).cpu().to("cuda:1") * 2


class StagingOk(torch.nn.Module):
    def forward(self, x):
        return torch.sin(x).to("cuda:1") * 2


class DeadCopy(torch.nn.Module):
    """XF003: a `.cpu()` whose result nobody reads."""

    def forward(self, x):
        y = torch.sin(x)
        y.cpu()
        return y * 2


class DeadCopyOk(torch.nn.Module):
    def forward(self, x):
        y = torch.sin(x)
        return y * 2, y.cpu()


class DuplicatePeer(torch.nn.Module):
    """XF004: the same device tensor copied to cuda:1 twice."""

    def forward(self, x):
        return x.to("cuda:1") + 1, x.to("cuda:1") * 2


class CondRoundTrip(torch.nn.Module):
    """XF001 inside a `torch.cond` branch."""

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t.cpu().to(DEV).sin(), lambda t: t.cos(), (x,))


class Duplicate(torch.nn.Module):
    """XF004: the same host tensor moved to the device twice."""

    def forward(self, x, h):
        return x + h.to(DEV), x * h.to(DEV)


class DuplicateOk(torch.nn.Module):
    def forward(self, x, h):
        d = h.to(DEV)
        return x + d, x * d


class HostSplit(torch.nn.Module):
    """XF005: a host op between device ops."""

    def forward(self, x):
        y = torch.sin(x).cpu()
        return torch.cos(torch.cumsum(y, 0).to(DEV))


class HostSplitOk(torch.nn.Module):
    def forward(self, x):
        return torch.cos(torch.cumsum(torch.sin(x), 0))


class BufferMove(torch.nn.Module):
    """XF006: a host buffer moved to the device on every call (`self.freqs.to(x.device)`)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("freqs", torch.arange(8, dtype=torch.float32))

    def forward(self, x):
        return x * self.freqs.to(x.device)

    def to(self, *args, **kwargs):  # the buffer stays on the host, as a forgotten move leaves it
        freqs = self.freqs
        super().to(*args, **kwargs)
        self.freqs = freqs
        return self


class BufferMoveOk(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("freqs", torch.arange(8, dtype=torch.float32))

    def forward(self, x):
        return x * self.freqs.to(x.device)  # registered on the device: the .to() is a no-op


class Item(torch.nn.Module):
    """XF012: `.item()` of a device tensor."""

    def forward(self, x):
        return x * x.sum().item()


class ItemOk(torch.nn.Module):
    def forward(self, x):
        return x * x.sum()


class Nonzero(torch.nn.Module):
    """XF012: `nonzero` (data-dependent size)."""

    def forward(self, x):
        return torch.nonzero(x > 0)


class NonzeroOk(torch.nn.Module):
    def forward(self, x):
        return torch.where(x > 0, x, torch.zeros_like(x))


class Mask(torch.nn.Module):
    """XF012: boolean-mask indexing."""

    def forward(self, x):
        return x[x > 0]



class RoundTripCast(torch.nn.Module):
    """XF001 that changes dtype on the way back: the fix would drop the cast, so it is refused."""

    def forward(self, x):
        y = torch.sin(x)
        return torch.cos(y.cpu().to(DEV, torch.float16))


class MapRoundTrip(torch.nn.Module):
    """XF001 inside a `map` body (one round trip per slice)."""

    def forward(self, xs):
        return map_hop(lambda x: x.cpu().to(DEV).sin(), xs)


class ScanRoundTrip(torch.nn.Module):
    """XF001 inside a `scan` combine function."""

    def forward(self, init, xs):
        def step(carry, x):
            nxt = carry + x
            return nxt, nxt.cpu().to(DEV).sin()

        return scan(step, init, xs)


class WhileRoundTrip(torch.nn.Module):
    """XF001 inside a `while_loop` body."""

    def forward(self, i, x):
        return while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v.cpu().to(DEV).sin()), (i, x))


class LoopsOk(torch.nn.Module):
    """`map`, `scan` and `while_loop` that keep every value on the device."""

    def forward(self, i, xs):
        def step(carry, x):
            return carry + x, (carry + x).sin()

        ys = map_hop(lambda x: x.sin(), xs)
        carry, zs = scan(step, xs.sum(0), xs)
        _, out = while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v.cos()), (i, carry))
        return ys, zs, out


MODELS = {
    "round_trip": (RoundTrip, 1), "round_trip_ok": (RoundTripOk, 1),
    "staging": (Staging, 1), "staging_ok": (StagingOk, 1),
    "dead_copy": (DeadCopy, 1), "dead_copy_ok": (DeadCopyOk, 1), "duplicate_peer": (DuplicatePeer, 1),
    "cond_round_trip": (CondRoundTrip, 1),
    "duplicate": (Duplicate, 2), "duplicate_ok": (DuplicateOk, 2),
    "host_split": (HostSplit, 1), "host_split_ok": (HostSplitOk, 1),
    "buffer_move": (BufferMove, 1), "buffer_move_ok": (BufferMoveOk, 1),
    "item": (Item, 1), "item_ok": (ItemOk, 1),
    "nonzero": (Nonzero, 1), "nonzero_ok": (NonzeroOk, 1),
    "mask": (Mask, 1),
    "round_trip_cast": (RoundTripCast, 1),
    "map_round_trip": (MapRoundTrip, 1), "scan_round_trip": (ScanRoundTrip, 2),
    "while_round_trip": (WhileRoundTrip, 2), "loops_ok": (LoopsOk, 2),
}
