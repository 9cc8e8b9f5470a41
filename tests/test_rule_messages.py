"""What XF001's message says about the D2H, on programs lowered by ExecuTorch."""

import pytest
import torch

from xferlint.api import lint
from xferlint.testing import lower


class TwoConsumers(torch.nn.Module):
    """`a` (cuda:0) feeds two cuda:0 delegates: one D2H, two round trips through it."""

    def forward(self, x, y):
        a = x + y
        return torch.sin(a), a + x


class HostAndDevice(torch.nn.Module):
    """`a` (cuda:0) feeds a cuda:0 delegate and the host op `cos`."""

    def forward(self, x, y):
        a = x + y
        return torch.sin(a), torch.cos(a)


def _inputs():
    g = torch.Generator().manual_seed(0)
    return torch.randn(4, 4, generator=g), torch.randn(4, 4, generator=g)


@pytest.fixture(scope="module")
def two_consumers(lowered_once):
    return lowered_once("messages:two", lambda: lower(TwoConsumers(), _inputs(), ["cuda:0"], elide=False))


@pytest.fixture(scope="module")
def host_and_device(lowered_once):
    return lowered_once("messages:host", lambda: lower(HostAndDevice(), _inputs(), ["cuda:0"], elide=False))


def test_a_d2h_read_only_by_round_trips_is_said_to_die_with_them(two_consumers):
    findings = lint(two_consumers, select=["XF001"])
    through_first = [f for f in findings if f.nodes[1] == "_d2h_copy_default"]
    assert len(through_first) == 2
    for finding in through_first:
        assert "`_d2h_copy_default` is then dead too" in finding.detail
        assert "_d2h_copy_default" in finding.removes


def test_a_d2h_that_feeds_a_host_op_is_said_to_stay(host_and_device):
    (finding,) = lint(host_and_device, select=["XF001"])
    assert "stays: it also feeds host code (`aten_cos_default`)" in finding.detail
    assert finding.removes == [finding.nodes[2]]  # only the H2D goes
