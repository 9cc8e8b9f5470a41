"""Decode a `.pte` into plain, validated Python data, at the vtable slots of ExecuTorch's schema.

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

import re
import struct
from functools import partial
from itertools import chain as _chain, compress
from operator import add, itemgetter
from typing import Any, Iterable, NamedTuple, Optional

from xferlint.errors import InputError
from xferlint.frontends.bounded import MAX_TEXT, safe_text
from xferlint.frontends.pte.container import Container, PteFormatError, parse_container
from xferlint.frontends.pte.footprints import FIXED, VAR, Footprint, Template
from xferlint.frontends.pte.layouts import Fields, Irregular
from xferlint.frontends.pte import tables
from xferlint.frontends.pte.schema import generated, pinned

MAX_RANK = 64  # ExecuTorch's runtime allows 16; anything far above is corruption

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


class TensorInfo(NamedTuple):
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


class EValueInfo(NamedTuple):
    kind: int
    tensor: Optional[TensorInfo] = None
    scalar: Any = None  # int / bool / float / str for scalar kinds
    items: tuple[int, ...] = ()  # value indices of (optional) tensor lists; -1 = None

    @property
    def kind_name(self) -> str:
        return KIND_NAMES.get(self.kind, f"kind_{self.kind}")


class Instr(NamedTuple):
    kind: int
    index: int = 0  # op_index / delegate_index
    args: tuple[int, ...] = ()  # KernelCall / DelegateCall value indices
    move_from: int = 0
    move_to: int = 0
    cond: int = 0  # JumpFalseCall.cond_value_index
    destination: int = 0  # JumpFalseCall.destination_instruction
    free: int = 0  # FreeCall.value_index


class Frame(NamedTuple):
    filename: str
    lineno: int
    name: str
    context: str


class Chain(NamedTuple):
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    instructions: tuple[Instr, ...]
    stacktrace: Optional[tuple[tuple[Frame, ...], ...]] = None


class Delegate(NamedTuple):
    id: str
    compile_specs: tuple[tuple[str, bytes], ...]
    location: int  # 0 inline, 1 segment
    data_index: int


class Plan(NamedTuple):
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


class PteProgram(NamedTuple):
    version: int
    plans: tuple[Plan, ...]
    segments: tuple[tuple[int, int], ...]  # (offset, size) relative to the segment base
    container: Container


class _Decoder:
    """Walks the flatbuffer's tables, charging every vector read: with the struct stand-ins
    of `tables.py` where the installed schema is the pinned one (`schema.pinned()`), else
    with the generated classes."""

    def __init__(self, container: Container, fast: bool = True) -> None:
        self.buf = container.data[: container.program_size]
        self.container = container
        self.budget = 2 * len(self.buf) + 4096
        self.where = "program"
        self.pinned = fast and pinned()  # the fast path needs no comparing with the generated reader
        self.fast: Optional[_FastTables] = _FastTables(self) if fast else None
        self._fb: Any = None

    @property
    def fb(self) -> Any:
        """The generated reader classes, loaded when first needed (never, when pinned)."""
        if self._fb is None:
            self._fb = generated()
        return self._fb

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
        return safe_text(raw, MAX_TEXT)

    # -- program --------------------------------------------------------------------
    def program(self) -> PteProgram:
        root = (tables if self.pinned else self.fb.Program).Program.GetRootAs(self.buf, 0)
        version = root.Version()
        n_plans = self.count(root.ExecutionPlanLength(), 4, "execution_plan")
        plans = []
        for i in range(n_plans):
            self.where = f"execution_plan[{i}]"
            plan = root.ExecutionPlan(i)
            if self.fast is not None and not self.pinned and not self.fast.agrees(plan):
                self.fast = None  # the generated accessors disagree: read everything with them
            plans.append(self.plan(plan, i))
        seen: dict[str, int] = {}
        for i, plan in enumerate(plans):
            if plan.name in seen:
                raise PteFormatError(f"malformed: execution_plan[{seen[plan.name]}] and [{i}] are both named "
                                     f"'{plan.name}'; method names must be unique")
            seen[plan.name] = i
        self.where = "segments"
        n_segments = self.count(root.SegmentsLength(), 4, "segments")
        segments = self.fast.segments(root, n_segments) if self.fast is not None and n_segments else None
        if segments is None:
            segments = tuple(self.segment(root, i) for i in range(n_segments))
        program = PteProgram(version=version, plans=tuple(plans), segments=segments, container=self.container)
        self.check_segments(program, root)
        return program

    def segment(self, root: Any, i: int) -> tuple[int, int]:
        seg = root.Segments(i)
        return seg.Offset(), seg.Size()

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
        if self.fast is not None and n_values:
            values = self.fast.values(plan._tab.Pos, n_values)
        else:
            values = tuple(self.evalue(plan.Values(i), i) for i in range(n_values))
        fields = self.fast.plan_fields(plan) if self.fast is not None else None
        if fields is None:
            fields = self.plan_fields(plan)
        inputs, outputs, operators, sizes, devices = fields
        n_delegates = self.count(plan.DelegatesLength(), 4, "delegates")
        if self.fast is not None and n_delegates:
            delegates = self.fast.delegates(plan._tab.Pos, n_delegates)
        else:
            delegates = tuple(self.delegate(plan.Delegates(i)) for i in range(n_delegates))
        chains = tuple(self.chain(plan.Chains(i), i) for i in range(self.count(plan.ChainsLength(), 4, "chains")))
        result = Plan(
            name=name, values=values, inputs=inputs, outputs=outputs, chains=chains,
            operators=operators, delegates=delegates, buffer_sizes=sizes, buffer_devices=devices,
        )
        _validate_plan(result)
        return result

    def plan_fields(self, plan: Any, limit: Optional[int] = None) -> tuple:
        """(inputs, outputs, operators, buffer sizes, buffer devices) of a plan, through the
        generated accessors; with `limit`, each vector's first `limit` entries and, after
        them, every vector's length (the fast path's self-check)."""
        lengths: list[int] = []

        def entries(n: int) -> range:
            lengths.append(n)
            return range(n if limit is None else min(n, limit))

        inputs = tuple(plan.Inputs(i) for i in entries(self.count(plan.InputsLength(), 4, "inputs")))
        outputs = tuple(plan.Outputs(i) for i in entries(self.count(plan.OutputsLength(), 4, "outputs")))
        operators = []
        for i in entries(self.count(plan.OperatorsLength(), 4, "operators")):
            op = plan.Operators(i)
            operators.append((self.text(op.Name()), self.text(op.Overload())))
        sizes = tuple(plan.NonConstBufferSizes(i)
                      for i in entries(self.count(plan.NonConstBufferSizesLength(), 8, "non_const_buffer_sizes")))
        devices = []
        for i in entries(self.count(plan.NonConstBufferDeviceLength(), 4, "non_const_buffer_device")):
            entry = plan.NonConstBufferDevice(i)
            devices.append((entry.BufferIdx(), entry.DeviceType(), entry.DeviceIndex()))
        fields = inputs, outputs, tuple(operators), sizes, tuple(devices)
        return fields if limit is None else (fields, tuple(lengths))

    def chain_io(self, c: Any, limit: Optional[int] = None) -> tuple:
        """A chain's (inputs, outputs); with `limit`, sampled like `plan_fields`."""
        n_in = self.count(c.InputsLength(), 4, "chain inputs")
        inputs = tuple(c.Inputs(i) for i in range(n_in if limit is None else min(n_in, limit)))
        n_out = self.count(c.OutputsLength(), 4, "chain outputs")
        outputs = tuple(c.Outputs(i) for i in range(n_out if limit is None else min(n_out, limit)))
        return (inputs, outputs) if limit is None else ((inputs, outputs), (n_in, n_out))

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
            raw = b""
            if n:  # one slice instead of a call per byte (Value(k) reads a ubyte vector)
                start = spec._tab.Vector(spec._tab.Offset(6))
                raw = bytes(self.buf[start : start + n])
                if len(raw) != n:
                    raise PteFormatError(f"corrupt flatbuffer: {self.where}: a compile spec runs past the end")
            specs.append((self.text(spec.Key()), raw))
        processed = d.Processed()
        location = processed.Location() if processed is not None else 0
        index = processed.Index() if processed is not None else -1
        return Delegate(id=self.text(d.Id()), compile_specs=tuple(specs), location=location, data_index=index)

    def chain_instructions(self, c: Any, n: int) -> list[Instr]:
        """The first `n` instructions of a chain, through the generated accessors."""
        fb = self.fb
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
        return instructions

    def chain(self, c: Any, index: int) -> Chain:
        io = self.fast.chain_io(c) if self.fast is not None else None
        inputs, outputs = io if io is not None else self.chain_io(c)
        n = self.count(c.InstructionsLength(), 4, f"chains[{index}].instructions")
        if self.fast is not None and n:
            instructions = self.fast.instructions(c._tab.Pos, n)
        else:
            instructions = self.chain_instructions(c, n)
        stacktrace = None
        n_frames = self.count(c.StacktraceLength(), 4, "stacktrace")
        if n_frames:
            lists = self.fast.stacktrace(c, n_frames) if self.fast is not None else None
            if lists is None:
                lists = self.chain_stacktrace(c, n_frames)
            # One frame list per instruction, or the frames cannot be matched up: drop them.
            stacktrace = tuple(lists) if len(lists) == n else None
        return Chain(inputs=inputs, outputs=outputs, instructions=tuple(instructions), stacktrace=stacktrace)

    def chain_stacktrace(self, c: Any, n: int) -> list[tuple[Frame, ...]]:
        """The first `n` frame lists of a chain's stack trace (`emit_stacktrace=True`: one
        per instruction), through the generated accessors."""
        lists = []
        for k in range(n):
            frames = c.Stacktrace(k)
            items = []
            if frames is not None:
                for j in range(self.count(frames.ItemsLength(), 4, "stacktrace frames")):
                    f = frames.Items(j)
                    items.append(Frame(self.text(f.Filename()), f.Lineno(), self.text(f.Name()),
                                       self.text(f.Context())))
            lists.append(tuple(items))
        return lists



