"""Flatbuffer tables read with one struct unpack each, the reader compiled once per vtable.

A flatbuffers table starts with a signed offset to its vtable; the vtable gives, per field,
the field's offset in the table (0: absent, the default applies). Tables of one shape share
one vtable (builders deduplicate them), so the 200,000 values of a large program have a
handful. `Fields(buf, spec)` compiles, per vtable, one `struct.Struct` over the stored fields
in offset order and an `itemgetter` that puts them back in the spec's order, the defaults of
absent fields filling in: a table costs three C calls instead of two or three per field.

The bytes read are exactly those a field-by-field reader reads (the vtable entries, then each
stored field at its offset), so whenever `Fields.at` returns, the field-by-field reader would
have returned the same values; where it raises, the caller reads the table field by field and
reports what that reports.
"""

import struct
from operator import itemgetter
from typing import Any

_SOFFSET = struct.Struct("<i")
_soffset = _SOFFSET.unpack_from
_U16 = struct.Struct("<H")


_SHARED: dict[tuple, tuple] = {}  # (spec, vtable bytes) -> compiled reader, for every file
_SHARED_MAX = 4096


class Irregular(Exception):
    """A vtable whose fields overlap: no single struct reads it (corrupt input)."""


class Fields:
    """Reads the fields `spec` ((vtable slot, struct code, default), ...) of tables."""

    __slots__ = ("buf", "spec", "compiled")

    def __init__(self, buf: bytes, spec: tuple[tuple[int, str, Any], ...]) -> None:
        self.buf = buf
        self.spec = spec
        self.compiled: dict[int, tuple] = {}  # vtable position -> (unpack, getter, defaults, offsets)

    def at(self, pos: int) -> tuple[tuple, tuple[int, ...]]:
        """(the fields of the table at `pos` in spec order, their offsets in it, 0 if absent)."""
        buf = self.buf
        vt = pos - _soffset(buf, pos)[0]
        reader = self.compiled.get(vt)
        if reader is None:
            reader = self.compiled[vt] = self._shared(vt)
        unpack, getter, defaults, offsets = reader
        return getter(unpack(buf, pos) + defaults), offsets

    def _shared(self, vt: int) -> tuple:
        """The reader of the vtable at `vt`, compiled once per process for vtables of the
        same bytes: the programs of a directory are built by the same serializer, so a
        thousand files share a handful (a whole, even-length vtable inside the buffer; any
        other is compiled on its own, reading exactly what it read before)."""
        buf = self.buf
        vlen = _U16.unpack_from(buf, vt)[0]
        if vt < 0 or vlen % 2 or vt + vlen > len(buf):
            return self._compile(vt)
        key = (self.spec, bytes(buf[vt:vt + vlen]))
        reader = _SHARED.get(key)
        if reader is None:
            reader = self._compile(vt)
            if len(_SHARED) < _SHARED_MAX:
                _SHARED[key] = reader
        return reader

    def _compile(self, vt: int) -> tuple:
        buf = self.buf
        vlen = _U16.unpack_from(buf, vt)[0]
        offsets = tuple(_U16.unpack_from(buf, vt + slot)[0] if slot < vlen else 0 for slot, _, _ in self.spec)
        stored = sorted((o, j) for j, o in enumerate(offsets) if o)
        fmt, end = "<", 0
        for o, j in stored:
            if o < end:
                raise Irregular(f"fields overlap in the vtable at {vt}")
            code = self.spec[j][1]
            fmt += f"{o - end}x{code}"
            end = o + struct.calcsize("<" + code)
        # where each spec field lands in (stored fields in offset order) + (absent defaults)
        place = {j: k for k, (_, j) in enumerate(stored)}
        absent = [j for j in range(len(self.spec)) if j not in place]
        place.update((j, len(stored) + k) for k, j in enumerate(absent))
        order = [place[j] for j in range(len(self.spec))]
        getter = itemgetter(*order) if len(order) > 1 else itemgetter(slice(order[0], order[0] + 1))
        defaults = tuple(self.spec[j][2] for j in absent)
        return struct.Struct(fmt).unpack_from, getter, defaults, offsets
