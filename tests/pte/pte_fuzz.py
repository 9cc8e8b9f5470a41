"""Mutations of real `.pte` files and the oracle a mutated file must satisfy.

`mutate(data, rnd)` applies one or a few of: bit flips, random bytes, truncation, 32-bit
words overwritten with huge / negative / small values at aligned offsets (out-of-range
indices, huge counts), a chunk duplicated or deleted. `lint_bytes(data)` runs the whole
`.pte` path (reader, view, analysis, every rule) and returns None when the file linted, or
the one-line message of the InputError it raised; anything else escaping is a bug.

Used by `test_pte_robustness.py` (bounded) and `benchmarks/bench_pte.py --fuzz` (long).
"""

from __future__ import annotations

import random
import struct
from typing import Iterator, Optional

from xferlint.pipeline import analyze
from xferlint.errors import XferlintError
from xferlint.frontends.pte.view import load_pte_bytes
from xferlint.selection import select_rules

INTERESTING = (0, 1, 2, 3, 4, 7, 8, 0x7F, 0x80, 0xFF, 0x100, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
               0xFFFFFFFE, 0x10000, 0x100000)


def _flip(buf: bytearray, rnd: random.Random) -> None:
    for _ in range(rnd.randint(1, 8)):
        i = rnd.randrange(len(buf))
        buf[i] ^= 1 << rnd.randrange(8)


def _bytes(buf: bytearray, rnd: random.Random) -> None:
    for _ in range(rnd.randint(1, 4)):
        i = rnd.randrange(len(buf))
        buf[i] = rnd.randrange(256)


def _word(buf: bytearray, rnd: random.Random) -> None:
    for _ in range(rnd.randint(1, 3)):
        if len(buf) < 8:
            return
        i = rnd.randrange(0, len(buf) - 4) & ~3
        value = rnd.choice(INTERESTING) if rnd.random() < 0.7 else rnd.getrandbits(32)
        struct.pack_into("<I", buf, i, value)


def _truncate(buf: bytearray, rnd: random.Random) -> None:
    del buf[rnd.randrange(len(buf)):]


def _chunk(buf: bytearray, rnd: random.Random) -> None:
    i = rnd.randrange(len(buf))
    j = min(len(buf), i + rnd.randint(1, 64))
    if rnd.random() < 0.5:
        buf[i:i] = buf[i:j]
    else:
        del buf[i:j]


MUTATIONS = (_flip, _bytes, _word, _truncate, _chunk)
WEIGHTS = (4, 2, 4, 1, 1)


def mutate(data: bytes, rnd: random.Random) -> bytes:
    buf = bytearray(data)
    for _ in range(rnd.randint(1, 2)):
        if not buf:
            break
        rnd.choices(MUTATIONS, WEIGHTS)[0](buf, rnd)
    return bytes(buf)


_RULES = None


# Lowered programs with fixes to apply, and a seed whose case 382 needs a second fix pass
# (XF004's fixes make room in the memory plan for a third).
FIXABLE_SOURCES = ("addsin-rewired", "addsin-noelide-naive", "cond-after-dead-copy", "mixed-noelide-naive",
                   "shared-input-naive", "mixed-rewired")


def fixable_mutants(pte_bytes, cases: int = 400, seed: int = 3) -> Iterator[tuple[int, bytes]]:
    """(case, mutated bytes) of the fixable programs, round robin, reproducibly."""
    sources = [pte_bytes(n) for n in FIXABLE_SOURCES]
    rnd = random.Random(seed)
    for case in range(cases):
        yield case, mutate(sources[case % len(sources)], rnd)


def lint_bytes(data: bytes, label: str = "fuzz.pte") -> Optional[str]:
    """None when the bytes lint; the InputError's message when they are refused."""
    global _RULES
    if _RULES is None:
        _RULES = select_rules()
    try:
        view = load_pte_bytes(data, label=label).view
        analyze(view, _RULES)
    except XferlintError as exc:
        return str(exc)
    return None