# --------------------------------------------------------------------------- fast path
#
# The generated accessors cost several Python calls per field (vtable lookup, bounds-free
# `Get`, object creation); a 3 MB program has thousands of tensors and instruction
# arguments. For the two hot vectors (an execution plan's values, a chain's instructions)
# the fields are read with precompiled structs at the vtable slots of the schema
# (`program.fbs`: the n-th field of a table sits at vtable offset 4 + 2n), and whole
# argument / size vectors in one unpack. Where the installed schema is not the pinned one
# (`schema.pinned()`), `agrees()` compares the result with the generated accessors on the
# first values, delegates and instructions of a plan; if they ever differ (a schema
# change), the generated accessors read everything. The schema is that of the ExecuTorch
# installed, the same for every file, so each of the three kinds is compared once per
# process, on the first plan that has some (`self_checked()` says which are); on the
# pinned schema, the one the fast path was compared on, nothing is compared at run time
# (the tests compare it with the generated accessors).

_U8, _I8, _U16 = struct.Struct("<B"), struct.Struct("<b"), struct.Struct("<H")
_I32, _U32, _I64, _F64 = struct.Struct("<i"), struct.Struct("<I"), struct.Struct("<q"), struct.Struct("<d")

# vtable slots (4 + 2 * field index in program.fbs)
_PLAN_VALUES, _PLAN_DELEGATES, _CHAIN_INSTRUCTIONS = 8, 18, 8
_PLAN_INPUTS, _PLAN_OUTPUTS, _PLAN_OPERATORS, _PLAN_SIZES, _PLAN_DEVICES = 10, 12, 16, 20, 22  # ExecutionPlan
_CHAIN_INPUTS, _CHAIN_OUTPUTS, _CHAIN_STACKTRACE = 4, 6, 10
_FRAMES_ITEMS = 4  # FrameList.items
_F_FILENAME, _F_LINENO, _F_NAME, _F_CONTEXT = 4, 6, 8, 10  # Frame
_OP_NAME, _OP_OVERLOAD = 4, 6  # Operator
_NB_INDEX, _NB_TYPE, _NB_DEVICE = 4, 6, 8  # NonConstBufferDevice
_D_ID, _D_PROCESSED, _D_SPECS = 4, 6, 8  # BackendDelegate
_PROGRAM_SEGMENTS, _SEG_OFFSET, _SEG_SIZE = 12, 4, 6  # Program.segments, DataSegment
_REF_LOCATION, _REF_INDEX = 4, 6  # BackendDelegateDataReference
_SPEC_KEY, _SPEC_VALUE = 4, 6  # CompileSpec
_EV_TYPE, _EV_VAL = 4, 6
_T_SCALAR, _T_SIZES, _T_DATA, _T_ALLOC, _T_DYNAMISM, _T_EXTRA = 4, 8, 14, 16, 20, 22
_A_ID, _A_LOW, _A_HIGH = 4, 6, 8
_X_FQN, _X_LOCATION, _X_DEVICE, _X_INDEX = 6, 8, 10, 12
_IN_TYPE, _IN_ARGS = 4, 6
_CALL_INDEX, _CALL_ARGS = 4, 6  # KernelCall.op_index / DelegateCall.delegate_index, args
_MOVE_FROM, _MOVE_TO = 4, 6
_JF_COND, _JF_DEST = 4, 6
_FREE_VALUE = 4
_SCALAR_SLOT = 4  # Int.int_val, Bool.bool_val, Double.double_val, *List.items, String.string_val
_AGREE_SAMPLE = 16
# Vectors of at least this many elements are read through footprint templates (see
# `_FastTables._templated`); a shorter one costs less element by element than its templates.
_TEMPLATED_MIN = 64
_MAX_TEMPLATES = 8  # layouts tried per vector
_MAX_BUILDS = 31  # templates made per vector; and how many more misses than hits end the trying
_ID_BITS, _CONTEXT = 5, 6  # a template id (1.._MAX_BUILDS) in the context of the last 6 matched
_CONTEXT_MASK = (1 << _ID_BITS * _CONTEXT) - 1
_AGREED: set[str] = set()  # the kinds ("plan", "chain", "values", "delegates", "instructions", "segments") compared
_COMPARISONS = [0]  # how many comparisons this process ran (tests read it)


_NULL_VALUE = EValueInfo(NULL)
_new_instr = partial(tuple.__new__, Instr)  # Instr from all its fields, without the generated __new__
_new_tensor_info = partial(tuple.__new__, TensorInfo)
_new_evalue = partial(tuple.__new__, EValueInfo)


