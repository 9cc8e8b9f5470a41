"""benchmarks/ab_graph.py's copy of an earlier revision: it must run its own code, not the
work tree's, or the A/B compares the work tree with itself."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import ab_graph  # noqa: E402


def test_rename_points_imports_and_module_names_at_the_copy(tmp_path):
    package = tmp_path / "xferlint_base"
    (package / "rules").mkdir(parents=True)
    for name in ("__init__.py", "findings.py", "rules/__init__.py"):
        (package / name).write_text("")
    rename = ab_graph._renamer(package)
    text = ("import xferlint.rules as package\nfrom xferlint.findings import Finding\nfrom xferlint import lint\n"
            "import xferlint\nmod = 'xferlint.rules.base'\nhelp = 'run `xferlint fix`, or xferlint.lint(program)'\n")
    assert rename(text) == (
        "import xferlint_base.rules as package\nfrom xferlint_base.findings import Finding\n"
        "from xferlint_base import lint\nimport xferlint_base\nmod = 'xferlint_base.rules.base'\n"
        "help = 'run `xferlint fix`, or xferlint.lint(program)'\n")  # words and attributes stay


@pytest.fixture
def base_copy(tmp_path):
    try:
        subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    ab_graph.materialize("HEAD", tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "xferlint_base" or m.startswith("xferlint_base.")]:
            del sys.modules[name]


def test_the_copy_runs_its_own_modules(base_copy):
    base = importlib.import_module("xferlint_base.rules.base")
    rules = base.all_rules()
    assert Path(base.__file__).is_relative_to(base_copy)
    assert {r.code for r in rules} >= {"XF001", "XF002", "XF004", "XF005"}
    # every rule, and what it builds findings with, comes from the copy
    assert all(r.__module__.startswith("xferlint_base.rules.") for r in rules)
    assert base.Finding.__module__ == "xferlint_base.findings"
    kit = ab_graph.kit("xferlint_base")
    assert all(type(r).__module__.startswith("xferlint_base.") for r in kit["rules"])
    assert kit["read"].__module__ == "xferlint_base.frontends.executorch"
