"""XF011 mutable-state-round-trip: a mutated buffer staged through host memory every call.

A *write-back* is an in-place `aten.copy_` into a buffer (the `copy_` ExecuTorch inserts
for each `graph_signature.buffers_to_mutate` entry; on a `.pte` the planned buffer that
`copy_` targets). It is a round trip of state when the value written comes from a D2H of
a device delegate's result, or when the buffer is copied host-to-device for a device
delegate: the state lives on the host and crosses the bus every call. One finding per
buffer, with every copy of it in both directions.
"""

from __future__ import annotations

from functools import partial
from typing import Callable, Optional

from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.lattice import Device
from xferlint.analyzer.view import Node, OpKind, SourceLocation
from xferlint.records import dataclass
from xferlint.rules._patterns import tick
from xferlint.rules import _words as words
from xferlint.rules.base import Example, Rule, RuleContext, format_bytes

_WRITE_BACK_OPS = frozenset({"aten.copy_.default", "aten.copy_.out", "aten.copy.out"})
_PASS_THROUGH = frozenset({OpKind.ALIAS, OpKind.MOVE, OpKind.GETITEM})
# `RuleContext.position`: (node, value, among its results?) -> where the value first sits
Position = Callable[..., Optional[int]]


@dataclass(frozen=True)
class StagedState:
    """One buffer whose state a device delegate reads through H2D and/or returns through D2H."""

    buffer: str  # the buffer's value id
    write_backs: tuple[Node, ...]  # the copy_ nodes writing it
    h2ds: tuple[Node, ...]  # copies of the buffer to a device, every call
    d2hs: tuple[Node, ...]  # copies of the new state off a device, every call
    delegates: tuple[Node, ...]  # device delegates that read the state or produce its new value
    device: Device


_COMPUTE = OpKind.COMPUTE  # a module constant: `OpKind.X` costs ~65 ns, and every node is asked


def _is_write_back(node: Node) -> bool:
    return node.kind == _COMPUTE and node.target in _WRITE_BACK_OPS and len(node.inputs) >= 2


def _source_d2h(facts: DeviceFacts, node: Node, vid: str, hops: int = 6) -> Optional[Node]:
    """The D2H whose result `node`'s read of `vid` sees, through aliases and moves."""
    for writer in facts.reaching_writers(node, vid):
        if writer.kind == OpKind.D2H:
            return writer
        if writer.kind in _PASS_THROUGH and writer.inputs and hops > 0:
            found = _source_d2h(facts, writer, writer.inputs[0], hops - 1)
            if found is not None:
                return found
    return None


def _delegate_of(facts: DeviceFacts, vid: str, position: Position) -> Optional[tuple[Node, int]]:
    """The delegate (and its result position) a device value comes from, through getitems."""
    for _ in range(4):
        writer = facts.writer(vid)
        if writer is None:
            return None
        if writer.kind == OpKind.DELEGATE:
            return writer, position(writer, vid, True)
        if writer.kind not in _PASS_THROUGH or not writer.inputs:
            return None
        vid = writer.inputs[0]
    return None


def staged_states(facts: DeviceFacts, position: Position) -> list[StagedState]:
    """Every buffer of the method whose state crosses the bus each call, in program order.
    `position`: `RuleContext.position`, where a value sits among a node's operands or results."""
    by_buffer: dict[str, list[Node]] = {}
    for node in facts.method.nodes:
        if _is_write_back(node):
            by_buffer.setdefault(node.inputs[0], []).append(node)
    found = []
    inputs = frozenset(facts.method.inputs)  # once: every buffer written back asks
    for buffer, writes in by_buffer.items():
        state = _staged(facts, buffer, tuple(writes), position, inputs)
        if state is not None:
            found.append(state)
    return found


