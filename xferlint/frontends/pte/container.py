"""The `.pte` file container: flatbuffer identifier, extended header, segment bounds.

A `.pte` is a flatbuffer `Program` (file identifier `ET12` at bytes 4..8), optionally with
an extended header (`eh00`, right after the identifier) that says how many bytes the
flatbuffer takes and where the appended data segments (delegate blobs, constants) start.
This module checks that layout before any flatbuffer table is touched, so a file that is
not a program, or is cut short, gets one line saying so. The layout follows
`executorch/exir/_serialize/_program.py` (`_ExtendedHeader`).
"""

import re
from typing import NamedTuple, Optional

from xferlint.frontends.bounded import FormatError

FILE_IDENTIFIER = b"ET12"
HEADER_MAGIC = b"eh00"
HEADER_MIN_LENGTH = 4 + 4 + 8 + 8  # magic, length, program size, segment base offset
_OTHER_FILES = (
    (b"PK\x03\x04", "a zip archive (an ETRecord or a .pt2?), not a .pte program"),
    (b"\x80\x02", "a pickle, not a .pte program"),
    (b"\x7fELF", "an ELF binary, not a .pte program"),
)


class PteFormatError(FormatError):
    """A `.pte` that is not a readable ExecuTorch program (wrong kind of file, truncated,
    corrupt). The message is one line that names the input and what is wrong."""


class ExtendedHeader(NamedTuple):
    length: int
    program_size: int
    segment_base_offset: int
    segment_data_size: int


class Container(NamedTuple):
    """Where the flatbuffer and the segments lie in the file's bytes."""

    data: bytes
    program_size: int  # the flatbuffer is data[:program_size]
    header: Optional[ExtendedHeader]

    @property
    def segment_base_offset(self) -> int:
        return self.header.segment_base_offset if self.header else 0


def _u32(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 4], "little")


def _u64(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 8], "little")


def read_header(data: bytes) -> Optional[ExtendedHeader]:
    """The extended header when bytes 8.. start with `eh00`, else None."""
    if data[8:12] != HEADER_MAGIC or len(data) < 8 + HEADER_MIN_LENGTH:
        return None
    length = _u32(data, 12)
    return ExtendedHeader(
        length=length,
        program_size=_u64(data, 16),
        segment_base_offset=_u64(data, 24),
        segment_data_size=_u64(data, 32) if length > HEADER_MIN_LENGTH and len(data) >= 40 else 0,
    )


def _identify(data: bytes) -> str:
    for magic, what in _OTHER_FILES:
        if data.startswith(magic):
            return what
    ident = data[4:8]
    if re.fullmatch(rb"ET\d\d", ident):
        return (
            f"a .pte with schema version {ident.decode()}, which xferlint does not read "
            f"(it reads {FILE_IDENTIFIER.decode()}, ExecuTorch 1.x)"
        )
    if ident == b"FT01" or ident == b"FH01":
        return "an ExecuTorch data file (.ptd), not a .pte program"
    return f"not an ExecuTorch program (file identifier {ident!r}, expected {FILE_IDENTIFIER!r})"


def _check_identity(head: bytes, size: int) -> None:
    """An empty, tiny or foreign file is no .pte (PteFormatError)."""
    if size == 0:
        raise PteFormatError("empty file, not a .pte program")
    if size < 16:
        raise PteFormatError(f"too short to be a .pte program ({size} bytes)")
    if head[4:8] != FILE_IDENTIFIER:
        raise PteFormatError(_identify(head))


def check_header(head: bytes, size: int) -> None:
    """What can be told from the first bytes and the size alone (before reading the rest):
    raises PteFormatError for an empty, tiny, foreign or truncated file."""
    _check_identity(head, size)
    header = read_header(head)
    if header is not None and header.program_size > size:
        raise PteFormatError(f"truncated: the header says the program takes {header.program_size} bytes, "
                             f"the file has {size}")


HEADER_PEEK = 64  # bytes `check_header` needs: the identifier and the extended header


def parse_container(data: bytes) -> Container:
    """Check the identifier, the extended header and the segment bounds."""
    size = len(data)
    _check_identity(data, size)
    header = read_header(data)
    program_size = size
    if header is not None:
        if header.length < HEADER_MIN_LENGTH:
            raise PteFormatError(f"corrupt extended header: length {header.length} < {HEADER_MIN_LENGTH}")
        if header.program_size > size:
            raise PteFormatError(
                f"truncated: the header says the program takes {header.program_size} bytes, "
                f"the file has {size}"
            )
        if header.program_size < 8 + header.length:
            raise PteFormatError(f"corrupt extended header: program size {header.program_size} is too small")
        if header.segment_base_offset:
            if header.segment_base_offset < header.program_size or header.segment_base_offset > size:
                raise PteFormatError(
                    f"truncated or corrupt: segments start at byte {header.segment_base_offset}, "
                    f"the file has {size} bytes and the program ends at {header.program_size}"
                )
            end = header.segment_base_offset + header.segment_data_size
            if end > size:
                raise PteFormatError(
                    f"truncated: the segments end at byte {end}, the file has {size}"
                )
        program_size = header.program_size
    root = _u32(data, 0)
    if root < 8 or root + 4 > program_size:
        raise PteFormatError(f"corrupt flatbuffer: root table offset {root} is outside the {program_size}-byte program")
    return Container(data=data, program_size=program_size, header=header)
