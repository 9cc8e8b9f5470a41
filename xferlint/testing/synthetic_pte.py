"""Large synthetic `.pte` programs, written by ExecuTorch's own serializer.

Lowering a model with thousands of delegates takes minutes; the scaling benchmark and the
linearity tests need programs of 1k-100k instructions, 100,000-argument delegates and
10,000 loops in seconds. `PlanBuilder` assembles one execution plan from ExecuTorch's
schema dataclasses (`executorch.exir.schema`) in the shapes its emitter produces (out-variant
kernels with the out tensor twice, `et_copy` H2D / D2H kernels, delegate calls whose
trailing arguments are fresh outputs, `map`-style loops closed by a backward
`JumpFalseCall`, a planned host buffer 1 and a planned cuda:0 buffer 2), and
`serialize_pte_binary` writes it. The programs are valid `.pte` files: ExecuTorch's
`deserialize_pte_binary` reads them back (tests/test_scaling.py checks it).

The shapes (each a function of a size, returning the file's bytes):

- `ladder(blocks)`: per block, a host value copied twice to cuda:0 (XF004), a delegate,
  a D2H, a host `cos` and an H2D back to cuda:0 (XF005), 8 instructions;
- `in_place_ladder(blocks)`: one host buffer written in place and copied to cuda:0 in
  every block (every copy of the same slot, none of them a duplicate: the case that made
  XF004's pairing cubic), 4 instructions per block;
- `wide_delegate(args)`: one delegate call with `args` inputs, each copied from a method
  input by its own H2D, and one output;
- `fan_out(readers)`: one host value copied to cuda:0 by `readers` H2Ds, each read by its
  own delegate (one first copy, `readers - 1` duplicates);
- `loops(count)`: `count` loops in a row, each the shape of a lowered `map` body (an H2D,
  a delegate, a D2H, a host op, an H2D back, a delegate, a D2H, the counter's add and
  eq and a backward jump), 10 instructions per loop;
- `methods(count, blocks)`: `count` execution plans, each a `ladder(blocks)`.
- `traced_loops(count)`, `traced_short_loops(count)`: `loops` and `short_loops` with a
  stack trace (`traced`): a frame list per instruction, for locating every finding;
- `nested_loops(count)`: `count` loops nested in one another (loop k jumps back to the
  head of loop k), each head a round trip through a host op: a dominator tree as deep as
  the method, quadratic dominance frontiers;
- `in_place_duplicates(blocks)`: per block, a host buffer written in place, copied to
  cuda:0 twice (XF004) and the block's result returned (a method of thousands of outputs);
- `constant_chain(ops)`: a parameter through `ops` host ops, then copied to cuda:0 (an
  XF006 that follows all of them; its path lists the 16 nearest the copy);
- `jumps_to_one_head(count)`: one loop head that `count` backward jumps return to, a round
  trip through a host op between each: one join of `count` back edges;
- `copied_constant_chain(ops, copies)`: a parameter through `ops` host ops, copied
  `copies` times;
- `host_chain_to_devices(ops, devices)`: a host chain of `ops` ops copied to each of
  `devices` devices, where each splits a partition through a host op of its own.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Optional

from executorch.exir import schema as s
from executorch.exir._serialize._program import PTEFile, serialize_pte_binary
from executorch.exir.scalar_type import ScalarType

DEVICE = s.DeviceType.CUDA
_SIZES = [4, 4]
_NBYTES = 64  # float32 [4, 4]


class PlanBuilder:
    """One execution plan, built instruction by instruction."""

    def __init__(self, name: str = "forward", own_delegates: bool = False) -> None:
        self.name = name
        # one BackendDelegate per call, each with its own compile specs and processed data,
        # as ExecuTorch writes one per lowered module; else every call shares one
        self.own_delegates = own_delegates
        self.values: list[s.EValue] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.instructions: list[s.Instruction] = []
        self.operators: list[s.Operator] = []
        self._ops: dict[tuple[str, str], int] = {}
        self.delegates: list[s.BackendDelegate] = []
        self._delegate_of: dict[int, int] = {}  # device index -> its BackendDelegate

    # values -------------------------------------------------------------------------
    def _add(self, val) -> int:
        self.values.append(s.EValue(val=val))
        return len(self.values) - 1

    def tensor(self, device: bool = False, index: int = 0) -> int:
        """A float32 [4, 4] tensor: planned in host buffer 1, or in cuda:0's buffer 2; on
        cuda:`index` (index > 0) allocated at run time (the plan has no buffer there)."""
        extra = s.ExtraTensorInfo(device_type=DEVICE, device_index=index) if device else None
        planned = s.AllocationDetails(memory_id=2 if device else 1, memory_offset_low=0, memory_offset_high=0)
        return self._add(s.Tensor(
            scalar_type=ScalarType.FLOAT, storage_offset=0, sizes=list(_SIZES), dim_order=[0, 1],
            requires_grad=False, layout=0, data_buffer_idx=0,
            allocation_info=planned if not device or index == 0 else None,
            shape_dynamism=s.TensorShapeDynamism.STATIC, extra_tensor_info=extra,
        ))

    def constant(self) -> int:
        """A float32 [4, 4] constant tensor (a parameter), in constant buffer 1."""
        return self._add(s.Tensor(
            scalar_type=ScalarType.FLOAT, storage_offset=0, sizes=list(_SIZES), dim_order=[0, 1],
            requires_grad=False, layout=0, data_buffer_idx=1, allocation_info=None,
            shape_dynamism=s.TensorShapeDynamism.STATIC, extra_tensor_info=None,
        ))

    def int_(self, value: int) -> int:
        return self._add(s.Int(int_val=value))

    def bool_(self, value: bool) -> int:
        return self._add(s.Bool(bool_val=value))

    def input(self) -> int:
        vid = self.tensor()
        self.inputs.append(vid)
        return vid

    # instructions ---------------------------------------------------------------------
    def _op(self, name: str, overload: str) -> int:
        key = (name, overload)
        if key not in self._ops:
            self._ops[key] = len(self.operators)
            self.operators.append(s.Operator(name=name, overload=overload))
        return self._ops[key]

    def kernel(self, name: str, overload: str, args: list[int]) -> None:
        self.instructions.append(s.Instruction(instr_args=s.KernelCall(op_index=self._op(name, overload), args=args)))

    def h2d(self, src: int, index: int = 0) -> int:
        out = self.tensor(device=True, index=index)
        self.kernel("et_copy::_h2d_copy", "out", [src, out, out])
        return out

    def d2h(self, src: int) -> int:
        out = self.tensor()
        self.kernel("et_copy::_d2h_copy", "out", [src, out, out])
        return out

    def host(self, src: int, name: str = "aten::cos") -> int:
        out = self.tensor()
        self.kernel(name, "out", [src, out, out])
        return out

    def delegate(self, args: list[int], outputs: int = 1, index: int = 0) -> list[int]:
        """A call of a delegate whose `target_device` is cuda:`index` (one BackendDelegate
        per device, or per call with `own_delegates`)."""
        delegate = self._delegate_of.get(index)
        if delegate is None or self.own_delegates:
            delegate = self._delegate_of[index] = len(self.delegates)
            self.delegates.append(s.BackendDelegate(
                id="BackendWithCompilerDemo",
                processed=s.BackendDelegateDataReference(location=s.DataLocation.INLINE,
                                                         index=len(self.delegates)),
                compile_specs=[s.CompileSpec(key="target_device", value=b"cuda:%d" % index)],
            ))
        outs = [self.tensor(device=True, index=index) for _ in range(outputs)]
        self.instructions.append(s.Instruction(instr_args=s.DelegateCall(delegate_index=delegate, args=list(args) + outs)))
        return outs

    def jump_false(self, cond: int, destination: int) -> None:
        self.instructions.append(s.Instruction(
            instr_args=s.JumpFalseCall(cond_value_index=cond, destination_instruction=destination)))

    def plan(self) -> s.ExecutionPlan:
        return s.ExecutionPlan(
            name=self.name,
            container_meta_type=s.ContainerMetadata(encoded_inp_str="", encoded_out_str=""),
            values=self.values, inputs=self.inputs, outputs=self.outputs,
            chains=[s.Chain(inputs=self.inputs, outputs=self.outputs, instructions=self.instructions,
                            stacktrace=None)],
            operators=self.operators, delegates=self.delegates,
            non_const_buffer_sizes=[0, _NBYTES, _NBYTES],
            non_const_buffer_device=[s.NonConstBufferDevice(buffer_idx=2, device_type=DEVICE, device_index=0)],
        )


def serialize(plans: list[s.ExecutionPlan], constant: bool = False) -> bytes:
    """The `.pte` bytes of a program with these execution plans (with `constant`, the bytes
    of the one constant `PlanBuilder.constant` refers to, buffer 1); one inline blob per
    delegate of the plan with the most."""
    buffers = [s.Buffer(storage=b"")] + ([s.Buffer(storage=bytes(_NBYTES))] if constant else [])
    blobs = max([len(plan.delegates) for plan in plans] + [1])
    program = s.Program(
        version=0, execution_plan=plans, constant_buffer=buffers,
        backend_delegate_data=[s.BackendDelegateInlineData(data=b"synthetic%d" % k) for k in range(blobs)],
        segments=[],
        constant_segment=s.SubsegmentOffsets(segment_index=0, offsets=[]),
    )
    return bytes(serialize_pte_binary(PTEFile(program=program)))


# --------------------------------------------------------------------------- shapes


def _ladder_plan(blocks: int, name: str = "forward", own_delegates: bool = False) -> s.ExecutionPlan:
    b = PlanBuilder(name, own_delegates)
    x = b.input()
    for _ in range(blocks):
        first, second = b.h2d(x), b.h2d(x)  # the second is XF004's duplicate
        (y,) = b.delegate([first, second])
        on_host = b.host(b.d2h(y))  # host op between cuda:0 partitions: XF005
        (z,) = b.delegate([b.h2d(on_host)])
        x = b.d2h(z)
    b.outputs.append(x)
    return b.plan()


@lru_cache(maxsize=16)
def ladder(blocks: int) -> bytes:
    return serialize([_ladder_plan(blocks)])


@lru_cache(maxsize=16)
def planned_ladder(blocks: int) -> bytes:
    """`ladder`, with every planned tensor in bytes of its own, as in a memory plan that
    reuses nothing: no two values share a tensor table, where the ladder's repeat a few."""
    return serialize([_own_bytes(_ladder_plan(blocks))])


