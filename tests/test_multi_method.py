"""Multi-method programs, as LLM exports lower them: `to_edge_transform_and_lower({"prefill":
ep1, "decode": ep2}, ...)` over one module whose KV cache both methods write, with
ExecuTorch's real CudaPartitioner (xferlint.testing.cuda). Every method is linted, findings
name their method, the transfer summary is per method, and the entry point and its `.pte`
agree. Legacy device mode is reported once per method (XF007), never as skip flags (XF010).
"""

from __future__ import annotations

import pytest
import torch

from xferlint.api import lint, lint_report
from xferlint.frontends.pte.view import load_pte_bytes
from xferlint.testing.cuda import lower_cuda
from xferlint.testing.decoder import DecoderBlock, KVCacheStep, prefill_decode


def _config(skip: bool = False, **options):
    """LLM-export options (mutable buffer names); `skip`: the skip flags with planned graph I/O."""
    from executorch.exir import ExecutorchBackendConfig
    from executorch.exir.passes.propagate_device_config import PropagateDeviceConfig

    if skip:
        options["propagate_device_config"] = PropagateDeviceConfig(skip_h2d_for_method_inputs=True,
                                                                   skip_d2h_for_method_outputs=True)
    return ExecutorchBackendConfig(emit_mutable_buffer_names=True, **options)


def _decoder_methods():
    module = DecoderBlock()
    g = torch.Generator().manual_seed(0)
    return {"prefill": (module, (torch.randn(1, 8, 32, generator=g),)),
            "decode": (module, (torch.randn(1, 1, 32, generator=g),))}


BUILDS = {
    "kv-staged": lambda: lower_cuda(None, (), methods=prefill_decode(KVCacheStep()), absorb_mutable_buffers=False,
                                    backend_config=_config()),
    "kv-absorbed": lambda: lower_cuda(None, (), methods=prefill_decode(KVCacheStep()), backend_config=_config()),
    "legacy": lambda: lower_cuda(None, (), methods=_decoder_methods(),
                                 backend_config=_config(enable_non_cpu_memory_planning=False)),
    "skip-planned": lambda: lower_cuda(None, (), methods=_decoder_methods(), backend_config=_config(skip=True)),
}


@pytest.fixture
def program(lowered_once, request):
    return lowered_once(f"multi-method-{request.param}", BUILDS[request.param])


def _pte(program):
    return load_pte_bytes(bytes(program.buffer), label="program.pte").view


def _summary(findings):
    return sorted((f.method, f.code, f.bytes) for f in findings)


def _traffic(report):
    return [(m.method, m.h2d_copies, m.h2d_bytes, m.d2h_copies, m.d2h_bytes, m.flagged_bytes)
            for m in report.summary.transfers.methods]


@pytest.mark.parametrize("program", ["kv-staged"], indirect=True)
def test_every_method_is_linted_the_same_on_entry_point_and_pte(program):
    entry, pte = lint(program), lint(_pte(program))
    cache = 64 * 32 * 4  # one (1, 64, 32) float cache, each way
    expected = sorted((m, "XF011", 2 * cache) for m in ("prefill", "decode") for _ in ("k_cache", "v_cache"))
    assert _summary(entry) == _summary(pte) == expected
    for findings in (entry, pte):
        assert sorted((f.method, f.message.split("`")[1]) for f in findings) == sorted(
            (m, b) for m in ("prefill", "decode") for b in ("k_cache", "v_cache"))
    entry_traffic, pte_traffic = _traffic(lint_report(program)), _traffic(lint_report(_pte(program)))
    assert [t[0] for t in entry_traffic] == ["decode", "prefill"]
    assert entry_traffic == pte_traffic
    assert all(t[5] == 4 * cache for t in entry_traffic)  # both caches, both ways, per method


@pytest.mark.parametrize("program", ["kv-absorbed"], indirect=True)
def test_absorbed_state_is_clean_in_every_method(program):
    assert lint(program) == [] and lint(_pte(program)) == []
    assert [m.name for m in _pte(program).methods] == ["decode", "prefill"]


@pytest.mark.parametrize("program", ["legacy"], indirect=True)
def test_legacy_mode_is_one_xf007_per_method_and_no_xf010(program):
    for findings in (lint(program), lint(_pte(program))):
        legacy = [f for f in findings if f.code == "XF007"]
        assert sorted(f.method for f in legacy) == ["decode", "prefill"]
        assert all("enable_non_cpu_memory_planning" in (f.detail or "") + f.message for f in legacy)
        assert not [f for f in findings if f.code == "XF010"]
        assert not any("skip_h2d" in (f.detail or "") + f.message or "non_const_buffer_device`:" in (f.detail or "") + f.message for f in legacy)
    assert _summary(lint(program)) == _summary(lint(_pte(program)))


@pytest.mark.parametrize("program", ["skip-planned"], indirect=True)
def test_skip_flags_with_planned_io_are_xf010_in_every_method(program):
    entry, pte = lint(program), lint(_pte(program))
    assert _summary(entry) == _summary(pte)
    assert sorted((f.method, f.code) for f in pte) == [("decode", "XF010")] * 2 + [("prefill", "XF010")] * 2
