"""ExecuTorch's real `CudaPartitioner` on a machine without a GPU, nvcc or triton.

`executorch.backends.cuda.cuda_partitioner.CudaPartitioner` ships in the wheel. Importing
`cuda_backend` imports `executorch.backends.cuda.triton`, which needs `triton` (only the
backend's preprocess uses it), and `CudaBackend.preprocess` compiles with AOTInductor and
nvcc. `install_cuda_stubs()` puts stub modules for the two triton modules in `sys.modules`,
replaces `CudaBackend.preprocess` with one that returns a dummy blob, and resets
`preprocess_multimethod` to `BackendDetails`' default so every partition goes through it.
Everything else stays ExecuTorch's own: the partitioning decisions (convex partitions,
`tag_constant_data`, `tag_mutated_buffer`), `to_backend`, `PropagateDevicePass` and memory
planning. A lowered CUDA delegate keeps its original graph (`original_module`), so its ops
and their source lines are those a real CUDA export gets.

- `cuda_partitioner(device)`: the stock partitioner (cuda:0 unless told otherwise);
- `lower_cuda(module, inputs, ...)`: export + `to_edge_transform_and_lower` +
  `to_executorch` with `[*before, CudaPartitioner]`, `before` being partitioners that run
  first (XNNPACK taking a GELU or a softmax splits the CUDA partition);
- `xnnpack_first(*configs)`: an XNNPACK partitioner limited to some of its configs, as a
  first partitioner that claims part of the graph.
"""

from __future__ import annotations

import sys
import types
from typing import Any, Optional, Sequence

_STUBBED = False
DUMMY_BLOB = b"xferlint-cuda-stub"


def _stub_module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    module.__file__ = f"<xferlint stub for {name}>"
    return module


class _NoTritonReplacement:
    """Stands in for `ReplaceEdgeOpWithTritonOpPass` (only the stubbed preprocess used it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, graph_module: Any) -> Any:
        return None


def install_cuda_stubs() -> None:
    """Make `CudaPartitioner` importable and its backend's preprocess a dummy (idempotent)."""
    global _STUBBED
    if _STUBBED:
        return
    package = "executorch.backends.cuda.triton"
    if package not in sys.modules:
        triton = _stub_module(package, __path__=[])
        replacement = _stub_module(f"{package}.replacement_pass", ReplaceEdgeOpWithTritonOpPass=_NoTritonReplacement)
        triton.replacement_pass = replacement  # type: ignore[attr-defined]
        triton.ReplaceEdgeOpWithTritonOpPass = _NoTritonReplacement  # type: ignore[attr-defined]
        sys.modules[package] = triton
        sys.modules[f"{package}.replacement_pass"] = replacement

    from executorch.backends.cuda.cuda_backend import CudaBackend
    from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult

    def preprocess(cls: Any, edge_program: Any, compile_specs: Any) -> PreprocessResult:
        return PreprocessResult(processed_bytes=DUMMY_BLOB)

    CudaBackend.preprocess = classmethod(preprocess)  # type: ignore[method-assign,assignment]
    CudaBackend.preprocess_multimethod = BackendDetails.__dict__["preprocess_multimethod"]  # type: ignore[method-assign]
    _STUBBED = True


def cuda_partitioner(device: Optional[str] = None, absorb_mutable_buffers: bool = True) -> Any:
    """ExecuTorch's `CudaPartitioner`; `device` adds a `target_device` spec (default cuda:0).

    `absorb_mutable_buffers=False` skips its `tag_mutated_buffer` call, as partitioners that
    do not take mutable state do (TensorRT's): a KV cache then stays a host buffer, copied to
    the device and written back every call."""
    install_cuda_stubs()
    from executorch.backends.cuda.cuda_partitioner import CudaPartitioner
    from executorch.exir.backend.compile_spec_schema import CompileSpec

    specs = [CompileSpec("target_device", device.encode("utf-8"))] if device else []
    partitioner = CudaPartitioner(specs)
    return partitioner if absorb_mutable_buffers else _StateOutside(partitioner)


class _StateOutside:
    """Runs a partitioner with `tag_mutated_buffer` switched off (see `cuda_partitioner`)."""

    def __new__(cls, inner: Any) -> Any:
        from executorch.exir.backend.partitioner import Partitioner

        class StateOutside(Partitioner):
            def __init__(self) -> None:
                super().__init__()
                self.inner = inner
                self.delegation_spec = inner.delegation_spec

            def partition(self, exported_program: Any) -> Any:
                import executorch.backends.aoti.aoti_partitioner as aoti

                original = aoti.tag_mutated_buffer
                aoti.tag_mutated_buffer = lambda program: None
                try:
                    return self.inner.partition(exported_program)
                finally:
                    aoti.tag_mutated_buffer = original

            def ops_to_not_decompose(self, ep: Any) -> Any:
                return self.inner.ops_to_not_decompose(ep)

        return StateOutside()


def xnnpack_first(*configs: str) -> Any:
    """An `XnnpackPartitioner` limited to the named partitioner configs (`"GeluConfig"`,
    `"SoftmaxConfig"`, ...; every config when none is named): a partitioner that runs
    before CUDA, claims part of the graph, and splits the CUDA partition around it."""
    import executorch.backends.xnnpack.xnnpack_preprocess  # noqa: F401  (registers XnnpackBackend)
    from executorch.backends.xnnpack.partition.config import generic_node_configs
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

    if not configs:
        return XnnpackPartitioner()
    return XnnpackPartitioner(configs=[getattr(generic_node_configs, name) for name in configs])


def lower_cuda(
    module: Any,
    example_inputs: tuple[Any, ...],
    *,
    before: Sequence[Any] = (),
    device: Optional[str] = None,
    absorb_mutable_buffers: bool = True,
    dynamic_shapes: Any = None,
    backend_config: Any = None,
    to_executorch: bool = True,
    methods: Optional[dict[str, tuple[Any, tuple[Any, ...]]]] = None,
) -> Any:
    """Export `module`, lower it with `[*before, CudaPartitioner]`, and (by default) emit it.

    `methods` ({name: (module, inputs)}) lowers a multi-method program instead of `module`.
    """
    import torch
    from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig, to_edge_transform_and_lower

    install_cuda_stubs()
    if methods is not None:
        exported: Any = {name: torch.export.export(m, args, strict=False) for name, (m, args) in methods.items()}
    else:
        exported = torch.export.export(module, example_inputs, dynamic_shapes=dynamic_shapes, strict=False)
    edge = to_edge_transform_and_lower(
        exported,
        partitioner=[*before, cuda_partitioner(device, absorb_mutable_buffers)],
        compile_config=EdgeCompileConfig(_check_ir_validity=False),
    )
    if not to_executorch:
        return edge
    # Without grad mode: a buffer written back from a delegate's result (state the partitioner
    # left outside) is an in-place copy into a leaf tensor, which autograd refuses.
    with torch.no_grad():
        return edge.to_executorch(backend_config or ExecutorchBackendConfig())
