"""`.pte` frontend: a serialized ExecuTorch program -> ProgramView, without torch.

Reads the flatbuffer with ExecuTorch's generated reader (`xferlint.frontends.pte.program`) and
builds, per execution plan (every method), the same frontend-neutral view the graph
frontend builds, plus a CFG over the instructions:

- values: one per EValue slot, `v12`; tensors carry sizes, dtype, bytes, their declared
  device (`extra_tensor_info`, cpu when absent) and their planned memory
  (`allocation_info`), and the method carries each planned buffer's device
  (`non_const_buffer_device`);
- nodes: first one INPUT node per method input and one CONSTANT node per constant tensor
  (they run before the first instruction), then one node per instruction of each chain:
  `KernelCall` (H2D / D2H / alias / compute), `DelegateCall` (with the delegate's backend
  and compile specs; `target_device` gives its device), `MoveCall` (MOVE),
  `JumpFalseCall` (CONTROL, reads its condition) and `FreeCall`;
- a kernel's operands and results come from the out-variant calling convention the
  emitter uses: schema arguments in order, then the results again (a single out tensor
  appears twice; several outs are followed by a tensor list of them);
- a delegate call's arguments are its inputs then its outputs, with no count in the file:
  the outputs are the trailing tensors that nothing wrote or read before the call and that
  are neither method inputs, constants nor named mutable buffers (the emitter creates
  them for the call);
- the CFG: fall-through, chain to chain, and both edges of each `JumpFalseCall` (only one
  when the condition is a Bool constant no instruction writes, as in the jump that ends a
  `cond`'s true branch).

Node names read `instr 12 (aten::cos.out)` (`chain 1 instr 3 (...)` when a method has
several chains), so findings locate as `model.pte:forward:instr 12 (aten::cos.out)`.
"""

import os
from collections import Counter
from functools import cached_property, lru_cache
from itertools import chain as _chain, compress, count, repeat
from operator import attrgetter, itemgetter
from typing import NamedTuple, Optional

from xferlint.analyzer.cfg import ControlFlowGraph
from xferlint.frozen import Frozen, fast_constructor
from xferlint.analyzer.lattice import CPU, Device, interned_device
from xferlint.analyzer.view import (
    DelegateInfo,
    MethodView,
    Node,
    OpKind,
    Placement,
    ProgramView,
    SourceLocation,
    TensorMeta,
    Value,
)
from xferlint.frontends.bounded import MAX_FILE_BYTES
from xferlint.frontends.compile_specs import decode_compile_specs
from xferlint.frontends import LoadedProgram
from xferlint.frontends.pte import program as pp
from xferlint.frontends.files import read_input
from xferlint.frontends.pte.container import HEADER_PEEK, PteFormatError, check_header

H2D_OP = "et_copy::_h2d_copy"
D2H_OP = "et_copy::_d2h_copy"
_ALIAS_OPS = frozenset({"executorch_prim::et_view", "aten::alias"})
_COPY_INDEX_OP = "executorch_prim::et_copy_index"
# a kernel's node kind by operator name (any other: COMPUTE)
_KERNEL_KINDS = {H2D_OP: OpKind.H2D, D2H_OP: OpKind.D2H, **{op: OpKind.ALIAS for op in _ALIAS_OPS},
                 _COPY_INDEX_OP: OpKind.MOVE}


def value_id(index: int) -> str:
    return f"v{index}"


def operator_name(name: str, overload: str) -> str:
    """`aten::cos.out` (as the runtime spells it; `aten::sym_size.int`, `foo::bar`)."""
    return f"{name}.{overload}" if overload else name


def target_name(name: str, overload: str) -> str:
    """The graph frontend's spelling: `aten.cos.out`, `et_copy._h2d_copy.out`."""
    return f"{name.replace('::', '.')}.{overload or 'default'}"


@lru_cache(maxsize=256)
def device_of(device_type: int, device_index: int) -> Device:
    """The (interned) device of a DeviceType code and index."""
    return interned_device(pp.DEVICE_NAMES.get(device_type, f"device{device_type}"), device_index)


