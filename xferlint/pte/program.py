"""Decode a `.pte` into plain, validated Python data, with ExecuTorch's generated reader.

`read_program(data)` returns a `PteProgram`: per execution plan (method) its EValues,
instructions per chain, operators, delegates with compile specs, inputs and outputs, the
planned buffer sizes and their devices. Only what xferlint needs is decoded; constant data
and delegate blobs are never touched (their bounds are checked).

Every index a later stage follows is checked here (value, operator and delegate indices,
jump destinations, tensor-list items), so the frontend and the analyzer can index without
guarding. Corrupt input cannot make the decoder run long: the elements it reads from
vectors are charged against a budget proportional to the file size (valid flatbuffers do
not overlap vectors), and anything the generated accessors raise on garbage becomes a
`PteFormatError` that names where in the program it happened.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from xferlint.pte.container import Container, PteFormatError, parse_container
from xferlint.pte.schema import generated

MAX_RANK = 64  # ExecuTorch's runtime allows 16; anything far above is corruption
MAX_TEXT = 200  # longer names are cut in messages

# EValue kinds (KernelTypes union tags)
NULL, INT, BOOL, DOUBLE, TENSOR, STRING, INT_LIST, DOUBLE_LIST, BOOL_LIST, TENSOR_LIST, OPT_TENSOR_LIST = range(1, 12)
KIND_NAMES = {
    NULL: "null", INT: "int", BOOL: "bool", DOUBLE: "double", TENSOR: "tensor", STRING: "string",
    INT_LIST: "int_list", DOUBLE_LIST: "double_list", BOOL_LIST: "bool_list",
    TENSOR_LIST: "tensor_list", OPT_TENSOR_LIST: "optional_tensor_list",
}
# Instruction kinds (InstructionArguments union tags)
KERNEL, DELEGATE, MOVE, JUMP_FALSE, FREE = range(1, 6)

CPU_DEVICE, CUDA_DEVICE = 0, 1
DEVICE_NAMES = {CPU_DEVICE: "cpu", CUDA_DEVICE: "cuda"}

# ScalarType -> (name as torch spells it, bytes per element; None when sub-byte / unknown)
SCALAR_TYPES: dict[int, tuple[str, Optional[int]]] = {
    0: ("uint8", 1), 1: ("int8", 1), 2: ("int16", 2), 3: ("int32", 4), 4: ("int64", 8),
    5: ("float16", 2), 6: ("float32", 4), 7: ("float64", 8), 8: ("complex32", 4),
    9: ("complex64", 8), 10: ("complex128", 16), 11: ("bool", 1), 12: ("qint8", 1),
    13: ("quint8", 1), 14: ("qint32", 4), 15: ("bfloat16", 2), 16: ("quint4x2", None),
    17: ("quint2x4", None), 22: ("bits16", 2), 23: ("float8_e5m2", 1), 24: ("float8_e4m3fn", 1),
    25: ("float8_e5m2fnuz", 1), 26: ("float8_e4m3fnuz", 1), 27: ("uint16", 2), 28: ("uint32", 4),
    29: ("uint64", 8),
}


@dataclass(frozen=True)
class TensorInfo:
    scalar_type: int
    sizes: tuple[int, ...]
    data_buffer_idx: int  # > 0: constant data (or the initial state of a mutable buffer)
    memory_id: Optional[int]  # allocation_info: planned buffer and offset; None if not planned
    memory_offset: Optional[int]
    device_type: int  # extra_tensor_info.device_type (CPU when absent)
    device_index: int
    has_device_info: bool  # extra_tensor_info present
    dynamism: int  # 0 static, 1 dynamic bound, 2 dynamic unbound
    external: bool  # data stored outside the file (extra_tensor_info.location EXTERNAL)
    fqn: Optional[str]

    @property
    def dtype(self) -> str:
        return SCALAR_TYPES.get(self.scalar_type, (f"scalar_type_{self.scalar_type}", None))[0]

    @property
    def nbytes(self) -> Optional[int]:
        """Bytes of the tensor's data (its planned size); None when unknown."""
        element = SCALAR_TYPES.get(self.scalar_type, ("", None))[1]
        if element is None or self.dynamism == 2:
            return None
        numel = 1
        for d in self.sizes:
            if d < 0:
                return None
            numel *= d
        return numel * element

    @property
    def is_constant(self) -> bool:
        return (self.data_buffer_idx > 0 and self.memory_id is None) or self.external

    @property
    def planned(self) -> bool:
        return self.memory_id is not None


