"""The models at the boundary between rules and reporters: findings and input errors.

Pydantic models, so the JSON output's schema (`xferlint schema`) is generated from the
same definitions the rules fill in.
"""

from __future__ import annotations

import enum
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Applicability(str, enum.Enum):
    """Whether a fix may run by default (safe) or only with --unsafe-fixes (unsafe)."""

    SAFE = "safe"
    UNSAFE = "unsafe"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Location(_Frozen):
    """A position in the model source: the line that produced the value."""

    file: str = Field(description="Path of the source file (absolute as recorded; reporters relativize)")
    line: int = Field(ge=1)
    column: int = Field(default=1, ge=1)
    function: Optional[str] = None
    code: Optional[str] = Field(default=None, description="The source line's text")


class Step(_Frozen):
    """One node along a transfer path, with the device its result lives on."""

    node: str
    target: str = Field(description="Operator, e.g. et_copy._d2h_copy.out")
    role: str = Field(description="producer, d2h, h2d, consumer, host-op, ...")
    device: Optional[str] = Field(description="Device of the node's result (cpu, cuda:0); null if unknown")
    location: Optional[Location] = None


class Finding(_Frozen):
    """One diagnostic."""

    code: str = Field(description="Stable rule code, e.g. XF001")
    name: str = Field(description="Rule name, e.g. redundant-round-trip")
    severity: Severity
    message: str
    input: str = Field(description="The input as given on the command line")
    program: str = Field(description="Program name (attribute or dict key)")
    method: str
    nodes: list[str] = Field(description="Nodes along the transfer path, in order")
    devices: list[str] = Field(description="Device of each node along the path")
    bytes: Optional[int] = Field(description="Bytes of the transferred tensor per call; null when symbolic")
    location: Optional[Location] = Field(description="Model source line, when the program has one")
    file: Optional[str] = Field(
        default=None, description="The input file the program was read from (.py entry point, .pte), absolute"
    )
    fixable: bool
    fix_applicability: Optional[Applicability] = None
    steps: list[Step] = Field(default_factory=list)
    saves_bytes: Optional[int] = Field(
        default=None, description="Bytes per call the fix would stop moving (fixable findings); null when unknown"
    )
    removes: list[str] = Field(
        default_factory=list,
        description="Copy nodes the fix deletes; the transfer summary counts each once across findings",
    )


class InputErrorEntry(_Frozen):
    """An input that could not be loaded or analysed."""

    input: str
    message: str
    kind: str = Field(description="input, unmodelled, internal")
