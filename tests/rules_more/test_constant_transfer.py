"""XF006 constant-transfer on real lowered programs, and the explained ExecuTorch failure
when a parameter left outside its device delegate reaches `to_executorch`."""

from __future__ import annotations

import pytest

import textwrap

from xferlint.api import lint
from xferlint.pipeline import check_paths
from xferlint.selection import select_rules

# ExecuTorch warns about every program with a mutated buffer (mutable-buffer); not ours.
pytestmark = pytest.mark.filterwarnings("ignore:Mutation on a buffer:UserWarning")

XF006 = ["XF006"]


def _xf006(program):
    return lint(program, select=XF006)


def test_a_parameter_outside_its_delegate_is_copied_every_call(program):
    """The edge program, read after ExecuTorch's own PropagateDevicePass."""
    [finding] = _xf006(program("param-edge"))
    assert "parameter `weight`" in finding.message
    assert finding.bytes == 8 * 8 * 4 and "256 B" in finding.message
    assert "tag_constant_data" in finding.detail
    assert [s.role for s in finding.steps] == ["constant", "h2d", "consumer"]
    assert finding.steps[1].device == "cuda:0"


def test_the_same_copy_in_a_program_that_works_around_the_crash(program):
    """`to_executorch` with PlanConstantCopies: the real emitted program holds the copy."""
    [finding] = _xf006(program("param-workaround"))
    assert "parameter `weight`" in finding.message and finding.bytes == 256


def test_an_absorbed_parameter_is_not_copied(program):
    assert _xf006(program("param-absorbed")) == []


def test_a_buffer_outside_its_delegate_is_reported_by_name(program):
    [finding] = _xf006(program("buffer-edge"))
    assert "buffer `bias`" in finding.message


def test_a_buffer_the_program_writes_is_state_not_a_constant(program):
    """`state.add_(1)` every call: the H2D of the state moves new bytes each time."""
    from xferlint.api import lint_report

    report = lint_report(program("mutable-buffer"))
    assert report.summary.transfers.h2d_copies >= 2  # the state is copied to cuda:0
    assert "XF006" not in report.summary.by_code


def test_a_value_computed_from_a_parameter_alone_is_constant_too(program):
    [finding] = _xf006(program("param-through-host-op"))
    assert "computed on host from parameter `weight` alone" in finding.message
    assert [s.role for s in finding.steps][:2] == ["constant", "host-op"]


def test_a_value_mixed_with_the_input_is_not_constant(program):
    assert _xf006(program("param-times-input")) == []


def test_a_factory_in_forward_builds_the_same_tensor_every_call(program):
    [finding] = _xf006(program("ones"))
    assert "builds the same tensor on host on every call" in finding.detail
    assert finding.steps[0].target.startswith("aten.full")


def test_the_nbytes_crash_becomes_one_explained_line(tmp_path):
    """ExecuTorch 1.5.1's to_executorch fails on a parameter copied to a device; the
    entry point's error says what that means and how to get out, with no traceback."""
    model = tmp_path / "unabsorbed.py"
    model.write_text(textwrap.dedent("""
        import torch
        from xferlint.testing import DevicePartitioner, lower


        class Projection(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = torch.nn.Parameter(torch.randn(8, 8))

            def forward(self, x):
                return torch.mm(x, self.weight)


        def program():
            partitioner = DevicePartitioner(["cuda:0"], absorb_constants=False)
            return lower(Projection(), (torch.randn(8, 8),), ["cuda:0"], partitioner=partitioner)
    """))
    run = check_paths([str(model)], select_rules())
    [error] = run.errors
    assert run.findings == []
    text = error.message
    assert "\n" not in text and "Traceback" not in text
    assert "'nbytes'" in text  # what ExecuTorch said
    assert "parameter, buffer or constant" in text and "device delegate" in text  # what it means
    assert "tag_constant_data" in text and "XF006" in text  # how to get out
    assert "unabsorbed.py:" in text  # where


def test_known_failures_match_by_signature_not_by_accident():
    from xferlint.frontends.known_failures import explain, match

    class InternalError(Exception):
        pass

    try:
        try:
            raise KeyError("stack_trace")
        except KeyError as inner:
            raise InternalError("Failed with error: 'stack_trace'") from inner
    except InternalError as exc:
        assert match(exc).name == "emit-stacktrace-on-copies"
        assert "emit_stacktrace=False" in explain(exc)
    assert explain(AttributeError("'NoneType' object has no attribute 'nbytes'")) == ""
    assert explain(KeyError("weight")) == ""
