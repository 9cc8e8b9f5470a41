"""XF010 planned-device-io: a device-resident method input or output that is also planned."""

from __future__ import annotations

from functools import partial

from xferlint.analyzer.lattice import Device
from xferlint.findings import Severity
from xferlint.rules._patterns import tick
from xferlint.rules import _words as words
from xferlint.rules.base import Example, Rule, format_bytes


def _build(alloc: bool, legacy: bool = False):
    from executorch.exir import ExecutorchBackendConfig
    from executorch.exir.passes import MemoryPlanningPass
    from executorch.exir.passes.propagate_device_config import PropagateDeviceConfig

    from xferlint.frontends.pte.view import load_pte_bytes
    from xferlint.testing import lower
    from xferlint.testing.models import AddSin, example_inputs

    config = ExecutorchBackendConfig(
        memory_planning_pass=MemoryPlanningPass(alloc_graph_input=alloc, alloc_graph_output=alloc),
        propagate_device_config=PropagateDeviceConfig(skip_h2d_for_method_inputs=True,
                                                      skip_d2h_for_method_outputs=True),
    )
    if legacy:
        config = ExecutorchBackendConfig(enable_non_cpu_memory_planning=False)
    program = lower(AddSin(), example_inputs(), ["cuda:0", "cuda:0"], backend_config=config)
    return load_pte_bytes(bytes(program.buffer), label="addsin.pte").view


class PlannedDeviceIO(Rule):
    """A method input or output left on the device is also memory planned.

    ## What it does
    Flags a method input (or output) of a `.pte` that is tagged for a device
    (`extra_tensor_info`: the caller hands it over, or gets it back, in device memory, as
    `skip_h2d_for_method_inputs` / `skip_d2h_for_method_outputs` arrange) and that also has
    an `allocation_info`, so the memory plan reserves a buffer for it.

    ## Why is this bad?
    For a planned input the runtime owns the memory: it copies the caller's tensor into the
    planned buffer, and for a planned output it copies out of it, with a host `memcpy`.
    With device memory on either side that copy crashes the process at the first call (a
    known ExecuTorch pitfall). `skip_h2d_for_method_inputs` and
    `skip_d2h_for_method_outputs` only work with
    `MemoryPlanningPass(alloc_graph_input=False, alloc_graph_output=False)`, which leaves
    the inputs and outputs unplanned for the caller to provide.

    ## Example
    ```python
    ExecutorchBackendConfig(
        propagate_device_config=PropagateDeviceConfig(skip_h2d_for_method_inputs=True,
                                                      skip_d2h_for_method_outputs=True),
        # memory_planning_pass left at its default: alloc_graph_input=True
    )
    ```

    ## Use instead
    ```python
    ExecutorchBackendConfig(
        memory_planning_pass=MemoryPlanningPass(alloc_graph_input=False, alloc_graph_output=False),
        propagate_device_config=PropagateDeviceConfig(skip_h2d_for_method_inputs=True,
                                                      skip_d2h_for_method_outputs=True),
    )
    ```

    ## References
    - ExecuTorch `PropagateDevicePass` (`skip_h2d_for_method_inputs`, `skip_d2h_for_method_outputs`)
    - ExecuTorch `MemoryPlanningPass(alloc_graph_input, alloc_graph_output)`
    """

    code = "XF010"
    name = "planned-device-io"
    severity = Severity.ERROR
    examples = (
        Example(partial(_build, True), 3, "skip_h2d/skip_d2h with the default memory planning: 2 inputs, 1 output"),
        Example(partial(_build, False), 0, "the same with alloc_graph_input=False, alloc_graph_output=False"),
        Example(partial(_build, True, True), 0, "legacy device tags (no skip flag): XF007's, not this rule's"),
    )

    def check(self, ctx):
        method = ctx.method
        if not method.buffer_devices:
            return  # no memory plan in this view (graph frontends)
        facts = ctx.facts
        seen: set[str] = set()
        for role, vids in (("input", method.inputs), ("output", method.outputs)):
            for position, vid in enumerate(vids):
                if vid is None or vid in seen:
                    continue
                value = facts.value(vid)
                if value is None or value.tensor is None or value.placement is None:
                    continue
                tag = value.spec_device or value.declared_device
                if not isinstance(tag, Device) or tag.is_host:
                    continue
                p = value.placement
                buffers = method.buffer_devices
                if p.buffer < len(buffers) and buffers[p.buffer].is_host:
                    # A device-tagged tensor in a host buffer is no skip flag at work: it is the
                    # legacy plan (enable_non_cpu_memory_planning=False), which XF007 reports.
                    continue
                seen.add(vid)
                where = f"buffer {p.buffer} ({buffers[p.buffer]})" if p.buffer < len(buffers) else f"buffer {p.buffer}"
                if role == "input":
                    node = next((n for n in facts.writers(vid) if n.kind.value == "input"), None)
                    switch, direction = "alloc_graph_input=False", "into"
                    who = "skip_h2d_for_method_inputs"
                else:
                    writers = facts.writers(vid)
                    node = writers[-1] if writers else None
                    switch, direction = "alloc_graph_output=False", "out of"
                    who = "skip_d2h_for_method_outputs"
                if node is None:
                    continue
                nbytes = p.nbytes if p.nbytes is not None else value.tensor.nbytes
                message = (f"method {role} {position} stays on {tag} for the caller but is also planned in "
                           f"{where}: a host memcpy of {format_bytes(nbytes)} on device memory")
                detail = (
                    f"method {role} {position} ({tick(vid)}) stays on {tag} for the caller ({who}) but is also "
                    f"memory planned in {where} at offset {p.offset}: the runtime copies the caller's "
                    f"{format_bytes(nbytes)} {direction} the planned buffer with a host memcpy, which crashes "
                    f"on device memory. Lower with `MemoryPlanningPass({switch})` as {who} requires."
                )
                yield ctx.finding(self, message, [(node, role)], nbytes, anchor=node, detail=detail)
