"""XF007 device-mismatch.

Three kinds of finding, one per root cause (whatever follows from a reported mismatch is
not reported again: its results are *tainted* and checks skip tainted operands):

- `delegate`: a delegate reads a tensor that lives on another device, with no copy
  between them (a device delegate in a `cond` branch or `map` body, which
  PropagateDevicePass never visits; every device delegate of a legacy-mode program);
- `operands`: an op whose tensor operands live on two different devices (the lattice
  CONFLICT is born there), or a control-flow result that lives on one device when one
  branch runs and on another when the other does;
- `declared`: a value whose declared device (TensorSpec.device) disagrees with the
  device the analysis infers for it, reported where the disagreement starts.
"""

from __future__ import annotations

from functools import partial
from typing import Optional

from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.lattice import CONFLICT, CPU, UNREACHED, Device
from xferlint.analyzer.view import Node, OpKind
from xferlint.findings import Severity
from xferlint.rules._patterns import listed, tick
from xferlint.rules import _words as words
from xferlint.rules.base import Example, Rule, RuleContext, format_bytes

_DECLARED_KINDS = frozenset({OpKind.COMPUTE, OpKind.ALIAS, OpKind.GETITEM, OpKind.MOVE})
# OpKind members as module constants for the per-node loops: `OpKind.X` is a class
# attribute look-up through the enum's metaclass (~65 ns, a few per node of 100,000).
_INPUT, _CONSTANT, _DELEGATE, _COMPUTE, _MOVE = (OpKind.INPUT, OpKind.CONSTANT, OpKind.DELEGATE, OpKind.COMPUTE,
                                                 OpKind.MOVE)


def recorded_device(facts: DeviceFacts, vid: str) -> Optional[Device]:
    """What the program's metadata says: the spec tag when it differs from where the value
    starts, else its declared device."""
    value = facts.value(vid)
    if value is None:
        return None
    return value.spec_device if value.spec_device is not None else value.declared_device


def _counted_operands(facts: DeviceFacts, node: Node) -> list[tuple[str, Device]]:
    """Tensor operands with a device, as the compute transfer function counts them (0-dim
    host scalars ride along)."""
    out = []
    values, devices = facts.method.values, facts.devices  # facts.value's and facts.device's dicts
    for vid in node.inputs:
        value = values.get(vid)
        if value is None or value.tensor is None:
            continue
        device = devices.get(vid)
        if not isinstance(device, Device) or (value.tensor.is_scalar and device == CPU):
            continue
        out.append((vid, device))
    return out


def _several_devices(operands: list[tuple[str, Device]]) -> bool:
    """Whether the operands live on more than one device (by identity first: a Device
    compares and hashes in Python, and most ops read one device's values)."""
    first = operands[0][1] if operands else None
    return any(d is not first and d != first for _, d in operands)


# --------------------------------------------------------------------------- examples


def _build(kind: str):
    import torch
    from executorch.exir import ExecutorchBackendConfig

    from xferlint.testing import DevicePartitioner, lower
    from xferlint.testing.models import AddSinCos, example_inputs

    class BranchOnDevice(torch.nn.Module):
        def forward(self, flag, x):
            return torch.cond(flag.sum() > 0, lambda v: torch.sin(v), lambda v: torch.cos(v), (x,))

    if kind == "cond":
        return lower(BranchOnDevice(), (torch.ones(1), torch.randn(4, 4)), ["cuda:0"],
                     partitioner=DevicePartitioner(["cuda:0"], nested=True))
    if kind == "cond-top-level":
        return lower(BranchOnDevice(), (torch.ones(1), torch.randn(4, 4)), ["cuda:0"])
    legacy = ExecutorchBackendConfig(enable_non_cpu_memory_planning=(kind != "legacy"))
    return lower(AddSinCos(), example_inputs(), ["cuda:0"], backend_config=legacy)


# --------------------------------------------------------------------------- the rule


