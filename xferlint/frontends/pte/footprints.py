"""Whole elements of a vector of tables, each read with one struct unpack and one check.

A flatbuffer serializer writes the elements of a vector the same way each time: an EValue
and the Tensor, sizes vector and allocation table it points at lie at the same distances
from each other, their tables share a handful of vtables. The `Footprint` of one element
is every field the fast reader read for it (the soffset of each table, the fields each
vtable stores, vector lengths and items), at its distance from the element's position.
Compiled into a `Template`, a later element is read with one unpack of the same span and
one generated comparison; `Template.match` returns what the caller makes of its fields (an
expression compiled with the template) only where the element is laid out exactly like
the first:

- each table's soffset points at the same vtable (same absolute position: same bytes,
  same stored fields, so the same reads follow);
- every offset the reader followed (to a sub-table or a vector) and every value it
  branched on (a union tag, a vector length) is the same as in the first element.

Where both hold, the fast reader, run on that element, reads the same bytes at the same
distances and takes the same branches, so it returns what the template's fields give;
anywhere else `match` returns None and the element is read as before. The span must lie
inside the buffer (a struct reads nothing outside it, so the reader's bounds checks pass).
"""

from __future__ import annotations

import re
import struct
from typing import Any, Callable, Optional

VTABLE, FIXED, VAR = range(3)  # roles of a read: a soffset, a value branched on, a field


class Footprint:
    """The reads of one element's decode, relative to the element's position `base`."""

    __slots__ = ("base", "reads", "named")

    def __init__(self, base: int) -> None:
        self.base = base
        self.reads: list[tuple[int, str, int, Any, str]] = []  # (distance, code, role, value, name)
        self.named: dict[str, Any] = {}  # name -> value of every field (absent ones: their default)

    def read(self, pos: int, code: str, role: int, value: Any, name: str = "") -> None:
        self.reads.append((pos - self.base, code, role, value, name))
        if name:
            self.named[name] = value

    def table(self, pos: int, vt: int, fields: Any, values: tuple, offsets: tuple,
              roles: tuple[int, ...], names: tuple[str, ...]) -> None:
        """A table read by `layouts.Fields.at`: its soffset, then each stored field."""
        self.read(pos, "i", VTABLE, pos - vt)
        for (_, code, _), o, value, role, name in zip(fields.spec, offsets, values, roles, names):
            if o:
                self.read(pos + o, code, role, value, name)
            else:
                self.named[name] = value  # the default: the same for every element of the template

    def compile(self, buf: bytes, var_order: list[str], result: str, env: dict[str, Any]) -> Optional["Template"]:
        """The template of this layout in `buf`, or None where reads overlap (corrupt input:
        read element by element). Its `var_names` are those of `var_order` that are stored,
        in that order; `named` holds every other field's value (defaults, fixed values).
        `match` returns `result`, an expression over `env`'s names and the fields:
        `{name}` a field (its constant where the layout does not store it), `{name*}` the
        tuple of the stored name0, name1, ... (a vector's items), `{*}` that of all stored
        fields in `var_names` order."""
        reads = sorted(self.reads, key=lambda r: r[0])
        fmt, end = "<", reads[0][0]
        lo = end
        for distance, code, _, _, _ in reads:
            if distance < end:
                return None
            fmt += f"{distance - end}x{code}" if distance > end else code
            end = distance + struct.calcsize("<" + code)
        index = {r[4]: k for k, r in enumerate(reads) if r[2] == VAR}
        var_names = tuple(name for name in var_order if name in index)
        if len(var_names) != len(index):
            return None
        named = {k: v for k, v in self.named.items() if k not in index}
        source = _expression(result, index, var_names, named)
        if source is None:
            return None
        # soffset - element position = table distance - vtable position, the same for every element
        vts = [(k, r[3] - self.base) for k, r in enumerate(reads) if r[2] == VTABLE]
        fixed = [(k, r[3]) for k, r in enumerate(reads) if r[2] == FIXED]
        make = _matcher([k for k, _ in vts], [k for k, _ in fixed], source, tuple(env))
        match = make(buf, struct.Struct(fmt).unpack_from, len(buf) - end, -lo, lo,
                     *(c for _, c in vts), *(c for _, c in fixed), *env.values())
        return Template(match, var_names, named)


