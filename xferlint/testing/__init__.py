"""Build real ExecuTorch device programs on a machine without a GPU.

`lower()` runs ExecuTorch's own `to_edge_transform_and_lower` + `to_executorch` with a
`DevicePartitioner` that hands ops to a backend with a `target_device` compile spec, one
delegate per op (so consecutive ops give back-to-back delegates). By default the backend
is ExecuTorch's `BackendWithCompilerDemo`, which ships in the wheel and accepts add, sin,
mm, linear, sdpa and upsample. Two switches reproduce pipelines other than stock
ExecuTorch 1.5.1:

- `elide=False` switches off PropagateDevicePass's same-device round-trip elision (as in
  pipelines that predate it), leaving `_h2d_copy(_d2h_copy(x))` pairs;
- `rewire_without_dce=True` adds a post-processing hook in `to_out_var_pass` that rewires
  those pairs' consumers to the device tensor but leaves the D2H behind, dead.

Used by the sample models, the rules' examples and the tests.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Optional, Sequence, Union

import torch

# Registers the demo backend with ExecuTorch's backend registry.
import executorch.exir.backend.test.backend_with_compiler_demo  # noqa: F401
from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig, to_edge_transform_and_lower
from executorch.exir.backend.compile_spec_schema import CompileSpec
from executorch.exir.backend.partitioner import DelegationSpec, Partitioner, PartitionResult
from executorch.exir.backend.utils import tag_constant_data
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.passes import ToOutVarPass
from executorch.exir.passes.propagate_device_pass import PropagateDevicePass
from torch.fx.passes.infra.pass_base import PassBase, PassResult

DEMO_BACKEND = "BackendWithCompilerDemo"
DEMO_OPS = (
    exir_ops.edge.aten.add.Tensor,
    exir_ops.edge.aten.sin.default,
    exir_ops.edge.aten.mm.default,
    exir_ops.edge.aten.linear.default,
    exir_ops.edge.aten.scaled_dot_product_attention.default,
    exir_ops.edge.aten.upsample_nearest2d.vec,
)

DeviceAssignment = Union[Sequence[Optional[str]], Callable[[torch.fx.Node, int], Optional[str]]]


class DevicePartitioner(Partitioner):
    """Tags each supported op with its own delegate on the device `devices` assigns.

    `devices` is a sequence consumed in graph order over the supported ops (None keeps an
    op on the host; a sequence shorter than the ops repeats) or a function
    `(node, position) -> device or None`. Parameters used by one delegate only are
    absorbed into it (`absorb_constants=False` leaves them outside). Each op gets its own delegate, so two adjacent
    ops on one device are two delegates with a device -> host -> device boundary between
    them, as a partitioner that cannot fuse them leaves it. `nested=True` also tags the ops
    inside `cond` branches and `map` bodies (ExecuTorch lowers those into delegates inside
    the body, where PropagateDevicePass never inserts copies); by default only the
    top-level graph is partitioned.
    """

    def __init__(self, devices: DeviceAssignment, backend: str = DEMO_BACKEND, ops: Sequence[Any] = DEMO_OPS,
                 extra_specs: Sequence[CompileSpec] = (CompileSpec("max_value", bytes([4])),),
                 absorb_constants: bool = True, nested: bool = False) -> None:
        super().__init__()
        self.absorb_constants = absorb_constants
        self.nested = nested
        self.devices = devices
        self.backend = backend
        self.ops = tuple(ops)
        self.extra_specs = list(extra_specs)

    def _device_for(self, node: torch.fx.Node, position: int) -> Optional[str]:
        if callable(self.devices):
            return self.devices(node, position)
        if not self.devices:
            return None
        return self.devices[position % len(self.devices)]

    def partition(self, exported_program: Any) -> PartitionResult:
        tags: dict[str, DelegationSpec] = {}
        position = 0
        for node in self._nodes(exported_program.graph_module):
            if node.op != "call_function" or node.target not in self.ops:
                continue
            device = self._device_for(node, position)
            position += 1
            if device is None:
                continue
            tag = f"xferlint_{position}"
            node.meta["delegation_tag"] = tag
            specs = self.extra_specs + [CompileSpec("target_device", device.encode("utf-8"))]
            tags[tag] = DelegationSpec(self.backend, specs)
        if self.absorb_constants:
            # Parameters used only inside one delegate move into it, as real partitioners
            # do; one left outside would be copied host->device on every call.
            tag_constant_data(exported_program)
        return PartitionResult(tagged_exported_program=exported_program, partition_tags=tags)

    def _nodes(self, graph_module: torch.fx.GraphModule) -> Iterator[torch.fx.Node]:
        """The graph's nodes, then (nested=True) those of its control-flow bodies."""
        yield from graph_module.graph.nodes
        if self.nested:
            from executorch.exir.graph_module import get_control_flow_submodules

            for _, body, _ in get_control_flow_submodules(graph_module):
                yield from self._nodes(body)

    def ops_to_not_decompose(self, ep: Any) -> tuple[list[Any], Optional[Callable[[torch.fx.Node], bool]]]:
        keep = [exir_ops.edge.aten.linear.default._op] if exir_ops.edge.aten.linear.default in self.ops else []
        return keep, None


