"""The torch-free `.pte` reader and frontend, checked against ExecuTorch's own deserializer.

Every program here is lowered by ExecuTorch (`to_edge_transform_and_lower` +
`to_executorch`); its `.pte` bytes are read by xferlint and, independently, by
`executorch.exir._serialize._program.deserialize_pte_binary`, and every field the view is
built from must agree. The view itself must carry what the issue lists: values with sizes,
dtypes, declared devices and planned buffers, the five instruction kinds, operators,
delegates with compile specs, method inputs and outputs, and every method.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys

import pytest

from xferlint.analyzer.lattice import Device
from xferlint.analyzer.view import OpKind
from xferlint.frontends.pte.view import load_pte_bytes, load_pte_file
from xferlint.frontends.pte import program as pp

READER_PROGRAMS = ["addsin-noelide", "mixed-two-devices", "multi-output", "linear-stack", "cond-nested",
                   "map-nested", "two-methods", "skip-io-planned"]
CUDA0 = Device("cuda", 0)


def _reference(data: bytes):
    from executorch.exir._serialize._program import deserialize_pte_binary

    return deserialize_pte_binary(data).program


def _et_device(extra) -> tuple[int, int]:
    if extra is None:
        return (0, 0)
    return (int(extra.device_type), int(extra.device_index))


@pytest.mark.parametrize("name", READER_PROGRAMS)
def test_decoded_program_matches_executorch_deserializer(pte_bytes, name):
    data = pte_bytes(name)
    ours = pp.read_program(data)
    ref = _reference(data)
    assert [p.name for p in ours.plans] == [p.name for p in ref.execution_plan]
    for plan, ref_plan in zip(ours.plans, ref.execution_plan):
        assert plan.inputs == tuple(ref_plan.inputs)
        assert plan.outputs == tuple(ref_plan.outputs)
        assert plan.operators == tuple((o.name, o.overload) for o in ref_plan.operators)
        assert plan.buffer_sizes == tuple(ref_plan.non_const_buffer_sizes)
        ref_devices = tuple((d.buffer_idx, int(d.device_type), d.device_index)
                            for d in (ref_plan.non_const_buffer_device or []))
        assert plan.buffer_devices == ref_devices
        assert [(d.id, d.compile_specs) for d in plan.delegates] == [
            (d.id, tuple((s.key, bytes(s.value)) for s in d.compile_specs)) for d in ref_plan.delegates
        ]
        assert len(plan.values) == len(ref_plan.values)
        for ev, ref_ev in zip(plan.values, ref_plan.values):
            kind = type(ref_ev.val).__name__
            assert ev.kind_name == {"Tensor": "tensor", "Int": "int", "Bool": "bool", "Double": "double",
                                    "Null": "null", "String": "string", "IntList": "int_list",
                                    "DoubleList": "double_list", "BoolList": "bool_list",
                                    "TensorList": "tensor_list",
                                    "OptionalTensorList": "optional_tensor_list"}[kind]
            if kind == "Tensor":
                t, r = ev.tensor, ref_ev.val
                assert t.sizes == tuple(r.sizes)
                assert t.scalar_type == int(r.scalar_type)
                assert t.data_buffer_idx == r.data_buffer_idx
                alloc = r.allocation_info
                assert (t.memory_id, t.memory_offset) == (
                    (alloc.memory_id, alloc.memory_offset_low | (alloc.memory_offset_high << 32)) if alloc else (None, None)
                )
                assert (t.device_type, t.device_index) == _et_device(r.extra_tensor_info)
            elif kind in ("Int", "Bool"):
                assert ev.scalar == getattr(ref_ev.val, "int_val", getattr(ref_ev.val, "bool_val", None))
            elif kind in ("TensorList", "OptionalTensorList"):
                assert ev.items == tuple(ref_ev.val.items)
        assert len(plan.chains) == len(ref_plan.chains)
        for chain, ref_chain in zip(plan.chains, ref_plan.chains):
            assert len(chain.instructions) == len(ref_chain.instructions)
            for ins, ref_ins in zip(chain.instructions, ref_chain.instructions):
                args = ref_ins.instr_args
                kind = type(args).__name__
                if kind == "KernelCall":
                    assert (ins.kind, ins.index, ins.args) == (pp.KERNEL, args.op_index, tuple(args.args))
                elif kind == "DelegateCall":
                    assert (ins.kind, ins.index, ins.args) == (pp.DELEGATE, args.delegate_index, tuple(args.args))
                elif kind == "MoveCall":
                    assert (ins.kind, ins.move_from, ins.move_to) == (pp.MOVE, args.move_from, args.move_to)
                elif kind == "JumpFalseCall":
                    assert (ins.kind, ins.cond, ins.destination) == (
                        pp.JUMP_FALSE, args.cond_value_index, args.destination_instruction)
                else:
                    assert (ins.kind, ins.free) == (pp.FREE, args.value_index)


@pytest.mark.parametrize("name", READER_PROGRAMS)
def test_fast_path_reads_what_the_generated_accessors_read(pte_bytes, name):
    data = pte_bytes(name)
    assert pp.read_program(data) == pp.read_program(data, fast=False)


def test_stack_traces_are_read_as_the_generated_accessors_read_them(pte_bytes):
    """Frames (`emit_stacktrace=True`) through the pinned schema's tables and through the
    generated classes: the same file, line, function and code, one list per instruction."""
    data = pte_bytes("host-stacktrace")
    ours = pp.read_program(data)
    assert ours == pp.read_program(data, fast=False)
    chain = ours.plans[0].chains[0]
    assert chain.stacktrace is not None and len(chain.stacktrace) == len(chain.instructions)
    frames = [f for frames in chain.stacktrace for f in frames]
    assert any(f.filename.endswith("models.py") and f.lineno > 0 and f.context for f in frames)


def test_stack_traces_come_through_the_compiled_tables_and_each_line_is_one_location(monkeypatch):
    """A traced program's frame lists are read by the compiled tables (on the pinned schema
    the generated accessors read none of them), as the generated accessors read them; in the
    view, the instructions of one model line share one SourceLocation."""
    from xferlint.testing import synthetic_pte as sp

    data = sp.traced_loops(50)  # 500 instructions, the loop body's ten lines again in every loop
    generated_reads = []
    real = pp._Decoder.chain_stacktrace
    monkeypatch.setattr(pp._Decoder, "chain_stacktrace",
                        lambda self, c, n: generated_reads.append(n) or real(self, c, n))
    ours = pp.read_program(data)
    assert generated_reads == []
    assert ours == pp.read_program(data, fast=False)
    assert generated_reads == [500]
    method = load_pte_bytes(data, label="traced.pte").view.methods[0]
    located = [(int(n.name.split()[1]), n.location) for n in method.nodes if n.name.startswith("instr ")]
    assert len(located) == 500
    assert all(loc.file == sp.TRACED_FILE and loc.line == 20 + k % 10 and loc.code == f"x = self.step{k % 10}(x)"
               for k, loc in located)
    assert len({id(loc) for _, loc in located}) == 10


def test_on_another_schema_stack_traces_are_compared_once_with_the_generated_accessors(monkeypatch):
    """Where the installed schema is not the pinned one, the compiled stack-trace reader is
    compared with the generated accessors on the first program's frames (then trusted)."""
    from xferlint.frontends.pte import schema
    from xferlint.testing import synthetic_pte as sp

    monkeypatch.setattr(schema, "_PINNED", [False])
    monkeypatch.setattr(pp, "_AGREED", set())
    data = sp.traced_short_loops(40)
    assert pp.read_program(data) == pp.read_program(data, fast=False)
    assert "stacktrace" in pp.self_checked()[0]


