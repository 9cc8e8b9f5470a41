"""XF012 host-sync."""

from __future__ import annotations

from functools import partial
from typing import Optional

from xferlint.analyzer.lattice import Device
from xferlint.analyzer.view import Node, OpKind
from xferlint.rules._patterns import tick
from xferlint.rules import _words as words
from xferlint.rules.base import Example, Rule, RuleContext


def _sample(name: str):
    from xferlint.testing.aten import sample_pt2

    return sample_pt2(name)


_SCALAR_READS = frozenset({"aten._local_scalar_dense", "aten.item"})
_DATA_DEPENDENT = frozenset({
    "aten.nonzero", "aten.nonzero_numpy", "aten.argwhere", "aten.masked_select", "aten.unique",
    "aten._unique", "aten._unique2", "aten.unique_dim", "aten.unique_consecutive", "aten.repeat_interleave",
})
_MASK_INDEX = frozenset({"aten.index", "aten._unsafe_index"})
# Ops that read a tensor's metadata (sizes, strides), never its data: no sync.
_METADATA = frozenset({"aten.sym_size", "aten.sym_stride", "aten.sym_numel", "aten.sym_storage_offset",
                       "aten.size", "aten.stride", "aten.numel", "aten.dim"})


def _op(node: Node) -> str:
    return node.target.rsplit(".", 1)[0] if node.target.count(".") >= 2 else node.target


_SYNC_KINDS = frozenset({OpKind.COMPUTE, OpKind.UNKNOWN})  # built once, not per node


class HostSync(Rule):
    """An op that makes the host wait for a value on the device.

    ## What it does
    Flags, on a device tensor: `aten._local_scalar_dense` / `aten.item` (`.item()`,
    `int(t)`, `float(t)`, `bool(t)`), ops whose output size depends on the data
    (`nonzero`, `masked_select`, `unique`, `repeat_interleave` with tensor repeats),
    boolean-mask indexing (`x[mask]`, `aten.index` with a bool index), and any other op
    that turns a device tensor into a host scalar.

    ## Why is this bad?
    The host cannot go on until the device has computed the value and copied it back:
    the stream drains, the launch queue empties, and the device idles while the host
    catches up (and CUDA graphs cannot capture the step). PyTorch only reports these at
    run time on a GPU (`torch.cuda.set_sync_debug_mode`).

    ## Example
    ```python
    scale = x.sum().item()     # waits for the device
    picked = x[x > 0]          # output size known only after a device-to-host sync
    ```

    ## Use instead
    Keep the value on the device (`x * x.sum()`, `torch.where(x > 0, x, 0)`), give a
    static size (`torch.nonzero_static(x, size=n)`, `masked_fill`), or move the check off
    the hot path.

    ## References
    - PyTorch `torch.cuda.set_sync_debug_mode`
    - CUDA semantics: "asynchronous execution" in the PyTorch docs
    """

    code = "XF012"
    name = "host-sync"
    examples = (
        Example(partial(_sample, "item"), 1, ".item() of a device sum"),
        Example(partial(_sample, "item_ok"), 0, "the sum stays a device tensor"),
        Example(partial(_sample, "nonzero"), 1, "nonzero on the device"),
        Example(partial(_sample, "nonzero_ok"), 0, "torch.where keeps the size static"),
        Example(partial(_sample, "mask"), 1, "boolean-mask indexing"),
    )

    def check(self, ctx: RuleContext):
        for node in ctx.method.nodes:
            if node.kind not in _SYNC_KINDS or not node.inputs:
                continue
            found = self._sync(ctx, node)
            if found is None:
                continue
            value, device, why, way_out = found
            message = f"{words.at(ctx, node)} waits on {device}: {_short_why(why)}"
            detail = (f"{ctx.describe(node)} makes the host wait for {tick(value)} on {device}: {why}. "
                       f"{way_out}")
            producer = ctx.facts.writer(value)
            path = ([(producer, "producer")] if producer is not None else []) + [(node, "sync")]
            yield ctx.finding(self, message, path, anchor=node, detail=detail)

    @staticmethod
    def _device(ctx: RuleContext, vid: str) -> Optional[Device]:
        device = ctx.facts.device(vid)
        value = ctx.facts.value(vid)
        if isinstance(device, Device) and not device.is_host and value is not None and value.tensor is not None:
            return device
        return None

    def _sync(self, ctx: RuleContext, node: Node) -> Optional[tuple[str, Device, str, str]]:
        op = _op(node)
        if op in _METADATA:
            return None
        source = node.inputs[0]
        device = self._device(ctx, source)
        if op in _SCALAR_READS and device is not None:
            return (source, device, f"`{op}` (`.item()`, `int(t)`, `bool(t)`) copies the scalar to host",
                    "Keep it a 0-dim device tensor (`x * t` instead of `x * t.item()`), or read it off the hot path.")
        if op in _DATA_DEPENDENT and device is not None:
            return (source, device, f"the size of `{op}`'s result depends on the data, so the host reads it back",
                    "Give it a static size (`torch.nonzero_static(x, size=n)`, `size=` arguments) or use "
                    "`torch.where` / `masked_fill` to keep shapes static.")
        if op in _MASK_INDEX:
            for vid in node.inputs[1:]:
                value = ctx.facts.value(vid)
                mask_device = self._device(ctx, vid)
                if mask_device is not None and value is not None and value.tensor.dtype == "bool":
                    return (vid, mask_device, "indexing with a boolean mask has a data-dependent size",
                            "Use `torch.where(mask, x, 0)` / `masked_fill` to keep shapes static, or "
                            "`nonzero_static` with a bound.")
        if device is not None and node.outputs and all(
                (v := ctx.facts.value(o)) is not None and v.tensor is None for o in node.outputs):
            return (source, device, f"`{op}` reads a device tensor into a host value",
                    "Keep the computation on the device, or move it off the hot path.")
        return None


def _short_why(why: str) -> str:
    """The reason in a few words: `aten.item copies a scalar to host`."""
    op = why.split("`")[1] if why.count("`") >= 2 else "the op"
    if "copies the scalar" in why:
        return "`.item()` copies a scalar to host"
    if "depends on the data" in why:
        return f"{op} has a data-dependent size"
    if "boolean mask" in why:
        return "boolean-mask indexing has a data-dependent size"
    return f"{op} reads a device tensor into a host value"
