"""`.pt2` frontend: a serialized ExportedProgram (model JSON) -> ProgramView, without torch.

The view is the one the graph frontend builds from the ExportedProgram itself: one INPUT or
CONSTANT node per graph input (the signature says which: parameters, buffers, lifted
constants), one node per graph node in order, values named as the FX nodes are. Devices,
dtypes and sizes come from `tensor_values`; source lines from each node's `stack_trace`.
`.to()` ops (`aten._to_copy`, `aten.to.*`) and cross-device `aten.copy_` are classified
by `xferlint.frontends.aten` exactly as for ExportedPrograms. The bodies of `cond`,
`map_impl`, `scan` and `while_loop` (serialized as `as_graph` arguments) are inlined as the
graph frontend inlines them: MOVE nodes bind their inputs, carry loop values back into them
and move their results out; other higher-order operators read as UNKNOWN (strict mode
refuses them).
Every field is type-checked as it is read; a malformed one is a one-line Pt2FormatError.
"""

from __future__ import annotations

import os
from dataclasses import field, replace
from functools import lru_cache
from typing import Any, Iterator, Optional

from xferlint.analyzer.lattice import Device, interned_device
from xferlint.analyzer.view import MethodView, Node, OpKind, ProgramView, SourceLocation, TensorMeta, Value
from xferlint.errors import UnmodelledOpError
from xferlint.frontends import LoadedProgram
from xferlint.frontends.aten import ALIAS_OPS, COPY_INTO_OP, IGNORED_OPS, TO_DEVICE_OPS, transfer_kind
from xferlint.frontends.bounded import read_file, safe_text
from xferlint.frontends.pt2.archive import Pt2Archive, Pt2FormatError, open_archive
from xferlint.frontends.source import location_from_stack_trace, relocate
from xferlint.frozen import fast_constructor
from xferlint.records import dataclass

# torch/_export/serde/schema.py ScalarType -> (torch's name, bytes per element)
SCALAR_TYPES: dict[int, tuple[str, Optional[int]]] = {
    1: ("uint8", 1), 2: ("int8", 1), 3: ("int16", 2), 4: ("int32", 4), 5: ("int64", 8), 6: ("float16", 2),
    7: ("float32", 4), 8: ("float64", 8), 9: ("complex32", 4), 10: ("complex64", 8), 11: ("complex128", 16),
    12: ("bool", 1), 13: ("bfloat16", 2), 28: ("uint16", 2), 29: ("float8_e4m3fn", 1), 30: ("float8_e5m2", 1),
    31: ("float8_e4m3fnuz", 1), 32: ("float8_e5m2fnuz", 1), 33: ("float8_e8m0fnu", 1), 34: ("uint32", 4),
    35: ("uint64", 8),
}
_CONSTANT_SPECS = {"parameter": "parameter_name", "buffer": "buffer_name", "tensor_constant": "tensor_constant_name",
                   "custom_obj": "custom_obj_name", "token": None}
_SYM_KEYS = ("as_sym_int", "as_sym_float", "as_sym_bool")
# the argument kinds that refer to values (`_refs`); any other is a constant
_REF_KEYS = frozenset({"as_tensor", "as_tensors", "as_optional_tensors", "as_optional_tensor", *_SYM_KEYS,
                       "as_sym_ints", "as_sym_floats", "as_sym_bools"})
_HOPS = frozenset({"higher_order::cond", "higher_order::map_impl", "higher_order::scan", "higher_order::while_loop"})
_UNSET = object()
_NODE_NEW, _VALUE_NEW = fast_constructor(Node), fast_constructor(Value)
_HOST_SCALAR_PREFIXES = ("_operator.", "operator.", "torch.sym_", "math.", "builtins.")


def _fail(where: str, what: str) -> Pt2FormatError:
    return Pt2FormatError(f"corrupt model JSON: {where}: {what}")


