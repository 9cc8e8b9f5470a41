"""XF009 transfer-budget."""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import ClassVar, Optional

from xferlint.analyzer.summary import copies
from xferlint.rules._patterns import tick
from xferlint.rules import _words as words
from xferlint.rules.base import Example, Rule, RuleContext, format_bytes

_SHOWN = 3  # largest copies named in a message


def _build(budget: int):
    """A real lowering read into a view, with the budget its owner declares for it."""
    import torch

    from xferlint.frontends.executorch import load_graph_program
    from xferlint.testing import lower

    class ProjectionWithHostGate(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(16, 16))

        def forward(self, x):
            h = torch.mm(x, self.weight)  # cuda:0
            return h + x, torch.cos(h)  # add on cuda:0, cos on host

    program = lower(ProjectionWithHostGate(), (torch.randn(16, 16),), ["cuda:0"])
    view = load_graph_program(program, input="budget-example", name="program", file=None).view
    return dataclasses.replace(view, max_transfer_bytes=budget)


class TransferBudget(Rule):
    """A method moves more bytes across the bus per call than its budget allows.

    ## What it does
    When a budget is set (`--max-transfer-bytes N`, or `max-transfer-bytes = N` under
    `[tool.xferlint]`), flags every method whose host-to-device and device-to-host copies
    move more than N bytes per call together, and names the largest copies. N is bytes
    (`65536`) or a size with a unit, as the reports write sizes (`"64 KiB"`, `"1.5 MiB"`;
    SI `kB`, `MB`, `GB` too). Without a budget it reports nothing. Copies of symbolic size
    do not count (their size is unknown statically); every copy counts once, including
    those in control-flow bodies.

    ## Why is this bad?
    Transfers are a fixed per-call cost that grows silently: a new op the backend cannot
    take, a parameter left outside its delegate or a changed partitioner adds copies
    without any change in the model's numerics. A budget lets CI hold the line on a
    model's per-call traffic, as a size budget does for a binary.

    ## Example
    ```toml
    [tool.xferlint]
    max-transfer-bytes = "64 KiB"   # per call and method; 65536 is the same
    ```

    ## Use instead
    Bring the traffic back under the budget: fix the other findings first (the summary
    says what the fixable ones would save), keep consecutive ops on one device, let
    delegates own their weights; or raise the budget knowingly in the same change.

    ## References
    - `xferlint check --format json`: `summary.transfers` has the traffic per method and
      per device pair
    """

    code = "XF009"
    name = "transfer-budget"
    options: ClassVar[tuple[str, ...]] = ("max_transfer_bytes",)
    examples = (
        Example(partial(_build, 2048), 1, "4 KiB per call against a 2 KiB budget"),
        Example(partial(_build, 4096), 0, "4 KiB per call, exactly the 4 KiB budget"),
    )

    def __init__(self, max_transfer_bytes: Optional[int] = None) -> None:
        self.max_transfer_bytes = max_transfer_bytes

    def check(self, ctx: RuleContext):
        budget = ctx.program.max_transfer_bytes
        if budget is None:
            budget = self.max_transfer_bytes
        if budget is None:
            return
        found = copies(ctx.facts)
        sized = [c for c in found if c.nbytes is not None]
        total = sum(c.nbytes for c in sized)
        if total <= budget:
            return
        h2d = [c for c in sized if c.direction == "h2d"]
        d2h = [c for c in sized if c.direction == "d2h"]
        largest = sorted(sized, key=lambda c: (-c.nbytes, c.node.index))[:_SHOWN]
        named = ", ".join(
            f"{tick(c.node.name)} {format_bytes(c.nbytes)} {c.source} -> {c.target}" for c in largest
        )
        symbolic = len(found) - len(sized)
        unknown = f" (plus {symbolic} cop{'y' if symbolic == 1 else 'ies'} of symbolic size)" if symbolic else ""
        message = (
            f"method `{ctx.method.name}` moves {format_bytes(ctx.copies_bytes([c.node for c in sized]))} per call "
            f"({len(h2d)} H2D, {len(d2h)} D2H){unknown}, over its {format_bytes(budget)} budget"
        )
        detail = (
            f"method `{ctx.method.name}` moves {format_bytes(total)} across the bus per call "
            f"({len(h2d)} H2D: {format_bytes(sum(c.nbytes for c in h2d))}, {len(d2h)} D2H: "
            f"{format_bytes(sum(c.nbytes for c in d2h))}){unknown}, over its budget of {format_bytes(budget)} "
            f"({budget} bytes) by {format_bytes(total - budget)}. Largest: {named}. Remove copies (see the "
            f"other findings and the summary's fixable savings) or raise `max-transfer-bytes` knowingly."
        )
        path = [(c.node, c.direction) for c in largest]
        yield ctx.finding(self, message, path, anchor=largest[0].node, copies=[c.node for c in sized],
                          detail=detail)
