"""The data at the boundary between rules and reporters: findings and input errors.

Frozen slotted dataclasses (`xferlint.serialize`): the JSON output and its schema
(`xferlint schema`) are generated from these same definitions.
"""

from __future__ import annotations

import enum
import re
from dataclasses import field
from typing import Optional

from xferlint.records import dataclass
from xferlint.serialize import BOUNDARY, described


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Applicability(str, enum.Enum):
    """Whether a fix may run by default (safe) or only with --unsafe-fixes (unsafe)."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(**BOUNDARY)
class Location:
    """A position in the model source: the line that produced the value."""

    file: str = described("Path of the source file (absolute as recorded; reporters relativize)")
    line: int = described("1-based line")
    column: int = described("1-based column", default=1)
    function: Optional[str] = None
    code: Optional[str] = described("The source line's text", default=None)


@dataclass(**BOUNDARY)
class Step:
    """One node along a transfer path, with the device its result lives on."""

    node: str
    target: str = described("Operator, e.g. et_copy._d2h_copy.out")
    role: str = described("producer, d2h, h2d, consumer, host-op, ...")
    device: Optional[str] = described("Device of the node's result (cpu, cuda:0); null if unknown")
    location: Optional[Location] = None


@dataclass(**BOUNDARY)
class Finding:
    """One diagnostic."""

    code: str = described("Stable rule code, e.g. XF001")
    name: str = described("Rule name, e.g. redundant-round-trip")
    severity: Severity
    message: str = described("One line in the user's terms: what, where, devices, bytes per call")
    input: str = described("The input as given on the command line")
    program: str = described("Program name (attribute or dict key)")
    method: str
    nodes: list[str] = described("Nodes along the transfer path, in order")
    devices: list[str] = described("Device of each node along the path")
    bytes: Optional[int] = described(
        "Bytes per call moved by the copies this finding is about (`copies`), all directions summed; "
        "null when a size is symbolic or there is no copy"
    )
    location: Optional[Location] = described("Model source line, when the program has one")
    file: Optional[str] = described(
        "The input file the program was read from (.py entry point, .pte), absolute", default=None
    )
    fixable: bool
    fix_applicability: Optional[Applicability] = None
    steps: list[Step] = field(default_factory=list)
    copies: list[str] = described("Copy nodes this finding is about (their bytes make up `bytes`)",
                                  default_factory=list)
    saves_bytes: Optional[int] = described(
        "Bytes per call the fix would stop moving (the bytes of `removes`); null when unknown or not fixable",
        default=None,
    )
    removes: list[str] = described(
        "Copy nodes the fix deletes; the transfer summary counts each once across findings",
        default_factory=list,
    )
    fix_refused: Optional[str] = described(
        "Why the rule's fix will not be applied to this program (then `fixable` is false): the reason "
        "`xferlint fix` and `--diff` give",
        default=None,
    )
    detail: Optional[str] = described(
        "The longer explanation: what the finding means for this program (shown by the `full` text format); "
        "a list of operands in it names eight and counts the rest (`nodes` and `steps` hold them all)",
        default=None,
    )


@dataclass(**BOUNDARY)
class InputErrorEntry:
    """An input that could not be loaded or analysed."""

    input: str
    message: str
    kind: str = described("input, unmodelled, internal")


_DIGITS = re.compile(r"\d+")


def anchor_node(finding: "Finding") -> str:
    """The node a finding without a source line is reported at, the same in every output
    format: the first copy it is about, else the first `.pte` instruction or chain on its
    path (a delegate call is named by its instruction), else its path's first node; `?`
    when it names none."""
    if finding.copies:
        return finding.copies[0]
    for name in finding.nodes:
        if name.startswith(("instr ", "chain ")):
            return name
    return finding.nodes[0] if finding.nodes else "?"


def node_order(nodes: tuple[str, ...]) -> tuple:
    """A sort key for a finding's node names that puts the first node's number in numeric
    order: `instr 9` before `instr 16` before `instr 103` (a `.pte` without debug info has
    no source line, and as plain strings its findings came in the order 103, 16, 9); the
    names themselves break ties. Only the first name's first number is read: findings
    nearly always differ there, and a key per name cost 3 % of a large program's check."""
    if not nodes:
        return ((), nodes)
    first = nodes[0]
    digits = _DIGITS.search(first)
    if digits is None:
        return ((first,), nodes)
    return ((first[:digits.start()], int(digits.group()), first[digits.end():]), nodes)