@contextlib.contextmanager
def upstream_elision(enabled: bool) -> Iterator[None]:
    """Switch PropagateDevicePass's same-device round-trip elision off for a lowering."""
    if enabled:
        yield
        return
    original = PropagateDevicePass._elide_redundant_same_device_copies
    PropagateDevicePass._elide_redundant_same_device_copies = lambda self, graph_module: None
    try:
        yield
    finally:
        PropagateDevicePass._elide_redundant_same_device_copies = original


class RewireWithoutDCE(PassBase):
    """A post-processing hook that elides same-device round trips but forgets the D2H.

    It rewires every `_h2d_copy(_d2h_copy(x))` on x's own device to x and erases the H2D,
    leaving the D2H in the graph with no users: the dead copies XF003 reports.
    """

    def call(self, graph_module: torch.fx.GraphModule) -> PassResult:
        h2d = torch.ops.et_copy._h2d_copy.default
        d2h = torch.ops.et_copy._d2h_copy.default
        changed = False
        for node in list(graph_module.graph.nodes):
            if node.op != "call_function" or node.target != h2d:
                continue
            src = node.args[0]
            if not (isinstance(src, torch.fx.Node) and src.target == d2h):
                continue
            x = src.args[0]
            x_spec, h_spec = x.meta.get("spec"), node.meta.get("spec")
            if (x_spec.device, x_spec.device_index) != (h_spec.device, h_spec.device_index):
                continue
            node.replace_all_uses_with(x)
            graph_module.graph.erase_node(node)
            changed = True
        graph_module.recompile()
        return PassResult(graph_module, changed)


class PlanConstantCopies(PassBase):
    """A `to_out_var_pass` hook that lets `to_executorch` emit copies of constants.

    ExecuTorch 1.5.1 clones a parameter's TensorSpec for the `_h2d_copy` in front of a
    device delegate that does not own the parameter, `const=True` included, and the
    emitter then fails (`'NoneType' object has no attribute 'nbytes'`). Marking those
    copies' specs as planned buffers works around it, as a pipeline that wants the program
    anyway would: the program then copies the constant host-to-device on every call
    (what XF006 reports). Use as `ThenPass(PlanConstantCopies(), ToOutVarPass(...))`.
    """

    def call(self, graph_module: torch.fx.GraphModule) -> PassResult:
        changed = False
        for node in graph_module.graph.nodes:
            if node.op == "call_function" and node.target == torch.ops.et_copy._h2d_copy.default:
                spec = node.meta.get("spec")
                if spec is not None and getattr(spec, "const", False):
                    spec.const = False
                    spec.storage = None
                    changed = True
        return PassResult(graph_module, changed)


class ThenPass(PassBase):
    """Run `first`, then `second` (to wrap ExecuTorch's default `to_out_var_pass`)."""

    def __init__(self, first: Callable[..., Any], second: Callable[..., Any]) -> None:
        super().__init__()
        self.first, self.second = first, second

    def call(self, graph_module: torch.fx.GraphModule) -> PassResult:
        result = self.first(graph_module)
        graph_module = result.graph_module if result is not None else graph_module
        result = self.second(graph_module)
        return result if result is not None else PassResult(graph_module, True)


def lower(
    module: torch.nn.Module,
    example_inputs: tuple[Any, ...],
    devices: DeviceAssignment,
    *,
    elide: bool = True,
    rewire_without_dce: bool = False,
    partitioner: Optional[Partitioner] = None,
    backend_config: Optional[ExecutorchBackendConfig] = None,
    to_executorch: bool = True,
) -> Any:
    """Export, lower and (by default) `to_executorch` a module with device delegates."""
    exported = torch.export.export(module, example_inputs, strict=False)
    edge = to_edge_transform_and_lower(
        exported,
        partitioner=[partitioner or DevicePartitioner(devices)],
        compile_config=EdgeCompileConfig(_check_ir_validity=False),
    )
    if not to_executorch:
        return edge
    config = backend_config or ExecutorchBackendConfig()
    if rewire_without_dce:
        config.to_out_var_pass = ThenPass(RewireWithoutDCE(), ToOutVarPass(ignore_to_out_var_failure=False))
    with upstream_elision(elide):
        return edge.to_executorch(config)
