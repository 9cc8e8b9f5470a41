"""XF006 constant-transfer."""

from __future__ import annotations

from functools import partial
from typing import Optional

from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.lattice import CPU
from xferlint.analyzer.view import Node, OpKind
from xferlint.records import dataclass
from xferlint.rules._patterns import is_aten_copy, listed, tick
from xferlint.rules import _words as words
from xferlint.rules.base import Example, Rule, RuleContext, format_bytes

# Nodes whose result is fixed when all their operands are: computed on host, no effects.
_PURE_HOST = frozenset({OpKind.COMPUTE, OpKind.ALIAS, OpKind.GETITEM, OpKind.MOVE})
_CONSTANT_WRITERS = _PURE_HOST | {OpKind.CONSTANT}  # the only writers a constant value may have
_CONSTANT_NODE = OpKind.CONSTANT  # once: an enum member look-up is ~65 ns, and this is per copy
_KIND_WORDS = {"parameter": "parameter", "buffer": "buffer", "constant_tensor": "lifted constant",
               "constant": "constant", "custom_obj": "constant"}


@dataclass(frozen=True)
class ConstantOrigin:
    """Where a copied value comes from when it is the same on every call."""

    constants: tuple[Node, ...]  # the CONSTANT nodes it reads (parameters, buffers, lifted constants)
    computed: tuple[Node, ...]  # host ops between them (or factories such as full/arange) and the copy


def constant_origin(facts: DeviceFacts, reader: Node, vid: str,
                    _memo: Optional[dict] = None) -> Optional[ConstantOrigin]:
    """The constants `vid` (as `reader` reads it) is computed from, when it depends on
    nothing else, else None.

    A value is constant when it is a parameter, a buffer the program never writes or a
    lifted constant, a literal (a non-tensor value nothing writes, such as a `.pte`'s
    size list), or the host result of pure ops (or factories) over constant values only.
    A value something writes in place is not constant.

    The operands are followed without recursion (a parameter through thousands of host
    ops overflowed Python's stack), and each value's answer holds its own constants and
    host ops and its operands' answers, flattened once, here: a copy at the end of a
    chain of n host ops costs O(n), not the O(n^2) of a set per link.
    """
    writers = facts.writers(vid)
    if _written_otherwise(writers):  # most copies: settled before any frame is made
        return None
    if len(writers) == 1 and writers[0].kind is not _CONSTANT_NODE and any(
            _written_otherwise(facts.writers(operand)) for operand in writers[0].inputs):
        return None  # a host op over a D2H's result (most often): `_cone` would answer None, frame by frame
    memo = {} if _memo is None else _memo
    cone = _run(facts, reader, vid, memo)
    if cone is None:
        return None
    if cone.origin is None:
        cone.origin = cone.flatten()
    return cone.origin


class _Cone:
    """One value's answer: its own constants and host ops, and the answers it is built from."""

    __slots__ = ("constants", "computed", "parts", "origin")

    def __init__(self) -> None:
        self.constants: dict[int, Node] = {}
        self.computed: dict[int, Node] = {}
        self.parts: list[_Cone] = []
        self.origin: Optional[ConstantOrigin] = None

    def flatten(self) -> ConstantOrigin:
        constants: dict[int, Node] = {}
        computed: dict[int, Node] = {}
        seen, work = {id(self)}, [self]
        while work:
            cone = work.pop()
            constants.update(cone.constants)
            computed.update(cone.computed)
            for part in cone.parts:
                if id(part) not in seen:
                    seen.add(id(part))
                    work.append(part)
        return ConstantOrigin(tuple(constants[i] for i in sorted(constants)),
                              tuple(computed[i] for i in sorted(computed)))


_LITERAL = _Cone()  # a literal's answer: no constants, no host ops
_LITERAL.origin = ConstantOrigin((), ())


def _run(facts: DeviceFacts, reader: Node, vid: str, memo: dict) -> "Optional[_Cone]":
    """Drive `_cone` frames with an explicit stack: a frame yields the (reader, value) it
    needs and is sent that value's answer."""
    stack, answer = [_cone(facts, reader, vid, memo)], None
    while stack:
        try:
            reader, vid = stack[-1].send(answer)
        except StopIteration as done:
            stack.pop()
            answer = done.value
            continue
        stack.append(_cone(facts, reader, vid, memo))
        answer = None
    return answer


def _written_otherwise(writers: list[Node]) -> bool:
    """Whether a value is written, and only by kinds that never write a constant (a D2H or
    a method input, most often): then no write that a read of it sees is constant."""
    if len(writers) == 1:  # most values
        return writers[0].kind not in _CONSTANT_WRITERS
    return bool(writers) and not any(w.kind in _CONSTANT_WRITERS for w in writers)


