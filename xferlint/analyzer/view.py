"""ProgramView: the frontend-neutral IR every later stage reads.

A frontend (FX graphs, `.pte` flatbuffers) turns a native program into a ProgramView and
keeps the native object to itself. The view is a list of *nodes* per method, in program
order; each node reads and writes *values* by id. Tuple results are split into element
values (`name[0]`, `name[1]`, ...) so `getitem` is a plain alias. Control flow is flattened
the way ExecuTorch's emitter does it: branch and loop bodies are inlined, their inputs bound
and their results moved into the parent's values by MOVE nodes, so a value written on two
branches (or around a loop) simply has two writers, which the solver joins.
"""

from __future__ import annotations

import enum
from dataclasses import field
from typing import TYPE_CHECKING, Mapping, Optional

from xferlint.analyzer.lattice import Device
from xferlint.records import dataclass

if TYPE_CHECKING:  # the CFG is optional; graph frontends never build one
    from xferlint.analyzer.cfg import ControlFlowGraph


class OpKind(str, enum.Enum):
    """What a node does, as far as devices are concerned."""

    INPUT = "input"  # a method input (user input)
    CONSTANT = "constant"  # a parameter, buffer or lifted constant
    H2D = "h2d"  # et_copy._h2d_copy (functional or .out)
    D2H = "d2h"  # et_copy._d2h_copy (functional or .out)
    TO_DEVICE = "to_device"  # aten._to_copy / to with an explicit device
    DELEGATE = "delegate"  # executorch_call_delegate
    GETITEM = "getitem"  # element of a tuple result
    ALIAS = "alias"  # views and aliases: same storage, same device
    MOVE = "move"  # binds a value into another (control-flow inputs and results)
    ALLOC = "alloc"  # memory.alloc: a planned buffer
    COMPUTE = "compute"  # any other operator: runs where its operands live
    CONTROL = "control"  # a control-flow operator (cond / map / scan / while)
    UNKNOWN = "unknown"  # not modelled: gets the conservative value


# The kinds that copy between devices (a device-to-device `.to()` too).
COPY_KINDS = frozenset({OpKind.H2D, OpKind.D2H, OpKind.TO_DEVICE})


@dataclass(frozen=True)
class SourceLocation:
    """Where a value comes from in the model source (from the FX `stack_trace`)."""

    file: str
    line: int
    column: int = 1
    function: Optional[str] = None
    code: Optional[str] = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class TensorMeta:
    """Static facts about a tensor value. `nbytes` is None when the shape is symbolic."""

    shape: Optional[tuple[Optional[int], ...]]
    dtype: Optional[str]
    nbytes: Optional[int]

    @property
    def is_scalar(self) -> bool:
        return self.shape == ()


@dataclass(frozen=True)
class Placement:
    """Where a memory plan puts a tensor (`.pte` `allocation_info`): buffer, offset, bytes."""

    buffer: int
    offset: int
    nbytes: Optional[int]


@dataclass(frozen=True, slots=True)
class Value:
    """A value of the program: a tensor, a tuple element, a scalar.

    Slotted, as Node is: a large program holds one per value, and an instance with a
    `__dict__` is three to four times the memory (see Node)."""

    id: str
    tensor: Optional[TensorMeta] = None  # None for non-tensor values (ints, tuples)
    declared_device: Optional[Device] = None  # TensorSpec.device / FakeTensor device
    constant_name: Optional[str] = None  # parameter / buffer / constant name
    # The device the program's metadata tags the value with (TensorSpec.device), set only where
    # it differs from `declared_device`, the device the value really starts on: a method input
    # or constant that ExecuTorch tagged for a device but planned in host memory (legacy
    # enable_non_cpu_memory_planning=False). XF007 reports the disagreement.
    spec_device: Optional[Device] = None
    mutable: bool = False  # a buffer the program writes (its bytes change between calls)
    placement: Optional[Placement] = None  # planned memory, when the frontend knows it (.pte)


