"""`layouts.Fields`: a table's fields in one unpack, read as the field-by-field reader reads them."""

from __future__ import annotations

import struct

import pytest

from xferlint.frontends.pte.layouts import Fields, Irregular

SPEC = ((4, "B", 0), (6, "I", None), (8, "i", -1))


def _table(slots: tuple[int, ...], body: bytes) -> bytes:
    """A vtable at 0 (its slots as given), then the table: its vtable offset, then `body`."""
    vtable = struct.pack(f"<HH{len(slots)}H", 4 + 2 * len(slots), 4 + len(body), *slots)
    return vtable + struct.pack("<i", len(vtable)) + body


def test_stored_fields_in_spec_order_absent_ones_default():
    # the u32 stored before the u8 (flatc orders fields by size), slot 8 beyond the vtable
    buf = _table((8, 4), struct.pack("<I", 1234) + bytes([7, 0, 0, 0]))
    fields = Fields(buf, SPEC)
    assert fields.at(8) == ((7, 1234, -1), (8, 4, 0))
    assert fields.at(8) == ((7, 1234, -1), (8, 4, 0))  # compiled once per vtable, read again
    assert list(fields.compiled) == [0]


def test_files_with_the_same_vtable_share_its_reader_and_others_do_not():
    """A reader is compiled once per process for vtables of the same bytes (the files of a
    directory come from one serializer); a vtable that differs gets its own."""
    one = _table((8, 4), struct.pack("<I", 1234) + bytes([7, 0, 0, 0]))
    moved = b"\0" * 12 + _table((8, 4), struct.pack("<I", 99) + bytes([3, 0, 0, 0]))  # same vtable, elsewhere
    other = _table((4, 8), bytes([5, 0, 0, 0]) + struct.pack("<I", 42))  # another field order
    first, second, third = Fields(one, SPEC), Fields(moved, SPEC), Fields(other, SPEC)
    assert first.at(8) == ((7, 1234, -1), (8, 4, 0))
    assert second.at(20) == ((3, 99, -1), (8, 4, 0))
    assert third.at(8) == ((5, 42, -1), (4, 8, 0))
    assert first.compiled[0] is second.compiled[12] and third.compiled[0] is not first.compiled[0]


def test_a_single_field_is_a_one_tuple():
    buf = _table((4,), struct.pack("<q", -5))
    assert Fields(buf, ((4, "q", 0),)).at(6) == ((-5,), (4,))


def test_overlapping_fields_are_irregular():
    buf = _table((4, 4), struct.pack("<I", 1))
    with pytest.raises(Irregular):
        Fields(buf, SPEC[:2]).at(8)


def test_a_table_past_the_end_raises():
    buf = _table((4, 8), struct.pack("<I", 1))  # the second field runs past the buffer
    with pytest.raises(struct.error):
        Fields(buf, SPEC[:2]).at(8)


@pytest.mark.parametrize("name", ["addsin-noelide", "cond-nested"])
def test_equal_values_are_one_object(pte_bytes, name):
    """The reader interns equal tensors, ints and bools (the view builds metadata per object)."""
    from xferlint.frontends.pte import program as pp

    for plan in pp.read_program(pte_bytes(name)).plans:
        values = [ev for ev in plan.values if ev.kind in (pp.NULL, pp.INT, pp.BOOL, pp.TENSOR)]
        assert len({id(ev) for ev in values}) == len(set(values))


@pytest.mark.parametrize("name", ["addsin-noelide", "cond-nested", "mixed-noelide"])
def test_view_nodes_and_values_are_what_their_constructors_make(pte_bytes, name):
    """The view builds Nodes and Values without the dataclass __init__ (xferlint.frozen): each
    must hold exactly its fields (every slot set) and equal the object the constructor makes."""
    from dataclasses import fields

    from xferlint.frontends.pte.view import load_pte_bytes

    view = load_pte_bytes(pte_bytes(name)).view
    for method in view.methods:
        for obj in list(method.nodes) + list(method.values.values()):
            names = [f.name for f in fields(obj)]
            assert set(type(obj).__slots__) == set(names), type(obj).__name__
            assert [getattr(obj, n) for n in names]  # a slot never set raises AttributeError
            rebuilt = type(obj)(**{n: getattr(obj, n) for n in names})
            assert rebuilt == obj and hash(rebuilt) == hash(obj)
