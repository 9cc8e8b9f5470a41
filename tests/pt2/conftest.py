"""Fixtures for the `.pt2` tests: every ATen sample model exported once per session with
cuda:0 values on this CPU-only torch, in a subprocess (some fake-cuda exports abort the
process), training IR and decomposed, as `.pt2` files in a session temp directory."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.fixture(scope="session")
def pt2_dir(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("pt2"))
    done = subprocess.run([sys.executable, "-m", "xferlint.testing.aten", out], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


@pytest.fixture(scope="session")
def pt2_file(pt2_dir):
    """`pt2_file(name, decomposed=False)`: the path of one exported sample."""

    def get(name: str, decomposed: bool = False) -> str:
        return os.path.join(pt2_dir, f"{name}{'.decomposed' if decomposed else ''}.pt2")

    return get
