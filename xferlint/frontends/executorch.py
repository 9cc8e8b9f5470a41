"""Graph frontend: ExportedProgram, EdgeProgramManager and ExecutorchProgramManager.

Reads each method's FX graph into a MethodView. Functional graphs (`et_copy._h2d_copy`)
and out-variant graphs (`et_copy._h2d_copy.out` writing a `memory.alloc`) read the same:
`out=` buffers are not operands. `cond`, `map_impl`, `scan` and `while_loop` bodies are
inlined with MOVE nodes binding their inputs and results (see view.py).

An edge program whose device delegates have no copies yet (to_executorch has not run) is
read after running ExecuTorch's own SpecPropPass and PropagateDevicePass on a copy, so the
findings are those of the program `to_executorch` will emit.
"""

from __future__ import annotations

import copy
import dataclasses
import operator
from functools import lru_cache
from dataclasses import field
from typing import Any, Callable, Iterable, NamedTuple, Optional

import torch
import torch.fx

from xferlint.frozen import Frozen, fast_constructor
from xferlint.analyzer.lattice import CPU, Device, interned_device
from xferlint.analyzer.view import (
    DelegateInfo,
    InnerOp,
    MethodView,
    Node,
    OpKind,
    Placement,
    ProgramView,
    TensorMeta,
    Value,
)
from xferlint.errors import InputError, UnmodelledOpError
from xferlint.frontends import LoadedProgram
from xferlint.frontends.compile_specs import TARGET_DEVICE_KEY, decode_compile_specs
from xferlint.frontends.aten import ALIAS_OPS, COPY_INTO_OP, IGNORED_OPS, TO_DEVICE_OPS, transfer_kind
from xferlint.frontends.source import location_from_stack_trace
from xferlint.records import dataclass

H2D_OP = "et_copy::_h2d_copy"
D2H_OP = "et_copy::_d2h_copy"
_TO_DEVICE_OPS = TO_DEVICE_OPS
_ALIAS_OPS = ALIAS_OPS
# Python-level callables that appear in exported graphs and compute on host scalars.
_SCALAR_BUILTINS = frozenset(
    getattr(operator, name)
    for name in (
        "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg", "eq", "ne",
        "lt", "le", "gt", "ge", "and_", "or_", "not_",
    )
)


# --------------------------------------------------------------------------- helpers


def target_name(target: Any) -> str:
    """A short, stable operator name: `aten.cos.out`, `et_copy._h2d_copy.out`, `getitem`."""
    schema = getattr(target, "_schema", None)
    if schema is not None:
        overload = schema.overload_name or "default"
        return f"{schema.name.replace('::', '.')}.{overload}"
    if target is operator.getitem:
        return "getitem"
    module = getattr(target, "__module__", "") or ""
    name = getattr(target, "__name__", None) or getattr(target, "name", lambda: str(target))()
    if module.startswith("executorch.exir.memory"):
        return f"memory.{name}"
    return str(name)


def _schema_name(target: Any) -> Optional[str]:
    schema = getattr(target, "_schema", None)
    return schema.name if schema is not None else None


class _Interned(dict):
    """`make(key)`, made once per key: a hit is a plain dict look-up. It stops growing at
    `limit` entries, so a stream of ever new keys does not grow it without end."""

    __slots__ = ("make", "limit")

    def __init__(self, make: Callable[[Any], Any], limit: int) -> None:
        super().__init__()
        self.make, self.limit = make, limit

    def __missing__(self, key: Any) -> Any:
        value = self.make(key)
        if len(self) < self.limit:
            self[key] = value
        return value


def _schema_traits(target: Any) -> tuple[frozenset[str], bool]:
    """(names of the op's out= arguments, whether it writes one of its other arguments),
    read from its schema once per target: thousands of call sites share a few ops."""
    try:
        return _SCHEMA_TRAITS[target]
    except TypeError:  # an unhashable target
        return _read_schema_traits(target)


def _read_schema_traits(target: Any) -> tuple[frozenset[str], bool]:
    schema = getattr(target, "_schema", None)
    if schema is None:
        return frozenset(), False
    outs = frozenset(a.name for a in schema.arguments if a.is_out)
    mutates = any(a.alias_info is not None and a.alias_info.is_write and not a.is_out for a in schema.arguments)
    return outs, mutates


_SCHEMA_TRAITS = _Interned(_read_schema_traits, 4096)  # op target -> its _schema_traits


def _device_of_spec(spec: Any) -> Optional[Device]:
    device = getattr(spec, "device", None)
    if device is None:
        return None
    # The type too: DeviceType is an IntEnum, equal to the int it stands for.
    key = (type(device), device, getattr(spec, "device_index", 0))
    try:  # one lookup per value: specs of a program name few (device, index) pairs
        return _SPEC_DEVICES[key]
    except KeyError:
        found = _spec_device(spec, device)
        if len(_SPEC_DEVICES) < 256:
            _SPEC_DEVICES[key] = found
        return found
    except TypeError:  # an unhashable device or index
        return _spec_device(spec, device)


# (type, TensorSpec.device, device_index) -> its Device.
_SPEC_DEVICES: dict[tuple[Any, Any, Any], Optional[Device]] = {}


def _spec_device(spec: Any, device: Any) -> Optional[Device]:
    name = getattr(device, "name", None)  # executorch.exir.schema.DeviceType
    if name is not None:
        return _device(name, int(getattr(spec, "device_index", 0) or 0))
    if isinstance(device, torch.device):
        return _device(device.type, device.index or 0)
    return None


@lru_cache(maxsize=256)
def _device(name: str, index: int) -> Device:
    """The (interned) device of a DeviceType name (`CUDA`) or torch device type, and index."""
    return interned_device(name.lower(), index)