@lru_cache(maxsize=16)
def delegates_ladder(blocks: int) -> bytes:
    """`ladder`, with a BackendDelegate of its own per call (two per block), each with its
    own `target_device` compile spec and processed blob, as ExecuTorch lowers a program
    that a partitioner cut into that many partitions."""
    return serialize([_ladder_plan(blocks, own_delegates=True)])


@lru_cache(maxsize=16)
def in_place_ladder(blocks: int) -> bytes:
    b = PlanBuilder()
    x = b.input()
    outs = []
    for _ in range(blocks):
        b.kernel("aten::cos", "out", [x, x, x])  # writes x in place
        (y,) = b.delegate([b.h2d(x)])
        outs.append(b.d2h(y))
    b.outputs.extend(outs[-1:])
    return serialize([b.plan()])


@lru_cache(maxsize=16)
def wide_delegate(args: int) -> bytes:
    b = PlanBuilder()
    copies = [b.h2d(b.input()) for _ in range(args)]
    (y,) = b.delegate(copies)
    b.outputs.append(b.d2h(y))
    return serialize([b.plan()])


@lru_cache(maxsize=16)
def wide_inputs(args: int) -> bytes:
    """One cuda:0 delegate reading `args` method inputs directly, no copy (one XF007 about
    them all)."""
    b = PlanBuilder()
    (y,) = b.delegate([b.input() for _ in range(args)])
    b.outputs.append(b.d2h(y))
    return serialize([b.plan()])