def _cone(facts: DeviceFacts, reader: Node, vid: str, memo: dict):
    """The answer for `vid` as `reader` reads it (a generator frame of `_run`)."""
    if _written_otherwise(facts.writers(vid)):
        return None
    key = (reader.index, vid)
    if key in memo:
        return memo[key]
    memo[key] = None  # a cycle (a loop-carried value) is not constant
    value = facts.value(vid)
    if value is not None and value.tensor is None and not facts.writers(vid):
        memo[key] = _LITERAL
        return _LITERAL
    writers = facts.reaching_writers(reader, vid)
    # a writer of another kind (a method input, most often) settles it before any look-up
    if not writers or not all(w.kind in _CONSTANT_WRITERS for w in writers):
        return None
    # The answer depends on the writes the read sees, not on the reader: readers that see
    # the same writers share one cone, so that it is flattened once, not once per copy of
    # a value copied many times.
    seen = (vid, *[w.index for w in writers])
    shared = memo.get(seen)
    if shared is not None:
        memo[key] = shared
        return shared
    if facts.in_place_reader(vid, unmodelled=False) is not None:  # cached per value
        return None
    cone = _Cone()
    for writer in writers:
        if writer.kind == OpKind.CONSTANT:
            value = facts.value(vid)
            if value is None or value.mutable:
                return None
            cone.constants[writer.index] = writer
            continue
        if writer.kind not in _PURE_HOST or writer.mutates or any(facts.device(o) != CPU for o in writer.outputs):
            return None
        for operand in writer.inputs:
            part = yield writer, operand
            if part is None:
                return None
            cone.parts.append(part)
        if writer.kind in (OpKind.COMPUTE, OpKind.ALIAS):
            cone.computed[writer.index] = writer
    memo[key] = memo[seen] = cone
    return cone


# --------------------------------------------------------------------------- examples


def _build(kind: str):
    import torch

    from xferlint.testing import DevicePartitioner, lower

    class Projection(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(8, 8))

        def forward(self, x):
            return torch.mm(x, self.weight)

    class OnesBias(torch.nn.Module):
        def forward(self, x):
            return x + torch.ones(8, 8)  # built on host on every call

    inputs = (torch.randn(8, 8),)
    if kind == "parameter":  # not absorbed: lint the edge program (to_executorch crashes on it)
        return lower(Projection(), inputs, ["cuda:0"], partitioner=DevicePartitioner(["cuda:0"], absorb_constants=False),
                     to_executorch=False)
    if kind == "absorbed":
        return lower(Projection(), inputs, ["cuda:0"])
    return lower(OnesBias(), inputs, ["cuda:0"])


# --------------------------------------------------------------------------- the rule