def _meta_device(node: Any) -> Optional[Device]:
    """The device the traced metadata (`meta["val"]`) puts a node's result on."""
    val = node.meta.get("val") if isinstance(node, _FX_NODE) else None
    if isinstance(val, torch.Tensor):
        return _device(val.device.type, val.device.index or 0)
    return None


def _dtype_name(dtype: Any) -> Optional[str]:
    return str(dtype).replace("torch.", "") if dtype is not None else None


@lru_cache(maxsize=None)
def _itemsize(dtype: Any) -> int:
    """Bytes per element of a dtype (cached: one probe tensor per dtype, not per value)."""
    return torch.empty((), dtype=dtype).element_size()


def _tensor_meta(spec: Any, val: Any) -> Optional[TensorMeta]:
    """Shape, dtype and bytes of one tensor from its TensorSpec or FakeTensor."""
    shape_src = getattr(val, "shape", None) if isinstance(val, torch.Tensor) else None
    if shape_src is None and spec is not None:
        shape_src = getattr(spec, "shape", None)
    dtype = getattr(spec, "dtype", None) if spec is not None else None
    if dtype is None and isinstance(val, torch.Tensor):
        dtype = val.dtype
    if shape_src is None or dtype is None:
        return None
    try:  # a static shape seen before (torch.Size hashes and compares as its tuple of ints)
        return _STATIC_METAS[shape_src, dtype]
    except (KeyError, TypeError):  # new, a list, or symbolic (a SymInt does not hash)
        pass
    shape = tuple(shape_src)
    if all(type(d) is int for d in shape):  # the common case: one interned TensorMeta per spec
        return _static_meta(shape, dtype)
    shape = tuple(d if isinstance(d, int) else _concrete(d) for d in shape)
    nbytes: Optional[int] = None
    if all(isinstance(d, int) for d in shape):
        numel = 1
        for d in shape:
            numel *= d
        try:
            nbytes = numel * _itemsize(dtype)
        except Exception:  # noqa: BLE001 - exotic dtypes: bytes unknown, not an error
            nbytes = None
    return TensorMeta(shape=shape, dtype=_dtype_name(dtype), nbytes=nbytes)


_STATIC_METAS: dict[tuple, Optional[TensorMeta]] = {}


def _static_meta(shape: tuple[int, ...], dtype: Any) -> TensorMeta:
    """The TensorMeta of a static shape and dtype, interned: thousands of values share a spec."""
    key = (shape, dtype)
    meta = _STATIC_METAS.get(key)
    if meta is None:
        numel = 1
        for d in shape:
            numel *= d
        try:
            nbytes: Optional[int] = numel * _itemsize(dtype)
        except Exception:  # noqa: BLE001 - exotic dtypes: bytes unknown, not an error
            nbytes = None
        meta = TensorMeta(shape=shape, dtype=_dtype_name(dtype), nbytes=nbytes)
        if len(_STATIC_METAS) < 65536:
            _STATIC_METAS[key] = meta
    return meta


def _concrete(dim: Any) -> Optional[int]:
    """A SymInt's value when it is a constant, else None (symbolic)."""
    try:
        value = dim.node.maybe_as_int()
    except Exception:  # noqa: BLE001 - not a SymInt we understand: treat as symbolic
        return None
    return int(value) if value is not None else None


_Facts = tuple[Optional[TensorMeta], Optional[Device], Optional[Placement]]


def _value_facts(spec: Any, val: Any, planned: bool, shapes: dict[int, tuple[Any, Any]]) -> _Facts:
    """(TensorMeta, declared device, Placement when `planned`) of a value, from its spec and
    traced `val`. For ExecuTorch's own TensorSpec of a traced tensor they are memoised on
    the fields they are read from: a program's thousands of specs repeat a few shapes,
    devices and plan slots. `shapes` holds each val's shape by id (with the val, alive as
    long as the graph): a FakeTensor's `.shape` costs half a microsecond, and getitems and
    copies share their operand's val."""
    if (_IS_TENSOR_SPEC[type(spec)] and _IS_TENSOR_TYPE[type(val)] and spec.scalar_type is not None
            and spec.device is not None):
        device = spec.device
        shaped = shapes.get(id(val))
        if shaped is None or shaped[0] is not val:
            shaped = shapes[id(val)] = (val, val.shape)
        try:  # the TensorMeta reads val.shape (not spec.shape) and spec.dtype, as _tensor_meta does
            key = (shaped[1], spec.scalar_type, type(device), device, spec.device_index,
                   planned and (spec.mem_id, spec.mem_offset, spec.const, spec.alignment, tuple(spec.shape)))
            return _FACTS[key]
        except KeyError:
            facts = _read_value_facts(spec, val, planned)
            if len(_FACTS) < 65536:
                _FACTS[key] = facts
            return facts
        except TypeError:  # a symbolic shape (a SymInt does not hash)
            pass
    return _read_value_facts(spec, val, planned)


def _read_value_facts(spec: Any, val: Any, planned: bool) -> _Facts:
    tensor_val = isinstance(val, torch.Tensor)
    meta = _tensor_meta(spec, val) if tensor_val or (spec is not None and hasattr(spec, "dtype")) else None
    declared = _device_of_spec(spec) if spec is not None else None
    if declared is None and tensor_val:
        declared = _device(val.device.type, val.device.index or 0)
    return meta, declared, _placement(spec) if planned else None


def _is_tensor_spec(cls: type) -> bool:
    """ExecuTorch's TensorSpec itself (a subclass may compute its fields differently)."""
    return cls.__name__ == "TensorSpec" and cls.__module__ == "executorch.exir.tensor"


