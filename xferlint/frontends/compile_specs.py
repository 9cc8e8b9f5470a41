"""A delegate's compile specs as the view shows them, and the target_device they name.

Both frontends read the same `CompileSpec(key, value)` pairs: from a LoweredBackendModule
(graph programs) or from the `.pte` flatbuffer. Values are shown as text where they are
printable, as hex where they are not.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterable, Optional

from xferlint.analyzer.lattice import Device, interned_device

TARGET_DEVICE_KEY = "target_device"


def decode_compile_specs(pairs: Iterable[tuple[str, Any]]) -> tuple[tuple[tuple[str, str], ...], Optional[Device]]:
    """`(key, text)` per spec (hex where a bytes value is not printable) and the device the
    `target_device` spec names (None when there is none or it does not parse)."""
    specs: list[tuple[str, str]] = []
    device: Optional[Device] = None
    for key, raw in pairs:
        binary = isinstance(raw, (bytes, bytearray))
        text = raw.decode("utf-8", errors="replace") if binary else str(raw)
        specs.append((key, text if text.isprintable() or not binary else raw.hex()))
        if key == TARGET_DEVICE_KEY:
            device = _target_device(text)
    return tuple(specs), device


@lru_cache(maxsize=256)
def _target_device(text: str) -> Optional[Device]:
    """The device a `target_device` spec names (the interned one), None when it does not
    parse; parsed once per spelling: a program's hundreds of delegates name a device or two."""
    try:
        parsed = Device.parse(text)
    except ValueError:
        return None
    return interned_device(parsed.type, parsed.index)
