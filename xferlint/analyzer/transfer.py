"""Transfer functions: the device of a node's results, given the devices of its operands.

One function per OpKind; `transfer(node, device_of, values)` dispatches. Every function is
monotone in its operands, which is what lets the solver iterate to a fixed point.
"""

from __future__ import annotations

from typing import Callable, Mapping

from xferlint.analyzer.lattice import (
    CONFLICT,
    CPU,
    UNREACHED,
    LatticeValue,
    join,
    join_all,
)
from xferlint.analyzer.view import Node, OpKind, Value

DeviceOf = Callable[[str], LatticeValue]


def _declared(node: Node, device_of: DeviceOf, values: Mapping[str, Value]) -> LatticeValue:
    """Where the program declares the result (inputs, constants, planned buffers), else the host."""
    output = node.outputs[0] if node.outputs else None
    value = values.get(output) if output else None
    if value is not None and value.declared_device is not None:
        return value.declared_device
    return CPU


def _source(node: Node, device_of: DeviceOf, values: Mapping[str, Value]) -> LatticeValue:
    return join_all(device_of(v) for v in node.inputs)


def _compute(node: Node, device_of: DeviceOf, values: Mapping[str, Value]) -> LatticeValue:
    """Join of the tensor operands; 0-dim host scalars ride along and do not count."""
    result: LatticeValue = UNREACHED
    counted = 0
    get = values.get
    for vid in node.inputs:
        value = get(vid)
        if value is None:
            continue
        tensor = value.tensor
        if tensor is None:
            continue
        device = device_of(vid)
        if tensor.is_scalar and (device is CPU or device == CPU):
            continue
        counted += 1
        if device is not result:  # `join`, called only where it can change the result
            result = join(result, device)
    if counted == 0:
        # No tensor operands (a factory such as full/arange, or only host scalars): the op
        # runs where its result is declared, else on the host.
        return _declared(node, device_of, values)
    return result


def _fixed(node: Node, device_of: DeviceOf, values: Mapping[str, Value]) -> LatticeValue:
    return node.device if node.device is not None else CPU


# The transfer function of each node kind (the solver looks it up once per node).
TRANSFER: dict[OpKind, Callable[[Node, DeviceOf, Mapping[str, Value]], LatticeValue]] = {
    OpKind.INPUT: _declared,
    OpKind.CONSTANT: _declared,
    OpKind.ALLOC: _declared,
    OpKind.H2D: _fixed,
    OpKind.TO_DEVICE: _fixed,
    OpKind.DELEGATE: _fixed,
    OpKind.D2H: lambda n, d, v: CPU,
    OpKind.GETITEM: _source,
    OpKind.ALIAS: _source,
    OpKind.MOVE: _source,
    OpKind.COMPUTE: _compute,
    OpKind.CONTROL: lambda n, d, v: UNREACHED,  # its results are written by MOVE nodes
    OpKind.UNKNOWN: lambda n, d, v: CONFLICT,  # conservative: no single device is claimed
}


def transfer(node: Node, device_of: DeviceOf, values: Mapping[str, Value]) -> LatticeValue:
    """The lattice value every output of `node` gets."""
    return TRANSFER[node.kind](node, device_of, values)