_IS_TENSOR_SPEC = _Interned(_is_tensor_spec, 256)  # type(spec) -> _is_tensor_spec
# type(val) -> whether it is a torch.Tensor (FakeTensor): a dict look-up, where isinstance
# against torch.Tensor costs ten times as much
_IS_TENSOR_TYPE = _Interned(lambda cls: issubclass(cls, torch.Tensor), 256)
# (what _value_facts reads of a TensorSpec and its val) -> its facts
_FACTS: dict[tuple, _Facts] = {}


def _flatten_nodes(arg: Any) -> Iterable[torch.fx.Node]:
    if isinstance(arg, _FX_NODE):
        yield arg
    elif isinstance(arg, (tuple, list)):
        for item in arg:
            yield from _flatten_nodes(item)
    elif isinstance(arg, dict):
        for item in arg.values():
            yield from _flatten_nodes(item)


# --------------------------------------------------------------------------- builder

# Module constants for the per-node paths: `torch.fx.Node` is two attribute look-ups and
# `OpKind.X` a member look-up through the enum's metaclass (~65 ns) at every use.
_FX_NODE = torch.fx.Node
_H2D, _D2H, _GETITEM, _DELEGATE, _COMPUTE, _ALIAS = (
    OpKind.H2D, OpKind.D2H, OpKind.GETITEM, OpKind.DELEGATE, OpKind.COMPUTE, OpKind.ALIAS)
_NOT_FOUND = object()  # a dict look-up's miss (None is a location: no user frame)
# Node(**fields) and Value(**fields) without their generated __init__ (slotted: filled as a
# plain twin, then given their class; see xferlint.frozen): one of each per node
_NODE_NEW, _VALUE_NEW = fast_constructor(Node), fast_constructor(Value)
_INNER_OP = Frozen(InnerOp)
_PLACEMENT = Frozen(Placement)
_DELEGATE_INFO = Frozen(DelegateInfo)


class _Op(NamedTuple):
    """A call target as _GraphReader._call_function reads it."""

    target: Any
    handler: str  # how its calls are read (see _handler)
    name: str  # target_name(target)
    schema: Optional[str]  # its schema name (`aten::cos`), None for Python callables


@dataclass
class _Builder:
    """Accumulates nodes and values of one method while walking (nested) graphs."""

    strict: bool
    nodes: list[Node] = field(default_factory=list)
    values: dict[str, Value] = field(default_factory=dict)
    # The device of each planned memory arena by mem_id, None when memory was not planned.
    arenas: Optional[dict[int, Device]] = None
    mutable_buffers: frozenset[str] = frozenset()  # buffers the method writes (by target)
    # (id(lowered module), arity) -> (the module, its DelegateInfo, its target device)
    delegates: dict[tuple[int, int], tuple[Any, DelegateInfo, Optional[Device]]] = field(default_factory=dict)
    # id(FX target) -> _Op: what a call of it is, worked out once per distinct target
    ops: dict[int, "_Op"] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)  # the method's user inputs, in order
    shapes: dict[int, tuple[Any, Any]] = field(default_factory=dict)  # id(val) -> (val, val.shape)
    # stack_trace -> its SourceLocation: nodes of one source line share one (and one parse).
    locations: dict[Optional[str], Any] = field(default_factory=dict)

    # (compile spec key, value) pairs -> (their decoded text, the target_device): delegates
    # lowered for one device share their specs.
    compile_specs: dict[tuple, tuple[tuple[tuple[str, str], ...], Optional[Device]]] = field(default_factory=dict)

    def locate(self, stack_trace: Optional[str]):
        try:
            return self.locations[stack_trace]
        except KeyError:
            found = self.locations[stack_trace] = location_from_stack_trace(stack_trace)
            return found

    def name_of(self, target: Any) -> str:
        """target_name, once per distinct target of the method (see `op`)."""
        return self.op(target).name

    def op(self, target: Any) -> "_Op":
        """What a call of `target` is, once per distinct target of the method. Keyed by
        identity (hashing an OpOverload is a Python call): the graph holds every target
        while it is read, and the entry keeps its target to check it."""
        found = self.ops.get(id(target))
        if found is None or found.target is not target:
            found = self.ops[id(target)] = _Op(target, _handler(target), target_name(target), _schema_name(target))
        return found

    def add(self, **kwargs: Any) -> Node:
        node = Node(index=len(self.nodes), **kwargs)
        self.nodes.append(node)
        return node

    def add_value(self, value: Value) -> None:
        self.values[value.id] = value


