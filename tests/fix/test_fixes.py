"""What each fix does to real programs, read back from the fixed program's final graph.

Ground truth comes from the FX graphs and ExecuTorch's TensorSpecs, not from xferlint's
view: which et_copy nodes remain, what they read, who reads them, how big they are.
"""

from __future__ import annotations

import pytest
import torch

import xferlint
from xferlint.errors import FixError
from fixhelpers import copies, copy_signature, round_trip_pairs, spec_nbytes


def _names(nodes):
    return {n.name for n in nodes}


def test_round_trips_removed_exactly_as_upstream_elision(program, fixed):
    result = fixed("chain_off")
    assert {p.code for p in result.applied} == {"XF001"}
    assert copy_signature(result.program) == copy_signature(program("chain_on"))
    assert not round_trip_pairs(result.program)


def test_bytes_saved_is_the_size_of_the_removed_copies(program, fixed):
    before, result = program("chain_off"), fixed("chain_off")
    kept = _names(copies(result.program)["h2d"] + copies(result.program)["d2h"])
    removed = [n for n in copies(before)["h2d"] + copies(before)["d2h"] if n.name not in kept]
    assert removed, "the chain has round trips to remove"
    assert result.copies_removed == len(removed)
    assert result.bytes_saved == sum(spec_nbytes(n) for n in removed)
    (xf001,) = result.by_rule()
    assert (xf001.code, xf001.copies, xf001.nbytes) == ("XF001", len(removed), result.bytes_saved)
    assert any("XF001 redundant-round-trip: fixed 2, removed 4 copies" in line for line in result.summary_lines())


def test_removed_copies_take_their_buffers_with_them(program, fixed):
    def allocs(p):
        return sum(1 for n in p.exported_program().graph_module.graph.nodes if "memory.alloc" in str(n.target)
                   or getattr(n.target, "__name__", "") == "alloc")

    assert allocs(program("chain_off")) - allocs(fixed("chain_off").program) == fixed("chain_off").copies_removed


def test_duplicate_input_copy_is_shared_on_stock_executorch(program, fixed):
    before, result = program("shared_stock"), fixed("shared_stock")
    x_copies = [n for n in copies(before)["h2d"] if n.args[0].name == "x"]
    assert len(x_copies) == 2, "stock ExecuTorch 1.5.1 copies x once per delegate"
    after = [n for n in copies(result.program)["h2d"] if n.args[0].name == "x"]
    assert [n.name for n in after] == [x_copies[0].name], "the first copy is kept"
    readers = {u.name for u in after[0].users}
    assert readers == {u.name for c in x_copies for u in c.users}, "both delegates read the kept copy"
    assert [p.code for p in result.applied] == ["XF004"]
    assert result.bytes_saved == spec_nbytes(x_copies[1])


def test_fixed_programs_verify(fixed):
    for name in ("chain_off", "shared_stock", "host_reader_off", "returned_off", "dead_d2h"):
        result = fixed(name)
        assert result.changed, name
        gm = result.program.exported_program().graph_module
        gm.graph.lint()
        left = xferlint.lint(result.program, select=["XF001", "XF003", "XF004"])
        assert left == [], f"{name}: {[f.message for f in left]}"
        assert not [f for f in result.remaining if f.code in ("XF001", "XF003", "XF004")]
        again = xferlint.fix(result.program)
        assert not again.changed, f"{name}: a second fix changed {[p.summary for p in again.applied]}"


def test_cross_device_copies_are_kept(program, fixed):
    before, result = program("shared_two_devices"), fixed("shared_two_devices")
    cross = [pair for pair in round_trip_pairs(before) if pair[2] != pair[3]]
    assert cross, "cuda:1 -> host -> cuda:0 is staged through host"
    assert [pair for pair in round_trip_pairs(result.program) if pair[2] != pair[3]] == cross
    xf002 = [f.nodes for f in xferlint.lint(before, select=["XF002"])]
    assert xf002 and [f.nodes for f in xferlint.lint(result.program, select=["XF002"])] == xf002
    x_devices = sorted(str(n.meta["spec"].device_index) for n in copies(result.program)["h2d"] if n.args[0].name == "x")
    assert x_devices == ["0", "1"], "x still goes to cuda:0 once and to cuda:1 once"


def test_d2h_that_feeds_host_code_stays(program, fixed):
    result = fixed("host_reader_off")
    d2h = copies(result.program)["d2h"]
    feeding_cos = [n for n in d2h if any("cos" in str(u.target) for u in n.users)]
    assert len(feeding_cos) == 1, "the D2H that cos reads is still there"
    assert all("cos" in str(u.target) for u in feeding_cos[0].users), "and only host code reads it now"
    assert not round_trip_pairs(result.program)


def test_d2h_that_is_a_method_output_stays(program, fixed):
    before, result = program("returned_off"), fixed("returned_off")
    output = next(n for n in reversed(result.program.exported_program().graph_module.graph.nodes) if n.op == "output")
    returned = [a for a in output.args[0] if "_d2h_copy" in str(a.target)]
    before_output = next(n for n in reversed(before.exported_program().graph_module.graph.nodes) if n.op == "output")
    assert [a.name for a in returned] == [a.name for a in before_output.args[0]], "outputs unchanged"
    assert not round_trip_pairs(result.program), "the round trip into sin is gone"


