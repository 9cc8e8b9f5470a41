"""Fixtures for the `.pte` tests: real programs lowered once per session, their bytes, and
their files in a session temp directory (no .pte is committed; each is built here)."""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)


@pytest.fixture(scope="session")
def pte_program(lowered_once) -> Callable[[str], Any]:
    """`pte_program(name)`: the ExecutorchProgramManager of `pte_models.PROGRAMS[name]`."""
    import pte_models

    def get(name: str) -> Any:
        return lowered_once(f"pte:{name}", lambda: pte_models.build(name))

    return get


@pytest.fixture(scope="session")
def pte_bytes(pte_program) -> Callable[[str], bytes]:
    cache: dict[str, bytes] = {}

    def get(name: str) -> bytes:
        if name not in cache:
            cache[name] = bytes(pte_program(name).buffer)
        return cache[name]

    return get


@pytest.fixture(scope="session")
def pte_dir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("pte"))


@pytest.fixture(scope="session")
def pte_file(pte_bytes, pte_dir) -> Callable[[str], str]:
    """`pte_file(name)`: the program written to `<session tmp>/<name>.pte`."""

    def get(name: str) -> str:
        path = os.path.join(pte_dir, f"{name}.pte")
        if not os.path.exists(path):
            with open(path, "wb") as handle:
                handle.write(pte_bytes(name))
        return path

    return get
