"""Imports point down the data flow (issue 11, item 6): frontends -> analyzer -> rules ->
fixes / reporters, with the check pipeline (`xferlint.pipeline`) below the API, the CLI and
the workers that call it. Every import counts, module-level or inside a function: a lazy
import of a stage above is still a circle, only deferred."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "xferlint"

# What sits above each stage: it may import none of these.
ABOVE = {
    "analyzer": {"frontends", "rules", "fixes", "reporters", "report", "pipeline", "api", "cli", "workers",
                 "testing"},
    "frontends": {"rules", "fixes", "reporters", "report", "pipeline", "api", "cli", "workers"},
    # a rule's example programs are built by the frontends and xferlint.testing (below it)
    "rules": {"fixes", "reporters", "pipeline", "api", "cli", "workers"},
    "fixes": {"reporters", "api", "cli", "workers"},
    "reporters": {"fixes", "pipeline", "api", "cli", "workers"},
    "pipeline": {"fixes", "reporters", "api", "cli", "workers"},
    "workers": {"api", "cli"},
}


def _module(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, package_dir: Path = PACKAGE) -> set[str]:
    """Every xferlint module `path` imports, relative imports resolved."""
    here = _module(path, package_dir).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.add(module)
            found.update(f"{module}.{a.name}" for a in node.names)  # `from xferlint import api`
    return {m for m in found if m == "xferlint" or m.startswith("xferlint.")}


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("stage", sorted(ABOVE))
def test_a_stage_imports_nothing_above_it(stage):
    files = [p for p in _modules() if _stage(_module(p)) == stage]
    assert files, stage
    upward = sorted((_module(p), m) for p in files for m in _imports(p) if _stage(m) in ABOVE[stage])
    assert upward == [], upward


def test_only_the_console_script_imports_the_cli_and_only_the_package_the_api():
    """The CLI and the API are entry points: what they call never calls back into them."""
    importers: dict[str, set[str]] = {"cli": set(), "api": set()}
    for path in _modules():
        for imported in _imports(path):
            if _stage(imported) in importers:
                importers[_stage(imported)].add(_module(path))
    assert importers["cli"] <= {"xferlint.cli", "xferlint.console_script"}, importers["cli"]
    assert importers["api"] <= {"xferlint", "xferlint.api"}, importers["api"]


def test_the_check_finds_an_upward_import(tmp_path):
    """The test reads what it should: a lazy import of the pipeline from a frontend counts."""
    module = tmp_path / "xferlint" / "frontends" / "bad.py"
    module.parent.mkdir(parents=True)
    module.write_text("def f():\n    from xferlint.pipeline import analyze\n    from ..api import lint\n")
    found = _imports(module, tmp_path / "xferlint")
    assert {m for m in found if _stage(m) in ABOVE["frontends"]} == {
        "xferlint.pipeline", "xferlint.pipeline.analyze", "xferlint.api", "xferlint.api.lint"}
