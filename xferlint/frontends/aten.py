"""ATen operators as both torch.export frontends read them (ExportedPrograms, `.pt2`).

One place for which ATen ops move tensors between devices, which are aliases and which
are bookkeeping with no device effect, and how a move is classified from the devices the
program's tensor metadata gives its operand and its result. Nothing here imports torch.
"""

from __future__ import annotations

from typing import Optional

from xferlint.analyzer.lattice import Device
from xferlint.analyzer.view import OpKind

# `.to()` / `.cpu()` / `.cuda()` in training IR and after run_decompositions()
TO_DEVICE_OPS = frozenset(
    {"aten::_to_copy", "aten::to", "dim_order_ops::_to_dim_order_copy", "aten::_to_dim_order_copy"}
)
COPY_INTO_OP = "aten::copy_"  # `dst.copy_(src)`: a transfer when src and dst differ in device
ALIAS_OPS = frozenset({"aten::alias", "aten::view", "aten::_unsafe_view", "executorch_prim::et_view"})
# Metadata checks and symbolic-shape asserts: they read a tensor's metadata, never its data,
# so they are not users of the value (a `.cpu()` read only by one is still dead).
IGNORED_OPS = frozenset({
    "aten::_assert_tensor_metadata", "aten::_assert_scalar", "aten::sym_constrain_range_for_size",
    "aten::sym_constrain_range", "aten::_assert_async", "aten::_functional_assert_async",
    "aten::_functional_assert_scalar",
})


def transfer_kind(source: Optional[Device], target: Optional[Device]) -> OpKind:
    """The kind of a `.to()` whose operand lives on `source` and result on `target`:
    host -> device is H2D, device -> host D2H, device -> other device TO_DEVICE; a `.to()`
    that stays on its device moves nothing and computes where it is (a dtype cast, or
    `self` in training IR)."""
    if source is None or target is None:
        return OpKind.TO_DEVICE
    if source == target:
        return OpKind.COMPUTE
    if source.is_host and not target.is_host:
        return OpKind.H2D
    if target.is_host and not source.is_host:
        return OpKind.D2H
    return OpKind.TO_DEVICE
