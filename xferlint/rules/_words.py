"""The vocabulary of short finding messages: what the user wrote, not what FX named it.

A finding's `message` is one line in the user's terms (the concise text format shows it):
the source expression a value comes from (`torch.mm(x, self.weight)`), a method input or
parameter by its own name, an op by its user-facing name (`aten.cumsum`, `the CudaBackend
delegate`) when there is no source, the devices and the bytes per call. FX node names
(`_h2d_copy_default_1`, `getitem`) and the remedy stay out of it: the remedy lives in the
finding's `detail` and the rule's help (`xferlint rule XF001`).
"""

from __future__ import annotations

import io
import re
from functools import lru_cache
from typing import Optional

from xferlint.analyzer.view import Node, OpKind, SourceLocation

MAX_EXPRESSION = 32  # characters of a source expression a short message quotes
_ASSIGNMENT = re.compile(r"^[A-Za-z_][\w.\[\], ]*?(?<![=!<>])=(?!=)\s*")
_PREFIXES = ("return ", "yield ", "await ")
_KIND_WORDS = {"parameter": "parameter", "buffer": "buffer", "constant_tensor": "lifted constant",
               "constant": "constant", "custom_obj": "constant"}

# OpKind members as module constants: `OpKind.X` looks the member up through the enum's
# metaclass (~65 ns), and these tests run per node or per finding.
_DELEGATE, _INPUT, _CONSTANT = OpKind.DELEGATE, OpKind.INPUT, OpKind.CONSTANT
_GETITEM, _MOVE, _ALIAS = OpKind.GETITEM, OpKind.MOVE, OpKind.ALIAS


def strip_comment(code: str) -> str:
    """The source line without its trailing comment (a `#` inside a string stays)."""
    if "#" not in code:
        return code.strip()
    import tokenize  # here: a `.pte` without source lines never needs it (nor its import)

    try:
        for tok in tokenize.generate_tokens(io.StringIO(code.strip() + "\n").readline):
            if tok.type == tokenize.COMMENT:
                return code.strip()[: tok.start[1]].rstrip()
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return code.split("#", 1)[0].strip() or code.strip()


@lru_cache(maxsize=4096)
def expression(code: Optional[str]) -> Optional[str]:
    """The expression a source line evaluates: `h = torch.mm(x, w)  # cuda:0` -> `torch.mm(x, w)`,
    `return torch.sin(h)` -> `torch.sin(h)`; shortened to MAX_EXPRESSION characters. Memoised by
    the line's text: each finding's message quotes one, a few lines many times, and a line
    with a comment is tokenized."""
    if not code:
        return None
    text = strip_comment(code)
    for prefix in _PREFIXES:
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    else:
        text = _ASSIGNMENT.sub("", text, count=1)
    text = text.strip()
    if not text:
        return None
    if len(text) > MAX_EXPRESSION:
        text = text[: MAX_EXPRESSION - 3].rstrip() + "..."
    return f"`{text}`"


def located(location: Optional[SourceLocation]) -> Optional[str]:
    """The quoted expression of a source location, when it has a line's text."""
    return expression(location.code) if location is not None else None


def op_name(node: Node) -> str:
    """An operator as users spell it: `aten.cumsum`, `the CudaBackend delegate`."""
    if node.kind == _DELEGATE:
        backend = node.delegate.backend if node.delegate is not None else None
        return f"the {backend} delegate" if backend else "a delegate"
    target = node.target.replace("::", ".")
    parts = target.split(".")
    if len(parts) >= 3 and parts[0] in ("aten", "et_copy", "quantized_decomposed", "executorch_prim"):
        parts = parts[:2]  # drop the overload (`.default`, `.out`, `.Tensor`)
    return ".".join(parts)


def input_name(node: Node) -> str:
    """`input `x`` (FX names placeholders after the forward's parameters); `input 0` in a .pte."""
    name = node.name.split(" (", 1)[0]
    return name if name.startswith("input ") else f"input `{name.rsplit('/', 1)[-1]}`"


def constant_name(ctx, node: Node) -> str:
    """`parameter `weight``, `buffer `freqs``, `constant `c``."""
    value = ctx.facts.value(node.output) if node.output else None
    name = value.constant_name if value is not None and value.constant_name else node.name.split(" (", 1)[0]
    return f"{_KIND_WORDS.get(node.target, 'constant')} `{name}`"


def subject(ctx, node: Optional[Node]) -> str:
    """The value `node` produces, in the user's terms: an input or constant by its name, else
    the source expression that computes it, else the op that writes it. Getitems, moves and
    aliases are followed to what they pass on, in a loop (a chain of thousands must not
    overflow the stack, and a loop-carried cycle of them must end)."""
    followed: set[int] = set()
    while True:
        if node is None:
            return "a value"
        if node.kind == _INPUT:
            return input_name(node)
        if node.kind == _CONSTANT:
            return constant_name(ctx, node)
        found = located(ctx.locate(node))
        if found is not None:
            return found
        if node.kind in (_GETITEM, _MOVE, _ALIAS) and node.inputs:
            followed.add(node.index)
            writer = ctx.facts.writer(node.inputs[0])
            if writer is not None and writer.index not in followed:
                node = writer
                continue
        break
    if node.kind == _DELEGATE:
        backend = node.delegate.backend if node.delegate is not None else None
        return f"the {backend} output" if backend else "a delegate's output"
    return f"the {op_name(node)} result"


def value_subject(ctx, vid: Optional[str]) -> str:
    """`subject` of the node that writes `vid`; a value a loop carries (moved in on entry,
    and back by every turn: a `loop` move) is said to be one."""
    writers = ctx.facts.writers(vid)
    if len(writers) < 2:
        return subject(ctx, writers[0] if writers else None)
    if all(w.kind == _MOVE for w in writers) and any(w.target == "loop" for w in writers):
        return "a loop-carried value"  # the finding's line is the loop's
    return "a value"


def at(ctx, node: Optional[Node]) -> str:
    """Where an op runs, in the user's terms: its source expression, else its op name."""
    if node is None:
        return "an op"
    found = located(ctx.locate(node))
    return found if found is not None else op_name(node)