@dataclass(frozen=True)
class EValueInfo:
    kind: int
    tensor: Optional[TensorInfo] = None
    scalar: Any = None  # int / bool / float / str for scalar kinds
    items: tuple[int, ...] = ()  # value indices of (optional) tensor lists; -1 = None

    @property
    def kind_name(self) -> str:
        return KIND_NAMES.get(self.kind, f"kind_{self.kind}")


@dataclass(frozen=True)
class Instr:
    kind: int
    index: int = 0  # op_index / delegate_index
    args: tuple[int, ...] = ()  # KernelCall / DelegateCall value indices
    move_from: int = 0
    move_to: int = 0
    cond: int = 0  # JumpFalseCall.cond_value_index
    destination: int = 0  # JumpFalseCall.destination_instruction
    free: int = 0  # FreeCall.value_index


@dataclass(frozen=True)
class Frame:
    filename: str
    lineno: int
    name: str
    context: str


@dataclass(frozen=True)
class Chain:
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    instructions: tuple[Instr, ...]
    stacktrace: Optional[tuple[tuple[Frame, ...], ...]] = None


@dataclass(frozen=True)
class Delegate:
    id: str
    compile_specs: tuple[tuple[str, bytes], ...]
    location: int  # 0 inline, 1 segment
    data_index: int