class _GraphReader:
    """Reads one FX graph (and, recursively, its control-flow bodies) into a _Builder."""

    def __init__(self, builder: _Builder, gm: torch.fx.GraphModule, scope: str, signature: Any) -> None:
        self.b = builder
        self.gm = gm
        self.scope = scope
        self.signature = signature
        self.vid: dict[torch.fx.Node, str] = {}
        self.elements: dict[torch.fx.Node, tuple[str, ...]] = {}
        self.attrs: dict[Any, Any] = {}  # get_attr target -> the object it names
        self.planned = builder.arenas is not None  # whether values carry their Placement

    def _attr(self, target: Any) -> Any:
        """The object a get_attr target names, resolved once: a delegate call reads the
        lowered module its get_attr node resolved."""
        try:
            return self.attrs[target]
        except KeyError:
            found = self.attrs[target] = _resolve_attr(self.gm, target)
            return found

    # ids ---------------------------------------------------------------------
    def _id(self, name: str) -> str:
        return f"{self.scope}/{name}" if self.scope else name

    def _declare(self, node: torch.fx.Node, constant_name: Optional[str] = None) -> tuple[str, ...]:
        """Create the value(s) a node produces and return the ids it writes."""
        meta = node.meta
        spec, val = meta.get("spec"), meta.get("val")
        base = f"{self.scope}/{node.name}" if self.scope else node.name
        self.vid[node] = base
        if isinstance(spec, (tuple, list)) or (spec is None and isinstance(val, (tuple, list))):
            specs = list(spec) if isinstance(spec, (tuple, list)) else []
            vals = list(val) if isinstance(val, (tuple, list)) else []
            count = max(len(specs), len(vals))
            ids = []
            for i in range(count):
                s = specs[i] if i < len(specs) else None
                v = vals[i] if i < len(vals) else None
                ids.append(self._value(f"{base}[{i}]", s, v, constant_name))
            self.elements[node] = tuple(ids)
            return tuple(ids)
        return (self._value(base, spec, val, constant_name),)

    def _value(self, vid: str, spec: Any, val: Any, constant_name: Optional[str]) -> str:
        meta, declared, placement = _value_facts(spec, val, self.planned, self.b.shapes)
        self.b.values[vid] = _VALUE_NEW(id=vid, tensor=meta, declared_device=declared, constant_name=constant_name,
                                        placement=placement)
        return vid

    def _operand(self, node: torch.fx.Node) -> Optional[str]:
        return self.vid.get(node)

    def _operands(self, args: Iterable[Any]) -> tuple[str, ...]:
        """The value ids of the nodes in `args` (nested in tuples, lists and dicts), in order."""
        vids = self.vid
        out = []
        for arg in args:
            # Most operands are plain nodes: only containers need the recursive walk.
            nodes = (arg,) if isinstance(arg, _FX_NODE) else _flatten_nodes(arg)
            for n in nodes:
                vid = vids.get(n)
                if vid is not None:
                    out.append(vid)
        return tuple(out)

    def _location(self, node: torch.fx.Node):
        return self.b.locate(node.meta.get("stack_trace"))

    def _emit(self, node: torch.fx.Node, kind: OpKind, inputs: tuple[str, ...], outputs: tuple[str, ...],
              target: Optional[str] = None, device: Optional[Device] = None, delegate: Optional[DelegateInfo] = None,
              mutates: bool = False) -> Node:
        b = self.b
        nodes = b.nodes
        scope = self.scope
        trace = node.meta.get("stack_trace")
        location = b.locations.get(trace, _NOT_FOUND)
        node_view = _NODE_NEW(
            index=len(nodes), name=f"{scope}/{node.name}" if scope else node.name, kind=kind,
            target=target or b.name_of(node.target), inputs=inputs, outputs=outputs, device=device,
            location=b.locate(trace) if location is _NOT_FOUND else location, delegate=delegate, scope=scope,
            mutates=mutates)
        nodes.append(node_view)
        return node_view

    # walking -----------------------------------------------------------------
    def read(self, bindings: Optional[list[tuple[str, ...]]] = None) -> list[Optional[str]]:
        """Walk the graph; `bindings` gives the operands bound to a body's placeholders.
        Returns the value ids of the graph's outputs."""
        placeholder_index = 0
        input_kinds = self._input_kinds()
        outputs: list[Optional[str]] = []
        for node in self.gm.graph.nodes:
            op = node.op
            if op == "call_function":  # the most of them
                self._call_function(node)
            elif op == "placeholder":
                self._placeholder(node, placeholder_index, bindings, input_kinds)
                placeholder_index += 1
            elif op == "get_attr":
                self._get_attr(node)
            elif op == "output":
                outputs = self._graph_outputs(node)
            elif op in ("call_module", "call_method"):
                self._unknown(node, f"{node.op} {node.target}")
        return outputs

    def _input_kinds(self) -> dict[str, tuple[str, Optional[str]]]:
        kinds: dict[str, tuple[str, Optional[str]]] = {}
        if self.signature is None:
            return kinds
        for spec in self.signature.input_specs:
            name = getattr(spec.arg, "name", None)
            if name is not None:
                kinds[name] = (spec.kind.name, spec.target)
        return kinds

    def _placeholder(self, node, index, bindings, input_kinds) -> None:
        if bindings is not None:
            outputs = self._declare(node)
            source = bindings[index] if index < len(bindings) else ()
            self._emit(node, OpKind.MOVE, source, outputs, target="bind")
            return
        kind_name, target = input_kinds.get(node.name, ("USER_INPUT", None))
        if kind_name == "USER_INPUT":
            outputs = self._declare(node)
            self._emit(node, OpKind.INPUT, (), outputs, target="input")
            self.b.inputs.extend(outputs[:1])
        else:
            outputs = self._declare(node, constant_name=target or node.name)
            self._emit(node, OpKind.CONSTANT, (), outputs, target=kind_name.lower())
            if target in self.b.mutable_buffers and outputs:
                self.b.values[outputs[0]] = dataclasses.replace(self.b.values[outputs[0]], mutable=True)
        if outputs:
            self._start_device(node, outputs[0], constant=kind_name != "USER_INPUT")

    def _start_device(self, node: torch.fx.Node, vid: str, constant: bool) -> None:
        """Where a method input or constant really starts, when the memory plan says so.

        ExecuTorch's legacy mode (enable_non_cpu_memory_planning=False) tags the specs of a
        device delegate's inputs with its device but plans them in host memory and inserts
        no copy: the tag is then a claim, not where the bytes are. A planned input starts in
        the arena it was planned in; a constant in the program's constant segment, on host;
        an unplanned input (alloc_graph_input=False, as skip_h2d_for_method_inputs needs)
        where its spec says, since the caller provides it there.
        """
        value = self.b.values.get(vid)
        if self.b.arenas is None or value is None or value.tensor is None:
            return
        spec = node.meta.get("spec")
        mem_id = getattr(spec, "mem_id", None)
        if constant:
            start: Optional[Device] = CPU
        elif mem_id is not None:
            start = self.b.arenas.get(mem_id, CPU)
        else:
            start = None
        if start is not None and value.declared_device is not None and start != value.declared_device:
            self.b.values[vid] = dataclasses.replace(value, declared_device=start, spec_device=value.declared_device)

    def _get_attr(self, node) -> None:
        attr = self._attr(node.target)
        if isinstance(attr, torch.Tensor):
            outputs = self._declare(node, constant_name=str(node.target))
            self._emit(node, OpKind.CONSTANT, (), outputs, target="constant")

    def _graph_outputs(self, node) -> list[Optional[str]]:
        result: list[Optional[str]] = []
        for arg in _flatten_args(node.args[0] if node.args else ()):
            result.append(self.vid.get(arg) if isinstance(arg, _FX_NODE) else None)
        return result

    def _unknown(self, node, what: str) -> None:
        if self.b.strict:
            raise UnmodelledOpError(
                f"node '{self._id(node.name)}' calls {what}, which xferlint has no transfer "
                "function for (strict mode); model it in xferlint/frontends/executorch.py"
            )
        outputs = self._declare(node)
        self._emit(node, OpKind.UNKNOWN, self._operands(list(node.args) + list(node.kwargs.values())), outputs,
                   target=str(what))

    def _call_function(self, node: torch.fx.Node) -> None:
        target = node.target
        op = self.b.ops.get(id(target))
        if op is None or op.target is not target:
            op = self.b.op(target)
        handler = op.handler
        if handler == "getitem":
            return self._getitem(node, op.name)
        if handler == "h2d":
            return self._copy(node, _H2D, op.name)
        if handler == "d2h":
            return self._copy(node, _D2H, op.name)
        if handler == "delegate":
            return self._delegate(node)
        if handler == "operator":
            return self._operator(node, op)
        if handler == "memory":
            return self._memory(node)
        if handler == "scalar":
            outputs = self._declare(node)
            self._emit(node, _COMPUTE, self._operands(node.args), outputs, target=op.name)
            return None
        if handler == "unknown":
            return self._unknown(node, op.name)
        return getattr(self, f"_{handler}")(node)  # cond, map_impl, scan, while_loop

    def _getitem(self, node, name: str) -> None:
        source, index = node.args[:2]
        elements = self.elements.get(source) if isinstance(source, _FX_NODE) else None
        outputs = self._declare(node)
        if elements is not None and isinstance(index, int) and 0 <= index < len(elements):
            inputs: tuple[str, ...] = (elements[index],)
        else:
            inputs = self._operands((source,))
        self._emit(node, _GETITEM, inputs, outputs, target=name)

    def _copy(self, node, kind: OpKind, name: str) -> None:
        outputs = self._declare(node)
        args = node.args
        inputs = self._operands((args[0],) if args else (node.kwargs.get("self"),))
        device = None
        if kind is _H2D:
            device = self.b.values[outputs[0]].declared_device
            if device is None or device.is_host:
                out = node.kwargs.get("out")
                if isinstance(out, _FX_NODE):
                    device = _device_of_spec(out.meta.get("spec")) or device
        self._emit(node, kind, inputs, outputs, target=name, device=device)

    def _delegate(self, node) -> None:
        args = node.args
        lowered = self._attr(args[0].target) if isinstance(args[0], _FX_NODE) else None
        inputs = self._operands(args[1:])
        # One DelegateInfo per lowered module and arity: call sites of one module share it.
        key = (id(lowered), len(inputs))
        cached = self.b.delegates.get(key)
        if cached is None or cached[0] is not lowered:
            cached = self.b.delegates[key] = (lowered, *_delegate_info(self.b, lowered, len(inputs)))
        _, info, device = cached
        outputs = self._declare(node)
        self._emit(node, _DELEGATE, inputs, outputs, device=device, delegate=info,
                   target="executorch_call_delegate")

    def _memory(self, node) -> None:
        name = getattr(node.target, "__name__", "")
        outputs = self._declare(node)
        if name == "alloc":
            self._emit(node, OpKind.ALLOC, (), outputs)
        elif name == "view":
            self._emit(node, _ALIAS, self._operands(node.args[:1]), outputs)
        else:  # memory.free and friends: no result of their own
            self._emit(node, _COMPUTE, self._operands(node.args), ())

    def _operator(self, node, op: _Op) -> None:
        sname = op.schema
        outs, mutates = _schema_traits(op.target)
        args = list(node.args) + [v for k, v in node.kwargs.items() if k not in outs]
        if sname in IGNORED_OPS:
            return None
        inputs = self._operands(args)
        outputs = self._declare(node)
        target_device = self._to_target(node, sname)
        if target_device is not None:
            source = node.args[0] if node.args else node.kwargs.get("self")
            if sname == COPY_INTO_OP and len(node.args) > 1:  # dst.copy_(src): src moves into dst
                source = node.args[1]
                inputs = self._operands([source])
            kind = transfer_kind(_meta_device(source), target_device)
            self._emit(node, kind, inputs[:1], outputs, target=op.name,
                       device=None if kind is _D2H else target_device, mutates=sname == COPY_INTO_OP)
        elif sname in _ALIAS_OPS:
            self._emit(node, _ALIAS, inputs[:1], outputs, target=op.name)
        else:
            self._emit(node, _COMPUTE, inputs, outputs, target=op.name, mutates=mutates)

    def _to_target(self, node, sname: str) -> Optional[Device]:
        """The device a `.to()` (or a cross-device `copy_`) moves its operand to: the
        `device` argument, else the result's metadata device; None for other ops."""
        if sname in _TO_DEVICE_OPS:
            if node.kwargs.get("device") is not None:
                dev = torch.device(node.kwargs["device"])
                return _device(dev.type, dev.index or 0)
            found = _meta_device(node)
            return found if sname == "aten::to" else None
        if sname == COPY_INTO_OP and len(node.args) > 1:
            dst, src = _meta_device(node.args[0]), _meta_device(node.args[1])
            return dst if dst is not None and src is not None and dst != src else None
        return None

    # control flow --------------------------------------------------------------
    def _body(self, attr_node: Any, name: str, bindings: list[tuple[str, ...]]) -> tuple[str, list[Optional[str]]]:
        if not isinstance(attr_node, _FX_NODE):
            return "", []
        body = _resolve_attr(self.gm, attr_node.target)
        if not isinstance(body, torch.fx.GraphModule):
            return "", []
        scope = f"{self._id(name)}.{attr_node.target}"
        reader = _GraphReader(self.b, body, scope, None)
        return scope, reader.read(bindings)

    def _control(self, node, inputs: tuple[str, ...]) -> tuple[str, ...]:
        outputs = self._declare(node)
        self._emit(node, OpKind.CONTROL, inputs, outputs)
        return outputs

    def _results(self, node, sources: list[Optional[str]], targets: tuple[str, ...], label: str) -> None:
        for src, dst in zip(sources, targets):
            if src is not None:
                self.b.add(name=f"{self._id(node.name)}:{label}", kind=OpKind.MOVE, target=label,
                           inputs=(src,), outputs=(dst,), scope=self.scope, location=self._location(node))

    def _cond(self, node) -> None:
        pred, true_fn, false_fn, operands = node.args[:4]
        ops = [self._operands([o]) for o in operands]
        results = self._control(node, self._operands([pred]) + tuple(v for o in ops for v in o))
        for branch in (true_fn, false_fn):
            _, outs = self._body(branch, node.name, ops)
            self._results(node, outs, results, "merge")

    def _map_impl(self, node) -> None:
        body, xs, pos_args = node.args[:3]
        bindings = [self._operands([x]) for x in list(xs) + list(pos_args)]
        results = self._control(node, tuple(v for b in bindings for v in b))
        _, outs = self._body(body, node.name, bindings)
        self._results(node, outs, results, "stack")

    def _scan(self, node) -> None:
        combine, init, xs, additional = (list(node.args) + [[]] * 4)[:4]
        carries = [self._operands([c]) for c in init]
        slices = [self._operands([x]) for x in xs] + [self._operands([a]) for a in additional]
        results = self._control(node, tuple(v for b in carries + slices for v in b))
        scope, outs = self._body(combine, node.name, carries + slices)
        self._loop_back(node, scope, combine, outs[: len(carries)])
        self._results(node, outs, results, "carry")

    def _while_loop(self, node) -> None:
        cond_fn, body_fn, carried, additional = (list(node.args) + [[]] * 4)[:4]
        carries = [self._operands([c]) for c in carried]
        extra = [self._operands([a]) for a in additional]
        results = self._control(node, tuple(v for b in carries + extra for v in b))
        cond_scope, _ = self._body(cond_fn, node.name, carries + extra)
        scope, outs = self._body(body_fn, node.name, carries + extra)
        # The next carry flows back into both the condition and the body; the loop exits
        # with the carry the condition last saw, which is the initial value when the body
        # never runs, so the results are read off the condition's carry placeholders.
        self._loop_back(node, cond_scope, cond_fn, outs[: len(carries)])
        self._loop_back(node, scope, body_fn, outs[: len(carries)])
        cond_gm = _resolve_attr(self.gm, cond_fn.target) if isinstance(cond_fn, _FX_NODE) else None
        if isinstance(cond_gm, torch.fx.GraphModule):
            placeholders = [n for n in cond_gm.graph.nodes if n.op == "placeholder"][: len(carries)]
            self._results(node, [f"{cond_scope}/{ph.name}" for ph in placeholders], results, "carry")
        else:
            self._results(node, outs, results, "carry")

    def _loop_back(self, node, scope: str, attr_node: Any, carried_out: list[Optional[str]]) -> None:
        """The back edge: each next-carry value flows into the body's carry placeholder."""
        body = _resolve_attr(self.gm, attr_node.target) if isinstance(attr_node, _FX_NODE) else None
        if not isinstance(body, torch.fx.GraphModule):
            return
        placeholders = [n for n in body.graph.nodes if n.op == "placeholder"]
        for src, ph in zip(carried_out, placeholders):
            if src is not None:
                self.b.add(name=f"{self._id(node.name)}:loop", kind=OpKind.MOVE, target="loop",
                           inputs=(src,), outputs=(f"{scope}/{ph.name}",), scope=scope)


