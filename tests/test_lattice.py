"""The device lattice: UNREACHED < Device(type, index) < CONFLICT, and its join.

Property tests over every lattice element (the two markers and devices of several types
and indices): the solver's termination and the order-independence of its result rest on
these laws.
"""

from __future__ import annotations

import copy
import functools
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xferlint.analyzer.lattice import (
    CONFLICT,
    CPU,
    UNREACHED,
    Device,
    is_device,
    join,
    join_all,
    leq,
)

# Deterministic (derandomized) and local to this module: no global profile is loaded.
PROPS = settings(max_examples=200, deadline=None, derandomize=True)

device_types = st.sampled_from(["cpu", "cuda", "mps", "xpu"])
devices = st.builds(Device, device_types, st.integers(min_value=0, max_value=3))
# Canonical devices, as ExecuTorch and torch spell them: the host has one index.
canonical_devices = devices.map(lambda d: Device("cpu", 0) if d.type == "cpu" else d)
elements = st.one_of(st.just(UNREACHED), st.just(CONFLICT), devices)


@PROPS
@given(elements, elements)
def test_join_is_commutative(a, b):
    assert join(a, b) == join(b, a)


@PROPS
@given(elements, elements, elements)
def test_join_is_associative(a, b, c):
    assert join(join(a, b), c) == join(a, join(b, c))


@PROPS
@given(elements)
def test_join_is_idempotent(a):
    assert join(a, a) == a


@PROPS
@given(elements)
def test_unreached_is_the_identity(a):
    assert join(UNREACHED, a) == a
    assert join(a, UNREACHED) == a


@PROPS
@given(elements)
def test_conflict_absorbs(a):
    assert join(CONFLICT, a) is CONFLICT
    assert join(a, CONFLICT) is CONFLICT


@PROPS
@given(devices, devices)
def test_two_devices_join_to_themselves_or_conflict(a, b):
    expected = a if a == b else CONFLICT
    assert join(a, b) == expected


@PROPS
@given(elements)
def test_leq_is_reflexive(a):
    assert leq(a, a)


@PROPS
@given(elements, elements)
def test_leq_is_antisymmetric(a, b):
    if leq(a, b) and leq(b, a):
        assert a == b


@PROPS
@given(elements, elements, elements)
def test_leq_is_transitive(a, b, c):
    if leq(a, b) and leq(b, c):
        assert leq(a, c)


@PROPS
@given(elements)
def test_bottom_and_top(a):
    assert leq(UNREACHED, a)
    assert leq(a, CONFLICT)


@PROPS
@given(elements, elements, elements)
def test_join_is_the_least_upper_bound(a, b, c):
    upper = join(a, b)
    assert leq(a, upper) and leq(b, upper)
    if leq(a, c) and leq(b, c):
        assert leq(upper, c)


@PROPS
@given(elements, elements)
def test_two_distinct_devices_are_incomparable(a, b):
    if is_device(a) and is_device(b) and a != b:
        assert not leq(a, b) and not leq(b, a)


@PROPS
@given(st.lists(elements, max_size=8))
def test_join_all_is_the_fold_of_join(values):
    assert join_all(values) == functools.reduce(join, values, UNREACHED)


@PROPS
@given(st.lists(elements, max_size=8), st.randoms(use_true_random=False))
def test_join_all_ignores_order(values, rnd):
    shuffled = list(values)
    rnd.shuffle(shuffled)
    assert join_all(shuffled) == join_all(values)


@PROPS
@given(canonical_devices)
def test_device_parse_round_trips(device):
    assert Device.parse(str(device)) == device
    assert Device.parse(str(device).encode("utf-8")) == device


@PROPS
@given(devices)
def test_device_str_is_faithful(device):
    """Two different devices never print the same (messages name devices by str)."""
    assert Device.parse(str(device)) == device


@PROPS
@given(device_types, st.integers(min_value=0, max_value=7))
def test_device_parse_accepts_executorch_spellings(kind, index):
    parsed = Device.parse(f"{kind}:{index}")
    assert parsed == Device(kind, index)
    assert Device.parse(f"  {kind.upper()} : {index} ") == parsed
    assert Device.parse(f"{kind}:{index}".encode()) == parsed


def test_device_parse_defaults_the_index_to_zero():
    assert Device.parse("cuda") == Device("cuda", 0)
    assert Device.parse("cpu") == CPU
    assert CPU.is_host and not Device("cuda", 0).is_host


@pytest.mark.parametrize("text", ["", "cuda:", ":0", "cuda:x", "cuda:0:1", "cu da", "cuda:-1", "0"])
def test_device_parse_rejects_garbage(text):
    with pytest.raises(ValueError, match="not a device"):
        Device.parse(text)


@pytest.mark.parametrize("marker", [UNREACHED, CONFLICT])
def test_markers_stay_singletons(marker):
    assert copy.copy(marker) is marker
    assert copy.deepcopy(marker) is marker
    assert pickle.loads(pickle.dumps(marker)) is marker
    assert not is_device(marker)