@dataclass(frozen=True)
class Plan:
    """One execution plan: a method of the program."""

    name: str
    values: tuple[EValueInfo, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    chains: tuple[Chain, ...]
    operators: tuple[tuple[str, str], ...]
    delegates: tuple[Delegate, ...]
    buffer_sizes: tuple[int, ...]
    buffer_devices: tuple[tuple[int, int, int], ...]  # (buffer index, device type, device index)


@dataclass(frozen=True)
class PteProgram:
    version: int
    plans: tuple[Plan, ...]
    segments: tuple[tuple[int, int], ...]  # (offset, size) relative to the segment base
    container: Container


class _Decoder:
    """Walks the flatbuffer with the generated classes, charging every vector read."""

    def __init__(self, container: Container) -> None:
        self.fb = generated()
        self.buf = container.data[: container.program_size]
        self.container = container
        self.budget = 2 * len(self.buf) + 4096
        self.where = "program"

    # -- guards ---------------------------------------------------------------------
    def count(self, n: int, size: int, what: str) -> int:
        if n < 0 or n * size > self.budget:
            raise PteFormatError(
                f"corrupt flatbuffer: {self.where}: {what} claims {n} entries, more than the "
                f"{len(self.buf)}-byte program can hold"
            )
        self.budget -= max(n * size, 1)
        return n

    def text(self, raw: Any) -> str:
        """A string field as text that is safe in a one-line message: charged against the
        budget, control characters escaped, at most MAX_TEXT characters."""
        if raw is None:
            return ""
        self.budget -= len(raw) + 1
        if self.budget < 0:
            raise PteFormatError(f"corrupt flatbuffer: {self.where}: strings overlap beyond the file's size")
        text = bytes(raw).decode("utf-8", errors="replace") if isinstance(raw, (bytes, bytearray)) else str(raw)
        if len(text) > MAX_TEXT:
            text = text[:MAX_TEXT] + "..."
        if not text.isprintable():
            text = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)
        return text

    # -- program --------------------------------------------------------------------
    def program(self) -> PteProgram:
        root = self.fb.Program.Program.GetRootAs(self.buf, 0)
        version = root.Version()
        n_plans = self.count(root.ExecutionPlanLength(), 4, "execution_plan")
        plans = []
        for i in range(n_plans):
            self.where = f"execution_plan[{i}]"
            plans.append(self.plan(root.ExecutionPlan(i), i))
        self.where = "segments"
        segments = []
        for i in range(self.count(root.SegmentsLength(), 4, "segments")):
            seg = root.Segments(i)
            segments.append((seg.Offset(), seg.Size()))
        program = PteProgram(version=version, plans=tuple(plans), segments=tuple(segments), container=self.container)
        self.check_segments(program, root)
        return program

    def check_segments(self, program: PteProgram, root: Any) -> None:
        base = self.container.segment_base_offset
        size = len(self.container.data)
        if not self.container.header and any(length for _, length in program.segments):
            raise PteFormatError("corrupt: the program lists data segments but the file has no extended header")
        for i, (offset, length) in enumerate(program.segments):
            if base + offset + length > size:
                raise PteFormatError(
                    f"truncated: segment {i} ends at byte {base + offset + length}, the file has {size}"
                )
        n_inline = root.BackendDelegateDataLength()
        for plan in program.plans:
            for d, delegate in enumerate(plan.delegates):
                limit = n_inline if delegate.location == 0 else len(program.segments)
                if not 0 <= delegate.data_index < limit:
                    where = "backend_delegate_data" if delegate.location == 0 else "segments"
                    raise PteFormatError(
                        f"corrupt: method '{plan.name}' delegate {d} points at {where}[{delegate.data_index}], "
                        f"which has {limit} entries"
                    )

    def plan(self, plan: Any, index: int) -> Plan:
        name = self.text(plan.Name()) or f"plan_{index}"
        self.where = f"method '{name}'"
        n_values = self.count(plan.ValuesLength(), 4, "values")
        values = tuple(self.evalue(plan.Values(i), i) for i in range(n_values))
        inputs = tuple(plan.Inputs(i) for i in range(self.count(plan.InputsLength(), 4, "inputs")))
        outputs = tuple(plan.Outputs(i) for i in range(self.count(plan.OutputsLength(), 4, "outputs")))
        operators = []
        for i in range(self.count(plan.OperatorsLength(), 4, "operators")):
            op = plan.Operators(i)
            operators.append((self.text(op.Name()), self.text(op.Overload())))
        delegates = tuple(self.delegate(plan.Delegates(i)) for i in range(self.count(plan.DelegatesLength(), 4, "delegates")))
        chains = tuple(self.chain(plan.Chains(i), i) for i in range(self.count(plan.ChainsLength(), 4, "chains")))
        sizes = tuple(plan.NonConstBufferSizes(i) for i in range(self.count(plan.NonConstBufferSizesLength(), 8, "non_const_buffer_sizes")))
        devices = []
        for i in range(self.count(plan.NonConstBufferDeviceLength(), 4, "non_const_buffer_device")):
            entry = plan.NonConstBufferDevice(i)
            devices.append((entry.BufferIdx(), entry.DeviceType(), entry.DeviceIndex()))
        result = Plan(
            name=name, values=values, inputs=inputs, outputs=outputs, chains=chains,
            operators=tuple(operators), delegates=delegates, buffer_sizes=sizes, buffer_devices=tuple(devices),
        )
        _validate_plan(result)
        return result

    def evalue(self, ev: Any, i: int) -> EValueInfo:
        kind = ev.ValType()
        table = ev.Val()
        fb = self.fb
        if kind == NULL or table is None:
            return EValueInfo(NULL if table is None or kind == NULL else kind)
        if kind == TENSOR:
            t = fb.Tensor.Tensor()
            t.Init(table.Bytes, table.Pos)
            return EValueInfo(TENSOR, tensor=self.tensor(t, i))
        if kind == INT:
            x = fb.Int.Int()
            x.Init(table.Bytes, table.Pos)
            return EValueInfo(INT, scalar=x.IntVal())
        if kind == BOOL:
            x = fb.Bool.Bool()
            x.Init(table.Bytes, table.Pos)
            return EValueInfo(BOOL, scalar=bool(x.BoolVal()))
        if kind == DOUBLE:
            x = fb.Double.Double()
            x.Init(table.Bytes, table.Pos)
            return EValueInfo(DOUBLE, scalar=x.DoubleVal())
        if kind == STRING:
            x = fb.String.String()
            x.Init(table.Bytes, table.Pos)
            return EValueInfo(STRING, scalar=self.text(x.StringVal()))
        if kind in (TENSOR_LIST, OPT_TENSOR_LIST, INT_LIST):
            cls = {TENSOR_LIST: fb.TensorList.TensorList, OPT_TENSOR_LIST: fb.OptionalTensorList.OptionalTensorList,
                   INT_LIST: fb.IntList.IntList}[kind]
            x = cls()
            x.Init(table.Bytes, table.Pos)
            size = 8 if kind == INT_LIST else 4
            n = self.count(x.ItemsLength(), size, f"values[{i}] items")
            items = tuple(x.Items(j) for j in range(n))
            if kind == INT_LIST:
                return EValueInfo(INT_LIST, scalar=items)
            return EValueInfo(kind, items=items)
        if kind in (DOUBLE_LIST, BOOL_LIST):
            # Their items are never needed; only their size is charged.
            cls = fb.DoubleList.DoubleList if kind == DOUBLE_LIST else fb.BoolList.BoolList
            x = cls()
            x.Init(table.Bytes, table.Pos)
            self.count(x.ItemsLength(), 8 if kind == DOUBLE_LIST else 1, f"values[{i}] items")
            return EValueInfo(kind)
        raise PteFormatError(f"corrupt flatbuffer: {self.where}: value {i} has unknown type tag {kind}")

    def tensor(self, t: Any, i: int) -> TensorInfo:
        n = self.count(t.SizesLength(), 4, f"values[{i}].sizes")
        if n > MAX_RANK:
            raise PteFormatError(f"corrupt flatbuffer: {self.where}: tensor value {i} has {n} dimensions")
        sizes = tuple(t.Sizes(j) for j in range(n))
        alloc = t.AllocationInfo()
        memory_id = offset = None
        if alloc is not None:
            memory_id = alloc.MemoryId()
            offset = alloc.MemoryOffsetLow() | (alloc.MemoryOffsetHigh() << 32)
        extra = t.ExtraTensorInfo()
        device_type = device_index = 0
        external = False
        fqn = None
        if extra is not None:
            device_type = extra.DeviceType()
            device_index = extra.DeviceIndex()
            external = extra.Location() == 1
            raw = extra.FullyQualifiedName()
            fqn = self.text(raw) if raw is not None else None
        return TensorInfo(
            scalar_type=t.ScalarType(), sizes=sizes, data_buffer_idx=t.DataBufferIdx(), memory_id=memory_id,
            memory_offset=offset, device_type=device_type, device_index=device_index,
            has_device_info=extra is not None, dynamism=t.ShapeDynamism(), external=external, fqn=fqn,
        )

    def delegate(self, d: Any) -> Delegate:
        specs = []
        for j in range(self.count(d.CompileSpecsLength(), 4, "compile_specs")):
            spec = d.CompileSpecs(j)
            n = self.count(spec.ValueLength(), 1, "compile_spec value")
            raw = bytes(spec.Value(k) for k in range(n))
            specs.append((self.text(spec.Key()), raw))
        processed = d.Processed()
        location = processed.Location() if processed is not None else 0
        index = processed.Index() if processed is not None else -1
        return Delegate(id=self.text(d.Id()), compile_specs=tuple(specs), location=location, data_index=index)

    def chain(self, c: Any, index: int) -> Chain:
        fb = self.fb
        inputs = tuple(c.Inputs(i) for i in range(self.count(c.InputsLength(), 4, "chain inputs")))
        outputs = tuple(c.Outputs(i) for i in range(self.count(c.OutputsLength(), 4, "chain outputs")))
        n = self.count(c.InstructionsLength(), 4, f"chains[{index}].instructions")
        instructions = []
        kernel, delegate_call = fb.KernelCall.KernelCall, fb.DelegateCall.DelegateCall
        for k in range(n):
            ins = c.Instructions(k)
            kind = ins.InstrArgsType()
            table = ins.InstrArgs()
            if table is None:
                raise PteFormatError(f"corrupt flatbuffer: {self.where}: instruction {k} has no arguments")
            if kind == KERNEL or kind == DELEGATE:
                call = kernel() if kind == KERNEL else delegate_call()
                call.Init(table.Bytes, table.Pos)
                m = self.count(call.ArgsLength(), 4, f"instruction {k} args")
                idx = call.OpIndex() if kind == KERNEL else call.DelegateIndex()
                instructions.append(Instr(kind, index=idx, args=tuple(call.Args(j) for j in range(m))))
            elif kind == MOVE:
                call = fb.MoveCall.MoveCall()
                call.Init(table.Bytes, table.Pos)
                instructions.append(Instr(MOVE, move_from=call.MoveFrom(), move_to=call.MoveTo()))
            elif kind == JUMP_FALSE:
                call = fb.JumpFalseCall.JumpFalseCall()
                call.Init(table.Bytes, table.Pos)
                instructions.append(Instr(JUMP_FALSE, cond=call.CondValueIndex(), destination=call.DestinationInstruction()))
            elif kind == FREE:
                call = fb.FreeCall.FreeCall()
                call.Init(table.Bytes, table.Pos)
                instructions.append(Instr(FREE, free=call.ValueIndex()))
            else:
                raise PteFormatError(f"corrupt flatbuffer: {self.where}: instruction {k} has unknown type tag {kind}")
        stacktrace = None
        n_frames = self.count(c.StacktraceLength(), 4, "stacktrace")
        if n_frames:
            lists = []
            for k in range(n_frames):
                frames = c.Stacktrace(k)
                items = []
                if frames is not None:
                    for j in range(self.count(frames.ItemsLength(), 4, "stacktrace frames")):
                        f = frames.Items(j)
                        items.append(Frame(self.text(f.Filename()), f.Lineno(), self.text(f.Name()), self.text(f.Context())))
                lists.append(tuple(items))
            # One frame list per instruction, or the frames cannot be matched up: drop them.
            stacktrace = tuple(lists) if len(lists) == n else None
        return Chain(inputs=inputs, outputs=outputs, instructions=tuple(instructions), stacktrace=stacktrace)