def _tensor_info(key: tuple) -> TensorInfo:
    """The TensorInfo of `_FastTables._tensor`'s raw fields."""
    scalar_type, sizes, data_buffer_idx, dynamism, alloc, extra = key
    memory_id = offset = None
    if alloc is not None:
        memory_id, offset = alloc[0], alloc[1] | (alloc[2] << 32)
    device_type, device_index, external, fqn = extra if extra is not None else (0, 0, False, None)
    # every field in order, without the generated __new__'s keyword handling (one per tensor)
    return _new_tensor_info((scalar_type, sizes, data_buffer_idx, memory_id, offset, device_type, device_index,
                             extra is not None, dynamism, external, fqn))


def self_checked() -> tuple[frozenset[str], int]:
    """The kinds the fast path was compared on in this process, and how many comparisons ran."""
    return frozenset(_AGREED), _COMPARISONS[0]


class _FastTables:
    def __init__(self, decoder: "_Decoder") -> None:
        self.d = decoder
        self.buf = buf = decoder.buf
        self._ev = Fields(buf, ((_EV_TYPE, "B", 0), (_EV_VAL, "I", None)))
        self._int = Fields(buf, ((_SCALAR_SLOT, "q", 0),))
        self._bool = Fields(buf, ((_SCALAR_SLOT, "B", 0),))
        self._tensor_fields = Fields(buf, ((_T_SCALAR, "b", 0), (_T_SIZES, "I", None), (_T_DATA, "I", 0),
                                           (_T_ALLOC, "I", None), (_T_DYNAMISM, "b", 0), (_T_EXTRA, "I", None)))
        self._alloc = Fields(buf, ((_A_ID, "I", 0), (_A_LOW, "I", 0), (_A_HIGH, "I", 0)))
        self._extra = Fields(buf, ((_X_FQN, "I", None), (_X_LOCATION, "b", 0), (_X_DEVICE, "b", 0),
                                   (_X_INDEX, "b", 0)))
        self._instr = Fields(buf, ((_IN_TYPE, "B", 0), (_IN_ARGS, "I", None)))
        self._call = Fields(buf, ((_CALL_INDEX, "i", 0), (_CALL_ARGS, "I", None)))
        self._pair = Fields(buf, ((_MOVE_FROM, "i", 0), (_MOVE_TO, "i", 0)))  # MoveCall, JumpFalseCall
        self._single = Fields(buf, ((_FREE_VALUE, "i", 0),))
        self._segment = Fields(buf, ((_SEG_OFFSET, "Q", 0), (_SEG_SIZE, "Q", 0)))
        self._delegate = Fields(buf, ((_D_ID, "I", None), (_D_PROCESSED, "I", None), (_D_SPECS, "I", None)))
        self._reference = Fields(buf, ((_REF_LOCATION, "b", 0), (_REF_INDEX, "I", 0)))
        self._spec = Fields(buf, ((_SPEC_KEY, "I", None), (_SPEC_VALUE, "I", None)))
        self._frame_list = Fields(buf, ((_FRAMES_ITEMS, "I", None),))
        self._frame = Fields(buf, ((_F_FILENAME, "I", None), (_F_LINENO, "i", 0), (_F_NAME, "I", None),
                                   (_F_CONTEXT, "I", None)))
        self._tensors: dict[tuple, EValueInfo] = {}  # raw tensor fields -> the one EValueInfo
        self._scalars: dict[tuple[int, int], EValueInfo] = {}
        self._int_structs: dict[int, struct.Struct] = {}

    # -- primitives ------------------------------------------------------------------
    def _table(self, pos: int) -> tuple[int, int]:
        """(vtable position, vtable length) of the table at `pos`."""
        vt = pos - _I32.unpack_from(self.buf, pos)[0]
        return vt, _U16.unpack_from(self.buf, vt)[0]

    def _slot(self, vt: int, vlen: int, slot: int) -> int:
        return _U16.unpack_from(self.buf, vt + slot)[0] if slot < vlen else 0

    def _indirect(self, at: int) -> int:
        return at + _U32.unpack_from(self.buf, at)[0]

    def _vector(self, at: int, size: int, what: str) -> tuple[int, int]:
        """(start of the elements, count) of the vector whose offset is stored at `at`."""
        start = self._indirect(at)
        n = self.d.count(_U32.unpack_from(self.buf, start)[0], size, what)
        if start + 4 + n * size > len(self.buf):
            raise PteFormatError(f"corrupt flatbuffer: {self.d.where}: {what} runs past the end of the program")
        return start + 4, n

    def _ints(self, at: int, what: str, fmt: str = "i", size: int = 4) -> tuple[int, ...]:
        start, n = self._vector(at, size, what)
        return struct.unpack_from(f"<{n}{fmt}", self.buf, start) if n else ()

    def _elements(self, table_pos: int, slot: int, n: int) -> list[int]:
        """Positions of the tables of a vector of tables (its length already charged)."""
        vt, vlen = self._table(table_pos)
        o = self._slot(vt, vlen, slot)
        start = self._indirect(table_pos + o) + 4
        offsets = struct.unpack_from(f"<{n}I", self.buf, start)
        return list(map(add, range(start, start + 4 * n, 4), offsets))

    def _int_field(self, table_pos: int, vt: int, vlen: int, slot: int, what: str, fmt: str = "i",
                   size: int = 4) -> tuple[int, ...]:
        o = self._slot(vt, vlen, slot)
        return tuple(self._ints(table_pos + o, what, fmt, size)) if o else ()

    # -- plan and chain fields ---------------------------------------------------------
    def plan_fields(self, plan: Any) -> Optional[tuple]:
        """What `_Decoder.plan_fields` reads, with whole-vector unpacks; compared with it on
        the first plan of the process (None: they differ, the caller reads them itself)."""
        return self._checked("plan", self._plan_fields(plan._tab.Pos), lambda: self.d.plan_fields(plan, _AGREE_SAMPLE))

    def _checked(self, kind: str, fast: tuple, generated: Any) -> Optional[tuple]:
        """`fast`, once it agreed with `generated()` (compared on the first of `kind` in the
        process, the budget charged once); None, and the fast path off, when they differ.
        `generated()` reads each vector's first _AGREE_SAMPLE entries and every length
        (reading whole vectors through the generated accessors cost ~10 us per entry:
        2 s on a plan with 100,000 inputs)."""
        if kind not in _AGREED and not self.d.pinned:
            budget = self.d.budget
            _COMPARISONS[0] += 1
            sample = tuple(f[:_AGREE_SAMPLE] for f in fast), tuple(len(f) for f in fast)
            if sample != generated():
                self.d.fast = None
                return None
            self.d.budget = budget
            _AGREED.add(kind)
        return fast

    def _plan_fields(self, pos: int) -> tuple:
        buf = self.buf
        vt, vlen = self._table(pos)
        inputs = self._int_field(pos, vt, vlen, _PLAN_INPUTS, "inputs")
        outputs = self._int_field(pos, vt, vlen, _PLAN_OUTPUTS, "outputs")
        operators = []
        o = self._slot(vt, vlen, _PLAN_OPERATORS)
        if o:
            start, n = self._vector(pos + o, 4, "operators")
            for op in self._elements(pos, _PLAN_OPERATORS, n):
                ovt, ovlen = self._table(op)
                so = self._slot(ovt, ovlen, _OP_NAME)
                name = self._string(op + so, "operator name") if so else ""
                so = self._slot(ovt, ovlen, _OP_OVERLOAD)
                operators.append((name, self._string(op + so, "operator overload") if so else ""))
        sizes = self._int_field(pos, vt, vlen, _PLAN_SIZES, "non_const_buffer_sizes", "q", 8)
        devices = []
        o = self._slot(vt, vlen, _PLAN_DEVICES)
        if o:
            start, n = self._vector(pos + o, 4, "non_const_buffer_device")
            for entry in self._elements(pos, _PLAN_DEVICES, n):
                evt, evlen = self._table(entry)
                eo = self._slot(evt, evlen, _NB_INDEX)
                index = _I32.unpack_from(buf, entry + eo)[0] if eo else 0
                eo = self._slot(evt, evlen, _NB_TYPE)
                device_type = _I8.unpack_from(buf, entry + eo)[0] if eo else 0
                eo = self._slot(evt, evlen, _NB_DEVICE)
                devices.append((index, device_type, _I8.unpack_from(buf, entry + eo)[0] if eo else 0))
        return inputs, outputs, tuple(operators), sizes, tuple(devices)

    def chain_io(self, chain: Any) -> Optional[tuple]:
        """A chain's (inputs, outputs), compared once per process like `plan_fields`."""
        pos = chain._tab.Pos
        vt, vlen = self._table(pos)
        io = (self._int_field(pos, vt, vlen, _CHAIN_INPUTS, "chain inputs"),
              self._int_field(pos, vt, vlen, _CHAIN_OUTPUTS, "chain outputs"))
        return self._checked("chain", io, lambda: self.d.chain_io(chain, _AGREE_SAMPLE))

    # -- values ----------------------------------------------------------------------
    def values(self, plan_pos: int, n: int) -> tuple[EValueInfo, ...]:
        positions = self._elements(plan_pos, _PLAN_VALUES, n)
        if n >= _TEMPLATED_MIN:
            return tuple(self._templated(positions, self._value, self.evalue, self._value_template))
        return tuple(self._each(positions, self._value, self.evalue))

    def _each(self, positions: list[int], fast: Any, careful: Any) -> list:
        """`fast(pos, i)` for each element; where it raises, the budget is restored and
        `careful(pos, i)`, the field-by-field reader, reads (and reports) it as it always did."""
        d = self.d
        out = []
        for i, pos in enumerate(positions):
            budget = d.budget
            try:
                out.append(fast(pos, i))
            except Exception:  # noqa: BLE001 - corrupt or unusual: the careful reader decides
                d.budget = budget
                out.append(careful(pos, i))
        return out

    def _templated(self, positions: list[int], fast: Any, careful: Any, build: Any) -> list:
        """`_each`, with the elements laid out like an earlier one read through its template
        (`footprints`): one unpack and one check each. `build(pos)` makes the template of an
        element `fast` just read (None: it has none). Serializers write elements in
        repeating patterns, so the template tried first is the one that followed the same
        last _CONTEXT templates before (`context`: their ids, _ID_BITS bits each), then the
        others, most recently matched first. An element no template matches is read by
        `_each`'s two readers; a vector whose elements mostly miss is read element by
        element from then on."""
        d = self.d
        out: list = []
        append = out.append
        templates: list[Template] = []
        followed: dict[int, Template] = {}  # context -> the template that matched next
        context = misses = builds = 0
        budget = d.budget  # d.budget while the loop runs (written back before the readers run)
        for i, pos in enumerate(positions):
            guess = t = followed.get(context)
            var = t.match(pos) if t is not None else None
            if var is None:
                for j, t in enumerate(templates):
                    if t is not guess:
                        var = t.match(pos)
                        if var is not None:
                            if j:
                                templates.insert(0, templates.pop(j))
                            followed[context] = t
                            break
            if var is not None and t.need <= budget:
                budget -= t.charge
                append(var)
                context = ((context << _ID_BITS) | t.id) & _CONTEXT_MASK
                continue
            context = (context << _ID_BITS) & _CONTEXT_MASK  # id 0: read element by element
            d.budget = budget
            try:
                append(fast(pos, i))
            except Exception:  # noqa: BLE001 - as in `_each`
                d.budget = budget
                append(careful(pos, i))
                budget = d.budget
                continue
            budget = d.budget
            misses += 1
            if 2 * misses > i + 1 + _MAX_BUILDS:  # more misses than hits, by _MAX_BUILDS
                templates, builds = [], _MAX_BUILDS  # irregular: element by element from here
                followed.clear()
            elif builds < _MAX_BUILDS:
                builds += 1
                try:
                    t = build(pos)
                except Exception:  # noqa: BLE001 - no template: the next such element misses again
                    t = None
                if t is not None:
                    t.id = builds
                    del templates[_MAX_TEMPLATES - 1:]  # the least recently matched makes room
                    templates.insert(0, t)
        d.budget = budget
        return out

    # -- templates: what `_value` / `_instruction` read, as footprints ------------------
    def _traced(self, fp: Footprint, fields: Fields, pos: int, roles: tuple[int, ...],
                names: tuple[str, ...]) -> tuple[tuple, tuple[int, ...]]:
        """`fields.at(pos)`, its reads recorded in `fp`."""
        values, offsets = fields.at(pos)
        fp.table(pos, pos - _I32.unpack_from(self.buf, pos)[0], fields, values, offsets, roles, names)
        return values, offsets

    def _vector_traced(self, fp: Footprint, start: int, code: str, name: str) -> int:
        """The length and items of the vector at `start` (what `_tensor` / `_instruction` read)."""
        n = _U32.unpack_from(self.buf, start)[0]
        size = struct.calcsize("<" + code)
        if n > MAX_RANK or start + 4 + n * size > len(self.buf):
            raise Irregular(name)
        fp.read(start, "I", FIXED, n, name)
        for j, item in enumerate(struct.unpack_from(f"<{n}{code}", self.buf, start + 4)):
            fp.read(start + 4 + size * j, code, VAR, item, f"{name}{j}")
        return n

    def _value_template(self, pos: int) -> Optional[Template]:
        """The template of a tensor, int or bool value laid out like the one at `pos`."""
        fp = Footprint(pos)
        (kind, val), offsets = self._traced(fp, self._ev, pos, (FIXED, FIXED), ("kind", "val"))
        if val is None:
            return None
        val += pos + offsets[1]
        if kind == TENSOR:
            return self._tensor_template(fp, val)
        if kind != INT and kind != BOOL:
            return None
        self._traced(fp, self._int if kind == INT else self._bool, val, (VAR,), ("x",))
        memo: dict[int, EValueInfo] = {}
        scalars = self._scalars

        def intern(x: int) -> EValueInfo:
            key = (kind, x)
            ev = scalars.get(key)
            if ev is None:
                ev = scalars[key] = EValueInfo(kind, scalar=x if kind == INT else bool(x))
            memo[x] = ev
            return ev

        return fp.compile(self.buf, ["x"], "memo_get({x}) or intern({x})", {"memo_get": memo.get, "intern": intern})

    def _tensor_template(self, fp: Footprint, pos: int) -> Optional[Template]:
        (_, sizes_at, _, alloc_at, _, extra_at), offsets = self._traced(
            fp, self._tensor_fields, pos, (VAR, FIXED, VAR, FIXED, VAR, FIXED),
            ("scalar", "sizes", "data", "alloc", "dynamism", "extra"))
        n = 0
        if sizes_at is not None:
            n = self._vector_traced(fp, pos + offsets[1] + sizes_at, "i", "n")
        if alloc_at is not None:
            self._traced(fp, self._alloc, pos + offsets[3] + alloc_at, (VAR, VAR, VAR), ("a_id", "a_low", "a_high"))
        if extra_at is not None:
            (fqn_at, _, _, _), _ = self._traced(fp, self._extra, pos + offsets[5] + extra_at, (FIXED, VAR, VAR, VAR),
                                                ("fqn", "location", "device", "index"))
            if fqn_at is not None:
                return None  # a name: read (and charged) element by element
        memo: dict[tuple, EValueInfo] = {}
        interned = self._interned_tensor

        def intern(var: tuple, key: tuple) -> EValueInfo:
            ev = memo[var] = interned(key)
            return ev

        # the key `_tensor` makes of the same fields, built by the matcher only on a miss
        alloc = "({a_id}, {a_low}, {a_high})" if alloc_at is not None else "None"
        extra = "({device}, {index}, {location} == 1, None)" if extra_at is not None else "None"
        key = "({scalar}, {n*}, {data}, {dynamism}, " + alloc + ", " + extra + ")"
        t = fp.compile(self.buf, ["scalar", "data", "dynamism", *(f"n{j}" for j in range(n)), "a_id", "a_low",
                                  "a_high", "location", "device", "index"],
                       "memo_get({*}) or intern({*}, " + key + ")", {"memo_get": memo.get, "intern": intern})
        if t is not None and sizes_at is not None:
            t.need, t.charge = n * 4, n * 4 or 1  # what `_tensor` checks and charges
        return t

    def _instruction_template(self, pos: int) -> Optional[Template]:
        """The template of an instruction laid out like the one at `pos`."""
        fp = Footprint(pos)
        (kind, call), offsets = self._traced(fp, self._instr, pos, (FIXED, FIXED), ("kind", "call"))
        if call is None:
            return None
        call += pos + offsets[1]
        if kind == KERNEL or kind == DELEGATE:
            (_, args_at), coffsets = self._traced(fp, self._call, call, (VAR, FIXED), ("index", "args"))
            m = 0
            if args_at is not None:
                m = self._vector_traced(fp, call + coffsets[1] + args_at, "i", "m")
            t = fp.compile(self.buf, ["index", *(f"m{j}" for j in range(m))],
                           "new((KIND, {index}, {m*}, 0, 0, 0, 0, 0))", {"new": _new_instr, "KIND": kind})
            if t is not None and args_at is not None:
                t.need, t.charge = m * 4, m * 4 or 1  # what `_instruction` checks and charges
            return t
        if kind == MOVE or kind == JUMP_FALSE:
            self._traced(fp, self._pair, call, (VAR, VAR), ("a", "b"))
            result = "new((KIND, 0, (), {a}, {b}, 0, 0, 0))" if kind == MOVE else "new((KIND, 0, (), 0, 0, {a}, {b}, 0))"
        elif kind == FREE:
            self._traced(fp, self._single, call, (VAR,), ("a",))
            result = "new((KIND, 0, (), 0, 0, 0, 0, {a}))"
        else:
            return None
        return fp.compile(self.buf, ["a", "b"], result, {"new": _new_instr, "KIND": kind})

    def _value(self, pos: int, i: int) -> EValueInfo:
        """`evalue` with compiled tables (see `layouts`); tensors, ints and bools interned, so
        equal values are one object (the view builds a tensor's metadata once per object).
        Anything unusual raises, and `values` reads the value with `evalue` instead."""
        (kind, val), offsets = self._ev.at(pos)
        if kind == NULL or val is None:
            return _NULL_VALUE
        val += pos + offsets[1]
        if kind == TENSOR:
            return self._tensor(val, i)
        if kind != INT and kind != BOOL:
            return self.evalue(pos, i)
        (x,), _ = (self._int if kind == INT else self._bool).at(val)
        key = (kind, x)
        ev = self._scalars.get(key)
        if ev is None:
            ev = self._scalars[key] = EValueInfo(kind, scalar=x if kind == INT else bool(x))
        return ev

    def _tensor(self, pos: int, i: int) -> EValueInfo:
        """`tensor`, compiled: the raw fields are the key of the interned EValueInfo."""
        buf, d = self.buf, self.d
        (scalar, sizes_at, data, alloc_at, dynamism, extra_at), offsets = self._tensor_fields.at(pos)
        sizes: tuple[int, ...] = ()
        if sizes_at is not None:
            start = pos + offsets[1] + sizes_at
            n = _U32.unpack_from(buf, start)[0]
            if n > MAX_RANK or n * 4 > d.budget or start + 4 + n * 4 > len(buf):
                raise Irregular("sizes")  # `tensor` says what is wrong
            d.budget -= n * 4 or 1  # what `count` charges
            sizes = self._ints_struct(n).unpack_from(buf, start + 4)
        alloc = None
        if alloc_at is not None:
            alloc, _ = self._alloc.at(pos + offsets[3] + alloc_at)
        extra = None
        if extra_at is not None:
            x = pos + offsets[5] + extra_at
            (fqn_at, location, device_type, device_index), xoffsets = self._extra.at(x)
            fqn = None
            if fqn_at is not None:
                start, n = self._vector(x + xoffsets[0], 1, f"values[{i}] name")
                fqn = d.text(buf[start : start + n])
            extra = (device_type, device_index, location == 1, fqn)
        return self._interned_tensor((scalar, sizes, data, dynamism, alloc, extra))

    def _interned_tensor(self, key: tuple) -> EValueInfo:
        """The one EValueInfo of a tensor's raw fields (`_tensor`'s key), shared by the
        element-by-element reader and the templates."""
        ev = self._tensors.get(key)
        if ev is None:  # every field in order (see `_tensor_info`): one per distinct tensor
            ev = self._tensors[key] = _new_evalue((TENSOR, _tensor_info(key), None, ()))
        return ev

    def evalue(self, pos: int, i: int) -> EValueInfo:
        buf = self.buf
        vt, vlen = self._table(pos)
        o = self._slot(vt, vlen, _EV_TYPE)
        kind = _U8.unpack_from(buf, pos + o)[0] if o else 0
        o = self._slot(vt, vlen, _EV_VAL)
        if kind == NULL or not o:
            return EValueInfo(NULL)
        val = self._indirect(pos + o)
        if kind == TENSOR:
            return EValueInfo(TENSOR, tensor=self.tensor(val, i))
        vt, vlen = self._table(val)
        o = self._slot(vt, vlen, _SCALAR_SLOT)
        if kind == INT:
            return EValueInfo(INT, scalar=_I64.unpack_from(buf, val + o)[0] if o else 0)
        if kind == BOOL:
            return EValueInfo(BOOL, scalar=bool(_U8.unpack_from(buf, val + o)[0]) if o else False)
        if kind == DOUBLE:
            return EValueInfo(DOUBLE, scalar=_F64.unpack_from(buf, val + o)[0] if o else 0.0)
        if kind == STRING:
            if not o:
                return EValueInfo(STRING, scalar="")
            start, n = self._vector(val + o, 1, f"values[{i}] string")
            return EValueInfo(STRING, scalar=self.d.text(buf[start : start + n]))
        if kind in (TENSOR_LIST, OPT_TENSOR_LIST):
            items = self._ints(val + o, f"values[{i}] items") if o else ()
            return EValueInfo(kind, items=tuple(items))
        if kind == INT_LIST:
            items = self._ints(val + o, f"values[{i}] items", "q", 8) if o else ()
            return EValueInfo(INT_LIST, scalar=tuple(items))
        if kind in (DOUBLE_LIST, BOOL_LIST):
            if o:
                self._vector(val + o, 8 if kind == DOUBLE_LIST else 1, f"values[{i}] items")
            return EValueInfo(kind)
        raise PteFormatError(f"corrupt flatbuffer: {self.d.where}: value {i} has unknown type tag {kind}")

    def tensor(self, pos: int, i: int) -> TensorInfo:
        buf = self.buf
        vt, vlen = self._table(pos)

        def slot(s: int) -> int:
            return _U16.unpack_from(buf, vt + s)[0] if s < vlen else 0

        o = slot(_T_SCALAR)
        scalar_type = _I8.unpack_from(buf, pos + o)[0] if o else 0
        o = slot(_T_SIZES)
        sizes: tuple[int, ...] = ()
        if o:
            start, n = self._vector(pos + o, 4, f"values[{i}].sizes")
            if n > MAX_RANK:
                raise PteFormatError(f"corrupt flatbuffer: {self.d.where}: tensor value {i} has {n} dimensions")
            sizes = struct.unpack_from(f"<{n}i", buf, start) if n else ()
        o = slot(_T_DATA)
        data_buffer_idx = _U32.unpack_from(buf, pos + o)[0] if o else 0
        o = slot(_T_DYNAMISM)
        dynamism = _I8.unpack_from(buf, pos + o)[0] if o else 0
        memory_id = offset = None
        o = slot(_T_ALLOC)
        if o:
            a = self._indirect(pos + o)
            avt, avlen = self._table(a)
            fields = []
            for s in (_A_ID, _A_LOW, _A_HIGH):
                ao = self._slot(avt, avlen, s)
                fields.append(_U32.unpack_from(buf, a + ao)[0] if ao else 0)
            memory_id, offset = fields[0], fields[1] | (fields[2] << 32)
        device_type = device_index = 0
        external = False
        fqn = None
        o = slot(_T_EXTRA)
        if o:
            x = self._indirect(pos + o)
            xvt, xvlen = self._table(x)
            xo = self._slot(xvt, xvlen, _X_DEVICE)
            device_type = _I8.unpack_from(buf, x + xo)[0] if xo else 0
            xo = self._slot(xvt, xvlen, _X_INDEX)
            device_index = _I8.unpack_from(buf, x + xo)[0] if xo else 0
            xo = self._slot(xvt, xvlen, _X_LOCATION)
            external = bool(xo) and _I8.unpack_from(buf, x + xo)[0] == 1
            xo = self._slot(xvt, xvlen, _X_FQN)
            if xo:
                start, n = self._vector(x + xo, 1, f"values[{i}] name")
                fqn = self.d.text(buf[start : start + n])
        return TensorInfo(
            scalar_type=scalar_type, sizes=tuple(sizes), data_buffer_idx=data_buffer_idx, memory_id=memory_id,
            memory_offset=offset, device_type=device_type, device_index=device_index, has_device_info=bool(o),
            dynamism=dynamism, external=external, fqn=fqn,
        )

    # -- delegates -------------------------------------------------------------------
    def _string(self, at: int, what: str) -> str:
        start, n = self._vector(at, 1, what)
        return self.d.text(self.buf[start : start + n])

    def segments(self, root: Any, n: int) -> Optional[tuple[tuple[int, int], ...]]:
        """The program's (offset, size) segments with compiled tables, compared once per
        process like `plan_fields`; None where a table is unusual (the caller reads them
        with the generated accessors, which report what is wrong)."""
        try:
            fields = self._segment.at
            segments = tuple(fields(pos)[0] for pos in self._elements(root._tab.Pos, _PROGRAM_SEGMENTS, n))
        except Exception:  # noqa: BLE001 - corrupt: the generated accessors say how
            return None
        checked = self._checked("segments", (segments,),
                                lambda: ((tuple(self.d.segment(root, i) for i in range(min(n, _AGREE_SAMPLE))),), (n,)))
        return checked[0] if checked is not None else None

    def delegates(self, plan_pos: int, n: int) -> tuple[Delegate, ...]:
        """`_delegates` with compiled tables; where that raises, the budget is restored and
        `_delegates` reads (and reports) them table by table."""
        budget = self.d.budget
        try:
            return self._compiled_delegates(plan_pos, n)
        except Exception:  # noqa: BLE001 - corrupt or unusual: the careful reader decides
            self.d.budget = budget
            return self._delegates(plan_pos, n)

    def _compiled_delegates(self, plan_pos: int, n: int) -> tuple[Delegate, ...]:
        """`_delegates`: the same strings and vectors read (and charged) in the same order."""
        out = []
        delegate, reference, spec_fields = self._delegate.at, self._reference.at, self._spec.at
        for pos in self._elements(plan_pos, _PLAN_DELEGATES, n):
            (id_at, ref_at, specs_at), offsets = delegate(pos)
            ident = self._string(pos + offsets[0], "delegate id") if id_at is not None else ""
            location, index = 0, -1
            if ref_at is not None:
                (location, index), _ = reference(pos + offsets[1] + ref_at)
            specs = []
            if specs_at is not None:
                at = pos + offsets[2]
                m = self.d.count(_U32.unpack_from(self.buf, self._indirect(at))[0], 4, "compile_specs")
                for spec in self._elements(pos, _D_SPECS, m):
                    (key_at, value_at), soffsets = spec_fields(spec)
                    key = self._string(spec + soffsets[0], "compile spec key") if key_at is not None else ""
                    raw = b""
                    if value_at is not None:
                        start, k = self._vector(spec + soffsets[1], 1, "compile spec value")
                        raw = bytes(self.buf[start : start + k])
                    specs.append((key, raw))
            out.append(Delegate(id=ident, compile_specs=tuple(specs), location=location, data_index=index))
        return tuple(out)

    def _delegates(self, plan_pos: int, n: int) -> tuple[Delegate, ...]:
        buf = self.buf
        out = []
        for pos in self._elements(plan_pos, _PLAN_DELEGATES, n):
            vt, vlen = self._table(pos)
            o = self._slot(vt, vlen, _D_ID)
            ident = self._string(pos + o, "delegate id") if o else ""
            location, index = 0, -1
            o = self._slot(vt, vlen, _D_PROCESSED)
            if o:
                ref = self._indirect(pos + o)
                rvt, rvlen = self._table(ref)
                ro = self._slot(rvt, rvlen, _REF_LOCATION)
                location = _I8.unpack_from(buf, ref + ro)[0] if ro else 0
                ro = self._slot(rvt, rvlen, _REF_INDEX)
                index = _U32.unpack_from(buf, ref + ro)[0] if ro else 0
            specs = []
            o = self._slot(vt, vlen, _D_SPECS)
            if o:
                m = self.d.count(_U32.unpack_from(buf, self._indirect(pos + o))[0], 4, "compile_specs")
                for spec in self._elements(pos, _D_SPECS, m):
                    svt, svlen = self._table(spec)
                    so = self._slot(svt, svlen, _SPEC_KEY)
                    key = self._string(spec + so, "compile spec key") if so else ""
                    so = self._slot(svt, svlen, _SPEC_VALUE)
                    raw = b""
                    if so:
                        start, k = self._vector(spec + so, 1, "compile spec value")
                        raw = bytes(buf[start : start + k])
                    specs.append((key, raw))
            out.append(Delegate(id=ident, compile_specs=tuple(specs), location=location, data_index=index))
        return tuple(out)

    # -- instructions ------------------------------------------------------------------
    def instructions(self, chain_pos: int, n: int) -> list[Instr]:
        positions = self._elements(chain_pos, _CHAIN_INSTRUCTIONS, n)
        if n >= _TEMPLATED_MIN:
            return self._templated(positions, self._instruction, self.instruction, self._instruction_template)
        return self._each(positions, self._instruction, self.instruction)

    # -- stack traces ------------------------------------------------------------------
    def stacktrace(self, chain: Any, n: int) -> Optional[tuple[tuple[Frame, ...], ...]]:
        """A chain's `n` frame lists with compiled tables, compared once per process like
        `plan_fields`; None where a table is unusual (the caller reads them with the
        generated accessors, which report what is wrong). A program emitted with
        `emit_stacktrace=True` has a frame list per instruction, each frame three strings:
        through the generated accessors, reading them cost more than the instructions."""
        d = self.d
        budget = d.budget
        try:
            lists = tuple(self._stacktrace(chain._tab.Pos, n))
        except Exception:  # noqa: BLE001 - corrupt or unusual: the generated accessors decide
            d.budget = budget
            return None
        sample = min(n, _AGREE_SAMPLE)
        checked = self._checked("stacktrace", (lists,), lambda: ((tuple(d.chain_stacktrace(chain, sample)),), (n,)))
        if checked is None:
            d.budget = budget
            return None
        return lists

    def _stacktrace(self, chain_pos: int, n: int) -> list[tuple[Frame, ...]]:
        buf, d = self.buf, self.d
        size = len(buf)
        frame_at, list_at, u32 = self._frame.at, self._frame_list.at, _U32.unpack_from
        # Each distinct string's text and each distinct frame once: a frame list per
        # instruction repeats the model's file, function and lines (each string is still
        # charged to the budget where it is read, as the generated path charges it).
        texts: dict[bytes, str] = {}
        frames: dict[tuple, Frame] = {}
        new_frame = partial(tuple.__new__, Frame)

        def text(at: int) -> str:
            start = at + u32(buf, at)[0]
            m = u32(buf, start)[0]
            if start + 4 + m > size:
                raise Irregular("string past the end")
            d.budget -= m + 1
            if d.budget < 0:
                raise Irregular("budget")
            raw = buf[start + 4:start + 4 + m]
            found = texts.get(raw)
            if found is None:
                found = texts[raw] = safe_text(raw, MAX_TEXT)
            return found

        out: list[tuple[Frame, ...]] = []
        for pos in self._elements(chain_pos, _CHAIN_STACKTRACE, n):
            (items_at,), offsets = list_at(pos)
            if items_at is None:
                out.append(())
                continue
            start = pos + offsets[0] + items_at
            m = d.count(u32(buf, start)[0], 4, "stacktrace frames")
            if start + 4 + 4 * m > size:
                raise Irregular("frames past the end")
            items = []
            for at in range(start + 4, start + 4 + 4 * m, 4):
                fpos = at + u32(buf, at)[0]
                (filename, lineno, name, context), fo = frame_at(fpos)
                key = (text(fpos + fo[0]) if filename is not None else "", lineno,
                       text(fpos + fo[2]) if name is not None else "",
                       text(fpos + fo[3]) if context is not None else "")
                frame = frames.get(key)
                if frame is None:
                    frame = frames[key] = new_frame(key)
                items.append(frame)
            out.append(tuple(items))
        return out

    def _instruction(self, pos: int, k: int) -> Instr:
        """`instruction` with compiled tables; anything unusual raises (see `values`)."""
        (kind, call), offsets = self._instr.at(pos)
        if call is None:
            raise Irregular("no arguments")
        call += pos + offsets[1]
        if kind == KERNEL or kind == DELEGATE:
            buf, d = self.buf, self.d
            (index, args_at), coffsets = self._call.at(call)
            args: tuple[int, ...] = ()
            if args_at is not None:
                start = call + coffsets[1] + args_at
                m = _U32.unpack_from(buf, start)[0]
                if m * 4 > d.budget or start + 4 + m * 4 > len(buf):
                    raise Irregular("args")
                d.budget -= m * 4 or 1
                args = self._ints_struct(m).unpack_from(buf, start + 4)
            return _new_instr((kind, index, args, 0, 0, 0, 0, 0))
        if kind == MOVE:
            (source, target), _ = self._pair.at(call)
            return _new_instr((MOVE, 0, (), source, target, 0, 0, 0))
        if kind == JUMP_FALSE:
            (cond, destination), _ = self._pair.at(call)
            return _new_instr((JUMP_FALSE, 0, (), 0, 0, cond, destination, 0))
        if kind == FREE:
            (value,), _ = self._single.at(call)
            return _new_instr((FREE, 0, (), 0, 0, 0, 0, value))
        raise Irregular("type tag")

    def _ints_struct(self, n: int) -> struct.Struct:
        got = self._int_structs.get(n)
        if got is None:
            got = self._int_structs[n] = struct.Struct(f"<{n}i")
        return got

    def instruction(self, pos: int, k: int) -> Instr:
        """Instruction `k` of a chain, field by field (the reference `_instruction` follows)."""
        buf = self.buf
        vt, vlen = self._table(pos)
        o = self._slot(vt, vlen, _IN_TYPE)
        kind = _U8.unpack_from(buf, pos + o)[0] if o else 0
        o = self._slot(vt, vlen, _IN_ARGS)
        if not o:
            raise PteFormatError(f"corrupt flatbuffer: {self.d.where}: instruction {k} has no arguments")
        call = self._indirect(pos + o)
        cvt, cvlen = self._table(call)

        def field(s: int, default: int = 0) -> int:
            co = self._slot(cvt, cvlen, s)
            return _I32.unpack_from(buf, call + co)[0] if co else default

        if kind == KERNEL or kind == DELEGATE:
            co = self._slot(cvt, cvlen, _CALL_ARGS)
            args = self._ints(call + co, f"instruction {k} args") if co else ()
            return Instr(kind, index=field(_CALL_INDEX), args=tuple(args))
        if kind == MOVE:
            return Instr(MOVE, move_from=field(_MOVE_FROM), move_to=field(_MOVE_TO))
        if kind == JUMP_FALSE:
            return Instr(JUMP_FALSE, cond=field(_JF_COND), destination=field(_JF_DEST))
        if kind == FREE:
            return Instr(FREE, free=field(_FREE_VALUE))
        raise PteFormatError(f"corrupt flatbuffer: {self.d.where}: instruction {k} has unknown type tag {kind}")

    # -- self-check ----------------------------------------------------------------------
    def agrees(self, plan: Any) -> bool:
        """Whether the fast path reads this plan's first values, delegates and instructions
        exactly as the generated accessors do (run on real data, so a schema change cannot
        slip by); a kind already compared in this process is not compared again."""
        d = self.d
        budget = d.budget
        try:
            n = 0 if "values" in _AGREED else min(plan.ValuesLength(), _AGREE_SAMPLE)
            if n:
                _COMPARISONS[0] += 1
                if self.values(plan._tab.Pos, n) != tuple(d.evalue(plan.Values(i), i) for i in range(n)):
                    return False
            m = 0 if "delegates" in _AGREED else min(plan.DelegatesLength(), _AGREE_SAMPLE)
            if m:
                _COMPARISONS[0] += 1
                if self.delegates(plan._tab.Pos, m) != tuple(d.delegate(plan.Delegates(i)) for i in range(m)):
                    return False
            instructions = False
            for c in range(0 if "instructions" in _AGREED else min(plan.ChainsLength(), 2)):
                chain = plan.Chains(c)
                k = min(chain.InstructionsLength(), _AGREE_SAMPLE)
                if k:
                    _COMPARISONS[0] += 1
                    instructions = True
                    if self.instructions(chain._tab.Pos, k) != d.chain_instructions(chain, k):
                        return False
        except Exception:  # noqa: BLE001 - corrupt data: let the generated accessors report it
            return False
        finally:
            d.budget = budget
        _AGREED.update(kind for kind, compared in (("values", n), ("delegates", m), ("instructions", instructions))
                       if compared)
        return True


