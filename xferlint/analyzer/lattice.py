"""The device lattice.

    UNREACHED (bottom)  <  Device(type, index)  <  CONFLICT (top)

`join` is the least upper bound: joining a value with UNREACHED gives the value, two equal
devices give that device, and two different devices (or anything with CONFLICT) give
CONFLICT. The height is 3, so every monotone fixed-point iteration over it ends after at
most two raises per value.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Union

from xferlint.records import dataclass

_DEVICE_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?::\s*(\d+))?\s*$")


@dataclass(frozen=True, order=True)
class Device:
    """A concrete device: a type (`cpu`, `cuda`, ...) and an index."""

    type: str
    index: int = 0

    def __str__(self) -> str:
        # The host prints as plain `cpu`; any other index must show, or two different
        # lattice values would read the same in a message.
        return "cpu" if self.is_host and self.index == 0 else f"{self.type}:{self.index}"

    @property
    def is_host(self) -> bool:
        return self.type == "cpu"

    @classmethod
    def parse(cls, text: str | bytes) -> "Device":
        """Parse `cpu`, `cuda`, `cuda:1` (ExecuTorch's `target_device` spelling)."""
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        match = _DEVICE_RE.match(text)
        if not match:
            raise ValueError(f"not a device: {text!r} (expected e.g. 'cpu' or 'cuda:0')")
        kind = match.group(1).lower()
        return cls(kind, int(match.group(2) or 0))


class _Marker:
    """A lattice element that is not a device (bottom or top)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name

    __str__ = __repr__

    def __reduce__(self):  # keep the singletons singletons across copy/pickle
        return self._name


UNREACHED = _Marker("UNREACHED")
CONFLICT = _Marker("CONFLICT")
@lru_cache(maxsize=256)
def interned_device(kind: str, index: int = 0) -> Device:
    """`Device(kind, index)`, one object per device: every frontend builds its devices here,
    so a program's thousands of values and delegates share a few objects (a Device hashes and
    compares in Python, and rules group and memoise by object)."""
    return Device(kind, index)


CPU = interned_device("cpu", 0)

LatticeValue = Union[Device, _Marker]


def join(a: LatticeValue, b: LatticeValue) -> LatticeValue:
    """Least upper bound of two lattice values."""
    if a is b or b is UNREACHED:  # devices are interned: equal ones are mostly one object
        return a
    if a is UNREACHED:
        return b
    if a is CONFLICT or b is CONFLICT:
        return CONFLICT
    return a if a == b else CONFLICT


def join_all(values) -> LatticeValue:
    """Join of an iterable of lattice values (UNREACHED for none)."""
    result: LatticeValue = UNREACHED
    for value in values:
        result = join(result, value)
        if result is CONFLICT:
            break
    return result


def leq(a: LatticeValue, b: LatticeValue) -> bool:
    """The lattice order: a <= b iff join(a, b) == b."""
    return join(a, b) == b


def is_device(value: LatticeValue) -> bool:
    return isinstance(value, Device)
