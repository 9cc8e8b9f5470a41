"""The checks only a `.pte` can make, and XF007 on `.pte` files.

- XF008 planned-device-mismatch: ExecuTorch's legacy device mode tags delegate tensors
  cuda:0 but plans every buffer on the host; the memory plan (`allocation_info`,
  `non_const_buffer_device`) is in the `.pte` and in the ExecutorchProgramManager that emitted it.
- XF010 planned-device-io: `skip_h2d_for_method_inputs` / `skip_d2h_for_method_outputs`
  with the default memory planning (inputs and outputs left on the device *and* planned).
- a device delegate inside a `cond` branch or `map` body fed host tensors: XF007 reports
  it on the `.pte` exactly as on the graph, located by instruction.
"""

from __future__ import annotations

from collections import Counter

import pytest

from xferlint.pipeline import analyze, load_program
from xferlint.frontends.entrypoints import ProgramObject
from xferlint.frontends.pte.view import load_pte_bytes
from xferlint.selection import select_rules


def _pte(pte_bytes, name, codes):
    view = load_pte_bytes(pte_bytes(name), label=f"{name}.pte").view
    return analyze(view, select_rules(select=codes))


def _graph(pte_program, name, codes):
    view = load_program(ProgramObject(name, name, pte_program(name), None)).view
    return analyze(view, select_rules(select=codes))


def test_legacy_mode_delegate_outputs_planned_on_the_host(pte_bytes, pte_program):
    findings = _pte(pte_bytes, "addsin-legacy", ["XF008"])
    assert len(findings) == 2  # both cuda:0 delegates write into host-planned buffers
    for f in findings:
        assert f.severity.value == "error"
        assert "delegate" in f.nodes[0] and f.devices[0] == "cuda:0"
        assert "planned in buffer" in f.detail and "on cpu" in f.detail
        assert "enable_non_cpu_memory_planning=True" in f.detail
    # the ExecutorchProgramManager carries the same plan: the same findings from its entry point
    assert len(_graph(pte_program, "addsin-legacy", ["XF008"])) == 2


def test_legacy_mode_is_not_blamed_on_skip_flags(pte_bytes, pte_program):
    """Legacy device tags are XF007's (its legacy explanation), never XF010's skip flags."""
    assert _pte(pte_bytes, "addsin-legacy", ["XF010"]) == []
    assert _graph(pte_program, "addsin-legacy", ["XF010"]) == []
    for f in _pte(pte_bytes, "addsin-legacy", ["XF008"]):
        assert "no `non_const_buffer_device`" in f.detail


def test_device_memory_planning_is_clean(pte_bytes):
    for name in ("addsin-noelide", "mixed-two-devices", "multi-output", "skip-io-unplanned", "two-methods"):
        assert _pte(pte_bytes, name, ["XF008", "XF010"]) == [], name


def test_device_inputs_and_outputs_that_are_also_planned(pte_bytes, pte_program):
    findings = _pte(pte_bytes, "skip-io-planned", ["XF010"])
    roles = sorted(f.steps[0].role for f in findings)
    assert roles == ["input", "input", "output"]
    for f in findings:
        assert "alloc_graph_input=False" in f.detail or "alloc_graph_output=False" in f.detail
        assert "memcpy" in f.detail
    assert _pte(pte_bytes, "skip-io-unplanned", ["XF010"]) == []
    graph = _graph(pte_program, "skip-io-planned", ["XF010"])
    assert sorted(f.steps[0].role for f in graph) == roles  # an entry point gives the .pte's findings
    assert _graph(pte_program, "skip-io-unplanned", ["XF010"]) == []


@pytest.mark.parametrize("name", ["cond-nested", "map-nested", "addsin-legacy"])
def test_device_mismatch_on_pte_matches_the_graph(pte_bytes, pte_program, name):
    pte = _pte(pte_bytes, name, ["XF007"])
    graph = _graph(pte_program, name, ["XF007"])
    assert pte and len(pte) == len(graph)
    assert Counter(f.severity for f in pte) == Counter(f.severity for f in graph)


def test_delegate_in_a_loop_body_fed_host_tensors(pte_bytes):
    (finding,) = _pte(pte_bytes, "map-nested", ["XF007"])
    consumer = finding.nodes[-1]
    assert consumer.startswith("instr ") and "delegate" in consumer
    assert "control-flow body `loop" in finding.detail
    assert "from cpu" in finding.detail