class DeviceMismatch(Rule):
    """A tensor is used on a device it does not live on.

    ## What it does
    Flags programs whose devices do not line up, one finding per root cause:

    - a delegate that reads a tensor living on another device with no copy between them
      (for example a device delegate inside a `cond` branch or a `map` body, which
      ExecuTorch's `PropagateDevicePass` does not visit, or any device delegate of a
      program lowered with `enable_non_cpu_memory_planning=False`);
    - an op whose tensor operands live on different devices, or a control-flow result
      that lives on one device after one branch and on another after the other;
    - a value whose declared device (`TensorSpec.device`) disagrees with the device the
      analysis infers from where its data comes from, such as a method input tagged
      `cuda:0` but planned in host memory.

    ## Why is this bad?
    These programs are wrong, not merely slow: a CUDA kernel handed a host pointer (or a
    CPU kernel a device pointer) reads garbage or faults, and the runtime plans memory and
    picks allocators from the declared device, so a wrong tag puts bytes where no kernel
    looks for them. The CUDA backend rejects some of these at load or run time; others
    fail only on a machine with a GPU, long after export.

    ## Example
    ```python
    def forward(self, flag, x):
        # sin is delegated to cuda:0 inside the branch: no H2D copy is inserted there
        return torch.cond(flag.sum() > 0, lambda v: torch.sin(v), lambda v: torch.cos(v), (x,))
    ```

    ## Use instead
    Partition only the top-level graph for device backends (keep device delegates out of
    control-flow bodies), lower with `ExecutorchBackendConfig(enable_non_cpu_memory_planning=True)`
    (the default since ExecuTorch 1.4) so copies are inserted and device memory is planned,
    and move tensors explicitly (`.to(device)`) before ops that mix devices.

    ## References
    - ExecuTorch `PropagateDevicePass` (walks only the top-level graph; legacy mode tags
      specs without inserting copies)
    - https://pytorch.org/executorch/
    """

    code = "XF007"
    name = "device-mismatch"
    severity = Severity.ERROR
    examples = (
        Example(partial(_build, "cond"), 1, "a cuda:0 delegate inside a cond branch gets no copies"),
        Example(partial(_build, "cond-top-level"), 0, "the same cond, partitioned at the top level only"),
        Example(partial(_build, "legacy"), 1, "enable_non_cpu_memory_planning=False: tags, no copies"),
        Example(partial(_build, "default"), 0, "the same program lowered with device memory planning"),
    )

    def check(self, ctx: RuleContext):
        facts = ctx.facts
        tainted: set[str] = set()
        explained: set[str] = set()
        pending: list[Node] = []  # inputs and constants whose tag disagrees with where they start
        differs: dict = {}  # `_declared_mismatch`'s answers by the two devices' ids
        for node in ctx.method.nodes:
            kind = node.kind
            if kind is _INPUT or kind is _CONSTANT:
                vid = node.outputs[0] if node.outputs else None  # node.output, without the property call
                if vid and _declared_mismatch(facts, vid, differs):
                    pending.append(node)
                continue
            if kind == _DELEGATE:
                finding = self._delegate(ctx, node, tainted)
                if finding is not None:
                    explained.update(finding.nodes)
                    yield finding
                    tainted.update(node.outputs)
                elif tainted and any(v in tainted for v in node.inputs):
                    tainted.update(node.outputs)
                continue
            if tainted and any(v in tainted for v in node.inputs):  # most programs have no taint
                tainted.update(node.outputs)
                continue
            if kind == _COMPUTE and len(node.inputs) > 1:  # one operand is on one device
                operands = _counted_operands(facts, node)
                if _several_devices(operands) and all(facts.device(v) is not CONFLICT for v in node.inputs):
                    yield self._operands(ctx, node, operands)
                    tainted.update(node.outputs)
                    continue
            if kind in _DECLARED_KINDS:
                for vid in node.outputs:
                    if _declared_mismatch(facts, vid, differs):
                        yield self._declared(ctx, node, vid)
                        tainted.update(node.outputs)
                        break
        for node in pending:
            if node.name not in explained:
                yield self._declared(ctx, node, node.output)
        yield from self._merges(ctx, tainted)

    # -- the three kinds --------------------------------------------------------------
    def _delegate(self, ctx: RuleContext, node: Node, tainted: set[str]):
        facts = ctx.facts
        expected = node.device or CPU
        # One pass over the operands (a delegate may read 100,000) that gathers all the
        # finding needs of each: its device, whether it is a tensor, its tag and its bytes.
        bad = []
        tagged = []
        nbytes: Optional[int] = 0
        differs: dict[int, bool] = {}  # id(device) -> whether it is another device (a Device compares in Python)
        devices = facts.devices  # facts.device's dict, read directly: once per operand
        values = facts.method.values  # facts.value's
        for v in node.inputs:
            if v in tainted:
                continue
            device = devices.get(v, UNREACHED)
            other = differs.get(id(device))  # the solved devices outlive this loop: ids stay theirs
            if other is None:
                other = differs[id(device)] = (isinstance(device, Device) and device is not expected
                                               and device != expected)
            if not other:
                continue
            value = values.get(v)
            if value is None or value.tensor is None:
                continue
            bad.append((v, device))
            if value.spec_device is not None:
                tagged.append(v)
            if nbytes is not None:
                size = value.tensor.nbytes
                nbytes = None if size is None else nbytes + size
        if not bad:
            return None
        writers = facts.sole_writers([v for v, _ in bad])
        operands = _grouped(ctx, bad)
        sized = f" ({format_bytes(nbytes)})" if nbytes is not None else ""
        who = words.at(ctx, node)
        message = f"{who} on {expected} reads {_short_grouped(ctx, bad, who)}, no copy{sized}"
        detail = (
            f"{ctx.describe(node)} runs on {expected} but reads {operands} with no copy to {expected}: "
            f"the delegate would be handed memory on the wrong device."
        )
        if tagged:
            detail += (
                f" {listed(tagged, ', ')} {'is' if len(tagged) == 1 else 'are'} tagged "
                f"{facts.value(tagged[0]).spec_device} (TensorSpec.device) but planned in host memory: "
                f"ExecuTorch's legacy mode (`enable_non_cpu_memory_planning=False`) tags a device delegate's "
                f"inputs and outputs without inserting copies or planning device memory. Lower with "
                f"`ExecutorchBackendConfig(enable_non_cpu_memory_planning=True)` (the default since 1.4)."
            )
        elif node.scope:
            detail += (
                f" It sits in the control-flow body `{node.scope}`, and ExecuTorch's PropagateDevicePass "
                f"walks only the top-level graph: a delegate in a `cond` branch or `map` body gets no H2D "
                f"for its inputs and no D2H for its outputs. Partition only the top-level graph for device "
                f"backends, or run this body on the host."
            )
        else:
            detail += f" Copy the operand to {expected} before the delegate (as PropagateDevicePass does)."
        path = [(w, "producer") for w in writers if w is not None] + [(node, "consumer")]
        return ctx.finding(self, message, path, nbytes, anchor=node, detail=detail)

    def _operands(self, ctx: RuleContext, node: Node, operands: list[tuple[str, Device]]):
        facts = ctx.facts
        reads = listed(operands, ", ", lambda pair: f"{tick(pair[0])} on {pair[1]}")
        short = ", ".join(f"{words.value_subject(ctx, v)} on {d}" for v, d in operands[:3])
        message = f"{words.at(ctx, node)} reads operands on different devices ({short})"
        detail = (
            f"{ctx.describe(node)} reads {reads}: no kernel reads operands on two devices, so this op "
            f"reads garbage or faults. Copy the operands to one device before it (`.to(device)` in the model)."
        )
        writers = [facts.writer(v) for v, _ in operands]
        path = [(w, "producer") for w in writers if w is not None] + [(node, "consumer")]
        return ctx.finding(self, message, path, None, anchor=node, detail=detail)

    def _declared(self, ctx: RuleContext, node: Node, vid: str):
        facts = ctx.facts
        value = facts.value(vid)
        recorded = recorded_device(facts, vid)
        inferred = facts.device(vid)
        if node.kind in (OpKind.INPUT, OpKind.CONSTANT):
            what = "method input" if node.kind == OpKind.INPUT else "constant"
            named = words.input_name(node) if node.kind == OpKind.INPUT else words.constant_name(ctx, node)
            message = f"{named} is tagged {recorded} but its data is in {inferred} memory (legacy memory planning)"
            detail = (
                f"{what} {tick(vid)} is tagged {recorded} (TensorSpec.device) but its data is in host memory "
                f"({inferred}): ExecuTorch's legacy mode (`enable_non_cpu_memory_planning=False`) tags "
                f"specs without inserting copies or planning device memory. Lower with "
                f"`ExecutorchBackendConfig(enable_non_cpu_memory_planning=True)`."
            )
            path = [(node, "value")]
        else:
            sources = [(v, facts.device(v)) for v in node.inputs if isinstance(facts.device(v), Device)
                       and facts.device(v) == inferred]
            because = f" because it reads {', '.join(f'{tick(v)} on {d}' for v, d in sources[:3])}" if sources else ""
            message = (f"{words.subject(ctx, node)} is declared on {recorded} but its data lives on {inferred}, "
                       "with no copy between them")
            detail = (
                f"{ctx.describe(node)} is declared on {recorded} (TensorSpec.device) but its data lives on "
                f"{inferred}{because}, with no copy between them: the runtime plans its memory and "
                f"picks kernels by the declaration. Insert the missing copy, or fix the pass that tagged it."
            )
            writers = [facts.writer(v) for v, _ in sources[:3]]
            path = [(w, "producer") for w in writers if w is not None] + [(node, "value")]
        nbytes = value.tensor.nbytes if value is not None and value.tensor is not None else None
        return ctx.finding(self, message, path, nbytes, anchor=node, detail=detail)

    def _merges(self, ctx: RuleContext, tainted: set[str]):
        """Control-flow results written on several paths with different devices."""
        facts = ctx.facts
        seen: set[str] = set()
        for node in ctx.method.nodes:
            if node.kind != _MOVE or not node.output or node.output in seen:
                continue
            vid = node.output
            seen.add(vid)
            writers = [w for w in facts.writers(vid) if w.kind == OpKind.MOVE]
            if len(writers) < 2 or facts.device(vid) is not CONFLICT:
                continue
            sources = [(w, w.inputs[0] if w.inputs else None) for w in writers]
            devices = [facts.device(s) for _, s in sources]
            if any(s is None or s in tainted or not isinstance(d, Device) for (_, s), d in zip(sources, devices)):
                continue
            if len(set(devices)) < 2:
                continue
            listed = ", ".join(f"{tick(s)} on {d}" for (_, s), d in zip(sources, devices))
            devices_text = ", ".join(dict.fromkeys(str(d) for d in devices))
            message = (f"{words.at(ctx, writers[0])}: the control-flow paths return it on different devices "
                       f"({devices_text})")
            detail = (
                f"{tick(vid)} is written on several control-flow paths with tensors on different devices "
                f"({listed}): after the branch, no single device holds it. Make every branch return its "
                f"result on one device."
            )
            path = [(w, "merge") for w in writers]
            yield ctx.finding(self, message, path, None, anchor=writers[0], detail=detail)