@dataclass(frozen=True)
class InnerOp:
    """An op inside a delegate, from the lowered module's original graph (graph frontends)."""

    name: str
    target: str  # `aten.gelu.default`
    location: Optional[SourceLocation] = None


@dataclass(frozen=True)
class DelegateInfo:
    """A delegate's backend and compile specs (values decoded where they are text).

    Where the lowered module's original graph is known (graph frontends), `ops` are the ops
    it runs, in order; `input_readers[k]` is the index in `ops` of the first op that reads
    the call's k-th operand and `output_writers[k]` that of the op producing its k-th
    result (None where no op does: a pass-through). A `.pte` keeps only the backend id.
    """

    backend: str
    compile_specs: tuple[tuple[str, str], ...] = ()
    index: Optional[int] = None
    ops: tuple[InnerOp, ...] = ()
    input_readers: tuple[Optional[int], ...] = ()
    output_writers: tuple[Optional[int], ...] = ()

    def reader_of(self, position: int) -> Optional[InnerOp]:
        i = self.input_readers[position] if position < len(self.input_readers) else None
        return self.ops[i] if i is not None else None

    def writer_of(self, position: int) -> Optional[InnerOp]:
        i = self.output_writers[position] if position < len(self.output_writers) else None
        return self.ops[i] if i is not None else None


@dataclass(frozen=True, slots=True)
class Node:
    """One operation of a method, in program order.

    Slotted: 160 bytes, against 560 for an instance with a `__dict__`, and a field read is
    a slot's. The analysis and the rules read every node's fields several times; slotted,
    they take 8-20 % less time on a 10,000- or 100,000-instruction `.pte`
    (docs/performance.md)."""

    index: int
    name: str  # FX node name or `instr 12`; scoped as `cond.true_graph_0/add` when nested
    kind: OpKind
    target: str  # operator name, e.g. `et_copy._h2d_copy.out`, `aten.cos.out`
    inputs: tuple[str, ...] = ()  # operand value ids, in order
    outputs: tuple[str, ...] = ()  # value ids written
    device: Optional[Device] = None  # H2D / TO_DEVICE target, delegate target_device
    location: Optional[SourceLocation] = None
    delegate: Optional[DelegateInfo] = None
    scope: str = ""  # "" for the top level, else the control-flow body it sits in
    mutates: bool = False  # writes one of its inputs in place (never dead)

    @property
    def output(self) -> Optional[str]:
        return self.outputs[0] if self.outputs else None


@dataclass(frozen=True)
class MethodView:
    """One method of a program (`forward`, or every method of a multi-method program)."""

    name: str
    nodes: tuple[Node, ...]
    values: Mapping[str, Value]
    inputs: tuple[str, ...] = ()
    outputs: tuple[Optional[str], ...] = ()
    # Control flow as edges between nodes (`.pte` jumps). None: the nodes are straight-line
    # SSA with control flow inlined as MOVE nodes (graph frontends), as described above.
    cfg: Optional["ControlFlowGraph"] = field(default=None, compare=False, repr=False)
    # The device of each planned buffer, by buffer index (`.pte` non_const_buffer_device);
    # empty when the frontend has no memory plan.
    buffer_devices: tuple[Device, ...] = ()


@dataclass(frozen=True)
class ProgramView:
    """A whole program: what the input was, what kind of frontend read it, its methods."""

    input: str  # the input as the user named it (`model.py:program`, `m.pte`)
    name: str  # the program's name (dict key for a dict of programs, else the attribute)
    kind: str  # "graph", "pte" or "pt2"
    methods: tuple[MethodView, ...] = ()
    file: Optional[str] = None  # the file the program was read from, when there is one
    notes: tuple[str, ...] = field(default=())  # what the frontend did (materialized copies)
    # A per-call transfer budget for every method of this program (bytes), declared by whoever
    # built the view; overrides `--max-transfer-bytes` for this program (XF009).
    max_transfer_bytes: Optional[int] = None
