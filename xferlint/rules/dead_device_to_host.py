"""XF003 dead-device-to-host."""

from __future__ import annotations

from functools import partial

from xferlint.analyzer.lattice import Device
from xferlint.analyzer.view import OpKind
from xferlint.findings import Applicability
from xferlint.rules._patterns import tick
from xferlint.rules import _words as words
from xferlint.rules.base import Example, Rule, format_bytes


def _build(model, devices, **kwargs):
    from xferlint.testing.models import lowered

    return lowered(model, devices, **kwargs)


class DeadDeviceToHost(Rule):
    """A device-to-host copy whose result nobody reads.

    ## What it does
    Flags an `_d2h_copy` whose result is not a method output and is never read by
    anything that matters (no users at all, or only users whose own results are unused).

    ## Why is this bad?
    The copy still runs on every call: it moves the tensor across the bus and, on most
    backends, waits for the device stream, for a result that is thrown away. Such copies
    are left behind by post-processing passes that rewire a D2H's users (to elide a round
    trip, say) without running dead-code elimination afterwards.

    ## Example
    ```python
    # after a hook rewired delegate_1 to read getitem directly:
    getitem (cuda:0) -> _d2h_copy_default     # no users
    getitem (cuda:0) -> delegate_1
    ```

    ## Use instead
    Remove the copy (`xferlint fix`), or run `graph.eliminate_dead_code()` at the end of
    the pass that rewired its users.

    ## Fix safety
    Safe. A copy's only effect is its result; a D2H that is a method output or feeds any
    live host code is never reported.

    ## References
    - ExecuTorch `PropagateDevicePass` (its elision runs dead-code elimination for this)
    """

    code = "XF003"
    name = "dead-device-to-host"
    fix_applicability = Applicability.SAFE
    examples = (
        Example(partial(_build, "AddSin", ["cuda:0", "cuda:0"], elide=False, rewire_without_dce=True), 1,
                "a hook rewired the round trip and left the D2H behind"),
        Example(partial(_build, "AddSinCos", ["cuda:0", "cuda:0"]), 0,
                "the D2H still feeds a host op (cos)"),
        Example(partial(_build, "AddSin", ["cuda:0", "cuda:0"]), 0, "stock ExecuTorch: no dead copy"),
    )

    def check(self, ctx):
        facts = ctx.facts
        d2h = OpKind.D2H  # once: an enum member look-up costs ~65 ns, per node
        for node in ctx.method.nodes:
            if node.kind != d2h or not node.outputs:
                continue
            out = node.output
            # is_useful: the copy's result is returned or read by something that matters
            # (over a .pte's CFG: on some path before the slot is written again).
            if facts.is_useful(node):
                continue
            source = node.inputs[0] if node.inputs else None
            device = facts.device(source)
            where = f" from {device}" if isinstance(device, Device) else ""
            readers = facts.readers(out)
            why = (
                "nothing reads the result"
                if not readers
                else f"its only readers ({', '.join(tick(r.name) for r in readers[:3])}) produce nothing that is used"
            )
            nbytes = facts.nbytes(out) or facts.nbytes(source)
            detail = (
                f"{tick(node.name)} copies {tick(source or '?')} ({format_bytes(nbytes)}){where} to host on "
                f"every call, but {why}. Remove the copy, or run dead-code "
                f"elimination after the pass that rewired its users."
            )
            producer = facts.writer(source)
            path = ([(producer, "producer")] if producer is not None else []) + [(node, "d2h")]
            never = "never read" if not readers else "its readers unused"
            message = (f"{words.value_subject(ctx, source)} is copied {device if where else 'off the device'} -> cpu, "
                       f"{never}: "
                       f"{format_bytes(ctx.copies_bytes([node]))} per call")
            yield ctx.finding(self, message, path, anchor=producer or node, copies=[node], removes=[node],
                              detail=detail)