def _validate_plan(plan: Plan) -> None:
    """Every index a later stage follows must point inside its table."""
    n_values = len(plan.values)
    where = f"method '{plan.name}'"

    def value(index: int, what: str) -> None:
        if not 0 <= index < n_values:
            raise PteFormatError(f"corrupt: {where}: {what} refers to value {index}, but there are {n_values} values")

    for i in plan.inputs:
        value(i, "an input")
    for i in plan.outputs:
        value(i, "an output")
    for i, ev in enumerate(plan.values):
        if ev.kind in (TENSOR_LIST, OPT_TENSOR_LIST):
            for item in ev.items:
                if item == -1 and ev.kind == OPT_TENSOR_LIST:
                    continue
                value(item, f"tensor list value {i}")
    for c, chain in enumerate(plan.chains):
        n = len(chain.instructions)
        for k, ins in enumerate(chain.instructions):
            label = f"instruction {k}" if len(plan.chains) == 1 else f"chain {c} instruction {k}"
            if ins.kind == KERNEL:
                if not 0 <= ins.index < len(plan.operators):
                    raise PteFormatError(
                        f"corrupt: {where}: {label} calls operator {ins.index}, but there are {len(plan.operators)}"
                    )
                for a in ins.args:
                    value(a, label)
            elif ins.kind == DELEGATE:
                if not 0 <= ins.index < len(plan.delegates):
                    raise PteFormatError(
                        f"corrupt: {where}: {label} calls delegate {ins.index}, but there are {len(plan.delegates)}"
                    )
                for a in ins.args:
                    value(a, label)
            elif ins.kind == MOVE:
                value(ins.move_from, label)
                value(ins.move_to, label)
            elif ins.kind == JUMP_FALSE:
                value(ins.cond, label)
                if not 0 <= ins.destination <= n:
                    raise PteFormatError(
                        f"corrupt: {where}: {label} jumps to instruction {ins.destination}, but the chain has {n}"
                    )
            elif ins.kind == FREE:
                value(ins.free, label)
    for buffer_index, device_type, _ in plan.buffer_devices:
        if not 0 <= buffer_index < len(plan.buffer_sizes):
            raise PteFormatError(
                f"corrupt: {where}: non_const_buffer_device names buffer {buffer_index}, "
                f"but there are {len(plan.buffer_sizes)}"
            )
    for i, ev in enumerate(plan.values):
        t = ev.tensor
        if t is not None and t.memory_id is not None and not 0 <= t.memory_id < len(plan.buffer_sizes):
            raise PteFormatError(
                f"corrupt: {where}: tensor value {i} is planned in buffer {t.memory_id}, "
                f"but there are {len(plan.buffer_sizes)}"
            )


def read_program(data: bytes) -> PteProgram:
    """Decode and validate a whole `.pte` (raises PteFormatError, one line, on bad input)."""
    container = parse_container(data)
    decoder = _Decoder(container)
    try:
        return decoder.program()
    except PteFormatError:
        raise
    except RecursionError:
        raise PteFormatError(f"corrupt flatbuffer: {decoder.where}: tables nest without end") from None
    except Exception as exc:  # noqa: BLE001 - garbage makes the generated accessors raise anything
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PteFormatError(f"corrupt flatbuffer: {decoder.where}: {detail}") from None
