"""A finding about many operands names a few and counts the rest: a delegate may read
100,000 host tensors, and its detail once listed every one of them (800 KB of text in one
finding). The finding's nodes, steps and bytes still cover every operand.

The programs are hand-built `.pte` files (`xferlint.testing.synthetic_pte`): ExecuTorch's
lowering copies every input of a device delegate, so it writes no delegate that reads
twenty host tensors directly."""

from __future__ import annotations

import pytest

from xferlint.api import lint
from xferlint.frontends.pte.view import load_pte_bytes
from xferlint.rules._patterns import LISTED, listed
from xferlint.testing.synthetic_pte import PlanBuilder, serialize


def _lint(data: bytes, code: str):
    return lint(load_pte_bytes(data, label="wide.pte").view, select=[code])


@pytest.mark.parametrize("count, expected", [
    (1, "`a0`"),
    (2, "`a0` and `a1`"),
    (LISTED, ", ".join(f"`a{i}`" for i in range(LISTED - 1)) + f" and `a{LISTED - 1}`"),
    (LISTED + 1, ", ".join(f"`a{i}`" for i in range(LISTED)) + " and 1 more"),
    (1000, ", ".join(f"`a{i}`" for i in range(LISTED)) + " and 992 more"),
])
def test_listed_names_the_first_few_and_counts_the_rest(count, expected):
    assert listed([f"a{i}" for i in range(count)]) == expected


def test_listed_takes_the_last_separator_and_how_to_show_an_item():
    assert listed([1, 2, 3], ", ", lambda n: f"#{n}") == "#1, #2, #3"
    assert listed([], ", ") == ""


def test_a_delegate_reading_many_host_tensors_names_eight_and_counts_every_byte():
    b = PlanBuilder()
    inputs = [b.input() for _ in range(20)]
    (y,) = b.delegate(inputs)
    b.outputs.append(b.d2h(y))
    (finding,) = _lint(serialize([b.plan()]), "XF007")
    names = ", ".join(f"`v{i}`" for i in inputs[:LISTED])
    assert f"reads {names} and {20 - LISTED} more from cpu with no copy to cuda:0" in finding.detail
    assert f"`v{inputs[LISTED]}`" not in finding.detail
    assert "reads input 0, input 1 and input 2 from cpu and 17 more, no copy" in finding.message  # names three
    assert len(finding.nodes) == 21  # every input and the delegate
    assert finding.bytes == 20 * 64  # float32 [4, 4] each


def test_a_host_split_of_many_copies_names_eight_of_the_values_it_moves():
    b = PlanBuilder()
    x = b.input()
    outs = b.delegate([b.h2d(x)], outputs=12)
    on_host = [b.d2h(o) for o in outs]
    summed = b.tensor()
    b.kernel("aten::cat", "out", on_host + [summed, summed])
    (z,) = b.delegate([b.h2d(summed)])
    b.outputs.append(b.d2h(z))
    (finding,) = _lint(serialize([b.plan()]), "XF005")
    named = ", ".join(f"`v{o}`" for o in outs[:LISTED])
    assert f"{named} and {12 - LISTED} more" in finding.detail
    assert f"`v{outs[LISTED]}`" not in finding.detail