@lru_cache(maxsize=16)
def wide_kernel(args: int) -> bytes:
    """One host kernel call (`aten::cat.out`) with `args` operands: the same width as
    `wide_inputs` without a delegate."""
    b = PlanBuilder()
    inputs = [b.input() for _ in range(args)]
    out = b.tensor()
    b.kernel("aten::cat", "out", inputs + [out, out])
    b.outputs.append(out)
    return serialize([b.plan()])


@lru_cache(maxsize=16)
def short_loops(count: int) -> bytes:
    """`count` loops of two instructions, a host op and the backward jump that closes it."""
    return serialize([_short_loops_plan(count)])


@lru_cache(maxsize=16)
def traced_short_loops(count: int) -> bytes:
    """`short_loops` emitted with stack traces: a frame list per instruction."""
    return serialize([traced(_short_loops_plan(count), period=2)])


def _short_loops_plan(count: int) -> s.ExecutionPlan:
    b = PlanBuilder()
    x, done = b.input(), b.bool_(False)
    for _ in range(count):
        start = len(b.instructions)
        x = b.host(x)
        b.jump_false(done, start)
    b.outputs.append(x)
    return b.plan()


@lru_cache(maxsize=16)
def fan_out(readers: int) -> bytes:
    b = PlanBuilder()
    x = b.input()
    for _ in range(readers):
        (y,) = b.delegate([b.h2d(x)])
        b.outputs.append(b.d2h(y))
    return serialize([b.plan()])


