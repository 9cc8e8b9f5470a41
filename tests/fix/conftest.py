"""Programs the fix tests share, each lowered once per session with ExecuTorch's own lowering.

The modules (tests/fix/fixhelpers.py) run on the demo backend (add, sin, mm delegable;
cos, mul host-only), one delegate per op, so consecutive ops on one device are
back-to-back delegates.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from fixhelpers import BUILDS, inputs


@pytest.fixture(scope="session")
def program(lowered_once):
    """`program(name)`: the lowered program BUILDS names (shared, never mutate it)."""
    from xferlint.testing import lower

    def get(name: str) -> Any:
        module, devices, options = BUILDS[name]
        torch.manual_seed(0)
        return lowered_once(f"fix:{name}", lambda: lower(module(), inputs(), devices, **options))

    return get


@pytest.fixture(scope="session")
def fixed(lowered_once, program):
    """`fixed(name, **options)`: xferlint.fix of a BUILDS program, once per options."""
    import xferlint

    def get(name: str, **options: Any):
        key = f"fixed:{name}:{sorted(options.items())}"
        return lowered_once(key, lambda: xferlint.fix(program(name), name=name, **options))

    return get