def _handler(target: Any) -> str:
    """How _GraphReader._call_function reads a call of `target` (the same for every call)."""
    sname = _schema_name(target)
    if target is operator.getitem:
        return "getitem"
    if sname == H2D_OP:
        return "h2d"
    if sname == D2H_OP:
        return "d2h"
    if _is_delegate_call(target):
        return "delegate"
    hop = getattr(target, "__name__", None) if isinstance(target, torch._ops.HigherOrderOperator) else None
    if hop in ("cond", "map_impl", "scan", "while_loop"):
        return hop
    module = getattr(target, "__module__", "") or ""
    if module.startswith("executorch.exir.memory"):
        return "memory"
    if sname is not None:
        return "operator"
    if target in _SCALAR_BUILTINS or _is_sym_function(target):
        return "scalar"
    return "unknown"


def _delegate_info(b: _Builder, lowered: Any, n_inputs: int) -> tuple[DelegateInfo, Optional[Device]]:
    """A lowered module's DelegateInfo for a call with `n_inputs` operands, and its target_device."""
    raw_specs = tuple((spec.key, bytes(spec.value) if isinstance(spec.value, bytearray) else spec.value)
                      for spec in getattr(lowered, "compile_specs", None) or [])
    try:
        specs, device = b.compile_specs[raw_specs]
    except KeyError:
        specs, device = b.compile_specs[raw_specs] = decode_compile_specs(raw_specs)
    except TypeError:  # a value that does not hash
        specs, device = decode_compile_specs(raw_specs)
    ops, readers, writers = _inner_ops(b, lowered, n_inputs)
    info = _DELEGATE_INFO.whole({"backend": str(getattr(lowered, "backend_id", "unknown")), "compile_specs": specs,
                                 "index": None, "ops": ops, "input_readers": readers, "output_writers": writers})
    return info, device