@lru_cache(maxsize=16)
def copies_into_one_call(copies: int) -> bytes:
    """One host input copied to cuda:0 `copies` times, every copy an argument of one
    delegate call (XF004 for each copy after the first). The copies share one planned
    slot, so each is a conflict of the first copy's live range the program already has,
    and each fix rewires one argument of the same wide call."""
    b = PlanBuilder()
    x = b.input()
    (y,) = b.delegate([b.h2d(x) for _ in range(copies)])
    b.outputs.append(b.d2h(y))
    return serialize([b.plan()])


@lru_cache(maxsize=16)
def loops(count: int, trips: int = 3) -> bytes:
    return serialize([_loops_plan(count, trips)])


@lru_cache(maxsize=16)
def traced_loops(count: int) -> bytes:
    """`loops` emitted with stack traces: a frame list per instruction, the loop body's
    ten lines again in every loop."""
    return serialize([traced(_loops_plan(count, 3), period=10)])


def _loops_plan(count: int, trips: int) -> s.ExecutionPlan:
    def body(b: PlanBuilder, x: int) -> int:  # through the host, then through cuda:0 once more
        (z,) = b.delegate([b.h2d(_through_host(b, x))])
        return b.d2h(z)

    return _counted_loops(count, trips, body)


def _counted_loops(count: int, trips: int, body: Callable[[PlanBuilder, int], int]) -> s.ExecutionPlan:
    """`count` loops in a row, each running `body` on the value `trips` times (a counter
    and the backward jump that closes it), the last one's value returned."""
    b = PlanBuilder()
    x = b.input()
    one, limit = b.int_(1), b.int_(trips)
    for _ in range(count):
        counter, done = b.int_(0), b.bool_(False)
        start = len(b.instructions)
        x = body(b, x)
        b.kernel("executorch_prim::add", "Scalar", [counter, one, counter])
        b.kernel("executorch_prim::eq", "Scalar", [counter, limit, done])
        b.jump_false(done, start)
    b.outputs.append(x)
    return b.plan()


@lru_cache(maxsize=16)
def split_loops(count: int) -> bytes:
    """`count` counted loops, each closed by a backward jump, whose body copies the value to
    cuda:0, runs a delegate, copies it back and runs a host op on it (an XF005 for every
    loop but the first: the host op splits the partition the next turn comes back to)."""
    return serialize([_split_loops_plan(count)])


@lru_cache(maxsize=16)
def traced_split_loops(count: int) -> bytes:
    """`split_loops` emitted with stack traces: a frame list per instruction."""
    return serialize([traced(_split_loops_plan(count), period=7)])


def _split_loops_plan(count: int) -> s.ExecutionPlan:
    return _counted_loops(count, 3, _through_host)


def _through_host(b: PlanBuilder, x: int) -> int:
    """x copied to cuda:0, a delegate, its result copied back and a host op on it (XF005's
    split); returns the host op's result."""
    (y,) = b.delegate([b.h2d(x)])
    return b.host(b.d2h(y))


