"""Model source locations for `.pte` findings: `--etrecord FILE`, and the debug-handle map
of an ExecutorchProgramManager (an entry point's program).

The `.pte` has no stack traces; its instructions are mapped back to graph nodes through the
emitter's debug handles. Findings on the `.pte` must point at the same model lines as the
same findings on the program's graph.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import zipfile

import pytest

from xferlint.pipeline import analyze
from xferlint.selection import select_rules

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pte_source_model.py")


def _line(marker: str) -> int:
    with open(SOURCE, encoding="utf-8") as handle:
        return next(i for i, text in enumerate(handle, start=1) if text.rstrip().endswith(f"# {marker}"))


@pytest.fixture(scope="module")
def chain_with_etrecord(lowered_once, tmp_path_factory):
    def build():
        import torch
        from executorch.devtools import generate_etrecord
        from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig, to_edge_transform_and_lower

        from pte_source_model import Chain
        from xferlint.testing import DevicePartitioner, upstream_elision

        exported = torch.export.export(Chain(), (torch.randn(4, 4), torch.randn(4, 4)), strict=False)
        edge = to_edge_transform_and_lower(exported, partitioner=[DevicePartitioner(["cuda:0"])],
                                           compile_config=EdgeCompileConfig(_check_ir_validity=False))
        edge_record = copy.deepcopy(edge)  # to_executorch changes the edge program in place
        with upstream_elision(False):
            program = edge.to_executorch(ExecutorchBackendConfig())
        directory = tmp_path_factory.mktemp("etrecord")
        pte, record = directory / "chain.pte", directory / "chain.etrecord"
        pte.write_bytes(bytes(program.buffer))
        generate_etrecord(str(record), edge_record, program)
        return program, str(pte), str(record)

    return lowered_once("pte:chain-etrecord", build)


def _located(findings):
    return sorted((f.code, f.location.line if f.location else None) for f in findings)


def test_etrecord_locates_pte_findings_like_the_graph(chain_with_etrecord):
    import xferlint
    from xferlint.frontends.pte.view import load_pte_file
    from xferlint.frontends.pte.debug import read_etrecord

    program, pte, record = chain_with_etrecord
    graph = xferlint.lint(program)
    located = analyze(load_pte_file(pte, source_map=read_etrecord(record)).view, select_rules())
    plain = analyze(load_pte_file(pte).view, select_rules())
    assert _located(located) == _located(graph)
    assert {f.location.line for f in located} >= {_line("LINE-ADD"), _line("LINE-SIN"), _line("LINE-OUT")}
    assert all(f.location.file == SOURCE for f in located)
    assert all(f.location is None for f in plain)  # without the ETRecord: method and instruction only
    # one SourceLocation per distinct line: the instructions of one model line share it
    where = list(read_etrecord(record)["forward"].values())
    assert len({id(loc) for loc in where}) == len(set(where)) < len(where)


def test_program_debug_handle_map_locates_pte_findings(chain_with_etrecord):
    import xferlint
    from xferlint.frontends.pte.view import load_pte_program

    program, _, _ = chain_with_etrecord
    view = load_pte_program(program, label="chain.pte").view
    assert _located(analyze(view, select_rules())) == _located(xferlint.lint(program))


_CLI = r"""
import sys
from xferlint.cli import main
code = main(["check", sys.argv[1], "--etrecord", sys.argv[2], "--isolated", "--select", "XF001"])
sys.stderr.write("TORCH=%d\n" % ("torch" in sys.modules))
sys.exit(code)
"""


def test_cli_etrecord_is_torch_free_and_prints_source_lines(chain_with_etrecord):
    _, pte, record = chain_with_etrecord
    done = subprocess.run([sys.executable, "-c", _CLI, pte, record], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "TORCH=0" in done.stderr
    assert f"pte_source_model.py:{_line('LINE-ADD')}:" in done.stdout
    assert f"pte_source_model.py:{_line('LINE-SIN')}:" in done.stdout


def test_bad_etrecord_is_one_line_and_exit_2(chain_with_etrecord, tmp_path):
    _, pte, _ = chain_with_etrecord
    not_zip = tmp_path / "bad.etrecord"
    not_zip.write_bytes(b"not a zip")
    no_marker = tmp_path / "other.zip"
    with zipfile.ZipFile(no_marker, "w") as archive:
        archive.writestr("something", "{}")
    for path, expected in ((not_zip, "not an ETRecord"), (no_marker, "no ETRECORD_V0"),
                           (tmp_path / "missing.etrecord", "no such file")):
        done = subprocess.run([sys.executable, "-m", "xferlint.cli", "check", pte, "--etrecord", str(path),
                               "--isolated"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0] and "Traceback" not in done.stderr


def test_noqa_comments_at_the_mapped_line_suppress_pte_findings(chain_with_etrecord, tmp_path):
    """A `.pte` mapped with --etrecord honours the comments of the lines it maps to."""
    from dataclasses import replace

    from xferlint.frontends.pte.debug import read_etrecord
    from xferlint.pipeline import check_paths

    _, pte, record = chain_with_etrecord
    line = _line("LINE-ADD")
    copy_ = tmp_path / "pte_source_model.py"
    lines = open(SOURCE, encoding="utf-8").read().splitlines(keepends=True)
    lines[line - 1] = lines[line - 1].rstrip("\n") + "  # xferlint: noqa: XF001\n"
    copy_.write_text("".join(lines), encoding="utf-8")
    source_map = {method: {i: replace(loc, file=str(copy_)) for i, loc in where.items()}
                  for method, where in read_etrecord(record).items()}
    plain = check_paths([pte], select_rules(), source_map=source_map, project_root=str(tmp_path / "elsewhere"))
    run = check_paths([pte], select_rules(), source_map=source_map, project_root=str(tmp_path))
    at_line = [f for f in plain.findings if f.code == "XF001" and f.location and f.location.line == line]
    assert at_line, "the comment's line has an XF001 to suppress"
    assert plain.record.unhonoured  # outside the project root: kept, and said so
    assert not [f for f in run.findings if f.code == "XF001" and f.location.line == line]
    assert {(s.finding.code, s.finding.location.line) for s in run.record.suppressed} == {("XF001", line)}
    assert not run.comment_findings  # the comment was used: no XF100


@pytest.fixture(scope="module")
def naive_chain(lowered_once):
    """The chain lowered with ExecuTorch's naive memory plan, so that its fixes apply."""
    def build():
        import torch
        from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

        from pte_models import _naive_config
        from pte_source_model import Chain
        from xferlint.testing import DevicePartitioner, upstream_elision

        exported = torch.export.export(Chain(), (torch.randn(4, 4), torch.randn(4, 4)), strict=False)
        edge = to_edge_transform_and_lower(exported, partitioner=[DevicePartitioner(["cuda:0", "cuda:0"])],
                                           compile_config=EdgeCompileConfig(_check_ir_validity=False))
        with upstream_elision(False):
            return edge.to_executorch(_naive_config())

    return lowered_once("pte:chain-naive", build)


def test_findings_left_after_a_fix_keep_their_source_lines(naive_chain):
    """`check --fix --etrecord`: the patched program is read back with the source map
    renumbered past the removed copies, so each instruction keeps its model line."""
    from xferlint.fixes.pte import fix_pte_loaded
    from xferlint.frontends.pte.view import load_pte_program

    loaded = load_pte_program(naive_chain, label="chain.pte")
    assert loaded.native.source_map
    result = fix_pte_loaded(loaded, select_rules(), unsafe_fixes=True)
    assert result.changed and result.applied, "the chain has a fix to apply"
    before, after = loaded.view.methods[0], result.methods[0].after
    assert len(after.nodes) < len(before.nodes)
    lines = {n.target: set() for n in before.nodes}
    for n in before.nodes:
        lines[n.target].add(n.location.line if n.location else None)
    assert any(n.location for n in after.nodes)
    for n in after.nodes:  # each instruction keeps its own line (none shifted onto another's)
        assert (n.location.line if n.location else None) in lines[n.target], n
    located_after = sum(1 for n in after.nodes if n.location)
    located_gone = sum(1 for n in before.nodes if n.location) - located_after
    assert located_gone <= len(before.nodes) - len(after.nodes)  # only removed copies lose theirs