_PLACEHOLDER = re.compile(r"\{(\w*)(\*?)\}")


def _expression(result: str, index: dict[str, int], var_names: tuple[str, ...], named: dict[str, Any]) -> Optional[str]:
    """`result` with its placeholders (see `Footprint.compile`) as Python source over `v`,
    the unpacked fields; None where a vector's items are not one run of fields."""
    def tuple_of(ks: list[int]) -> str:
        return "(" + "".join(f"v[{k}], " for k in ks) + ")"

    def field(m: re.Match) -> str:
        name, run = m.group(1), m.group(2)
        if not name:
            return tuple_of([index[n] for n in var_names])
        if not run:
            if name in index:
                return f"v[{index[name]}]"
            value = named[name]
            if type(value) is not int:  # only ints reach the generated source
                raise ValueError(name)
            return repr(value)
        ks = [index[f"{name}{j}"] for j in range(len(index)) if f"{name}{j}" in index]
        if ks and ks != list(range(ks[0], ks[0] + len(ks))):
            raise ValueError(name)
        return f"v[{ks[0]}:{ks[-1] + 1}]" if ks else "()"

    try:
        return _PLACEHOLDER.sub(field, result)
    except (KeyError, ValueError):
        return None


_MATCHERS: dict[str, Callable] = {}  # source -> factory: the files of a directory share layouts


def _matcher(vts: list[int], fixed: list[int], result: str, env: tuple[str, ...]) -> Callable:
    """The factory of `match(pos)` for a layout whose unpacked fields `v` at `vts` are
    soffsets and at `fixed` values to compare, returning `result` (source over `v` and the
    names `env`). Generated source, compiled once per process for each shape; the constants
    are the factory's arguments."""
    checks = [f"v[{k}] - pos != K{j}" for j, k in enumerate(vts)] + [f"v[{k}] != C{j}" for j, k in enumerate(fixed)]
    params = ", ".join(["buf", "unpack", "last", "first", "lo"] + [f"K{j}" for j in range(len(vts))]
                       + [f"C{j}" for j in range(len(fixed))] + list(env))
    source = (
        f"def make({params}):\n"
        f"    def match(pos):\n"
        f"        if pos > last or pos < first:\n"  # the span must lie inside the buffer
        f"            return None\n"
        f"        v = unpack(buf, pos + lo)\n"
        f"        if {' or '.join(checks) or 'False'}:\n"
        f"            return None\n"
        f"        return {result}\n"
        f"    return match\n"
    )
    make = _MATCHERS.get(source)
    if make is None:
        namespace: dict[str, Any] = {}
        exec(compile(source, "<footprint>", "exec"), namespace)  # noqa: S102 - generated above, from ints and names
        make = namespace["make"]
        if len(_MATCHERS) < 1024:
            _MATCHERS[source] = make
    return make


class Template:
    """One element layout (see the module docstring): `match(pos)` gives what the caller
    makes of an element laid out like it (`result`), else None; `need` and `charge` are the
    caller's: the budget the element's vectors take."""

    __slots__ = ("match", "var_names", "named", "need", "charge", "id")

    def __init__(self, match: Callable[[int], Optional[tuple]], var_names: tuple[str, ...],
                 named: dict[str, Any]) -> None:
        self.match, self.var_names, self.named = match, var_names, named
        self.need = self.charge = 0
        self.id = 0  # the caller's name for it

    def fields(self, var: tuple) -> dict[str, Any]:
        """Every field of an element by name: `var` (from `match`) and the template's own."""
        named = dict(self.named)
        named.update(zip(self.var_names, var))
        return named