def _staged(facts: DeviceFacts, buffer: str, writes: tuple[Node, ...], position: Position,
            inputs: frozenset[str]) -> Optional[StagedState]:
    value = facts.value(buffer)
    if value is None or value.tensor is None or facts.is_output(buffer) or buffer in inputs:
        return None
    d2hs: dict[int, Node] = {}
    delegates: dict[int, Node] = {}
    devices: list[Device] = []
    for write in writes:
        d2h = _source_d2h(facts, write, write.inputs[1])
        if d2h is None or not d2h.inputs:
            continue
        source = facts.device(d2h.inputs[0])
        if not isinstance(source, Device) or source.is_host:
            continue
        d2hs[d2h.index] = d2h
        devices.append(source)
        origin = _delegate_of(facts, d2h.inputs[0], position)
        if origin is not None:
            delegates[origin[0].index] = origin[0]
    h2ds: dict[int, Node] = {}
    for reader in facts.readers(buffer):
        if reader.kind == OpKind.H2D and reader.device is not None and not reader.device.is_host:
            h2ds[reader.index] = reader
            devices.append(reader.device)
            for consumer in facts.readers(reader.output):
                if consumer.kind == OpKind.DELEGATE:
                    delegates[consumer.index] = consumer
    if not d2hs and not h2ds:
        return None  # the state never leaves the host, or the partition owns it (no copies)
    return StagedState(
        buffer=buffer, write_backs=writes, h2ds=tuple(h2ds[i] for i in sorted(h2ds)),
        d2hs=tuple(d2hs[i] for i in sorted(d2hs)), delegates=tuple(delegates[i] for i in sorted(delegates)),
        device=devices[0],
    )


def _write_location(facts: DeviceFacts, state: StagedState, position: Position) -> Optional[SourceLocation]:
    """Where the model writes the state: the op inside the delegate producing its new value
    (the lowered module's original graph), else the buffer read's first op."""
    for d2h in state.d2hs:
        origin = _delegate_of(facts, d2h.inputs[0], position)
        if origin is not None and origin[0].delegate is not None:
            op = origin[0].delegate.writer_of(origin[1])
            if op is not None and op.location is not None:
                return op.location
    for h2d in state.h2ds:
        for consumer in facts.readers(h2d.output):
            at = position(consumer, h2d.output) if consumer.delegate is not None else None
            if at is not None:
                op = consumer.delegate.reader_of(at)
                if op is not None and op.location is not None:
                    return op.location
    return None


# --------------------------------------------------------------------------- examples


