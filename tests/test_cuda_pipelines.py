"""Programs lowered with ExecuTorch's real CudaPartitioner (xferlint.testing.cuda).

Only the AOTInductor compile is stubbed: partitioning, `to_backend`, PropagateDevicePass and
memory planning are ExecuTorch's. Each program is checked on the entry point (the
ExecutorchProgramManager) and on its `.pte`; ground truth is read off the FX graph.
"""

from __future__ import annotations

import pytest
import torch

from xferlint.api import lint
from xferlint.frontends.pte.view import load_pte_bytes
from xferlint.testing.cuda import lower_cuda, xnnpack_first
from xferlint.testing.decoder import DecoderBlock, GatedBlock, KVCacheStep, decoder_inputs, gated_inputs, kv_inputs


def _llm_config():
    from executorch.exir import ExecutorchBackendConfig
    from executorch.exir.passes import MemoryPlanningPass

    return ExecutorchBackendConfig(memory_planning_pass=MemoryPlanningPass(alloc_graph_input=False),
                                   emit_mutable_buffer_names=True)


BUILDS = {
    "whole": lambda: lower_cuda(DecoderBlock(), decoder_inputs()),
    "softmax-split": lambda: lower_cuda(DecoderBlock(), decoder_inputs(), before=[xnnpack_first("SoftmaxConfig")]),
    "dynamic-split": lambda: lower_cuda(DecoderBlock(), decoder_inputs(), before=[xnnpack_first("SoftmaxConfig")],
                                        dynamic_shapes=({1: torch.export.Dim("seq", min=2, max=64)},)),
    "kv-staged": lambda: lower_cuda(KVCacheStep(), kv_inputs(), absorb_mutable_buffers=False,
                                    backend_config=_llm_config()),
    "kv-absorbed": lambda: lower_cuda(KVCacheStep(), kv_inputs(), backend_config=_llm_config()),
    "cond": lambda: lower_cuda(GatedBlock(), gated_inputs()),
}


@pytest.fixture
def program(lowered_once, request):
    return lowered_once(f"cuda-{request.param}", BUILDS[request.param])


def _both(program):
    """Findings on the entry point and on its .pte."""
    pte = load_pte_bytes(bytes(program.buffer), label="program.pte").view
    return lint(program), lint(pte)


def _copies(program):
    """(H2D nodes, D2H nodes) of the emitted graph, from ExecuTorch's own graph."""
    gm = program.exported_program().graph_module
    h2d = [n for n in gm.graph.nodes if n.op == "call_function" and "_h2d_copy" in str(n.target)]
    d2h = [n for n in gm.graph.nodes if n.op == "call_function" and "_d2h_copy" in str(n.target)]
    return h2d, d2h


def _nbytes(node):
    spec = node.meta["spec"]
    return spec.allocated_memory if hasattr(spec, "allocated_memory") else None


def test_the_partitioner_is_executorchs_own(lowered_once):
    program = lowered_once("cuda-whole", BUILDS["whole"])
    from executorch.backends.cuda.cuda_partitioner import CudaPartitioner  # noqa: F401 (importable)

    gm = program.exported_program().graph_module
    delegates = [m for name, m in gm.named_children() if name.startswith("lowered_module")]
    assert [d.backend_id for d in delegates] == ["CudaBackend"]
    assert any(s.key == "target_device" and s.value == b"cuda:0" for s in delegates[0].compile_specs)


@pytest.mark.parametrize("program", ["whole", "kv-absorbed", "cond"], indirect=True)
def test_no_finding_when_the_partition_absorbs_everything(program):
    entry, pte = _both(program)
    assert entry == [] and pte == []


@pytest.mark.parametrize("program", ["cond"], indirect=True)
def test_torch_cond_is_claimed_whole_and_its_copies_counted(program):
    """The CudaPartitioner takes the `torch.cond` and both branches into one delegate: the
    only copies are the boundary's, and the transfer summary counts exactly those."""
    from xferlint.api import lint_report

    h2d, d2h = _copies(program)
    assert (len(h2d), len(d2h)) == (2, 1)
    for target in (program, load_pte_bytes(bytes(program.buffer), label="program.pte").view):
        traffic = lint_report(target).summary.transfers
        assert (traffic.h2d_copies, traffic.d2h_copies) == (len(h2d), len(d2h))


@pytest.mark.parametrize("program", ["softmax-split"], indirect=True)
def test_cpu_delegate_split_is_xf005_on_entry_point_and_pte(program):
    entry, pte = _both(program)
    for findings in (entry, pte):
        xf005 = [f for f in findings if f.code == "XF005"]
        assert len(xf005) == 1, [f.message for f in findings]
        assert "`XnnpackBackend`" in xf005[0].detail and "cuda:0" in xf005[0].detail
    assert "`aten._softmax`" in [f for f in entry if f.code == "XF005"][0].detail
    # bytes: the D2H into the XNNPACK delegate and the H2D out of it, as ExecuTorch planned them
    h2d, d2h = _copies(program)
    gm = program.exported_program().graph_module
    xnn = next(n for n in gm.graph.nodes if n.op == "call_function" and "call_delegate" in str(n.target)
               and getattr(gm, n.args[0].target).backend_id == "XnnpackBackend")
    into = [a for a in xnn.args[1:] if "_d2h_copy" in str(a.target)]
    back = [n for n in h2d if n.args[0].op == "call_function" and n.args[0].args[:1] == (xnn,)]
    expected = sum(_nbytes(n) for n in into + back)
    assert [f.bytes for f in entry if f.code == "XF005"] == [expected]
    assert [f.bytes for f in pte if f.code == "XF005"] == [expected]