def _inner_ops(b: _Builder, lowered: Any, n_inputs: int) -> tuple[tuple[InnerOp, ...], tuple[Optional[int], ...], tuple[Optional[int], ...]]:
    """The ops a lowered module runs (its original graph), the first op reading each of the
    call's `n_inputs` operands (its user-input placeholders, in order) and the op producing
    each result; empty when the module keeps no original graph."""
    program = getattr(lowered, "original_module", None)
    graph = getattr(getattr(program, "graph_module", None), "graph", None)
    if graph is None:
        return (), (), ()
    index: dict[torch.fx.Node, int] = {}
    ops: list[InnerOp] = []
    placeholders: list[torch.fx.Node] = []
    results: list[Any] = []
    locations, getitem = b.locations, operator.getitem
    for n in graph.nodes:
        op = n.op
        if op == "call_function":
            target = n.target
            if target is not getitem:
                index[n] = len(ops)
                trace = n.meta.get("stack_trace")
                location = locations.get(trace, _NOT_FOUND)
                ops.append(_INNER_OP.whole({"name": n.name, "target": b.name_of(target),
                                            "location": b.locate(trace) if location is _NOT_FOUND else location}))
        elif op == "placeholder":
            placeholders.append(n)
        elif op == "output":
            results = _flatten_args(n.args[0] if n.args else ())
    if len(placeholders) != n_inputs:
        # Constants the delegate owns are placeholders too; the call's operands are its
        # user inputs. (When the counts agree every placeholder is one: the signature,
        # a few objects apart from the graph per module, is then not read.)
        user_inputs = _user_inputs(getattr(program, "graph_signature", None))
        if user_inputs:
            placeholders = [p for p in placeholders if p.name in user_inputs]
    readers = tuple(_first_reader(p, index) for p in placeholders[:n_inputs])
    return tuple(ops), readers, tuple(_producer(r, index) for r in results)


