"""Device programs whose delegates really run on a CPU-only machine: XNNPACK + target_device.

- `XnnpackDevicePartitioner(device)`: ExecuTorch's `XnnpackPartitioner`, with a
  `target_device` compile spec appended to each delegation spec, so `PropagateDevicePass`
  inserts the H2D / D2H copies a GPU backend would get.
- `xnnpack_per_op(devices)`: a `DevicePartitioner` that hands each supported op to its own
  XNNPACK delegate (back-to-back delegates: round trips, shared inputs, duplicates).
- `run_on_cpu(program, inputs)`: run a device program with ExecuTorch's Python runtime.
  The runtime refuses device buffers without a device allocator, so this runs a patched
  copy: every tensor and buffer tagged for a device is moved to CPU and the `et_copy` ops
  become `aten::alias_copy.out` (a plain copy), which keeps the numerics of the program
  (XNNPACK delegates run on CPU anyway). For numerical equivalence checks only.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import torch

import executorch.backends.xnnpack.xnnpack_preprocess  # noqa: F401  (registers XnnpackBackend)
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.exir.backend.compile_spec_schema import CompileSpec
from executorch.exir.backend.partitioner import Partitioner, PartitionResult
from executorch.exir.dialects._ops import ops as exir_ops

from xferlint.testing import DeviceAssignment, DevicePartitioner

XNNPACK_BACKEND = "XnnpackBackend"
XNNPACK_OPS = (
    exir_ops.edge.aten.add.Tensor,
    exir_ops.edge.aten.sub.Tensor,
    exir_ops.edge.aten.mul.Tensor,
    exir_ops.edge.aten.mm.default,
    exir_ops.edge.aten.linear.default,
    exir_ops.edge.aten.relu.default,
)


class XnnpackDevicePartitioner(Partitioner):
    """XnnpackPartitioner whose delegates carry `target_device` (default cuda:0)."""

    def __init__(self, device: str = "cuda:0", **xnnpack_options: Any) -> None:
        super().__init__()
        self.inner = XnnpackPartitioner(**xnnpack_options)
        self.device = device

    def partition(self, exported_program: Any) -> PartitionResult:
        result = self.inner.partition(exported_program)
        for spec in result.partition_tags.values():
            spec.compile_specs.append(CompileSpec("target_device", self.device.encode("utf-8")))
        return result

    def ops_to_not_decompose(self, ep: Any):
        return self.inner.ops_to_not_decompose(ep)


def xnnpack_per_op(devices: DeviceAssignment, ops: Sequence[Any] = XNNPACK_OPS) -> DevicePartitioner:
    """One XNNPACK delegate per supported op, on the device `devices` assigns."""
    return DevicePartitioner(devices, backend=XNNPACK_BACKEND, ops=ops, extra_specs=())


def runnable_on_cpu(pte: bytes) -> bytes:
    """A copy of a serialized device program that ExecuTorch's CPU runtime can load."""
    from executorch.exir import schema
    from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary

    pte_file = deserialize_pte_binary(pte)
    for plan in pte_file.program.execution_plan:
        for value in plan.values:
            info = getattr(value.val, "extra_tensor_info", None)
            if isinstance(value.val, schema.Tensor) and info is not None:
                info.device_type = schema.DeviceType.CPU
                info.device_index = 0
        plan.non_const_buffer_device = None
        for op in plan.operators:
            if op.name.startswith("et_copy::"):
                op.name, op.overload = "aten::alias_copy", "out"
    return bytes(serialize_pte_binary(pte_file, extract_delegate_segments=True))


def run_on_cpu(program: Any, inputs: Sequence[torch.Tensor], method: str = "forward",
               pte: Optional[bytes] = None) -> list[torch.Tensor]:
    """Run `method` of a device program (ExecutorchProgramManager, or `pte` bytes) on CPU."""
    from executorch.runtime import Runtime

    data = runnable_on_cpu(pte if pte is not None else bytes(program.buffer))
    loaded = Runtime.get().load_program(data).load_method(method)
    return [t.clone() for t in loaded.execute([t.clone() for t in inputs])]
