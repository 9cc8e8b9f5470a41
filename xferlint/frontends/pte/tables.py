"""The program's tables the decoder and the fix patcher walk, read with struct alone.

ExecuTorch's generated reader classes (`schema.generated()`: flatbuffers and 45 generated
modules) cost about as much to import as reading a 3 MB program does, ~14 ms. Where
the installed schema is the one xferlint's reader follows (`schema.pinned()`), these stand-
ins take their place: `Program`, `ExecutionPlan`, `Chain`, `FrameList`, `Frame` and
`DataSegment`, with the generated classes' accessor names and answers (absent fields give
the same defaults, strings are bytes) for the fields xferlint reads, the vtable slots those
of `program.fbs` (4 + 2 * field index). A position outside the program raises, as the
generated accessors do; `read_program` turns that into the one-line error.
"""

from __future__ import annotations

import struct
from typing import Optional

_U16, _I32, _U32, _U64 = struct.Struct("<H"), struct.Struct("<i"), struct.Struct("<I"), struct.Struct("<Q")


class Tab:
    """A table at `Pos` in `Bytes`: flatbuffers' `Table`, the operations the stand-ins use."""

    __slots__ = ("Bytes", "Pos")

    def __init__(self, buf: bytes, pos: int) -> None:
        self.Bytes = buf
        self.Pos = pos

    def get(self, fmt: struct.Struct, off: int) -> int:
        if off < 0:  # struct would count from the end; flatbuffers refuses
            raise ValueError(f"offset {off} lies before the program")
        return fmt.unpack_from(self.Bytes, off)[0]

    def Offset(self, slot: int) -> int:  # noqa: N802 - flatbuffers' name
        vtable = self.Pos - self.get(_I32, self.Pos)
        end = self.get(_U16, vtable)
        return self.get(_U16, vtable + slot) if slot < end else 0

    def Indirect(self, off: int) -> int:  # noqa: N802
        return off + self.get(_U32, off)

    def String(self, off: int) -> bytes:  # noqa: N802
        off += self.get(_U32, off)
        start = off + 4
        return bytes(self.Bytes[start: start + self.get(_U32, off)])

    def VectorLen(self, off: int) -> int:  # noqa: N802
        off += self.Pos
        return self.get(_U32, off + self.get(_U32, off))

    def Vector(self, off: int) -> int:  # noqa: N802
        off += self.Pos
        return off + self.get(_U32, off) + 4


class _Table:
    __slots__ = ("_tab",)

    def __init__(self, buf: bytes, pos: int) -> None:
        self._tab = Tab(buf, pos)

    def _length(self, slot: int) -> int:
        o = self._tab.Offset(slot)
        return self._tab.VectorLen(o) if o else 0

    def _element(self, slot: int, j: int, cls: type) -> Optional["_Table"]:
        tab = self._tab
        o = tab.Offset(slot)
        if not o:
            return None
        return cls(tab.Bytes, tab.Indirect(tab.Vector(o) + 4 * j))

    def _string(self, slot: int) -> Optional[bytes]:
        o = self._tab.Offset(slot)
        return self._tab.String(o + self._tab.Pos) if o else None

    def _scalar(self, slot: int, fmt: struct.Struct) -> int:
        o = self._tab.Offset(slot)
        return self._tab.get(fmt, o + self._tab.Pos) if o else 0


class Frame(_Table):
    __slots__ = ()

    def Filename(self) -> Optional[bytes]:  # noqa: N802
        return self._string(4)

    def Lineno(self) -> int:  # noqa: N802
        return self._scalar(6, _I32)

    def Name(self) -> Optional[bytes]:  # noqa: N802
        return self._string(8)

    def Context(self) -> Optional[bytes]:  # noqa: N802
        return self._string(10)


class FrameList(_Table):
    __slots__ = ()

    def ItemsLength(self) -> int:  # noqa: N802
        return self._length(4)

    def Items(self, j: int) -> Optional[Frame]:  # noqa: N802
        return self._element(4, j, Frame)


class Chain(_Table):
    __slots__ = ()

    def OutputsLength(self) -> int:  # noqa: N802
        return self._length(6)

    def InstructionsLength(self) -> int:  # noqa: N802
        return self._length(8)

    def StacktraceLength(self) -> int:  # noqa: N802
        return self._length(10)

    def Stacktrace(self, j: int) -> Optional[FrameList]:  # noqa: N802
        return self._element(10, j, FrameList)


class ExecutionPlan(_Table):
    __slots__ = ()

    def Name(self) -> Optional[bytes]:  # noqa: N802
        return self._string(4)

    def ValuesLength(self) -> int:  # noqa: N802
        return self._length(8)

    def OutputsLength(self) -> int:  # noqa: N802
        return self._length(12)

    def ChainsLength(self) -> int:  # noqa: N802
        return self._length(14)

    def Chains(self, j: int) -> Optional[Chain]:  # noqa: N802
        return self._element(14, j, Chain)

    def DelegatesLength(self) -> int:  # noqa: N802
        return self._length(18)


class DataSegment(_Table):
    __slots__ = ()

    def Offset(self) -> int:  # noqa: N802
        return self._scalar(4, _U64)

    def Size(self) -> int:  # noqa: N802
        return self._scalar(6, _U64)


class Program(_Table):
    __slots__ = ()

    @classmethod
    def GetRootAs(cls, buf: bytes, offset: int = 0) -> "Program":  # noqa: N802
        return cls(buf, offset + _U32.unpack_from(buf, offset)[0])

    def Version(self) -> int:  # noqa: N802
        return self._scalar(4, _U32)

    def ExecutionPlanLength(self) -> int:  # noqa: N802
        return self._length(6)

    def ExecutionPlan(self, j: int) -> Optional[ExecutionPlan]:  # noqa: N802
        return self._element(6, j, ExecutionPlan)

    def BackendDelegateDataLength(self) -> int:  # noqa: N802
        return self._length(10)

    def SegmentsLength(self) -> int:  # noqa: N802
        return self._length(12)

    def Segments(self, j: int) -> Optional[DataSegment]:  # noqa: N802
        return self._element(12, j, DataSegment)