def _user_inputs(signature: Any) -> set[str]:
    """Names of a signature's user-input placeholders."""
    names = set()
    for spec in getattr(signature, "input_specs", None) or ():
        kind = spec.kind
        # by identity first: an enum's `.name` is a Python-level property
        if (kind is _USER_INPUT or getattr(kind, "name", "") == "USER_INPUT") and getattr(spec.arg, "name", None):
            names.add(spec.arg.name)
    return names


_USER_INPUT = torch.export.graph_signature.InputKind.USER_INPUT


def _first_reader(placeholder: torch.fx.Node, index: dict[torch.fx.Node, int]) -> Optional[int]:
    """The index of the first op reading a placeholder, None when no op does."""
    first = None
    for user in placeholder.users:
        i = index.get(user)
        if i is not None and (first is None or i < first):
            first = i
    return first


def _producer(arg: Any, index: dict[torch.fx.Node, int]) -> Optional[int]:
    """The index of the op producing a result (through getitems), None for a pass-through."""
    while isinstance(arg, _FX_NODE) and arg.target is operator.getitem and arg.args:
        arg = arg.args[0]
    return index.get(arg) if isinstance(arg, _FX_NODE) else None


def _flatten_args(arg: Any) -> list[Any]:
    if isinstance(arg, (tuple, list)):
        out: list[Any] = []
        for item in arg:
            out.extend(_flatten_args(item))
        return out
    return [arg]


def _resolve_attr(gm: torch.nn.Module, target: str) -> Any:
    obj: Any = gm
    for part in str(target).split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _is_sym_function(target: Any) -> bool:
    """torch.sym_int, sym_max, ... on host scalars (symbolic shapes)."""
    module = getattr(target, "__module__", "") or ""
    return module.startswith("torch") and getattr(target, "__name__", "").startswith("sym_")


def _is_delegate_call(target: Any) -> bool:
    return getattr(target, "__name__", None) == "executorch_call_delegate" or (
        isinstance(target, torch._ops.HigherOrderOperator) and target.name() == "executorch_call_delegate"
    )


# --------------------------------------------------------------------------- programs


def read_method(name: str, gm: torch.fx.GraphModule, signature: Any, strict: bool = False) -> MethodView:
    """Read one method's graph module into a MethodView."""
    builder = _Builder(strict=strict, arenas=_arena_devices(gm), mutable_buffers=_mutable_buffers(signature))
    reader = _GraphReader(builder, gm, "", signature)
    outputs = reader.read()
    arenas = builder.arenas or {}
    buffers = tuple(arenas.get(i, CPU) for i in range(max(arenas, default=-1) + 1))
    # the builder's values as they are: it is dropped here, nothing else holds them
    return MethodView(name=name, nodes=tuple(builder.nodes), values=builder.values,
                      inputs=tuple(builder.inputs), outputs=tuple(outputs), buffer_devices=buffers)