def _build(kind: str):
    import torch

    from xferlint.frontends.pte.view import load_pte_bytes
    from xferlint.testing import DevicePartitioner, lower
    from xferlint.testing.cuda import lower_cuda
    from xferlint.testing.decoder import KVCacheStep, kv_inputs

    class ReadOnlyTable(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("table", torch.randn(8, 8))

        def forward(self, x):
            return x + self.table  # read, never written

    if kind == "read-only":  # copied to cuda:0 every call (XF006), but never written back
        return lower(ReadOnlyTable(), (torch.randn(8, 8),), ["cuda:0"],
                     partitioner=DevicePartitioner(["cuda:0"], absorb_constants=False), to_executorch=False)
    program = lower_cuda(KVCacheStep(), kv_inputs(), absorb_mutable_buffers=kind == "absorbed")
    if kind == "staged-pte":
        return load_pte_bytes(bytes(program.buffer), label="kv_cache.pte").view
    return program


# --------------------------------------------------------------------------- the rule


class MutableStateRoundTrip(Rule):
    """A mutated buffer (a KV cache, a step counter) is staged through host memory every call.

    ## What it does
    Flags a buffer the program writes in place (`graph_signature.buffers_to_mutate`; on a
    `.pte`, the planned buffer an `aten::copy_` write-back targets) when a device delegate
    reads it through an `_h2d_copy` and/or its new value comes back through a `_d2h_copy`
    and is written into the host buffer, on every call. One finding per buffer names it,
    the delegate, the bytes each way per call and the line that writes it (inside the
    delegate, from the lowered module's original graph).

    It does not flag a buffer the partitioner absorbed into the delegate (no copies), nor a
    buffer the program only reads (copying that is XF006's `constant-transfer`).

    ## Why is this bad?
    State the device partition does not own lives in host memory: every call copies the
    whole buffer to the device, the delegate updates it, and the whole new value is copied
    back and written into the host buffer, even when the step changed one row. For a KV
    cache that is the whole cache twice per decode step: the TensorRT ExecuTorch
    integration measured about 577 MB in and 577 MB out per step for a default cache,
    far more than the model's activations.

    ## Example
    ```python
    self.k_cache.index_put_((zeros, input_pos), k)   # in a cuda:0 partition
    # lowered: _h2d_copy(b_k_cache) -> delegate -> _d2h_copy -> aten.copy_(b_k_cache, ...)
    ```

    ## Use instead
    Let the device partition own the state: call
    `executorch.exir.backend.utils.tag_mutated_buffer(exported_program)` in the partitioner
    (ExecuTorch's `CudaPartitioner` does), so the buffer lives in the delegate on the
    device across calls. Or keep the cache caller-owned on the device: pass it as a method
    input and output and lower with `PropagateDeviceConfig(skip_h2d_for_method_inputs=True,
    skip_d2h_for_method_outputs=True)` and `MemoryPlanningPass(alloc_graph_input=False,
    alloc_graph_output=False)` (unplanned graph I/O, as those flags require).

    ## References
    - `executorch.exir.backend.utils.tag_mutated_buffer`
    - ExecuTorch `PropagateDevicePass` (`skip_h2d_for_method_inputs`, `skip_d2h_for_method_outputs`)
    - pytorch/TensorRT #4667 (KV cache staging in the ExecuTorch integration)
    """

    code = "XF011"
    name = "mutable-state-round-trip"
    examples = (
        Example(partial(_build, "staged"), 2, "KV caches the CUDA partitioner left outside: staged every call"),
        Example(partial(_build, "staged-pte"), 2, "the same program's .pte"),
        Example(partial(_build, "absorbed"), 0, "the CUDA partitioner owns the caches (tag_mutated_buffer)"),
        Example(partial(_build, "read-only"), 0, "a buffer the program only reads (XF006's kind)"),
    )

    def check(self, ctx: RuleContext):
        for state in staged_states(ctx.facts, ctx.position):
            yield self._finding(ctx, state)

    def _finding(self, ctx: RuleContext, state: StagedState):
        facts = ctx.facts
        value = facts.value(state.buffer)
        name = tick(value.constant_name) if value is not None and value.constant_name else tick(state.buffer)
        to_device = ctx.copies_bytes(state.h2ds) if state.h2ds else 0
        back = ctx.copies_bytes(state.d2hs) if state.d2hs else 0
        delegates = ", ".join(tick(d.name) for d in state.delegates[:3]) or "a device delegate"
        location = _write_location(facts, state, ctx.position)
        where = f" (written at line {location.line}: `{location.code}`)" if location and location.code else ""
        symbolic = (" (the shapes are symbolic: the bytes are known only at run time)"
                    if None in (to_device, back) else "")
        # the copies' bytes, each once: the H2Ds and D2Hs are distinct nodes (`copies_bytes` of both)
        total = None if to_device is None or back is None or not (state.h2ds or state.d2hs) else to_device + back
        device = ctx.device_text(state.device)  # once: the texts name it four times
        message = f"mutable buffer {name} round-trips cpu -> {device} -> cpu: {format_bytes(total)} per call"
        detail = (
            f"buffer {name}{where} is state the {device} partition does not own: {delegates} reads it "
            f"through {len(state.h2ds)} H2D and returns its new value through {len(state.d2hs)} D2H, written "
            f"back into host memory, moving {format_bytes(to_device)} to {device} and "
            f"{format_bytes(back)} back on every call{symbolic}. Let the device partition own it "
            f"(`tag_mutated_buffer` in the partitioner), or keep it caller-owned on {device} as a method "
            f"input/output with `skip_h2d_for_method_inputs`/`skip_d2h_for_method_outputs` and unplanned graph "
            f"I/O (`MemoryPlanningPass(alloc_graph_input=False, alloc_graph_output=False)`)."
        )
        writer = facts.writers(state.buffer)
        path = ([(w, "buffer") for w in writer[:1] if w.kind == OpKind.CONSTANT]
                + [(h, "h2d") for h in state.h2ds] + [(d, "delegate") for d in state.delegates]
                + [(d, "d2h") for d in state.d2hs] + [(w, "write-back") for w in state.write_backs])
        return ctx.finding(self, message, path, anchor=state.write_backs[0], location=location,
                           copies=list(state.h2ds) + list(state.d2hs), detail=detail)