def _value_ids(n: int) -> list[str]:
    """`value_id(i)` for every i < n. Past the first thousand each is one concatenation, a
    thousand's head and a three-digit tail (`v12` + `345`): formatting an int costs twice as
    much, and a method may have 200,000 values."""
    ids = [f"v{i}" for i in range(min(n, 1000))]
    if n > 1000:
        tails = [f"{k:03d}" for k in range(1000)]
        for thousand in range(1, (n - 1) // 1000 + 1):
            ids.extend(map(ids[thousand].__add__, tails))
        del ids[n:]
    return ids


class PteMethodMap:
    """How one method's view nodes map back to the program's instructions: node
    `first_instruction_node + k` is the k-th instruction counted over the chains in order.
    The two dicts are built on first use (only a fix reads them; a method may have
    100,000 instructions)."""

    def __init__(self, plan_index: int, first_instruction_node: int, chain_lengths: tuple[int, ...]) -> None:
        self.plan_index = plan_index
        self.first_instruction_node = first_instruction_node
        self.chain_lengths = chain_lengths

    def __repr__(self) -> str:
        return (f"PteMethodMap(plan_index={self.plan_index}, first_instruction_node={self.first_instruction_node}, "
                f"chain_lengths={self.chain_lengths})")

    @cached_property
    def instr_of_node(self) -> dict[int, tuple[int, int]]:
        """node index -> (chain, instruction)."""
        pairs = _chain.from_iterable(zip(repeat(c), range(n)) for c, n in enumerate(self.chain_lengths))
        return dict(zip(count(self.first_instruction_node), pairs))

    @cached_property
    def node_of_instr(self) -> dict[tuple[int, int], int]:
        return dict(zip(self.instr_of_node.values(), self.instr_of_node.keys()))


class PteNative(NamedTuple):
    """The native side of a `.pte` view: the decoded program and the node map, for fixes
    and the debug-handle map (rules never see it)."""

    path: Optional[str]
    data: bytes
    program: pp.PteProgram
    methods: dict[str, PteMethodMap]
    source_map: Optional[dict] = None  # what load_pte_bytes was given: a fix renumbers it


# --------------------------------------------------------------------------- kernels


def kernel_io(plan: pp.Plan, name: str, args: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(operands, results) of a KernelCall from its argument list (see module docstring)."""
    values = plan.values
    if not args:
        return (), ()
    if name == _COPY_INDEX_OP and len(args) >= 2:  # copy_index(stacked, slice, index)
        return (args[1],), (args[0],)
    last = args[-1]
    if len(args) >= 2 and args[-2] == last:
        return args[:-2], (last,)
    last_value = values[last]
    if last_value.kind == pp.TENSOR_LIST and last_value.items:
        items = last_value.items
        k = len(items)
        if len(args) >= k + 1 and tuple(args[-1 - k : -1]) == items:
            return args[: -1 - k], items + (last,)
        if len(args) >= 2:
            previous = values[args[-2]]
            if previous.kind == pp.TENSOR_LIST and previous.items == items:
                return args[:-2], items + (args[-2], last)
    return args[:-1], (last,)


def _expand_lists(plan: pp.Plan, operands: tuple[int, ...]) -> tuple[int, ...]:
    """Operands with (optional) tensor lists expanded to their items, in order."""
    out: list[int] = []
    for a in operands:
        ev = plan.values[a]
        out.append(a)
        if ev.kind in (pp.TENSOR_LIST, pp.OPT_TENSOR_LIST):
            out.extend(i for i in ev.items if i >= 0)
    return tuple(out)


def delegate_io(plan: pp.Plan, args: tuple[int, ...], seen: set[int], fixed: set[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Split a DelegateCall's arguments into inputs and outputs (see module docstring).

    An output is a fresh tensor that appears only once in the call: an argument at
    position p is one only if its first occurrence is p (one dict over the arguments, so
    a call with 100,000 arguments is one pass, not one scan of them per output)."""
    first: dict[int, int] = {}
    for position, a in enumerate(args):
        first.setdefault(a, position)
    k = len(args)
    while k > 0:
        a = args[k - 1]
        ev = plan.values[a]
        if ev.kind != pp.TENSOR or a in seen or a in fixed or first[a] < k - 1:
            break
        k -= 1
    if k == len(args) and args:
        # Nothing fresh at the end (the outputs were written before, e.g. a loop body run
        # again or a program rewritten by hand): the last argument is the output.
        k = len(args) - 1
    return args[:k], args[k:]


# --------------------------------------------------------------------------- builder


_VALUE = Frozen(Value)
_VALUE_NEW = fast_constructor(Value)
_PLACEMENT = Frozen(Placement)
# Node(**fields) without its generated __init__: straight-line code that fills a plain twin
# and gives it its class (xferlint.frozen; a method of 100,000 instructions makes 100,000 nodes)
_NODE_NEW = fast_constructor(Node)


_flatten = _chain.from_iterable
_ARGS = attrgetter("args")
_OUTPUTS = attrgetter("outputs")


class _Seen:
    """The values the instructions so far read or wrote, for `delegate_io` (a delegate's
    outputs are fresh). Kernel arguments join in batches, when a delegate asks: one C-level
    update over the instructions since the last ask, not one set update per instruction.
    Other instructions (moves, jumps, frees: no `args`) add theirs as they are built."""

    __slots__ = ("values", "instructions", "mark")

    def __init__(self) -> None:
        self.values: set[int] = set()
        self.instructions: tuple = ()  # the chain being built
        self.mark = 0  # its instructions before this one are in `values`

    def start(self, instructions: tuple) -> None:
        """Begin a chain (the previous one's arguments all join)."""
        self.before(len(self.instructions))
        self.instructions, self.mark = instructions, 0

    def before(self, k: int) -> set[int]:
        """The values seen before instruction `k` of the chain (those of earlier chains too)."""
        if self.mark < k:
            self.values.update(_flatten(map(_ARGS, self.instructions[self.mark:k])))
            self.mark = k
        return self.values

    def update(self, values) -> None:
        self.values.update(values)

    def add(self, value: int) -> None:
        self.values.add(value)


def _shaped(t: pp.TensorInfo) -> tuple[TensorMeta, Optional[int]]:
    """(the TensorMeta of a tensor info's shape, dtype and dynamism; its planned bytes)."""
    nbytes = t.nbytes
    shape: tuple[Optional[int], ...] = t.sizes if t.dynamism != 2 else tuple(None for _ in t.sizes)
    return TensorMeta(shape=shape, dtype=t.dtype, nbytes=nbytes if t.dynamism == 0 else None), nbytes


class _MethodBuilder:
    def __init__(self, plan: pp.Plan, plan_index: int, locations: Optional[dict] = None) -> None:
        self.plan = plan
        self.locations = locations or {}  # instruction index (chain 0) -> SourceLocation
        self.plan_index = plan_index
        self.nodes: list[Node] = []
        self.buffer_devices = self._buffer_devices()
        self.input_set = frozenset(plan.inputs)
        self.ids = _value_ids(len(plan.values))  # `value_id` of each, made once
        self._kinds: dict[tuple, tuple[Value, bool, bool]] = {}  # `_tensor_kind`
        self._metas: dict[tuple, tuple[TensorMeta, Optional[int]]] = {}  # `_tensor_fields`
        self.constants: list[int] = []  # constant tensors but inputs: a CONSTANT node each
        self.state: list[int] = []  # constants and named mutable buffers
        self.lists: set[int] = set()  # (optional) tensor lists
        self.values = self._values()
        self.seen = _Seen()  # what instructions so far read or wrote (delegate outputs are fresh)
        self.fixed: set[int] = set()
        self.kernels: tuple[tuple, ...] = ()  # per operator: `_operator`
        self._h2d: dict[int, Optional[Device]] = {}  # id(EValueInfo) -> `_h2d_device`
        self._delegates: dict[int, tuple] = {}
        # decode_compile_specs by the raw specs: a program's delegates mostly carry the same ones
        self._specs: dict[tuple, tuple] = {}

    # values -----------------------------------------------------------------------
    def _buffer_devices(self) -> tuple[Device, ...]:
        devices = [CPU] * len(self.plan.buffer_sizes)
        for buffer_index, device_type, device_index in self.plan.buffer_devices:
            devices[buffer_index] = device_of(device_type, device_index)
        return tuple(devices)

    def _values(self) -> dict[str, Value]:
        """Every value by id. Equal tensor infos (and input-ness) give equal metadata, built
        once per method. The reader hands equal values over as one object: each distinct
        object's kind is worked out once (again as an input where a method input is one),
        and the per-value work is look-ups by identity in C (a loop turn per value cost as
        much as a fifth of building the values)."""
        values = self.plan.values
        keys = list(map(id, values))
        plain = _VALUE.new(id="")  # every non-tensor value: an id and nothing else
        proto_of: dict[int, Value] = {}  # id(EValueInfo) -> the Value its values are renamed copies of
        constant: set[int] = set()  # ids of those with a CONSTANT node (unless an input)
        state: set[int] = set()  # ids of those that hold data before the first instruction
        lists: set[int] = set()  # ids of (optional) tensor lists
        # A real memory plan gives most tensors bytes of their own, so most tensor infos are
        # one value's: that value is built with its id at once, not as a copy renamed later.
        uses = Counter(keys)
        index_of = dict(zip(keys, range(len(keys))))  # the (last) value of each object
        ids, inputs = self.ids, self.input_set
        for key, ev in dict(zip(keys, values)).items():
            if ev.tensor is None:
                proto_of[key] = plain
                if ev.kind in pp.LIST_KINDS:
                    lists.add(key)
                continue
            i = index_of[key]
            if uses[key] == 1 and i not in inputs:
                proto_of[key], is_constant, holds = self._tensor_kind(ev.tensor, False, ids[i])
            else:
                proto_of[key], is_constant, holds = self._tensor_kind(ev.tensor, False)
            if is_constant:
                constant.add(key)
            if holds:
                state.add(key)
        protos = list(map(proto_of.__getitem__, keys))  # per value, the Value it is a renamed copy of
        as_input: dict[int, Value] = {}
        for i in inputs:
            t = values[i].tensor
            if t is not None:
                proto = as_input.get(keys[i])
                if proto is None:
                    proto = as_input[keys[i]] = self._tensor_kind(t, True)[0]
                protos[i] = proto
        if lists:
            self.lists.update(compress(count(), map(lists.__contains__, keys)))
        if constant:
            self.constants.extend(i for i in compress(count(), map(constant.__contains__, keys)) if i not in inputs)
        if state:
            self.state.extend(compress(count(), map(state.__contains__, keys)))
        return _VALUE.renamed(zip(self.ids, protos))

    def _tensor_kind(self, t: pp.TensorInfo, is_input: bool, ident: str = "") -> tuple[Value, bool, bool]:
        """(a Value with the tensor's metadata and the id "", whether it gets a CONSTANT node,
        whether it holds data before the first instruction), once per equal tensor info.
        With `ident`, the Value of the one value that has this info: its id is `ident`, and
        it is not kept for others."""
        key = (t, is_input)
        found = None if ident else self._kinds.get(key)
        if found is None:
            constant = t.data_buffer_idx > 0 or t.external
            found = (self._tensor_value(t, is_input, ident), constant and not is_input,
                     constant or bool(t.fqn and t.memory_id is not None))
            if not ident:
                self._kinds[key] = found
        return found

    def _tensor_value(self, t: pp.TensorInfo, is_input: bool, ident: str) -> Value:
        """A tensor value, built by keyword in one call, not from a dict of its fields. Where
        every tensor has bytes of its own (a real memory plan), tensor infos rarely repeat, but
        their shapes do: the TensorMeta is shared per shape, dtype and dynamism."""
        meta_key = (t.sizes, t.scalar_type, t.dynamism)
        shaped = self._metas.get(meta_key)
        if shaped is None:
            shaped = self._metas[meta_key] = _shaped(t)
        meta, nbytes = shaped
        constant = None
        if t.data_buffer_idx > 0 or t.external:
            constant = t.fqn or f"constant {t.data_buffer_idx}"
        planned = t.memory_id is not None  # `t.planned`, without the property call
        if constant is None and t.fqn and planned:
            constant = t.fqn  # a mutable buffer's name (emit_mutable_buffer_names=True)
        tag = device_of(t.device_type, t.device_index)
        start = self._start_device(t, tag, is_input)
        return _VALUE_NEW(
            id=ident, tensor=meta, declared_device=start, constant_name=constant,
            # devices are interned: `is` first (a Device compares in Python)
            spec_device=tag if start is not tag and start != tag else None,
            mutable=planned and (t.data_buffer_idx > 0 or bool(t.fqn)),
            placement=_PLACEMENT.whole({"buffer": t.memory_id, "offset": t.memory_offset or 0, "nbytes": nbytes})
            if planned else None,
        )

    def _start_device(self, t: pp.TensorInfo, tag: Device, is_input: bool) -> Device:
        """Where a method input or constant really starts (as the graph frontend decides it
        from the memory plan): a constant in the program's data, on host; a planned input
        in its planned buffer; an unplanned input where its tag says (the caller provides
        it there). Everything else starts where its instructions put it: its tag."""
        if t.data_buffer_idx > 0 or t.external:  # constants and buffers (their initial state)
            return CPU
        if is_input and t.memory_id is not None and t.memory_id < len(self.buffer_devices):
            return self.buffer_devices[t.memory_id]
        return tag

    def _names(self, indices) -> tuple[str, ...]:
        return tuple(map(self.ids.__getitem__, indices))

    def _expanded_names(self, operands: tuple[int, ...]) -> tuple[str, ...]:
        """The ids of `_expand_lists(operands)` (skipped where no operand is a list: most calls)."""
        if self.lists and not self.lists.isdisjoint(operands):
            operands = _expand_lists(self.plan, operands)
        return tuple(map(self.ids.__getitem__, operands))

    # nodes ------------------------------------------------------------------------
    def add(self, name: str, kind: OpKind, target: str, inputs: tuple[str, ...] = (),
            outputs: tuple[str, ...] = (), device: Optional[Device] = None, location=None,
            delegate: Optional[DelegateInfo] = None, scope: str = "", mutates: bool = False) -> Node:
        """Append the next Node."""
        node = _NODE_NEW(index=len(self.nodes), name=name, kind=kind, target=target, inputs=inputs, outputs=outputs,
                         device=device, location=location, delegate=delegate, scope=scope, mutates=mutates)
        self.nodes.append(node)
        return node

    def _input_nodes(self) -> None:
        """Append one INPUT node per method input (built in the loop, as `_chain_nodes`
        builds kernel calls: a method may take 100,000 inputs)."""
        nodes, ids, make, kind = self.nodes, self.ids, _NODE_NEW, OpKind.INPUT
        for k, i in enumerate(self.plan.inputs):
            vid = ids[i]
            nodes.append(make(index=len(nodes), name=f"input {k} ({vid})", kind=kind, target="input", outputs=(vid,)))

    def build(self) -> tuple[MethodView, PteMethodMap]:
        plan = self.plan
        ids = self.ids
        self._input_nodes()
        for i in self.constants:
            fqn = plan.values[i].tensor.fqn
            label = f" ({fqn})" if fqn else ""
            self.add(f"constant {ids[i]}{label}", OpKind.CONSTANT, "constant", (), (ids[i],))
        first_instruction = len(self.nodes)
        multi = len(plan.chains) > 1
        # inputs, constants and named mutable buffers (state a delegate may read directly, as
        # in legacy mode) hold data before the first instruction: never a delegate's result
        self.fixed = set(plan.inputs)
        self.fixed.update(self.state)
        self.kernels = tuple(map(self._operator, range(len(plan.operators))))
        scopes = [_scopes(chain) for chain in plan.chains]
        for c, chain in enumerate(plan.chains):
            self.seen.start(chain.instructions)
            self._chain_nodes(c, chain, f"chain {c} instr " if multi else "instr ", scopes[c])
        cfg = self._cfg(first_instruction)
        view = MethodView(
            name=plan.name,
            nodes=tuple(self.nodes),
            values=self.values,
            inputs=self._names(plan.inputs),
            outputs=self._names(plan.outputs),
            cfg=cfg,
            buffer_devices=self.buffer_devices,
        )
        # one node per instruction, in order (`PteMethodMap`)
        mapping = PteMethodMap(self.plan_index, first_instruction, tuple(len(ch.instructions) for ch in plan.chains))
        return view, mapping

    def _operator(self, index: int) -> tuple:
        """(name, kind, node label, node target) of operator `index`."""
        name, overload = self.plan.operators[index]
        return name, _KERNEL_KINDS.get(name, OpKind.COMPUTE), operator_name(name, overload), target_name(name, overload)

    def _delegate(self, index: int) -> tuple:
        """(the DelegateInfo, target device) of delegate `index`, worked out once."""
        got = self._delegates.get(index)
        if got is None:
            delegate = self.plan.delegates[index]
            decoded = self._specs.get(delegate.compile_specs)
            if decoded is None:
                decoded = self._specs[delegate.compile_specs] = decode_compile_specs(delegate.compile_specs)
            specs, device = decoded
            got = self._delegates[index] = (DelegateInfo(backend=delegate.id, compile_specs=specs, index=index), device)
        return got

    def _chain_nodes(self, c: int, chain: pp.Chain, head: str, scopes: list[str]) -> None:
        """Append the nodes of chain `c`'s instructions. Kernel calls (most instructions) are
        built here, in the loop, with one call per node (not `add`'s two: a 100,000-instruction
        method is 100,000 of them); the other kinds go to their `_*_node`. Names the loop
        reads per instruction are bound once (an enum member or module global look-up each
        costs as much as a tuple)."""
        plan, nodes, kernels, lists, h2d = self.plan, self.nodes, self.kernels, self.lists, self._h2d_device
        name_of = self.ids.__getitem__
        others = {pp.DELEGATE: self._delegate_node, pp.MOVE: self._move_node, pp.JUMP_FALSE: self._jump_node}
        kernel, alias, compute, copy_in = pp.KERNEL, OpKind.ALIAS, OpKind.COMPUTE, OpKind.H2D
        trace = chain.stacktrace or ()
        locate = bool(trace) or (c == 0 and bool(self.locations))
        location = None
        # one SourceLocation per distinct frame list: a model's lines each emit several instructions
        located = lru_cache(maxsize=None)(_location)
        make = _NODE_NEW
        for k, ins in enumerate(chain.instructions):
            if locate:
                location = located(trace[k]) if k < len(trace) else None
                location = location or (self.locations.get(k) if c == 0 else None)
            if ins.kind != kernel:
                others.get(ins.kind, self._free_node)(ins, k, f"{head}{k}", location, scopes[k])
                continue
            name, kind, label, target = kernels[ins.index]
            args = ins.args
            if len(args) >= 2 and args[-1] == args[-2] and name != _COPY_INDEX_OP:
                operands, results = args[:-2], args[-1:]  # one out tensor, given twice: `kernel_io`'s commonest case
            else:
                operands, results = kernel_io(plan, name, args)
            if kind is alias:
                operands = operands[:1]
            mutates = kind is compute and any(map(operands.__contains__, results))
            if lists and not lists.isdisjoint(operands):
                operands = _expand_lists(plan, operands)
            nodes.append(make(index=len(nodes), name=f"{head}{k} ({label})", kind=kind, target=target,
                              inputs=tuple(map(name_of, operands)), outputs=tuple(map(name_of, results)),
                              device=h2d(results) if kind is copy_in else None, location=location,
                              scope=scopes[k], mutates=mutates))

    # The other kinds, one each: (instruction, its position in the chain, its node name's
    # prefix, location, scope) -> the node, appended.
    def _delegate_node(self, ins: pp.Instr, k: int, prefix: str, location, scope: str) -> Node:
        delegate = self.plan.delegates[ins.index]
        operands, results = delegate_io(self.plan, ins.args, self.seen.before(k), self.fixed)
        self.seen.update(ins.args)
        info, device = self._delegate(ins.index)
        return self.add(f"{prefix} (delegate {ins.index}: {delegate.id})", OpKind.DELEGATE, "executorch_call_delegate",
                        self._expanded_names(operands), self._names(results), device, location, info, scope)

    def _move_node(self, ins: pp.Instr, k: int, prefix: str, location, scope: str) -> Node:
        ids = self.ids
        self.seen.update((ins.move_from, ins.move_to))
        return self.add(f"{prefix} (move {ids[ins.move_from]} -> {ids[ins.move_to]})", OpKind.MOVE, "move",
                        (ids[ins.move_from],), (ids[ins.move_to],), None, location, None, scope)

    def _jump_node(self, ins: pp.Instr, k: int, prefix: str, location, scope: str) -> Node:
        ids = self.ids
        self.seen.add(ins.cond)
        return self.add(f"{prefix} (jump_false {ids[ins.cond]} -> {ins.destination})", OpKind.CONTROL, "jump_false",
                        (ids[ins.cond],), (), None, location, None, scope)

    def _free_node(self, ins: pp.Instr, k: int, prefix: str, location, scope: str) -> Node:
        self.seen.add(ins.free)
        return self.add(f"{prefix} (free {self.ids[ins.free]})", OpKind.COMPUTE, "free", (), (), None, location,
                        None, scope)

    def _h2d_device(self, results: tuple[int, ...]) -> Optional[Device]:
        """The H2D's target: its output's declared device, else its planned buffer's (per
        output value object: equal values are one object, so most H2Ds ask once)."""
        if not results:
            return None
        ev = self.plan.values[results[0]]
        key = id(ev)
        if key not in self._h2d:
            self._h2d[key] = self._h2d_target(ev.tensor)
        return self._h2d[key]

    def _h2d_target(self, t: Optional[pp.TensorInfo]) -> Optional[Device]:
        """An H2D target for an output tensor `t` (see `_h2d_device`)."""
        if t is None:
            return None
        declared = device_of(t.device_type, t.device_index)
        if not declared.is_host:
            return declared
        if t.memory_id is not None and t.memory_id < len(self.buffer_devices):
            buffer = self.buffer_devices[t.memory_id]
            if not buffer.is_host:
                return buffer
        return None

    # control flow -------------------------------------------------------------------
    def _cfg(self, first_instruction: int) -> ControlFlowGraph:
        plan = self.plan
        n_nodes = len(self.nodes)
        # the values an instruction writes (the results of its node), gathered at the first jump
        written: Optional[set[str]] = None
        ids = self.ids
        succ: list[tuple[int, ...]] = []
        exits: set[int] = set()
        chain_starts: list[int] = []
        base = first_instruction
        for chain in plan.chains:
            chain_starts.append(base)
            base += len(chain.instructions)
        # where control goes after the end of chain c: the next non-empty chain, or return
        after_chain: list[Optional[int]] = []
        for c in range(len(plan.chains)):
            nxt = None
            for d in range(c + 1, len(plan.chains)):
                if plan.chains[d].instructions:
                    nxt = chain_starts[d]
                    break
            after_chain.append(nxt)
        first_real = next((chain_starts[c] for c, ch in enumerate(plan.chains) if ch.instructions), None)
        for i in range(first_instruction):
            nxt = i + 1 if i + 1 < first_instruction else first_real
            succ.append((nxt,) if nxt is not None else ())
            if nxt is None:
                exits.add(i)
        for c, chain in enumerate(plan.chains):
            n = len(chain.instructions)
            start = chain_starts[c]
            if not n:
                continue
            # Most instructions go to the next one only: those successors as 1-tuples in C
            # (`zip` of one range), then each jump's own (a loop turn per instruction cost
            # as much as a tenth of building the view).
            succ.extend(zip(range(start + 1, start + n)))
            succ.append((after_chain[c],) if after_chain[c] is not None else ())
            jumps = _jumps(chain)
            for k in jumps:
                ins = chain.instructions[k]
                fall = start + k + 1 if k + 1 < n else after_chain[c]
                targets: list[Optional[int]] = []
                jump = start + ins.destination if ins.destination < n else after_chain[c]
                if written is None:
                    written = set(_flatten(map(_OUTPUTS, self.nodes[first_instruction:])))
                constant = _constant_bool(plan, ins.cond, ids[ins.cond] in written, self.input_set)
                if constant is not True:
                    targets.append(jump)
                if constant is not False:
                    targets.append(fall)
                succ[start + k] = tuple(dict.fromkeys(t for t in targets if t is not None))
                if any(t is None for t in targets):
                    exits.add(start + k)
            if after_chain[c] is None and not (jumps and jumps[-1] == n - 1):
                exits.add(start + n - 1)  # the last instruction returns (added in order, as the others)
        if n_nodes and not exits and first_real is None:
            exits.add(n_nodes - 1)
        return ControlFlowGraph(successors=tuple(succ), exits=frozenset(exits))


def _constant_bool(plan: pp.Plan, index: int, written: bool, inputs: frozenset[int]) -> Optional[bool]:
    """The value of a jump's condition when it is a Bool constant (`written`: whether an
    instruction writes it: then it is not one; `inputs`: the plan's inputs, as a set, since
    every jump asks)."""
    ev = plan.values[index]
    if ev.kind == pp.BOOL and not written and index not in inputs:
        return bool(ev.scalar)
    return None


_KIND = itemgetter(0)  # Instr.kind


def _jumps(chain: pp.Chain) -> list[int]:
    """The positions of a chain's `JumpFalseCall`s (found in C: a chain may hold 100,000
    instructions and no jump)."""
    return list(compress(count(), map(pp.JUMP_FALSE.__eq__, map(_KIND, chain.instructions))))


def _scopes(chain: pp.Chain) -> list[str]:
    """The innermost jump region each instruction sits in: `loop 1-7` (a backward jump's
    body), `branch 3-6` (what a forward jump skips), "" at the top level."""
    regions: list[tuple[int, int, str]] = []
    n = len(chain.instructions)
    for k in _jumps(chain):
        d = chain.instructions[k].destination
        if d <= k:
            regions.append((d, k, f"loop {d}-{k}"))
        elif d > k + 1:
            regions.append((k + 1, min(d, n) - 1, f"branch {k + 1}-{min(d, n) - 1}"))
    scopes = [""] * n
    if not regions:
        return scopes
    # Narrowest first; each instruction takes the first (innermost) region that covers it.
    # `skip` jumps over instructions already labelled, so the whole pass is near-linear.
    regions.sort(key=lambda r: r[1] - r[0])
    skip = list(range(n + 1))

    def free(k: int) -> int:
        root = k
        while skip[root] != root:
            root = skip[root]
        while skip[k] != root:
            skip[k], k = root, skip[k]
        return root

    for first, last, label in regions:
        k = free(max(first, 0))
        while k <= min(last, n - 1):
            scopes[k] = label
            skip[k] = k + 1
            k = free(k + 1)
    return scopes


_LIBRARY_MARKERS = ("/site-packages/", "/dist-packages/", "/torch/", "/executorch/", "/xferlint/", "<")


def _location(frames: tuple[pp.Frame, ...]) -> Optional[SourceLocation]:
    """The innermost user frame of an instruction's stack trace (emit_stacktrace=True)."""
    for frame in reversed(frames):
        path = frame.filename.replace(os.sep, "/")
        if not path or any(m in path for m in _LIBRARY_MARKERS) or frame.lineno < 1:
            continue
        return SourceLocation(file=frame.filename, line=frame.lineno, column=1, function=frame.name or None,
                              code=frame.context.strip() or None)
    return None


# --------------------------------------------------------------------------- entry points


def view_of(program: pp.PteProgram, input: str, name: str, file: Optional[str],
            source_map: Optional[dict] = None) -> tuple[ProgramView, dict[str, PteMethodMap]]:
    methods = []
    maps: dict[str, PteMethodMap] = {}
    for index, plan in enumerate(program.plans):
        view, mapping = _MethodBuilder(plan, index, (source_map or {}).get(plan.name)).build()
        methods.append(view)
        maps[plan.name] = mapping
    return ProgramView(input=input, name=name, kind="pte", methods=tuple(methods), file=file), maps


def load_pte_bytes(data: bytes, label: str = "program.pte", name: Optional[str] = None,
                   path: Optional[str] = None, strict: bool = False,
                   source_map: Optional[dict] = None) -> LoadedProgram:
    """Read `.pte` bytes into a view (raises InputError with a one-line message).

    `source_map` ({method: {instruction: SourceLocation}}, from `xferlint.frontends.pte.debug`: an
    ETRecord or a program's debug-handle map) puts model source lines on instructions."""
    try:
        program = pp.read_program(data)
    except PteFormatError as exc:
        raise PteFormatError(f"{label}: {exc}") from None
    program_name = name or (os.path.splitext(os.path.basename(path))[0] if path else "program")
    view, maps = view_of(program, input=label, name=program_name, file=path, source_map=source_map)
    native = PteNative(path=path, data=data, program=program, methods=maps, source_map=source_map)
    return LoadedProgram(view=view, native=native)


def read_file(path: str, label: str) -> bytes:
    """A `.pte` file's bytes: a regular file, its header checked before the rest is read."""
    def check(head: bytes, size: int) -> None:
        try:
            check_header(head, size)
        except PteFormatError as exc:
            raise PteFormatError(f"{label}: {exc}") from None

    return read_input(path, label, what="a .pte file", limit=MAX_FILE_BYTES, header=HEADER_PEEK,
                      check_header=check)


def load_pte_file(path: str, label: Optional[str] = None, strict: bool = False,
                  source_map: Optional[dict] = None) -> LoadedProgram:
    """Read a `.pte` file into a ProgramView (every method). Never imports torch."""
    label = label or path
    return load_pte_bytes(read_file(path, label), label=label, path=path, strict=strict, source_map=source_map)


def load_pte_program(program: object, label: str = "program.pte", name: str = "program") -> LoadedProgram:
    """Read an ExecutorchProgramManager's `.pte` (its `buffer`) with this frontend, located
    through the manager's own debug-handle map and graphs (an entry point's program)."""
    from xferlint.frontends.pte.debug import source_map_of_program

    data = bytes(getattr(program, "buffer"))
    return load_pte_bytes(data, label=label, name=name, source_map=source_map_of_program(program))
