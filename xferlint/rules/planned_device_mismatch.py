"""XF008 planned-device-mismatch: a tensor planned in a buffer on another device (.pte)."""

from __future__ import annotations

from functools import partial

from xferlint.analyzer.lattice import Device
from xferlint.analyzer.view import OpKind
from xferlint.findings import Severity
from xferlint.rules._patterns import tick
from xferlint.rules import _words as words
from xferlint.rules.base import Example, Rule, format_bytes


def _build(legacy: bool):
    from executorch.exir import ExecutorchBackendConfig

    from xferlint.frontends.pte.view import load_pte_bytes
    from xferlint.testing import lower
    from xferlint.testing.models import AddSin, example_inputs

    config = ExecutorchBackendConfig(enable_non_cpu_memory_planning=not legacy)
    program = lower(AddSin(), example_inputs(), ["cuda:0", "cuda:0"], backend_config=config)
    return load_pte_bytes(bytes(program.buffer), label="addsin.pte").view


_NOT_WRITES = frozenset({OpKind.INPUT, OpKind.CONSTANT, OpKind.ALLOC, OpKind.GETITEM, OpKind.ALIAS})


class PlannedDeviceMismatch(Rule):
    """A tensor is planned in a memory buffer on a different device from its data.

    ## What it does
    Reads a `.pte`'s memory plan: each tensor's `allocation_info` names a planned buffer,
    and `non_const_buffer_device` says which device each buffer is allocated on (host when
    absent). Flags a tensor whose instructions put its data on one device (a `cuda:0`
    delegate writes it, an H2D copies it there) while its declared device agrees, but whose
    planned buffer is on another. Only a `.pte` (or anything with a memory plan) carries
    this; where the declaration itself disagrees with the instructions, XF007 reports it.

    ## Why is this bad?
    The runtime allocates each planned buffer on the device the plan names and hands out
    pointers into it. A delegate that writes `cuda:0` data through a pointer into a host
    buffer faults or corrupts memory; a host kernel reading a device buffer reads garbage.
    ExecuTorch's legacy mode (`enable_non_cpu_memory_planning=False`) produces exactly
    this: it tags delegate tensors with their device but plans every buffer on the host.

    ## Example
    ```python
    lower(model, inputs, partitioner=[cuda_partitioner],
          backend_config=ExecutorchBackendConfig(enable_non_cpu_memory_planning=False))
    # delegate 0 (cuda:0) writes v4; v4 is tagged cuda:0 but planned in buffer 1 (host)
    ```

    ## Use instead
    Lower with `ExecutorchBackendConfig(enable_non_cpu_memory_planning=True)` (the default
    since ExecuTorch 1.4), which plans device tensors in device buffers, or fix the custom
    memory-planning pass that placed the tensor.

    ## References
    - ExecuTorch `schema/program.fbs`: `AllocationDetails`, `NonConstBufferDevice`
    - ExecuTorch `PropagateDevicePass` (`enable_non_cpu_memory_planning`)
    """

    code = "XF008"
    name = "planned-device-mismatch"
    severity = Severity.ERROR
    examples = (
        Example(partial(_build, True), 2, "legacy mode: two cuda:0 delegates write into host-planned buffers"),
        Example(partial(_build, False), 0, "device memory planning: device tensors in device buffers"),
    )

    def check(self, ctx):
        method = ctx.method
        buffers = method.buffer_devices
        if not buffers:
            return
        facts = ctx.facts
        inputs = set(method.inputs)
        for vid, value in method.values.items():
            placement = value.placement
            if placement is None or value.tensor is None or vid in inputs or placement.buffer >= len(buffers):
                continue
            tag = value.spec_device or value.declared_device
            buffer = buffers[placement.buffer]
            if tag is None or tag is buffer or tag == buffer:  # `is` first: a Device compares in Python
                continue  # what follows flags only data on its declared device, in another's buffer
            # An FX graph names one planned tensor several times (its memory.alloc, the out-variant
            # op writing it, a delegate result and its getitem): the op that writes it speaks for it.
            writers = [w for w in facts.writers(vid) if w.kind not in _NOT_WRITES]
            inferred = facts.device(vid)
            if not writers or not isinstance(inferred, Device) or inferred != tag:
                continue  # unwritten, conflicting (XF007), or the declaration is wrong (XF007)
            if buffer == inferred:
                continue
            writer = writers[0]
            nbytes = placement.nbytes if placement.nbytes is not None else value.tensor.nbytes
            message = (f"{words.at(ctx, writer)} writes {inferred} data into {buffer} buffer "
                       f"{placement.buffer} at {placement.offset}: {format_bytes(nbytes)}")
            detail = (
                f"{tick(vid)} holds {inferred} data (written by {ctx.describe(writer)}, declared {tag}) but is "
                f"planned in buffer {placement.buffer} at offset {placement.offset}, which the program "
                f"allocates on {buffer} ({_why(buffers)}): {format_bytes(nbytes)} of {inferred} data "
                f"would be written through a {buffer} pointer. Lower with "
                f"`ExecutorchBackendConfig(enable_non_cpu_memory_planning=True)` so device tensors get device "
                f"buffers, or fix the memory-planning pass that placed it."
            )
            path = [(w, "producer") for w in writers[:3]]
            yield ctx.finding(self, message, path, nbytes, anchor=writer, detail=detail)


def _why(buffers) -> str:
    """Where the buffer's device comes from: the plan's device list, or its absence."""
    if all(b.is_host for b in buffers):
        return "the program has no `non_const_buffer_device`: every planned buffer is host memory"
    return "`non_const_buffer_device`"