@pytest.mark.parametrize("program", ["dynamic-split"], indirect=True)
def test_dynamic_sequence_length_gives_symbolic_bytes(program):
    entry, pte = _both(program)
    for findings in (entry, pte):
        xf005 = [f for f in findings if f.code == "XF005"]
        assert len(xf005) == 1
        assert xf005[0].bytes is None and "symbolic" in xf005[0].message


@pytest.mark.parametrize("program", ["kv-staged"], indirect=True)
def test_staged_kv_cache_is_xf011_with_both_directions(program):
    entry, pte = _both(program)
    cache_bytes = 1 * 64 * 32 * 4
    for findings in (entry, pte):
        xf011 = sorted((f for f in findings if f.code == "XF011"), key=lambda f: f.message)
        assert len(xf011) == 2, [f.message for f in findings]
        assert "`k_cache`" in xf011[0].message and "`v_cache`" in xf011[1].message
        for f in xf011:
            assert f.bytes >= 2 * cache_bytes  # the whole cache in and out, every call
            assert "tag_mutated_buffer" in f.detail and "skip_h2d_for_method_inputs" in f.detail
        assert not [f for f in findings if f.code == "XF006"]  # written buffers are not constants


@pytest.mark.parametrize("program", ["kv-staged"], indirect=True)
def test_xf011_bytes_are_the_copies_executorch_inserted(program):
    h2d, d2h = _copies(program)
    sig = program.exported_program().graph_signature
    buffers = set(sig.inputs_to_buffers)
    staged_in = [n for n in h2d if n.args[0].name in buffers]
    writes = [n for n in program.exported_program().graph_module.graph.nodes if "copy_" in str(n.target)]
    staged_out = [w.args[1] for w in writes]
    expected = sum(_nbytes(n) for n in staged_in + staged_out)
    entry, _ = _both(program)
    assert sum(f.bytes for f in entry if f.code == "XF011") == expected


def test_sample_models_kv_cache_locate_the_write(repo_root):
    import importlib.util
    import os

    spec = importlib.util.spec_from_file_location("kv_staged", os.path.join(repo_root, "sample_models", "kv_cache_staged.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    findings = [f for f in lint(module.program()) if f.code == "XF011"]
    assert len(findings) == 2
    assert all("index_put_" in (f.location.code or "") for f in findings)


def _skip_flags(alloc: bool):
    from executorch.exir import ExecutorchBackendConfig
    from executorch.exir.passes import MemoryPlanningPass
    from executorch.exir.passes.propagate_device_config import PropagateDeviceConfig

    return ExecutorchBackendConfig(
        memory_planning_pass=MemoryPlanningPass(alloc_graph_input=alloc, alloc_graph_output=alloc),
        propagate_device_config=PropagateDeviceConfig(skip_h2d_for_method_inputs=True,
                                                      skip_d2h_for_method_outputs=True))


BUILDS.update({
    "skip-planned": lambda: lower_cuda(DecoderBlock(), decoder_inputs(), backend_config=_skip_flags(True)),
    "skip-unplanned": lambda: lower_cuda(DecoderBlock(), decoder_inputs(), backend_config=_skip_flags(False)),
    "legacy": lambda: _legacy(),
})


def _legacy():
    from executorch.exir import ExecutorchBackendConfig

    return lower_cuda(DecoderBlock(), decoder_inputs(),
                      backend_config=ExecutorchBackendConfig(enable_non_cpu_memory_planning=False))


def _codes(findings, *codes):
    return sorted(f.code for f in findings if f.code in codes)


@pytest.mark.parametrize("program", ["skip-planned", "skip-unplanned", "legacy"], indirect=True)
def test_memory_plan_rules_agree_on_entry_point_and_pte(program, request):
    entry, pte = _both(program)
    assert _codes(entry, "XF007", "XF008", "XF010") == _codes(pte, "XF007", "XF008", "XF010")
    name = request.node.callspec.params["program"]
    expected = {"skip-planned": ["XF010", "XF010"], "skip-unplanned": [], "legacy": ["XF007", "XF008"]}[name]
    assert _codes(pte, "XF007", "XF008", "XF010") == expected


def _sample(repo_root, name):
    import importlib.util
    import os

    spec = importlib.util.spec_from_file_location(name, os.path.join(repo_root, "sample_models", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.program()


def test_a_delegate_input_points_at_the_op_inside_that_reads_it(repo_root, lowered_once):
    """The second H2D of `x` feeds the CUDA delegate after the softmax; inside it, the first op
    reading `x` is the residual add (`x = x + self.proj(...)`), not the delegate's last line."""
    program = lowered_once("sample-cpu-delegate", lambda: _sample(repo_root, "cpu_delegate_splits_partition"))
    (dup,) = [f for f in lint(program) if f.code == "XF004"]
    assert dup.location is not None and dup.location.code == "x = x + self.proj(attn @ v)"
    (split,) = [f for f in lint(program) if f.code == "XF005"]
    assert "torch.softmax" in split.location.code