def _stacktrace_spans(data: bytes) -> list[tuple[int, int]]:
    """The [start, end) byte ranges of a one-plan program's stack trace: its vector, each
    frame list and frame (table and vtable) and each string. The serializer interleaves them
    with the rest of the program."""
    from xferlint.frontends.pte.schema import generated

    chain = generated().Program.Program.GetRootAs(data, 0).ExecutionPlan(0).Chains(0)
    spans = []

    def table(tab):
        vtable = tab.Pos - struct.unpack_from("<i", data, tab.Pos)[0]
        vlen, size = struct.unpack_from("<HH", data, vtable)
        spans.extend([(tab.Pos, tab.Pos + size), (vtable, vtable + vlen)])

    start = chain._tab.Vector(chain._tab.Offset(10))
    spans.append((start - 4, start + 4 * chain.StacktraceLength()))
    for k in range(chain.StacktraceLength()):
        frames = chain.Stacktrace(k)
        table(frames._tab)
        items = frames._tab.Vector(frames._tab.Offset(4))
        spans.append((items - 4, items + 4 * frames.ItemsLength()))
        for j in range(frames.ItemsLength()):
            frame = frames.Items(j)
            table(frame._tab)
            for slot in (4, 8, 10):
                at = frame._tab.Pos + frame._tab.Offset(slot)
                string = at + struct.unpack_from("<I", data, at)[0]
                spans.append((string, string + 4 + struct.unpack_from("<I", data, string)[0]))
    return spans