def _dict(obj: Any, where: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise _fail(where, f"expected an object, found {type(obj).__name__}")
    return obj


def _list(obj: Any, where: str, part: str = "") -> list[Any]:
    """`obj`, a list (None: empty); `where` + `part` name it in a failure's message."""
    if type(obj) is list:
        return obj
    if obj is None:
        return []
    if not isinstance(obj, list):
        raise _fail(where + part, f"expected a list, found {type(obj).__name__}")
    return obj


def _name(obj: Any, where: str) -> str:
    name = obj.get("name") if isinstance(obj, dict) else None
    if not isinstance(name, str) or not name:
        raise _fail(where, "a value reference without a name")
    return name


def _device(obj: Any, where: str) -> Device:
    d = _dict(obj, where)
    kind, index = d.get("type"), d.get("index")
    if not isinstance(kind, str) or not (index is None or (isinstance(index, int) and 0 <= index < 1 << 16)):
        raise _fail(where, f"bad device {safe_text(d, 80)}")
    return interned_device(safe_text(kind, 32), index or 0)


def _tensor_meta(obj: Any, metas: dict, where: Any) -> tuple[TensorMeta, Optional[Device]]:
    """A `tensor_values` entry's TensorMeta (one per distinct shape, dtype and size, from
    `metas`: thousands of values share a few) and device. `where()` names the entry, made
    only for a failure's message."""
    if not isinstance(obj, dict):
        raise _fail(where(), f"expected an object, found {type(obj).__name__}")
    dtype = obj.get("dtype")
    name, itemsize = SCALAR_TYPES.get(dtype, (None, None)) if isinstance(dtype, int) else (None, None)
    sizes = obj.get("sizes")
    if sizes is None:
        sizes = ()
    elif not isinstance(sizes, list):
        raise _fail(f"{where()}.sizes", f"expected a list, found {type(sizes).__name__}")
    shape: list[Optional[int]] = []
    for dim in sizes:
        size = dim.get("as_int") if isinstance(dim, dict) else None
        shape.append(size if isinstance(size, int) and size >= 0 else None)
    nbytes: Optional[int] = None
    if itemsize is not None and None not in shape:
        nbytes = itemsize
        for d in shape:
            nbytes *= d  # type: ignore[operator]
    key = (*shape, name, nbytes)  # the shape's length is read off the key's
    meta = metas.get(key)
    if meta is None:
        meta = metas[key] = TensorMeta(shape=tuple(shape), dtype=name, nbytes=nbytes)
    device = obj.get("device")
    return meta, (_device(device, f"{where()}.device") if device is not None else None)


def _refs(arg: Any, where: str) -> Iterator[str]:
    """The value names an argument (or output) refers to: tensors, tensor lists, optional
    tensors and symbolic scalars; constants (ints, devices, dtypes, graphs) refer to none."""
    if not isinstance(arg, dict):
        return
    for key, body in arg.items():
        if key == "as_tensor":
            yield _name(body, where)
        elif key in ("as_tensors", "as_optional_tensors"):
            for item in _list(body, where):
                if isinstance(item, dict) and ("as_tensor" in item or "as_none" in item):
                    yield from _refs(item, where)  # an optional tensor
                else:
                    yield _name(item, where)
        elif key == "as_optional_tensor":
            yield from _refs(body, where)
        elif key in _SYM_KEYS or key in ("as_sym_ints", "as_sym_floats", "as_sym_bools"):
            for item in (body if isinstance(body, list) else [body]):
                if isinstance(item, dict) and isinstance(item.get("as_name"), str):
                    yield item["as_name"]


def body_label(body: dict[str, Any], k: int) -> str:
    """The label of a higher-order op's subgraph argument `k` (`true_graph_0`)."""
    return safe_text(body.get("name") or f"graph_{k}", 60)


def body_scope(node_id: str, label: str) -> str:
    """The scope of a subgraph of node `node_id` (its nodes are `<scope>/<name>`); the
    `.pt2` fixes find the subgraph again by it."""
    return f"{node_id}.{label}"


def scoped(scope: str, name: str) -> str:
    """The view id of a node or value `name` of the graph at `scope`."""
    return f"{scope}/{name}" if scope else name


value_refs = _refs  # public: the `.pt2` fixes check what their edits leave referenced


@lru_cache(maxsize=4096)  # a program calls a few operators many times
def _op_name(target: str) -> tuple[str, str]:
    """`torch.ops.aten._to_copy.default` -> (`aten::_to_copy`, `default`)."""
    parts = target[len("torch.ops."):].split(".") if target.startswith("torch.ops.") else []
    if len(parts) >= 3:
        return f"{parts[0]}::{'.'.join(parts[1:-1])}", parts[-1]
    if len(parts) == 2:
        return f"{parts[0]}::{parts[1]}", "default"
    return "", ""


@dataclass
class _MethodReader:
    """Reads one serialized graph module into a MethodView."""

    gm: dict[str, Any]
    strict: bool
    nodes: list[Node] = field(default_factory=list)
    values: dict[str, Value] = field(default_factory=dict)
    devices: dict[str, Device] = field(default_factory=dict)
    scope: str = ""  # "" at the top level, `cond.true_graph_0` inside a body
    input_ids: list[str] = field(default_factory=list)  # a body's inputs, in order
    # stack trace -> its SourceLocation (or None), shared with the bodies: the nodes of a
    # layer written once and run in a loop share their traces, and one parse each is enough
    locations: dict[str, Optional[SourceLocation]] = field(default_factory=dict)
    metas: dict[tuple, TensorMeta] = field(default_factory=dict)  # `_tensor_meta`'s, shared with the bodies

    def add(self, **kwargs: Any) -> Node:
        node = _NODE_NEW(index=len(self.nodes), scope=self.scope, **kwargs)
        self.nodes.append(node)
        return node

    def _id(self, name: str) -> str:
        return scoped(self.scope, name)

    def _ids(self, arg: Any, where: str, part: str = "", k: Optional[int] = None) -> tuple[str, ...]:
        """The ids of the values `arg` refers to (`_refs`); `where`, `part` and `k` name it in
        a failure's message (`graph.nodes[3]` `.outputs` `[0]`), joined only then."""
        if type(arg) is dict and len(arg) == 1:  # most arguments: one tensor, or a constant
            for key, body in arg.items():
                if key == "as_tensor" and type(body) is dict:
                    name = body.get("name")
                    if type(name) is str and name:
                        return (scoped(self.scope, name),)
                elif key not in _REF_KEYS:
                    return ()
        where = f"{where}{part}" if k is None else f"{where}{part}[{k}]"
        return tuple(self._id(r) for r in _refs(arg, where))

    def read(self) -> MethodView:
        graph = _dict(self.gm.get("graph"), "graph_module.graph")
        self._values(graph)
        kinds, mutated = self._signature()
        inputs = []
        for i, arg in enumerate(_list(graph.get("inputs"), "graph.inputs")):
            names = list(_refs(arg, f"graph.inputs[{i}]"))
            if names:
                inputs.extend(self._graph_input(names[0], kinds, mutated))
        for i, node in enumerate(_list(graph.get("nodes"), "graph.nodes")):
            self._node(_dict(node, f"graph.nodes[{i}]"), f"graph.nodes[{i}]")
        outputs: list[Optional[str]] = []
        for i, arg in enumerate(_list(graph.get("outputs"), "graph.outputs")):
            names = list(_refs(arg, f"graph.outputs[{i}]"))
            outputs.extend(names or [None])
        return MethodView(name="forward", nodes=tuple(self.nodes), values=self.values, inputs=tuple(inputs),
                          outputs=tuple(o if o in self.values else None for o in outputs))

    def _values(self, graph: dict[str, Any]) -> None:
        tensors = _dict(graph.get("tensor_values") or {}, "graph.tensor_values")
        values, devices, metas, scope = self.values, self.devices, self.metas, self.scope
        for name, meta in tensors.items():
            tensor, device = _tensor_meta(meta, metas, lambda: f"tensor_values[{safe_text(name, 60)}]")
            vid = scoped(scope, name)
            values[vid] = _VALUE_NEW(id=vid, tensor=tensor, declared_device=device)
            if device is not None:
                devices[vid] = device
        for key in ("sym_int_values", "sym_float_values", "sym_bool_values", "custom_obj_values"):
            for name in _dict(graph.get(key) or {}, f"graph.{key}"):
                self.values.setdefault(self._id(name), Value(id=self._id(name)))

    def _signature(self) -> tuple[dict[str, tuple[str, Optional[str]]], set[str]]:
        sig = _dict(self.gm.get("signature") or {}, "graph_module.signature")
        kinds: dict[str, tuple[str, Optional[str]]] = {}
        for i, spec in enumerate(_list(sig.get("input_specs"), "signature.input_specs")):
            for kind, body in _dict(spec, f"signature.input_specs[{i}]").items():
                if kind in _CONSTANT_SPECS and isinstance(body, dict):
                    key = _CONSTANT_SPECS[kind]
                    target = body.get(key) if key else None
                    kinds[_name(body.get("arg"), f"signature.input_specs[{i}]")] = (kind, target)
        mutated = set()
        for i, spec in enumerate(_list(sig.get("output_specs"), "signature.output_specs")):
            body = _dict(spec, f"signature.output_specs[{i}]").get("buffer_mutation")
            if isinstance(body, dict) and isinstance(body.get("buffer_name"), str):
                mutated.add(body["buffer_name"])
        return kinds, mutated

    def _graph_input(self, name: str, kinds, mutated: set[str]) -> tuple[str, ...]:
        value = self.values.setdefault(name, Value(id=name))
        kind, target = kinds.get(name, ("user_input", None))
        if kind == "user_input":
            self.add(name=name, kind=OpKind.INPUT, target="input", outputs=(name,))
            return (name,)
        constant = target if isinstance(target, str) else name
        self.values[name] = Value(id=name, tensor=value.tensor, declared_device=value.declared_device,
                                  constant_name=safe_text(constant), mutable=constant in mutated)
        self.add(name=name, kind=OpKind.CONSTANT, target=kind, outputs=(name,))
        return ()

    def _node(self, node: dict[str, Any], where: str) -> None:
        target = node.get("target")
        if not isinstance(target, str):
            raise _fail(where, "a node without a target")
        sname, overload = _op_name(target)
        if sname in IGNORED_OPS:
            return
        args: list[tuple[Optional[str], Any]] = []
        for k, inp in enumerate(_list(node.get("inputs"), where, ".inputs")):
            if type(inp) is not dict:
                _dict(inp, f"{where}.inputs[{k}]")  # raises, naming it
            arg_name = inp.get("name")
            args.append((arg_name if type(arg_name) is str else None, inp.get("arg")))
        ids = self._ids
        operands = tuple(r for n, a in args if n != "out" for r in ids(a, where, ".inputs"))
        outputs = tuple(r for k, o in enumerate(_list(node.get("outputs"), where, ".outputs"))
                        for r in ids(o, where, ".outputs", k))
        values = self.values
        for vid in operands + outputs:
            if vid not in values:
                values[vid] = _VALUE_NEW(id=vid)
        name = node.get("name") if isinstance(node.get("name"), str) else (outputs[0] if outputs else where)
        metadata = node.get("metadata") if isinstance(node.get("metadata"), dict) else {}
        trace = metadata.get("stack_trace")
        common = dict(name=self._id(safe_text(name)), target=safe_text(target[len("torch.ops."):] if sname else target),
                      outputs=outputs, location=self._location(trace))
        if sname in TO_DEVICE_OPS or sname == COPY_INTO_OP:
            moved = self._move(sname, args, operands, outputs, where)
            if moved is not None:
                kind, source, device = moved
                self.add(kind=kind, inputs=(source,), device=None if kind == OpKind.D2H else device,
                         mutates=sname == COPY_INTO_OP, **common)
                return
        if sname in _HOPS:
            self._hop(sname.split("::")[1], args, outputs, common, where)
        elif sname in ALIAS_OPS:
            self.add(kind=OpKind.ALIAS, inputs=operands[:1], **common)
        elif sname.startswith("higher_order::") or not (sname or target.startswith(_HOST_SCALAR_PREFIXES)):
            if self.strict:
                raise UnmodelledOpError(f"node '{safe_text(name)}' calls {safe_text(target)}, which xferlint has no "
                                        "transfer function for (strict mode); model it in xferlint/frontends/pt2/view.py")
            self.add(kind=OpKind.UNKNOWN, inputs=operands, **common)
        else:
            op = sname.split("::")[-1]
            mutates = (op.endswith("_") and not op.endswith("__")) or overload == "out"
            self.add(kind=OpKind.COMPUTE, inputs=operands, mutates=mutates, **common)

    def _location(self, trace: Any) -> Optional[SourceLocation]:
        """The SourceLocation of a node's stack trace, one per distinct trace."""
        if not isinstance(trace, str) or not trace:
            return None
        found = self.locations.get(trace, _UNSET)
        if found is _UNSET:
            found = self.locations[trace] = location_from_stack_trace(trace)
        return found

    def _hop(self, hop: str, args, outputs, common, where) -> None:
        """A higher-order op: a CONTROL node reading its operands, each subgraph inlined
        with its inputs bound (MOVE `bind`), loop-carried values fed back into the inputs
        (MOVE `loop`: scan, while_loop) and its results moved into the op's outputs (MOVE
        `merge` for cond, `stack` for map, `carry` for loops), as the graph frontend reads
        them. `groups`: the operand lists in argument order (cond: pred, operands; map: xs,
        additional; scan: init, xs, additional; while_loop: carried, additional)."""
        groups = [self._ids(a, f"{where}.inputs") for _, a in args
                  if not (isinstance(a, dict) and "as_graph" in a)]
        bodies = [(k, a["as_graph"]) for k, (_, a) in enumerate(args)
                  if isinstance(a, dict) and isinstance(a.get("as_graph"), dict)]
        operands = tuple(v for g in groups for v in g)
        self.add(kind=OpKind.CONTROL, inputs=operands, **{**common, "outputs": outputs})
        bound = operands[len(groups[0]):] if hop == "cond" and groups else operands
        carries = len(groups[0]) if hop in ("scan", "while_loop") and groups else 0
        read = []
        for k, body in bodies:
            label = body_label(body, k)
            child = _MethodReader(self.gm, self.strict, self.nodes, self.values, self.devices,
                                  scope=body_scope(common["name"], label), locations=self.locations,
                                  metas=self.metas)
            graph = _dict(body.get("graph"), f"{where}.{label}")
            read.append((child, child.body(graph, bound, f"{where}.{label}")))
        label = {"cond": "merge", "map_impl": "stack"}.get(hop, "carry")
        if not carries:
            for _, results in read:
                self._results(common, results, outputs, label)
            return
        body_results = read[-1][1]  # scan: the combine graph; while_loop: the body
        for child, _ in read:  # the next carries flow back into every subgraph's inputs
            child.loop_back(common, body_results[:carries])
        if hop == "while_loop" and len(read) == 2:
            # the loop exits with the carry the condition last saw (the initial one when the
            # body never runs): the results are read off the condition's carry inputs
            self._results(common, read[0][0].input_ids[:carries], outputs, label)
        else:
            self._results(common, body_results, outputs, label)

    def _results(self, common, sources, targets, label: str) -> None:
        for src, dst in zip(sources, targets):
            self.add(name=f"{common['name']}:{label}", kind=OpKind.MOVE, target=label, inputs=(src,),
                     outputs=(dst,), location=common["location"])

    def loop_back(self, common, carried_out) -> None:
        """The back edge of a loop: each next-carry value flows into this subgraph's input."""
        for src, dst in zip(carried_out, self.input_ids):
            self.add(name=f"{common['name']}:loop", kind=OpKind.MOVE, target="loop", inputs=(src,), outputs=(dst,))

    def body(self, graph: dict[str, Any], bound: tuple[str, ...], where: str) -> list[str]:
        """Read a control-flow body; returns the value ids of its outputs."""
        self._values(graph)
        for i, arg in enumerate(_list(graph.get("inputs"), f"{where}.inputs")):
            for vid in self._ids(arg, f"{where}.inputs[{i}]"):
                self.values.setdefault(vid, Value(id=vid))
                self.input_ids.append(vid)
                self.add(name=vid, kind=OpKind.MOVE, target="bind", inputs=bound[i:i + 1], outputs=(vid,))
        for i, node in enumerate(_list(graph.get("nodes"), f"{where}.nodes")):
            self._node(_dict(node, f"{where}.nodes[{i}]"), f"{where}.nodes[{i}]")
        return [vid for i, arg in enumerate(_list(graph.get("outputs"), f"{where}.outputs"))
                for vid in self._ids(arg, f"{where}.outputs[{i}]")]

    def _move(self, sname, args, operands, outputs, where) -> Optional[tuple[OpKind, str, Device]]:
        """(kind, moved value, target device) of a `.to()` or cross-device `copy_`."""
        if sname == COPY_INTO_OP:
            if len(operands) < 2:
                return None
            dst, src = operands[0], operands[1]
            target, source = self.devices.get(dst), self.devices.get(src)
            if target is None or source is None or target == source:
                return None
            return transfer_kind(source, target), src, target
        if not operands:
            return None
        device_arg = next((a["as_device"] for n, a in args if isinstance(a, dict) and "as_device" in a), None)
        target = _device(device_arg, f"{where}.device") if device_arg is not None else None
        if target is None and sname == "aten::to" and outputs:
            target = self.devices.get(outputs[0])
        if target is None:
            return None
        return transfer_kind(self.devices.get(operands[0]), target), operands[0], target


def view_of(archive: Pt2Archive, label: str, name: str, path: Optional[str], strict: bool = False) -> ProgramView:
    gm = _dict(archive.model.get("graph_module"), "graph_module")
    method = _MethodReader(gm, strict).read()
    if path is not None:
        method = _relocated(method, path)
    return ProgramView(input=label, name=name, kind="pt2", methods=(method,), file=path)


def _relocated(method: MethodView, path: str) -> MethodView:
    """The method with its nodes' source files found beside the archive (`relocate`), each
    distinct location asked once (nodes share them: `_MethodReader._location`); the nodes
    whose location stays as it is are kept as they are."""
    moved: dict[int, Optional[SourceLocation]] = {}  # id(location) -> relocated; the nodes keep them alive
    cache: dict = {}
    nodes = list(method.nodes)
    changed = False
    for k, node in enumerate(nodes):
        loc = node.location
        if loc is None:
            continue
        new = moved.get(id(loc), _UNSET)
        if new is _UNSET:
            new = moved[id(loc)] = relocate(loc, path, cache)
        if new is not loc:
            nodes[k] = replace(node, location=new)
            changed = True
    return replace(method, nodes=tuple(nodes)) if changed else method


@dataclass(frozen=True, slots=True)
class Pt2Native:
    """The native side of a `.pt2` view (for fixes): the file's bytes and decoded archive."""

    path: Optional[str]
    data: bytes
    archive: Pt2Archive


def load_pt2_bytes(data: bytes, label: str = "program.pt2", path: Optional[str] = None,
                   strict: bool = False) -> LoadedProgram:
    """Read `.pt2` bytes into a view (raises an InputError with a one-line message)."""
    try:
        archive = open_archive(data)
        name = os.path.splitext(os.path.basename(path))[0] if path else archive.root
        view = view_of(archive, label, name, path, strict)
    except Pt2FormatError as exc:
        raise Pt2FormatError(f"{label}: {exc}") from None
    except RecursionError:
        raise Pt2FormatError(f"{label}: model JSON nested too deep") from None
    return LoadedProgram(view=view, native=Pt2Native(path=path, data=data, archive=archive))


def load_pt2_file(path: str, label: Optional[str] = None, strict: bool = False) -> LoadedProgram:
    """Read a `.pt2` file into a ProgramView. Never imports torch, never unpickles."""
    label = label or path
    return load_pt2_bytes(read_file(path, label, ".pt2"), label=label, path=path, strict=strict)