class ConstantTransfer(Rule):
    """A parameter, buffer or constant is copied host-to-device on every call.

    ## What it does
    Flags an `_h2d_copy` whose source is the same on every call: a parameter, a buffer the
    program never writes, a lifted constant, or a host result computed only from those
    (or from a factory such as `torch.ones`). It reports the bytes and the constant's name.
    Its path runs from the constants through the host ops to the copy; a value computed
    from more than 16 constants or through more than 16 host ops lists the first 16
    constants and the 16 host ops nearest the copy, and its detail says how many there are
    (one value made from a long chain and copied many times would otherwise list the whole
    chain in each of its findings).

    ## Why is this bad?
    The bytes never change, yet they cross the bus on every call and occupy a device
    buffer planned per call. For weights that is usually the largest transfer in the
    program. It happens when a partitioner leaves a parameter outside the delegate that
    uses it (ExecuTorch then copies it in front of the delegate like any input), or when
    a model builds a constant tensor inside `forward`.

    ## Example
    ```python
    class Projection(torch.nn.Module):
        def forward(self, x):
            return torch.mm(x, self.weight)   # delegate on cuda:0
    # partitioned without tag_constant_data: _h2d_copy(p_weight) -> delegate, every call
    ```

    ## Use instead
    Let the delegate own its constants: call
    `executorch.exir.backend.utils.tag_constant_data(exported_program)` in the partitioner
    so parameters used by a delegate are lowered into it (and uploaded once, at load).
    Register tensors built in `forward` as buffers (`register_buffer`) so the partitioner
    can absorb them too, or fold host-side preprocessing of weights into the weights.

    Note: ExecuTorch 1.5.1's `to_executorch` fails with `'NoneType' object has no
    attribute 'nbytes'` on a parameter copied host-to-device (the copy's spec is marked
    constant); xferlint reports that failure as this problem and lints the edge program
    (before `to_executorch`) to show the copy.

    ## References
    - `executorch.exir.backend.utils.tag_constant_data`
    - ExecuTorch `PropagateDevicePass._insert_h2d_copies` (one H2D per delegate argument)
    """

    code = "XF006"
    name = "constant-transfer"
    examples = (
        Example(partial(_build, "parameter"), 1, "a parameter left outside its cuda:0 delegate"),
        Example(partial(_build, "absorbed"), 0, "the partitioner absorbs the parameter (tag_constant_data)"),
        Example(partial(_build, "factory"), 1, "torch.ones built in forward and copied to cuda:0"),
    )

    def check(self, ctx: RuleContext):
        facts = ctx.facts
        memo: dict = {}
        h2d = OpKind.H2D  # once: an enum member look-up costs ~65 ns, per node
        for node in ctx.method.nodes:
            if node.kind != h2d or not node.inputs or node.device is None or node.device.is_host:
                continue
            origin = constant_origin(facts, node, node.inputs[0], memo)
            if origin is None:
                continue
            yield self._finding(ctx, node, origin)

    def _finding(self, ctx: RuleContext, h2d: Node, origin: ConstantOrigin):
        facts = ctx.facts
        nbytes = facts.nbytes(h2d.output)
        if nbytes is None:
            nbytes = facts.nbytes(h2d.inputs[0])
        consumers = facts.readers(h2d.output)
        target = f" for {ctx.describe(consumers[0])}" if consumers else ""
        names = listed(origin.constants, ", ", partial(_constant_words, facts))
        if not origin.computed:
            what = names
            message = (f"{what} is copied cpu -> {h2d.device} every call, unchanged: "
                       f"{format_bytes(ctx.copies_bytes([h2d]))} per call")
            detail = (
                f"{tick(h2d.name)} copies {what} ({format_bytes(nbytes)}) from host to {h2d.device}{target} "
                f"on every call, though its bytes never change. " + (
                    f"Register it on {h2d.device} (move the module with `.to()` after creating it), or move "
                    f"it once in `__init__`, not in `forward`." if is_aten_copy(h2d) else
                    "Let the delegate own it: call `tag_constant_data(exported_program)` in the partitioner "
                    "so it is lowered into the delegate and uploaded once.")
            )
            anchor = consumers[0] if consumers else h2d
        else:
            last = origin.computed[-1]
            made = (f"is computed on host from {names} alone" if names
                    else "builds the same tensor on host on every call (it reads no input)")
            short = (f"computed on host from {names} alone" if names
                     else "built on host from no input")
            message = (f"{words.at(ctx, last)} is {short}, copied to {h2d.device} every call: "
                       f"{format_bytes(ctx.copies_bytes([h2d]))} per call")
            detail = (
                f"{ctx.describe(last)} {made}, and {tick(h2d.name)} copies the same "
                f"{format_bytes(nbytes)} to {h2d.device}{target} on every call. Compute it once: register "
                f"it as a buffer or fold it into the weights, and let the partitioner absorb it into the "
                f"delegate (`tag_constant_data`)."
            )
            anchor = last
        constants, computed = origin.constants[:_PATH_NODES], origin.computed[-_PATH_NODES:]
        if len(constants) < len(origin.constants) or len(computed) < len(origin.computed):
            listed_ = [_count(shown, all_, noun, which) for shown, all_, noun, which in (
                (constants, origin.constants, "constant", "first"), (computed, origin.computed, "host op", "last"))
                if all_]
            detail += f" The path lists {' and '.join(listed_)}."
        path = [(c, "constant") for c in constants] + [(n, "host-op") for n in computed]
        path += [(h2d, "h2d")] + [(c, "consumer") for c in consumers[:1]]
        return ctx.finding(self, message, path, anchor=anchor, copies=[h2d], detail=detail)


_PATH_NODES = 16  # constants, and host ops, a finding's path lists at most


def _count(shown: tuple, all_: tuple, noun: str, which: str) -> str:
    """`its 3 constants` or `the last 16 of its 10,000 host ops`."""
    plural = "" if len(all_) == 1 else "s"
    if len(shown) == len(all_):
        return f"its {len(all_):,} {noun}{plural}"
    return f"the {which} {len(shown)} of its {len(all_):,} {noun}{plural}"


def _constant_words(facts: DeviceFacts, node: Node) -> str:
    value = facts.value(node.output) if node.output else None
    name = value.constant_name if value is not None and value.constant_name else node.name
    kind = _KIND_WORDS.get(node.target, "constant")
    return f"{kind} {tick(name)}"