def _loop_control(b: PlanBuilder, destination: int) -> None:
    """Count a trip and jump back to `destination` until the third."""
    counter, done = b.int_(0), b.bool_(False)
    b.kernel("executorch_prim::add", "Scalar", [counter, b.int_(1), counter])
    b.kernel("executorch_prim::eq", "Scalar", [counter, b.int_(3), done])
    b.jump_false(done, destination)


@lru_cache(maxsize=16)
def nested_loops(count: int) -> bytes:
    b = PlanBuilder()
    x = b.input()
    heads = []
    for _ in range(count):
        heads.append(len(b.instructions))
        x = _through_host(b, x)
    for head in reversed(heads):  # the innermost loop closes first
        _loop_control(b, head)
    b.outputs.append(x)
    return serialize([b.plan()])


@lru_cache(maxsize=16)
def jumps_to_one_head(count: int) -> bytes:
    b = PlanBuilder()
    x = b.input()
    for _ in range(count):
        x = _through_host(b, x)
        _loop_control(b, 0)
    b.outputs.append(x)
    return serialize([b.plan()])


@lru_cache(maxsize=16)
def in_place_duplicates(blocks: int) -> bytes:
    b = PlanBuilder()
    x = b.input()
    for _ in range(blocks):
        b.kernel("aten::cos", "out", [x, x, x])  # writes x in place
        (y,) = b.delegate([b.h2d(x), b.h2d(x)])  # the second copy is XF004's duplicate
        b.outputs.append(b.d2h(y))  # every block's result is returned
    return serialize([b.plan()])


@lru_cache(maxsize=16)
def one_slot(blocks: int) -> bytes:
    """One host slot reused by every block: a host op writes it, an H2D copies it to a
    delegate, and the delegate's result is copied back into it (over the host op's next
    write, so XF003 flags each D2H but the last): a slot with thousands of writers and
    readers, as a memory plan that shares one buffer leaves it."""
    return _one_slot(blocks, loop=False)


def _one_slot(blocks: int, loop: bool) -> bytes:
    """`one_slot`'s program; with `loop`, each block closes a loop back to the method's head."""
    b = PlanBuilder()
    x, slot = b.input(), b.tensor()
    for _ in range(blocks):
        b.kernel("aten::cos", "out", [x, slot, slot])
        (y,) = b.delegate([b.h2d(slot)])
        b.kernel("et_copy::_d2h_copy", "out", [y, slot, slot])
        if loop:
            _loop_control(b, 0)
    b.outputs.append(slot)
    return serialize([b.plan()])


def traced(plan: s.ExecutionPlan, period: int) -> s.ExecutionPlan:
    """`plan` with a stack trace on its chain, as `emit_stacktrace=True` writes one: a frame
    list per instruction holding the model's frame (file, line, function, code). Lines
    repeat every `period` instructions, as a model's loop body or repeated block emits the
    same lines again. (ExecuTorch's emitter writes no stack trace beside device copies; the
    reader and the rules take one wherever it is.)"""
    chain = plan.chains[0]
    chain.stacktrace = [
        s.FrameList(items=[s.Frame(filename=TRACED_FILE, lineno=20 + k % period, name="forward",
                                   context=f"x = self.step{k % period}(x)")])
        for k in range(len(chain.instructions))
    ]
    return plan


TRACED_FILE = "/home/user/models/looped.py"


def _own_bytes(plan: s.ExecutionPlan) -> s.ExecutionPlan:
    """`plan` with every planned tensor in bytes of its own: a memory plan that shares none
    (the builder plans every tensor at offset 0 of its buffer)."""
    ends: dict[int, int] = {}
    for value in plan.values:
        tensor = value.val
        if isinstance(tensor, s.Tensor) and tensor.allocation_info is not None:
            buffer = tensor.allocation_info.memory_id
            offset = ends.get(buffer, 0)
            ends[buffer] = offset + _NBYTES
            tensor.allocation_info = s.AllocationDetails(memory_id=buffer, memory_offset_low=offset & 0xFFFFFFFF,
                                                         memory_offset_high=offset >> 32)
    plan.non_const_buffer_sizes = [0] + [max(ends.get(b, 0), _NBYTES) for b in (1, 2)]
    return plan