def _grouped(ctx: RuleContext, pairs: list[tuple[str, Device]]) -> str:
    """`x` and `y` from cpu, `z` from cuda:1; at most LISTED operands named per device,
    then how many more (a delegate may read 100,000 host tensors)."""
    by_device: dict[str, list[str]] = {}
    groups: dict[int, list[str]] = {}  # id(device) -> its group: str(device) once per device object
    for vid, device in pairs:
        group = groups.get(id(device))
        if group is None:
            group = groups[id(device)] = by_device.setdefault(ctx.device_text(device), [])
        group.append(vid)
    return ", ".join(f"{listed(vids)} from {device}" for device, vids in by_device.items())


def _short_grouped(ctx: RuleContext, pairs: list[tuple[str, Device]], reader: str) -> str:
    """`input `x` and input `y` from cpu`, at most three operands named (`an operand` when
    its words are the reader's own: both on one source line)."""
    by_device: dict[str, list[str]] = {}
    for vid, device in pairs[:3]:
        named = words.value_subject(ctx, vid)
        by_device.setdefault(str(device), []).append("an operand" if named == reader else named)
    more = f" and {len(pairs) - 3} more" if len(pairs) > 3 else ""
    return ", ".join(f"{listed(names, show=str)} from {device}" for device, names in by_device.items()) + more


def _declared_mismatch(facts: DeviceFacts, vid: str, differs: dict) -> bool:
    """Whether the value's recorded device is a device other than where it was solved to be.
    `differs`: the answers so far by the two devices' ids (a Device compares in Python, a
    program has a few device objects for 100,000 values; they outlive the check)."""
    # the dicts behind facts.value and facts.device, read directly: every input and
    # constant asks (100,000 of them in a wide program), and most answer at the first test
    value = facts.method.values.get(vid)
    if value is None or value.tensor is None:
        return False
    recorded = value.spec_device if value.spec_device is not None else value.declared_device
    if not isinstance(recorded, Device):
        return False
    inferred = facts.devices.get(vid)  # facts.device's default (UNREACHED) is no Device either
    if recorded is inferred or not isinstance(inferred, Device):
        return False
    key = (id(recorded), id(inferred))
    found = differs.get(key)
    if found is None:
        found = differs[key] = recorded != inferred
    return found
