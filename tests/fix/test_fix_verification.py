"""Every fix is verified before it is kept; one that does not verify is not applied.

The checks: the edited graph lints (`graph.lint()`), the program re-read and re-analysed
no longer has the fixed findings and has no new ones of those rules, ExecuTorch emits it,
and a second fix changes nothing. Broken planners stand in for bugs here: whatever they
plan must be refused, with the reason, and the program left as it was.
"""

from __future__ import annotations

import copy

import pytest
import torch

import xferlint
from xferlint.findings import Applicability
from xferlint.fixes.plan import FixPlan, OUTPUT
from xferlint.fixes.planners import PLANNERS

from fixhelpers import copies, copy_signature


def _plan(finding, **edits) -> FixPlan:
    return FixPlan(code=finding.code, name=finding.name, method=finding.method, finding=tuple(finding.nodes),
                   applicability=Applicability.SAFE, summary="broken", **edits)


def _first_copy(finding) -> str:
    return next(s.node for s in finding.steps if s.role == "copy")


@pytest.mark.parametrize("broken, reason", [
    # removes the copy the readers keep reading: the graph edit itself fails
    (lambda ctx, f: _plan(f, removes=(_first_copy(f),)), "still read"),
    # changes nothing: re-analysis still reports the finding
    (lambda ctx, f: _plan(f), "still reports"),
])
def test_a_fix_that_does_not_verify_is_not_applied(monkeypatch, program, broken, reason):
    monkeypatch.setitem(PLANNERS, "XF004", broken)
    before = program("shared_off")
    result = xferlint.fix(before)
    assert {p.code for p in result.applied} == {"XF001"}, "the other fixes still apply"
    (skipped,) = [s for s in result.skipped if s.code == "XF004"]
    assert "did not verify" in skipped.reason and reason in skipped.reason
    assert any(reason in line for line in result.summary_lines())
    x_copies = [n for n in copies(result.program)["h2d"] if n.args[0].name == "x"]
    assert len(x_copies) == 2, "the duplicate is still there"
    assert copy_signature(before) != copy_signature(result.program)


def test_a_fix_executorch_cannot_emit_falls_back_to_the_original(program):
    from executorch.exir import ExecutorchBackendConfig

    before = program("chain_off")
    # ExecuTorch 1.5.1 cannot emit stack traces for inserted copies (KeyError: 'stack_trace').
    result = xferlint.fix(before, config=ExecutorchBackendConfig(emit_stacktrace=True))
    assert not result.changed and result.program is before
    assert result.skipped and all("could not emit" in s.reason for s in result.skipped)


def _returned_duplicate() -> torch.fx.GraphModule:
    """x is copied to cuda:0 twice; the first copy feeds sin, the second is returned.
    ExecuTorch never returns an H2D copy by itself (it inserts them for delegate inputs
    only), so this graph is built by hand."""
    import executorch.exir.passes._device_copy_ops_registry  # noqa: F401
    from executorch.exir import schema
    from executorch.exir.tensor import TensorSpec

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    first = graph.call_function(torch.ops.et_copy._h2d_copy.default, (x,))
    second = graph.call_function(torch.ops.et_copy._h2d_copy.default, (x,))
    sin = graph.call_function(torch.ops.aten.sin.default, (first,))
    graph.output((sin, second))
    for node in (x, first, second, sin):
        node.meta["val"] = torch.empty(4, 4)
        node.meta["spec"] = TensorSpec.from_tensor(node.meta["val"])
        if node is not x:
            node.meta["spec"].device = schema.DeviceType.CUDA
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def test_sharing_a_returned_copy_is_an_unsafe_fix():
    from xferlint.fixes.fx import fix_graph_module
    from xferlint.selection import select_rules

    rules = select_rules(select=["XF004"])
    gm = _returned_duplicate()
    safe = fix_graph_module(gm, "forward", rules)
    assert not safe.applied
    (skipped,) = safe.skipped
    assert skipped.code == "XF004" and skipped.unsafe
    assert [f.fix_applicability for f in safe.findings] == [Applicability.UNSAFE]
    assert len([n for n in gm.graph.nodes if "h2d" in str(n.target)]) == 2, "the safe run changed nothing"

    unsafe = fix_graph_module(gm, "forward", rules, unsafe_fixes=True)
    assert [p.code for p in unsafe.applied] == ["XF004"]
    assert any(r.reader == OUTPUT for r in unsafe.applied[0].rewires)
    gm.graph.lint()
    h2d = [n for n in gm.graph.nodes if "h2d" in str(n.target)]
    output = next(n for n in gm.graph.nodes if n.op == "output")
    assert len(h2d) == 1 and output.args[0][1] is h2d[0], "the output is the first copy now"
    assert not unsafe.remaining


def test_the_pass_fixes_inside_to_executorch(program):
    from executorch.exir import ExecutorchBackendConfig

    from xferlint.fixes import FixTransfersPass
    from xferlint.testing import upstream_elision

    fix_pass = FixTransfersPass()
    with upstream_elision(False):
        lowered = copy.deepcopy(program("chain_edge_off")).to_executorch(
            ExecutorchBackendConfig(to_out_var_pass=fix_pass))
    assert [p.code for p in fix_pass.outcomes[0].applied] == ["XF001", "XF001"]
    assert copy_signature(lowered) == copy_signature(program("chain_on"))
    assert xferlint.lint(lowered, select=["XF001", "XF003", "XF004"]) == []


def test_the_pass_runs_after_the_pass_it_wraps(program):
    """A post-processing hook in to_out_var_pass that leaves a dead D2H behind: the fix
    pass wraps it and removes what it left (XF003)."""
    from executorch.exir import ExecutorchBackendConfig
    from executorch.exir.passes import ToOutVarPass

    from xferlint.fixes import FixTransfersPass
    from xferlint.testing import RewireWithoutDCE, ThenPass, upstream_elision

    inner = ThenPass(RewireWithoutDCE(), ToOutVarPass(ignore_to_out_var_failure=False))
    fix_pass = FixTransfersPass(inner)
    with upstream_elision(False):
        lowered = copy.deepcopy(program("chain_edge_off")).to_executorch(
            ExecutorchBackendConfig(to_out_var_pass=fix_pass))
    assert {p.code for p in fix_pass.outcomes[0].applied} == {"XF003"}
    assert all(n.users for n in copies(lowered)["d2h"])
    assert copy_signature(lowered) == copy_signature(program("chain_on"))