@lru_cache(maxsize=16)
def slot_loops(blocks: int) -> bytes:
    """`one_slot` with every block closing a loop back to the method's head: past a few
    thousand blocks the sparse reaching definitions exceed their work budget and the
    method is read flow-insensitively, where every read of the slot sees all its writes."""
    return _one_slot(blocks, loop=True)


@lru_cache(maxsize=16)
def output_round_trips(outputs: int) -> bytes:
    """One delegate with `outputs` results, each copied to host and back into a second
    delegate (an XF001 per result), every tensor in bytes of its own. Each fix keeps one
    result alive across all the other copies: proving them all walks outputs**2 nodes, past
    the fix trial's walk budget (`xferlint.fixes.pte.memory.WalkBudget`)."""
    b = PlanBuilder()
    results = b.delegate([b.h2d(b.input())], outputs=outputs)
    (z,) = b.delegate([b.h2d(b.d2h(r)) for r in results])
    b.outputs.append(b.d2h(z))
    return serialize([_own_bytes(b.plan())])


@lru_cache(maxsize=16)
def mutable_buffers(count: int) -> bytes:
    """One delegate reading `count` host buffers through H2Ds and returning each one's new
    value, copied back (D2H) and written into it by `aten::copy_`: a KV cache per layer
    that the device partition does not own (an XF011 per buffer), every tensor in bytes of
    its own."""
    b = PlanBuilder()
    x = b.input()
    buffers = [b.tensor() for _ in range(count)]
    results = b.delegate([b.h2d(buffer) for buffer in buffers] + [b.h2d(x)], outputs=count + 1)
    for buffer, y in zip(buffers, results):
        b.kernel("aten::copy_", "out", [buffer, b.d2h(y), buffer, buffer])
    b.outputs.append(b.d2h(results[-1]))
    return serialize([_own_bytes(b.plan())])


@lru_cache(maxsize=16)
def returned_copies(count: int, own_bytes: bool = False, round_trip: bool = False) -> bytes:
    """A delegate's result copied to host `count` times, every copy returned: an XF004 for
    each copy after the first, whose fix (return the first copy twice) is unsafe. With
    `own_bytes` each copy has bytes of its own; without, the copies share one slot, an
    overlap the original program already has, which a fix does not count (every fix is
    proved either way). `round_trip`: the first copy is also copied back into a second
    delegate, whose result is returned too (an XF001 with a safe fix)."""
    b = PlanBuilder()
    (y,) = b.delegate([b.h2d(b.input())])
    copies = [b.d2h(y) for _ in range(count)]
    b.outputs.extend(copies)
    if round_trip:
        (z,) = b.delegate([b.h2d(copies[0])])
        b.outputs.append(b.d2h(z))
    plan = b.plan()
    return serialize([_own_bytes(plan) if own_bytes else plan])


@lru_cache(maxsize=16)
def returned_copy_of_a_reused_slot() -> bytes:
    """A delegate's result copied to host twice: the first copy read by a host op, whose
    result then reuses the first copy's bytes (the first is dead by then: a valid plan),
    the second copy returned. XF004's unsafe fix (return the first copy) would keep the
    first alive to the end, across that write: the memory plan refuses it."""
    b = PlanBuilder()
    (y,) = b.delegate([b.h2d(b.input())])
    first = b.d2h(y)
    reused = b.host(b.host(first))
    second = b.d2h(y)
    b.outputs.extend([reused, second])
    plan = _own_bytes(b.plan())
    plan.values[reused].val.allocation_info = plan.values[first].val.allocation_info
    return serialize([plan])


@lru_cache(maxsize=16)
def dead_copies(count: int) -> bytes:
    """A delegate's result copied to host and back `count` times, nothing reading the end:
    each D2H is dead (XF003) and feeds the rest of the chain, so planning every XF003 fix
    walks count**2 nodes, past the planners' work budget (`xferlint.fixes.planners`)."""
    b = PlanBuilder()
    (y,) = b.delegate([b.h2d(b.input())])
    b.outputs.append(b.d2h(y))
    for _ in range(count):
        y = b.h2d(b.d2h(y))
    return serialize([_own_bytes(b.plan())])