def _placement(spec: Any) -> Optional[Placement]:
    """Where the memory plan put a tensor (the `.pte`'s allocation_info), None when unplanned
    or constant."""
    mem_id = getattr(spec, "mem_id", None)
    if mem_id is None or getattr(spec, "const", False):
        return None
    # the plan reuses its slots: values of a method share a few (buffer, offset, size)
    return _PLACEMENTS[int(mem_id), int(getattr(spec, "mem_offset", 0) or 0), _allocated(spec)]


# (buffer, offset, nbytes) -> its Placement, interned.
_PLACEMENTS = _Interned(lambda key: _PLACEMENT.of({"buffer": key[0], "offset": key[1], "nbytes": key[2]}), 65536)


# (shape, dtype, alignment) -> TensorSpec.allocated_memory, which recomputes it per call.
_ALLOCATED: dict[tuple[Any, Any, Any], Optional[int]] = {}


def _allocated(spec: Any) -> Optional[int]:
    """The bytes the memory plan gives a tensor (TensorSpec.allocated_memory)."""
    try:  # TensorSpec.shape is a list: the key holds it as a tuple (a SymInt does not hash)
        key: Optional[tuple] = (tuple(spec.shape), spec.dtype, spec.alignment)
        return _ALLOCATED[key]
    except KeyError:  # a new shape
        pass
    except (AttributeError, TypeError):  # not a TensorSpec, or a symbolic shape (no hash)
        key = None
    nbytes = getattr(spec, "allocated_memory", None)
    nbytes = int(nbytes) if isinstance(nbytes, int) else None
    if key is not None and len(_ALLOCATED) < 65536:
        _ALLOCATED[key] = nbytes
    return nbytes


def _arena_devices(gm: torch.fx.GraphModule) -> Optional[dict[int, Device]]:
    """The device of each memory arena (mem_id) once memory is planned, else None."""
    sizes = gm.meta.get("non_const_buffer_sizes")
    if sizes is None:
        return None
    arenas = {index: CPU for index in range(len(sizes))}
    for entry in gm.meta.get("non_const_buffer_device") or ():
        kind = getattr(getattr(entry, "device_type", None), "name", "cpu").lower()
        arenas[int(entry.buffer_idx)] = _device(kind, int(getattr(entry, "device_index", 0) or 0))
    return arenas


def _mutable_buffers(signature: Any) -> frozenset[str]:
    """Targets of the buffers a method writes (BUFFER_MUTATION outputs)."""
    specs = getattr(signature, "output_specs", None) or ()
    return frozenset(s.target for s in specs if getattr(s.kind, "name", "") == "BUFFER_MUTATION" and s.target)


def _has_device_delegate_without_copies(gm: torch.fx.GraphModule) -> bool:
    has_device_delegate = False
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if _schema_name(node.target) in (H2D_OP, D2H_OP):
            return False
        if _is_delegate_call(node.target) and isinstance(node.args[0], _FX_NODE):
            lowered = _resolve_attr(gm, node.args[0].target)
            if any(s.key == TARGET_DEVICE_KEY for s in getattr(lowered, "compile_specs", None) or []):
                has_device_delegate = True
    return has_device_delegate


def _materialize_copies(ep: Any) -> torch.fx.GraphModule:
    """Run SpecPropPass + PropagateDevicePass on a copy, as `to_executorch` would."""
    from executorch.exir.pass_base import ExportPass  # noqa: F401  (registers edge ops)
    from executorch.exir.passes import SpecPropPass
    from executorch.exir.passes.propagate_device_pass import PropagateDevicePass

    gm = copy.deepcopy(ep.graph_module)
    result = SpecPropPass()(gm)
    gm = result.graph_module if result is not None else gm
    result = PropagateDevicePass(enable_non_cpu_memory_planning=True)(gm)
    return result.graph_module if result is not None else gm


def _methods_of(obj: Any) -> list[tuple[str, Any]]:
    """(method name, ExportedProgram) pairs of a program object."""
    from torch.export import ExportedProgram

    if isinstance(obj, ExportedProgram):
        return [("forward", obj)]
    methods = getattr(obj, "methods", None)
    getter = getattr(obj, "exported_program", None)
    if methods is not None and callable(getter):
        return [(m, getter(m)) for m in sorted(methods)]
    raise InputError(f"not a program: {type(obj).__name__}")


def is_graph_program(obj: Any) -> bool:
    """True for the program objects this frontend reads."""
    names = {c.__name__ for c in type(obj).__mro__}
    return bool(names & {"ExportedProgram", "EdgeProgramManager", "ExecutorchProgramManager"})


def load_graph_program(obj: Any, input: str, name: str, file: Optional[str], strict: bool = False) -> LoadedProgram:
    """Read a program object into a ProgramView (every method)."""
    is_edge = type(obj).__name__ in ("EdgeProgramManager", "ExportedProgram")
    methods = []
    notes = []
    for method_name, ep in _methods_of(obj):
        gm = ep.graph_module
        if is_edge and _has_device_delegate_without_copies(gm):
            gm = _materialize_copies(ep)
            notes.append(f"{method_name}: copies inserted by ExecuTorch's PropagateDevicePass, as to_executorch would")
        methods.append(read_method(method_name, gm, ep.graph_signature, strict=strict))
    view = ProgramView(input=input, name=name, kind="graph", methods=tuple(methods), file=file, notes=tuple(notes))
    return LoadedProgram(view=view, native=obj)
