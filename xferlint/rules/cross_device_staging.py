"""XF002 cross-device-staging."""

from __future__ import annotations

from functools import partial

from xferlint.rules._patterns import is_aten_copy, round_trips, tick
from xferlint.rules import _words as words
from xferlint.rules.base import Example, Rule, format_bytes


def _build(devices, **kwargs):
    from xferlint.testing.models import lowered

    return lowered("AddSin", devices, **kwargs)


class CrossDeviceStaging(Rule):
    """A tensor moves between two devices through host memory.

    ## What it does
    Flags `_h2d_copy(_d2h_copy(x))` where `x` lives on one device and the H2D targets
    another (for example cuda:0 -> host -> cuda:1): a device-to-device move staged
    through host memory.

    ## Why is this bad?
    ExecuTorch has no device-to-device copy: a value produced by a delegate on cuda:0 and
    consumed by one on cuda:1 is copied to host and back out, crossing the bus twice per
    call and serializing both streams. It is correct, and it is never elided, so it is a
    fixed per-call cost that is easy to miss when partitioners pick devices per engine.

    ## Example
    ```python
    a = x + y          # delegate on cuda:0
    b = torch.sin(a)   # delegate on cuda:1
    # lowered: getitem (cuda:0) -> _d2h_copy -> _h2d_copy (cuda:1) -> delegate_1
    ```

    ## Use instead
    Put producer and consumer on one device when the model allows it (assign both
    partitions the same `target_device`), or accept the move knowingly and keep it off the
    hot path. There is no automatic fix: the staging is the only correct lowering.

    ## References
    - ExecuTorch `PropagateDevicePass` (cross-device pairs are kept on purpose)
    """

    code = "XF002"
    name = "cross-device-staging"
    examples = (
        Example(partial(_build, ["cuda:0", "cuda:1"]), 1, "cuda:0 -> host -> cuda:1"),
        Example(partial(_build, ["cuda:0", "cuda:0"], elide=False), 0,
                "a same-device round trip is XF001, not XF002"),
    )

    def check(self, ctx):
        for trip in round_trips(ctx.facts):
            if trip.same_device:
                continue
            nbytes = ctx.facts.nbytes(trip.value)
            consumer = trip.consumers[0] if trip.consumers else None
            target = f" for {ctx.describe(consumer)}" if consumer else ""
            detail = (
                f"{tick(trip.value)} moves from {trip.source} to {trip.target} through host memory"
                f"{target}: {tick(trip.d2h.name)} copies {format_bytes(nbytes)} to host and "
                f"{tick(trip.h2d.name)} copies them on to {trip.target}, twice across the bus per call. "
                + (f"torch copies device to device: move it with one `.to(\"{trip.target}\")`, not through "
                   f"`.cpu()`." if is_aten_copy(trip.h2d) else
                   "ExecuTorch has no device-to-device copy; if both partitions can run on one device, "
                   "give them the same target_device.")
            )
            message = (f"{words.value_subject(ctx, trip.value)} goes {trip.source} -> cpu -> {trip.target}: "
                       f"{format_bytes(ctx.copies_bytes([trip.d2h, trip.h2d]))} per call")
            yield ctx.finding(self, message, trip.path(), anchor=trip.producer or trip.h2d, copies=[trip.d2h, trip.h2d],
                              detail=detail)