@lru_cache(maxsize=16)
def round_trip_chain(count: int, own_bytes: bool = False) -> bytes:
    """`count` cuda:0 delegates in a row, each result copied to host and straight back into
    the next (an XF001 at every boundary): what PropagateDevicePass leaves without its
    same-device elision, at scale. With `own_bytes`, a memory plan that reuses nothing."""
    b = PlanBuilder()
    x = b.input()
    for _ in range(count):
        (y,) = b.delegate([b.h2d(x)])
        x = b.d2h(y)
    b.outputs.append(x)
    plan = b.plan()
    return serialize([_own_bytes(plan) if own_bytes else plan])


@lru_cache(maxsize=16)
def host_fan_in(count: int) -> bytes:
    """One delegate with `count` results, each copied to host and all joined by one host op
    (`aten::cat`) whose result goes back to a second delegate: one XF005 with `count` D2Hs."""
    b = PlanBuilder()
    results = b.delegate([b.h2d(b.input())], outputs=count)
    joined = b.tensor()
    b.kernel("aten::cat", "out", [b.d2h(r) for r in results] + [joined, joined])
    (z,) = b.delegate([b.h2d(joined)])
    b.outputs.append(b.d2h(z))
    return serialize([b.plan()])


@lru_cache(maxsize=16)
def device_alias_chain(count: int) -> bytes:
    """One input copied to cuda:0, then `count` views of views (`aten::view_copy`), the last
    copied back: a chain of aliases the analysis follows to its source."""
    b = PlanBuilder()
    x = b.h2d(b.input())
    for _ in range(count):
        y = b.tensor(device=True)
        b.kernel("aten::view_copy", "out", [x, y, y])
        x = y
    b.outputs.append(b.d2h(x))
    return serialize([b.plan()])


@lru_cache(maxsize=16)
def constant_chain(ops: int) -> bytes:
    b = PlanBuilder()
    x = b.constant()
    for _ in range(ops):
        x = b.host(x)
    (y,) = b.delegate([b.h2d(x)])
    b.outputs.append(b.d2h(y))
    return serialize([b.plan()], constant=True)


@lru_cache(maxsize=16)
def copied_constant_chain(ops: int, copies: int) -> bytes:
    """`constant_chain(ops)`, its result copied to cuda:0 `copies` times, each copy read by
    a delegate of its own: an XF006 per copy (and an XF004 for each after the first), all
    of them about the same chain."""
    b = PlanBuilder()
    x = b.constant()
    for _ in range(ops):
        x = b.host(x)
    for _ in range(copies):
        (y,) = b.delegate([b.h2d(x)])
        b.outputs.append(b.d2h(y))
    return serialize([b.plan()], constant=True)


@lru_cache(maxsize=16)
def host_chain_to_devices(ops: int, devices: int = 127) -> bytes:
    """A method input through `ops` host ops, the result copied to each of cuda:0 ..
    cuda:`devices - 1` (127: the last index a `.pte` tensor can name); on each device a
    delegate, a D2H, a host op and an H2D back into a second delegate (an XF005 per
    device). The chain feeds every device and comes from none: no device's split."""
    b = PlanBuilder()
    x = b.input()
    for _ in range(ops):
        x = b.host(x)
    for k in range(devices):
        (y,) = b.delegate([b.h2d(x, k)], index=k)
        (z,) = b.delegate([b.h2d(b.host(b.d2h(y)), k)], index=k)
        b.outputs.append(b.d2h(z))
    return serialize([b.plan()])


@lru_cache(maxsize=16)
def methods(count: int, blocks: int = 4) -> bytes:
    return serialize([_ladder_plan(blocks, name=f"method_{k}") for k in range(count)])


def instructions(data: bytes, method: Optional[int] = None) -> int:
    """Instructions in the program (every method, or one)."""
    from xferlint.frontends.pte.program import read_program

    plans = read_program(data).plans
    chosen = plans if method is None else [plans[method]]
    return sum(len(c.instructions) for p in chosen for c in p.chains)