def _mutate_within(data: bytes, spans: list[tuple[int, int]], rnd) -> bytes:
    """`data` with one to three stack-trace bytes or words changed: a bit flipped, a byte set,
    or an aligned word (an offset, a count, a length) overwritten with an interesting value."""
    from pte_fuzz import INTERESTING

    buf = bytearray(data)
    for _ in range(rnd.randint(1, 3)):
        start, end = rnd.choice(spans)
        i = rnd.randrange(start, end)
        how = rnd.random()
        if how < 0.3:
            buf[i] ^= 1 << rnd.randrange(8)
        elif how < 0.5:
            buf[i] = rnd.randrange(256)
        else:
            word = min(i & ~3, len(buf) - 4)
            struct.pack_into("<I", buf, word, rnd.choice(INTERESTING) if rnd.random() < 0.7 else rnd.getrandbits(32))
    return bytes(buf)


def test_mutated_stack_traces_are_read_as_the_generated_accessors_read_them(pte_bytes):
    """Frames made corrupt (a string or vector offset, a length, a vtable, a count changed,
    bits flipped in the stack trace's bytes): the compiled tables read the same program as
    the generated accessors, or both refuse the file."""
    import random

    from xferlint.frontends.pte.container import PteFormatError
    from xferlint.testing import synthetic_pte as sp

    def read(data: bytes, fast: bool):
        try:
            return pp.read_program(data, fast=fast)
        except PteFormatError:
            return "refused"

    sources = [sp.traced_short_loops(20), pte_bytes("host-stacktrace")]
    spans = [_stacktrace_spans(data) for data in sources]
    rnd = random.Random(20261206)
    outcomes = set()
    for case in range(600):
        mutant = _mutate_within(sources[case % 2], spans[case % 2], rnd)
        ours = read(mutant, True)
        assert ours == read(mutant, False), case
        outcomes.add("refused" if ours == "refused" else ours.plans[0].chains[0].stacktrace is not None)
    assert outcomes == {"refused", True, False}  # refused; read with frames; frames dropped


def test_view_values_carry_sizes_dtypes_devices_and_plan(pte_bytes):
    data = pte_bytes("addsin-noelide")
    ref = _reference(data).execution_plan[0]
    method = load_pte_bytes(data, label="m.pte").view.methods[0]
    device_buffers = {d.buffer_idx for d in ref.non_const_buffer_device}
    assert method.buffer_devices[next(iter(device_buffers))] == CUDA0
    assert all(method.buffer_devices[i].is_host for i in range(len(ref.non_const_buffer_sizes)) if i not in device_buffers)
    for i, ev in enumerate(ref.values):
        value = method.values[f"v{i}"]
        t = ev.val
        assert value.tensor.shape == tuple(t.sizes)
        assert value.tensor.dtype == "float32"
        assert value.tensor.nbytes == 4 * 4 * 4
        expected = CUDA0 if t.extra_tensor_info is not None else Device("cpu")
        assert value.declared_device == expected
        assert value.placement.buffer == t.allocation_info.memory_id
        assert value.placement.offset == t.allocation_info.memory_offset_low
        # the declared device and the planned buffer's device agree in ExecuTorch's output
        assert method.buffer_devices[value.placement.buffer] == value.declared_device
    assert method.inputs == tuple(f"v{i}" for i in ref.inputs)
    assert method.outputs == tuple(f"v{i}" for i in ref.outputs)


def test_instructions_become_nodes_with_operands_and_results(pte_bytes):
    method = load_pte_bytes(pte_bytes("addsin-noelide")).view.methods[0]
    kinds = [n.kind for n in method.nodes]
    assert kinds == [OpKind.INPUT, OpKind.INPUT, OpKind.H2D, OpKind.H2D, OpKind.DELEGATE, OpKind.D2H,
                     OpKind.H2D, OpKind.DELEGATE, OpKind.D2H]
    h2d, delegate = method.nodes[2], method.nodes[4]
    assert h2d.name == "instr 0 (et_copy::_h2d_copy.out)"
    assert h2d.target == "et_copy._h2d_copy.out"
    assert h2d.inputs == ("v0",) and h2d.outputs == ("v2",) and h2d.device == CUDA0
    # a delegate's args are inputs then outputs; the split comes from what is fresh
    assert delegate.inputs == ("v2", "v3") and delegate.outputs == ("v4",)
    assert delegate.device == CUDA0
    assert delegate.delegate.backend == "BackendWithCompilerDemo"
    assert ("target_device", "cuda:0") in delegate.delegate.compile_specs
    assert delegate.name == "instr 2 (delegate 0: BackendWithCompilerDemo)"


def test_multi_output_delegates_split_inputs_from_outputs(pte_program, pte_bytes):
    from xferlint.pipeline import load_program
    from xferlint.frontends.entrypoints import ProgramObject

    graph = load_program(ProgramObject("g", "g", pte_program("multi-output"), None)).view.methods[0]
    method = load_pte_bytes(pte_bytes("multi-output")).view.methods[0]
    graph_arity = [(len(n.inputs), len(n.outputs)) for n in graph.nodes if n.kind == OpKind.DELEGATE]
    pte_arity = [(len(n.inputs), len(n.outputs)) for n in method.nodes if n.kind == OpKind.DELEGATE]
    assert pte_arity == graph_arity
    assert any(outs > 1 for _, outs in pte_arity)