def test_dead_d2h_is_removed(program, fixed):
    before, result = program("dead_d2h"), fixed("dead_d2h")
    dead = [n.name for n in copies(before)["d2h"] if not n.users]
    assert dead
    assert [p.code for p in result.applied] == ["XF003"] * len(dead)
    assert not _names(copies(result.program)["d2h"]) & set(dead)
    assert all(n.users for n in copies(result.program)["d2h"])


def test_nothing_to_fix_returns_the_program_unchanged(program, fixed):
    result = fixed("chain_on")
    assert not result.changed and result.program is program("chain_on")
    assert result.summary_lines() == ["chain_on: nothing to fix"]


def test_selection_limits_the_fixes(program, fixed):
    only_dups = fixed("chain_off", select=["XF004"])
    assert not only_dups.changed and only_dups.program is program("chain_off")
    assert {f.code for f in xferlint.lint(only_dups.program, select=["XF001"])} == {"XF001"}


def test_edge_program_is_lowered_with_the_fix_pass_and_left_alone(program):
    edge = program("shared_edge")
    result = xferlint.fix(edge)
    assert type(result.program).__name__ == "ExecutorchProgramManager"
    assert [p.code for p in result.applied] == ["XF004"]
    assert len([n for n in copies(result.program)["h2d"] if n.args[0].name == "x"]) == 1
    graph = edge.exported_program().graph_module.graph
    assert not any("et_copy" in str(n.target) for n in graph.nodes), "the edge program was not lowered in place"


def test_fixing_an_exported_program_is_a_clear_error():
    exported = torch.export.export(torch.nn.ReLU(), (torch.randn(2),))
    with pytest.raises(FixError, match="ExportedProgram is fixed through its archive: torch.export.save"):
        xferlint.fix(exported, name="relu")


def test_replanning_keeps_inputs_and_outputs_unplanned_when_they_were(lowered_once):
    """skip_h2d_for_method_inputs / skip_d2h_for_method_outputs need inputs and outputs
    left out of the memory plan; the re-plan after a fix reads that off the old plan."""
    from executorch.exir import ExecutorchBackendConfig
    from executorch.exir.passes import MemoryPlanningPass
    from executorch.exir.passes.propagate_device_pass import PropagateDeviceConfig

    from fixhelpers import Chain, inputs
    from xferlint.testing import lower

    def build():
        config = ExecutorchBackendConfig(
            propagate_device_config=PropagateDeviceConfig(skip_h2d_for_method_inputs=True,
                                                          skip_d2h_for_method_outputs=True),
            memory_planning_pass=MemoryPlanningPass(alloc_graph_input=False, alloc_graph_output=False))
        torch.manual_seed(0)
        return lower(Chain(), inputs(), ["cuda:0"], elide=False, backend_config=config)

    before = lowered_once("fix:skip-io", build)
    result = xferlint.fix(before)
    assert [p.code for p in result.applied] == ["XF001", "XF001"]
    gm = result.program.exported_program().graph_module
    user_inputs = set(result.program.exported_program().graph_signature.user_inputs)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder" and n.name in user_inputs]
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    assert placeholders and all(n.meta["spec"].mem_id is None for n in placeholders)
    assert all(a.meta["spec"].mem_id is None for a in output.all_input_nodes)
    assert any("alloc_graph_input=False, alloc_graph_output=False" in note for note in result.notes)
    assert xferlint.lint(result.program, select=["XF001", "XF003", "XF004"]) == []


def test_every_method_of_a_multi_method_program_is_fixed(lowered_once):
    import copy

    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

    from fixhelpers import Chain, SharedInput, inputs
    from xferlint.testing import DevicePartitioner, upstream_elision

    def build():
        torch.manual_seed(0)
        methods = {"chain": torch.export.export(Chain(), inputs()),
                   "shared": torch.export.export(SharedInput(), inputs())}
        return to_edge_transform_and_lower(methods, partitioner=[DevicePartitioner(["cuda:0"])],
                                           compile_config=EdgeCompileConfig(_check_ir_validity=False))

    edge = lowered_once("fix:multi-edge", build)
    with upstream_elision(False):
        lowered = copy.deepcopy(edge).to_executorch()
    result = xferlint.fix(lowered)
    assert {(p.method, p.code) for p in result.applied} == {("chain", "XF001"), ("shared", "XF001"),
                                                            ("shared", "XF004")}
    assert result.program.methods == {"chain", "shared"}
    assert xferlint.lint(result.program, select=["XF001", "XF003", "XF004"]) == []
    through_pass = xferlint.fix(edge)
    assert [(p.method, p.code) for p in through_pass.applied] == [("shared", "XF004")]


def test_fixing_leaves_the_input_program_alone():
    """The fix works on a copy: the input's graph, memory plan and bytes stay as they were
    (FX copies node metadata shallowly, so re-planning a copy could rewrite the input's
    TensorSpecs)."""
    from fixhelpers import Chain, inputs
    from xferlint.testing import lower

    torch.manual_seed(0)
    before = lower(Chain(), inputs(), ["cuda:0"], elide=False)

    def snapshot():
        specs = [(n.name, n.meta.get("spec")) for n in before.exported_program().graph_module.graph.nodes]
        return [(name, getattr(s, "mem_id", None), getattr(s, "mem_offset", None), getattr(s, "lifetime", None))
                for name, s in specs]

    plan, data = snapshot(), bytes(before.buffer)
    result = xferlint.fix(before)
    assert result.changed
    assert snapshot() == plan
    assert bytes(before.buffer) == data
