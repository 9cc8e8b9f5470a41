"""XF002 cross-device-staging."""

from __future__ import annotations

from functools import partial

from xferlint.findings import Applicability
from xferlint.rules._patterns import is_aten_copy, method_round_trips, tick
from xferlint.rules import _words as words
from xferlint.rules.base import Example, Rule, format_bytes


def _build(devices, **kwargs):
    from xferlint.testing.models import lowered

    return lowered("AddSin", devices, **kwargs)


def _sample(name):
    from xferlint.testing.aten import sample_pt2

    return sample_pt2(name)


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
    hot path. In an ExecuTorch program the staging is the only correct lowering. In a
    torch.export program, copy device to device: `x.to("cuda:1")`, not `x.cpu().to("cuda:1")`.

    ## Fix safety
    Safe, on torch.export programs saved as `.pt2`: the second `.to()` reads the device
    value itself (one direct device-to-device copy of the same dtype and shape) and the
    `.cpu()` is removed once nothing else reads it. On ExecuTorch programs, which have no
    device-to-device copy, the finding is report-only.

    ## References
    - ExecuTorch `PropagateDevicePass` (cross-device pairs are kept on purpose)
    """

    code = "XF002"
    name = "cross-device-staging"
    fix_applicability = Applicability.SAFE  # torch.export (ATen) copies only; see check()
    examples = (
        Example(partial(_build, ["cuda:0", "cuda:1"]), 1, "cuda:0 -> host -> cuda:1"),
        Example(partial(_build, ["cuda:0", "cuda:0"], elide=False), 0,
                "a same-device round trip is XF001, not XF002"),
        Example(partial(_sample, "staging"), 1, "torch.export: `.cpu().to(\"cuda:1\")` (fixable)"),
        Example(partial(_sample, "staging_ok"), 0, "torch.export: one direct `.to(\"cuda:1\")`"),
    )

    def check(self, ctx):
        for trip in method_round_trips(ctx):
            if trip.same_device:
                continue
            nbytes = ctx.facts.nbytes(trip.value)
            source, target = ctx.device_text(trip.source), ctx.device_text(trip.target)  # str(Device) is Python
            consumer = trip.consumers[0] if trip.consumers else None
            reader = f" for {ctx.describe(consumer)}" if consumer else ""
            detail = (
                f"{tick(trip.value)} moves from {source} to {target} through host memory"
                f"{reader}: {tick(trip.d2h.name)} copies {format_bytes(nbytes)} to host and "
                f"{tick(trip.h2d.name)} copies them on to {target}, twice across the bus per call. "
                + (f"torch copies device to device: move it with one `.to(\"{target}\")`, not through "
                   f"`.cpu()`." if is_aten_copy(trip.h2d) else
                   "ExecuTorch has no device-to-device copy; if both partitions can run on one device, "
                   "give them the same target_device.")
            )
            message = (f"{words.value_subject(ctx, trip.value)} goes {source} -> cpu -> {target}: "
                       f"{format_bytes(ctx.copies_bytes([trip.d2h, trip.h2d]))} per call")
            if not is_aten_copy(trip.h2d):  # ExecuTorch has no device-to-device copy: report only
                yield ctx.finding(self, message, trip.path(), anchor=trip.producer or trip.h2d,
                                  copies=[trip.d2h, trip.h2d], detail=detail, applicability=None)
                continue
            alone = len(ctx.facts.readers(trip.d2h.output)) == 1 and not ctx.facts.is_output(trip.d2h.output)
            yield ctx.finding(self, message, trip.path(), anchor=trip.producer or trip.h2d,
                              copies=[trip.d2h, trip.h2d], removes=[trip.d2h] if alone else [], detail=detail)