def test_control_flow_instructions_are_read(pte_bytes):
    cond = load_pte_bytes(pte_bytes("cond-nested")).view.methods[0]
    assert sum(n.target == "jump_false" for n in cond.nodes) == 2
    moves = [n for n in cond.nodes if n.kind == OpKind.MOVE]
    assert len(moves) == 2 and len({m.outputs[0] for m in moves}) == 1  # both branches write the result
    assert any(n.kind == OpKind.DELEGATE for n in cond.nodes)
    loop = load_pte_bytes(pte_bytes("map-nested")).view.methods[0]
    jump = next(n for n in loop.nodes if n.target == "jump_false")
    # a backward jump: the map body is a loop, its delegates sit in it
    assert any(s < jump.index for s in loop.cfg.successors[jump.index])
    delegates = [n for n in loop.nodes if n.kind == OpKind.DELEGATE]
    assert delegates and all(n.index in loop.cfg.loop_nodes for n in delegates)
    assert all(n.scope.startswith("loop") for n in delegates)


def test_every_method_is_read_and_linted(pte_file, pte_program):
    from xferlint.pipeline import analyze, check_paths, load_program
    from xferlint.frontends.entrypoints import ProgramObject
    from xferlint.selection import select_rules

    path = pte_file("two-methods")
    view = load_pte_file(path).view
    assert sorted(m.name for m in view.methods) == ["encode", "forward"]
    run = check_paths([path], select_rules())
    assert not run.errors
    assert sorted({f.method for f in run.findings}) == ["encode", "forward"]
    graph = load_program(ProgramObject("g", "g", pte_program("two-methods"), None)).view
    expected = sorted((f.method, f.code) for f in analyze(graph, select_rules()))
    assert sorted((f.method, f.code) for f in run.findings) == expected


def test_findings_locate_method_and_instruction(pte_file, capsys):
    from xferlint.cli import main

    path = pte_file("addsin-noelide")
    code = main(["check", path, "--select", "XF001", "--isolated"])
    out = capsys.readouterr().out
    assert code == 1
    # `input:method:instr N:`, N the first copy's instruction (the D2H that leaves the device)
    assert f"{path}:forward:instr 3: XF001" in out


_TORCH_FREE = r"""
import sys
from xferlint.cli import main
code = main(["check", sys.argv[1], "--isolated", "--format", "json"])
heavy = sorted(m for m in sys.modules if m.split(".")[0] == "torch" or m in ("executorch.exir", "executorch.exir._serialize"))
sys.stderr.write("HEAVY=" + ",".join(heavy[:5]) + "\n")
sys.exit(10 + code)
"""


def test_cli_lint_of_a_pte_imports_no_torch(pte_file):
    done = subprocess.run([sys.executable, "-c", _TORCH_FREE, pte_file("addsin-noelide")],
                          capture_output=True, text=True, timeout=120)
    assert "HEAVY=\n" in done.stderr, done.stderr[-800:]
    assert done.returncode == 11, done.stderr[-800:]  # exit 1: one finding
    assert '"code": "XF001"' in done.stdout


_THEN_EXECUTORCH = r"""
import sys
from xferlint.frontends.pte.view import load_pte_file
data = open(sys.argv[1], "rb").read()
load_pte_file(sys.argv[1])
assert "torch" not in sys.modules
from executorch.exir._serialize._program import deserialize_pte_binary
from executorch.exir import to_edge_transform_and_lower  # the real package, not a stand-in
program = deserialize_pte_binary(data).program
print(len(program.execution_plan[0].chains[0].instructions))
"""


def test_executorch_still_imports_after_the_torch_free_read(pte_file):
    """The reader loads ExecuTorch's generated modules under stand-in parents; a later real
    `import executorch.exir` in the same process must work and reuse them."""
    done = subprocess.run([sys.executable, "-c", _THEN_EXECUTORCH, pte_file("addsin-noelide")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-1500:]
    assert done.stdout.strip().splitlines()[-1] == "7"


def test_directory_of_pte_files_is_linted(pte_file, pte_dir):
    from xferlint.pipeline import check_paths
    from xferlint.selection import select_rules

    for name in ("addsin-noelide", "addsin-cross", "addsin-elided"):
        pte_file(name)
    run = check_paths([pte_dir], select_rules(select=["XF001", "XF002"]))
    assert not run.errors
    by_input = {os.path.basename(f.input): f.code for f in run.findings}
    assert by_input.get("addsin-noelide.pte") == "XF001"
    assert by_input.get("addsin-cross.pte") == "XF002"
    assert "addsin-elided.pte" not in by_input
