"""XF001 redundant-round-trip."""

from __future__ import annotations

from functools import partial

from xferlint.analyzer.view import OpKind
from xferlint.findings import Applicability
from xferlint.rules._patterns import method_round_trips, tick
from xferlint.rules import _words as words
from xferlint.rules.base import Example, Rule, format_bytes


def _build(devices, **kwargs):
    from xferlint.testing.models import lowered

    return lowered("AddSin", devices, **kwargs)


_UNSET = object()
_ENDING = object()  # the key, in a check's cache, of the ids of the H2Ds that end same-device round trips


def _host_reader(facts, trip, cache: dict):
    """The first reader of the trip's D2H that is not itself a same-device round trip
    (which the fix also removes), or None. Cached per D2H: a D2H read by k round trips
    would otherwise be scanned k times. `cache[_ENDING]`: the ids of the H2Ds that end a
    same-device round trip, every reader being a node of the method."""
    output = trip.d2h.output
    found = cache.get(output, _UNSET)
    if found is _UNSET:
        ending = cache[_ENDING]
        found = next((r for r in facts.readers(output) if not (r.kind is OpKind.H2D and id(r) in ending)), None)
        cache[output] = found
    return found


def _removed(trip, d2h_stays: bool) -> list:
    """The copies the fix deletes: the H2D, and the D2H once every reader of it is a
    same-device round trip that the fix also removes (and it is no output)."""
    return [trip.h2d] if d2h_stays else [trip.h2d, trip.d2h]


def _d2h_fate(facts, trip, host) -> str:
    """What becomes of the D2H once the fix feeds the consumer directly; `host`: its host reader."""
    if host is not None:
        return f"{tick(trip.d2h.name)} stays: it also feeds host code ({tick(host.name)})"
    if facts.is_output(trip.d2h.output):
        return f"{tick(trip.d2h.name)} stays: it is also a method output"
    return f"{tick(trip.d2h.name)} is then dead too"


class RedundantRoundTrip(Rule):
    """A device tensor is copied to host and straight back to the same device.

    ## What it does
    Flags `_h2d_copy(_d2h_copy(x))` where `x` already lives on the H2D's target device
    (same device type and index): the value leaves the device only to come back.

    ## Why is this bad?
    ExecuTorch's `PropagateDevicePass` inserts copies one delegate boundary at a time: a
    D2H after every output of a device delegate and an H2D before every input of the next.
    Between two delegates on the same device that is a device -> host -> device bounce
    that moves the tensor across the bus twice per call and synchronizes the stream, for
    nothing. ExecuTorch 1.5 elides directly adjacent pairs; pipelines without that
    elision, or passes that run after it and re-create the pair, leave them behind.

    ## Example
    ```python
    a = x + y          # delegate on cuda:0
    b = torch.sin(a)   # delegate on cuda:0
    # lowered: getitem (cuda:0) -> _d2h_copy -> _h2d_copy (cuda:0) -> delegate_1
    ```

    ## Use instead
    Feed the device tensor straight to the second delegate: run `xferlint fix`, or lower
    with ExecuTorch >= 1.5 (whose PropagateDevicePass performs this elision), or let one
    partition take both ops.

    ## Fix safety
    Safe. The consumers are rewired to `x`, which holds the same bytes on the same device;
    the H2D is removed, and the D2H only once nothing else reads it (a D2H that still
    feeds host code stays). Cross-device pairs are never touched.

    ## References
    - ExecuTorch `PropagateDevicePass._elide_redundant_same_device_copies`
    - https://pytorch.org/executorch/
    """

    code = "XF001"
    name = "redundant-round-trip"
    fix_applicability = Applicability.SAFE
    examples = (
        Example(partial(_build, ["cuda:0", "cuda:0"], elide=False), 1,
                "two delegates on cuda:0, upstream elision off"),
        Example(partial(_build, ["cuda:0", "cuda:0"]), 0, "stock ExecuTorch elides the pair"),
        Example(partial(_build, ["cuda:0", "cuda:1"], elide=False), 0,
                "cuda:0 -> host -> cuda:1 is a real move (XF002), not a round trip"),
    )

    def check(self, ctx):
        facts = ctx.facts
        trips = [t for t in method_round_trips(ctx) if t.same_device]  # once each: a Device compares in Python
        # per D2H: its first reader that is not a same-device round trip (and those trips' H2Ds)
        cache: dict = {_ENDING: {id(t.h2d) for t in trips}}
        for trip in trips:
            consumer = trip.consumers[0] if trip.consumers else None
            host = _host_reader(facts, trip, cache)
            d2h_stays = host is not None or facts.is_output(trip.d2h.output)
            d2h_fate = _d2h_fate(facts, trip, host)
            target = f" for {ctx.describe(consumer)}" if consumer else ""
            source, back = ctx.device_text(trip.source), ctx.device_text(trip.target)  # str(Device) is Python
            detail = (
                f"{tick(trip.value)} already lives on {source}, but {tick(trip.d2h.name)} copies it "
                f"to host and {tick(trip.h2d.name)} copies it straight back to {back}{target}: "
                f"{format_bytes(facts.nbytes(trip.value))} cross the bus twice per call for nothing. "
                f"Feed {tick(trip.value)} to the consumer directly ({d2h_fate})."
            )
            message = (f"{words.value_subject(ctx, trip.value)} round-trips {source} -> cpu -> {back}: "
                       f"{format_bytes(ctx.copies_bytes([trip.d2h, trip.h2d]))} per call")
            yield ctx.finding(self, message, trip.path(), anchor=trip.producer or trip.h2d,
                              copies=[trip.d2h, trip.h2d], removes=_removed(trip, d2h_stays), detail=detail)
