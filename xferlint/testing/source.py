"""Lowering a model whose source lives in a real file of its own (outside xferlint), so
that its findings are located there: what the XF100 examples need, since comments in
xferlint's own files are never a model's source."""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import textwrap
from functools import lru_cache

_DIR: list[str] = []


def _directory() -> str:
    if not _DIR:
        _DIR.append(tempfile.mkdtemp(prefix="xferlint-example-"))
        atexit.register(shutil.rmtree, _DIR[0], True)
    return _DIR[0]


@lru_cache(maxsize=None)
def model_file(source: str) -> str:
    """A file holding `source` (dedented), one per distinct source, removed at exit."""
    text = textwrap.dedent(source)
    name = "model_" + hashlib.sha256(text.encode()).hexdigest()[:12]
    path = os.path.join(_directory(), name + ".py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def lowered_source(source: str, devices, **kwargs):
    """Lower the class `Model` that `source` defines, with `xferlint.testing.lower` on two
    4x4 inputs."""
    from xferlint.testing import lower
    from xferlint.testing.models import example_inputs

    path = model_file(source)
    name = os.path.splitext(os.path.basename(path))[0]
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return lower(module.Model(), example_inputs(), devices, **kwargs)