def _check_instruction(plan: Plan, ins: Instr, label: str, n: int, where: str, value: Any) -> None:
    """Raise what is wrong with one instruction's indices (`_validate_plan`)."""
    if ins.kind in (KERNEL, DELEGATE):
        table, what = (plan.operators, "operator") if ins.kind == KERNEL else (plan.delegates, "delegate")
        if not 0 <= ins.index < len(table):
            raise PteFormatError(
                f"corrupt: {where}: {label} calls {what} {ins.index}, but there are {len(table)}"
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


def _items_ok(ev: EValueInfo, n_values: int) -> bool:
    """Whether a (optional) tensor list's items are values (-1, None, in an optional list)."""
    if ev.kind == TENSOR_LIST:
        return all(0 <= item < n_values for item in ev.items)
    if ev.kind == OPT_TENSOR_LIST:
        return all(item == -1 or 0 <= item < n_values for item in ev.items)
    return True


_KIND, _INDEX, _ARGS = itemgetter(0), itemgetter(1), itemgetter(2)  # Instr fields (and EValueInfo.kind)
_TENSOR, _MEMORY_ID = itemgetter(1), itemgetter(3)  # EValueInfo.tensor, TensorInfo.memory_id
LIST_KINDS = frozenset({TENSOR_LIST, OPT_TENSOR_LIST})  # values whose items are value indices
_NOT_CALLS = frozenset({MOVE, JUMP_FALSE, FREE})


def _unchecked(instructions: tuple[Instr, ...], n_operators: int, n_delegates: int, n_values: int) -> Iterable[int]:
    """The positions of a chain's instructions that `_validate_plan` must test one by one.
    The kernel and delegate calls (most instructions) are tested together, with min / max
    over the chain's indices (in C, not a test per instruction): where they all pass, only
    the moves, jumps and frees are left; where one fails, every instruction is (in order,
    so the first bad one is named)."""
    kinds = list(map(_KIND, instructions))
    present = set(kinds)
    indices = list(map(_INDEX, instructions))
    for kind, limit in ((KERNEL, n_operators), (DELEGATE, n_delegates)):
        if kind in present:
            chosen = indices if len(present) == 1 else list(compress(indices, map(kind.__eq__, kinds)))
            if not (min(chosen) >= 0 and max(chosen) < limit):
                return range(len(instructions))
    args = list(_chain.from_iterable(map(_ARGS, instructions)))
    if args and not (min(args) >= 0 and max(args) < n_values):
        return range(len(instructions))
    if present.isdisjoint(_NOT_CALLS):
        return ()
    return list(compress(range(len(instructions)), map(_NOT_CALLS.__contains__, kinds)))


def _validate_plan(plan: Plan) -> None:
    """Every index a later stage follows must point inside its table."""
    n_values = len(plan.values)
    where = f"method '{plan.name}'"

    def value(index: int, what: str) -> None:
        if not 0 <= index < n_values:
            raise PteFormatError(f"corrupt: {where}: {what} refers to value {index}, but there are {n_values} values")

    for indices, what in ((plan.inputs, "an input"), (plan.outputs, "an output")):
        if indices and not (min(indices) >= 0 and max(indices) < n_values):
            for i in indices:
                value(i, what)
    # The reader interns equal values: the value checks run on the distinct objects, and in
    # value order (to name the first bad one) only when one of those fails.
    distinct = dict(zip(map(id, plan.values), plan.values)).values()
    # kinds and memory ids gathered in C (itemgetter); a test per value only for the lists
    lists = LIST_KINDS.intersection(map(_KIND, distinct))
    if lists and not all(_items_ok(ev, n_values) for ev in distinct if ev.kind in lists):
        for i, ev in enumerate(plan.values):
            if ev.kind in LIST_KINDS:
                for item in ev.items:
                    if item == -1 and ev.kind == OPT_TENSOR_LIST:
                        continue
                    value(item, f"tensor list value {i}")
    n_operators, n_delegates = len(plan.operators), len(plan.delegates)
    for c, chain in enumerate(plan.chains):
        n = len(chain.instructions)
        for k in _unchecked(chain.instructions, n_operators, n_delegates, n_values):
            ins = chain.instructions[k]
            # a cheap test of every index first; the messages only for an instruction that fails it
            kind = ins.kind
            if kind == KERNEL or kind == DELEGATE:
                args = ins.args
                ok = 0 <= ins.index < (n_operators if kind == KERNEL else n_delegates) and (
                    not args or (min(args) >= 0 and max(args) < n_values))
            elif kind == MOVE:
                ok = 0 <= ins.move_from < n_values and 0 <= ins.move_to < n_values
            elif kind == JUMP_FALSE:
                ok = 0 <= ins.cond < n_values and 0 <= ins.destination <= n
            else:
                ok = kind != FREE or 0 <= ins.free < n_values
            if not ok:
                label = f"instruction {k}" if len(plan.chains) == 1 else f"chain {c} instruction {k}"
                _check_instruction(plan, ins, label, n, where, value)
    for buffer_index, device_type, _ in plan.buffer_devices:
        if not 0 <= buffer_index < len(plan.buffer_sizes):
            raise PteFormatError(
                f"corrupt: {where}: non_const_buffer_device names buffer {buffer_index}, "
                f"but there are {len(plan.buffer_sizes)}"
            )
    n_buffers = len(plan.buffer_sizes)
    memory_ids = [m for m in map(_MEMORY_ID, filter(None, map(_TENSOR, distinct))) if m is not None]
    if not memory_ids or (min(memory_ids) >= 0 and max(memory_ids) < n_buffers):
        return
    for i, ev in enumerate(plan.values):
        t = ev.tensor
        if t is not None and t.memory_id is not None and not 0 <= t.memory_id < len(plan.buffer_sizes):
            raise PteFormatError(
                f"corrupt: {where}: tensor value {i} is planned in buffer {t.memory_id}, "
                f"but there are {len(plan.buffer_sizes)}"
            )


# struct's words for a read past the end of the buffer
_SHORT = re.compile(r"requires a buffer of at least (\d+) bytes.*actual buffer size is (\d+)")


def read_program(data: bytes, fast: bool = True) -> PteProgram:
    """Decode and validate a whole `.pte` (raises PteFormatError, one line, on bad input).

    `fast=False` reads every field through the generated accessors (the reference the fast
    path is checked against: in the tests, and on another schema than the pinned one once per
    process)."""
    container = parse_container(data)
    decoder = _Decoder(container, fast=fast)
    try:
        return decoder.program()
    except (PteFormatError, InputError):  # a file's fault, or the generated reader missing
        raise
    except RecursionError:
        raise PteFormatError(f"corrupt flatbuffer: {decoder.where}: tables nest without end") from None
    except Exception as exc:  # noqa: BLE001 - garbage makes the generated accessors raise anything
        text = str(exc).strip()
        short = _SHORT.search(text)
        if short is not None and int(short[1]) > int(short[2]):  # a read past the end: the file was cut
            raise PteFormatError(f"truncated or corrupt: {decoder.where} points past the program's end at byte {short[2]} "
                                 "(cut short when copied or downloaded?)") from None
        detail = text.splitlines()[0] if text else type(exc).__name__
        raise PteFormatError(f"corrupt flatbuffer: {decoder.where}: {detail}") from None
