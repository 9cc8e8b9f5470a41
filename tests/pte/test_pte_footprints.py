"""Footprint templates (`footprints`, `_FastTables._templated`) read what the element-by-
element fast path reads: the same program, the same interned objects, the same errors."""

from __future__ import annotations

import random
import struct

import pytest

from xferlint.frontends.pte import program as pp
from xferlint.frontends.pte.container import PteFormatError
from xferlint.frontends.pte.footprints import FIXED, VAR, VTABLE, Footprint, _matcher

from pte_fuzz import mutate

PROGRAMS = ["addsin-noelide", "mixed-two-devices", "multi-output", "linear-stack", "cond-nested",
            "map-nested", "two-methods", "skip-io-planned", "mixed-noelide"]


def _read(data: bytes, templated: bool):
    """The program (or the error's message) with templates on every vector, or on none."""
    old = pp._TEMPLATED_MIN
    pp._TEMPLATED_MIN = 1 if templated else 1 << 62
    try:
        return pp.read_program(data)
    except PteFormatError as exc:
        return str(exc)
    finally:
        pp._TEMPLATED_MIN = old


def _shape(program) -> list:
    """Which values are one object (the reader interns equal values)."""
    if isinstance(program, str):
        return []
    shapes = []
    for plan in program.plans:
        first: dict[int, int] = {}
        shapes.append([first.setdefault(id(ev), i) for i, ev in enumerate(plan.values)])
    return shapes


@pytest.mark.parametrize("name", PROGRAMS)
def test_templates_read_what_the_fast_path_reads(pte_bytes, name):
    data = pte_bytes(name)
    templated, plain = _read(data, True), _read(data, False)
    assert templated == plain == pp.read_program(data, fast=False)
    assert _shape(templated) == _shape(plain)


def test_templates_on_a_long_vector_hit_and_agree(pte_bytes):
    """Real programs' values and instructions are mostly read through templates."""
    data = pte_bytes("mixed-noelide")
    hits = []
    original = pp._FastTables._templated

    def counting(self, positions, fast, careful, build):
        calls = []

        def fast_counted(pos, i):
            calls.append(i)
            return fast(pos, i)

        out = original(self, positions, fast_counted, careful, build)
        hits.append((len(positions), len(calls)))
        return out

    pp._FastTables._templated = counting
    try:
        templated = _read(data, True)
    finally:
        pp._FastTables._templated = original
    assert templated == _read(data, False)
    elements = sum(n for n, _ in hits)
    element_by_element = sum(k for _, k in hits)
    assert element_by_element < elements  # some elements matched a template


def test_mutated_programs_read_alike_with_and_without_templates(pte_bytes):
    """Corrupt input: the same program or the same one-line message either way."""
    sources = [pte_bytes(name) for name in ("addsin-noelide", "cond-nested", "map-nested", "mixed-noelide")]
    rnd = random.Random(7)
    for case in range(600):
        data = mutate(sources[case % len(sources)], rnd)
        templated, plain = _read(data, True), _read(data, False)
        assert templated == plain, case
        assert _shape(templated) == _shape(plain), case


def test_a_template_matches_only_the_same_layout():
    """Two tables at 16 and 32 of one vtable at 0: the second matches the first's template
    with its own field; moved, overlapping, or pointing at another vtable, it does not."""
    buf = bytearray(64)
    struct.pack_into("<HHH", buf, 0, 6, 8, 4)  # vtable: one field at 4
    for pos, value in ((16, 111), (32, 222)):
        struct.pack_into("<iI", buf, pos, pos - 0, value)
    fp = Footprint(16)
    fp.read(16, "i", VTABLE, 16)
    fp.read(20, "I", VAR, 111, "x")
    t = fp.compile(bytes(buf), ["x"], "{*}", {})
    assert t.match(16) == (111,) and t.match(32) == (222,)
    doubled = fp.compile(bytes(buf), ["x"], "twice({x}) + {y}", {"twice": lambda x: 2 * x})
    assert doubled is None  # `y` is no field of this layout
    fp.named["y"] = 5  # a field the layout does not store: its default
    doubled = fp.compile(bytes(buf), ["x"], "twice({x}) + {y}", {"twice": lambda x: 2 * x})
    assert doubled.match(32) == 449
    assert t.match(60) is None and t.match(-20) is None  # the span leaves the buffer
    struct.pack_into("<i", buf, 48, 48 - 6)  # another vtable position
    t2 = fp.compile(bytes(buf), ["x"], "{*}", {})
    assert t2.match(48) is None
    overlapping = Footprint(16)
    overlapping.read(16, "i", VTABLE, 16)
    overlapping.read(18, "I", FIXED, 0, "y")
    assert overlapping.compile(bytes(buf), [], "{*}", {}) is None


def test_matchers_are_compiled_once_per_shape():
    assert _matcher([0], [1], "(v[2],)", ()) is _matcher([0], [1], "(v[2],)", ())
    assert _matcher([0], [1], "(v[2],)", ()) is not _matcher([0], [], "(v[1], v[2])", ())


def test_vector_items_are_one_slice():
    """`{name*}`: a vector's items, stored one after another, as one slice of the fields."""
    buf = bytearray(64)
    struct.pack_into("<HHH", buf, 0, 6, 8, 4)
    struct.pack_into("<iIiii", buf, 16, 16, 3, 7, 8, 9)  # a table, then a vector of 3 ints
    fp = Footprint(16)
    fp.read(16, "i", VTABLE, 16)
    fp.read(20, "I", FIXED, 3, "m")
    for j in range(3):
        fp.read(24 + 4 * j, "i", VAR, 7 + j, f"m{j}")
    assert fp.compile(bytes(buf), ["m0", "m1", "m2"], "({m*}, {m})", {}).match(16) == ((7, 8, 9), 3)
