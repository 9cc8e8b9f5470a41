"""Differential: xferlint's fixes against ExecuTorch's own elision, on random programs.

Each random model (tests/randmodels.py: DAGs of add/sin/mm and host-only cos/relu/mul,
devices from host/cuda:0/cuda:1) is lowered twice from one edge program: with
PropagateDevicePass's same-device elision switched off, and stock. Then, reading the
final graphs (node names, arguments, users) and never xferlint's view:

- fixing the elision-off program with XF001 and XF003 gives exactly the copy nodes of the
  stock lowering, each reading the same value and read by the same consumers;
- fixing the stock program with every fix leaves no more H2D or D2H copies than stock
  (fewer where XF004 shared a duplicate) and keeps every cross-device pair.

The seeds are fixed; a failure names the model (`randmodels.generate(seed)` rebuilds it).
Longer sweeps: benchmarks/bench_fix.py.
"""

from __future__ import annotations

import pytest

import randmodels
import xferlint

from fixhelpers import copies, copy_signature, round_trip_pairs

FIRST_SEED = 4000
COUNT = 8


@pytest.fixture(scope="module")
def models():
    lowered, refused = randmodels.lowered_models(FIRST_SEED, COUNT, variants=("elide_off", "elide_on"))
    assert len(lowered) == COUNT, f"ExecuTorch refused too many random models: {refused}"
    return lowered


@pytest.mark.parametrize("index", range(COUNT))
def test_round_trip_fixes_match_upstream_elision(models, index):
    spec, programs = models[index]
    result = xferlint.fix(programs["elide_off"], select=["XF001", "XF003"])
    expected = copy_signature(programs["elide_on"])
    assert copy_signature(result.program) == expected, spec.describe()
    removed = len(copy_signature(programs["elide_off"])) - len(expected)
    assert result.copies_removed == removed, spec.describe()


@pytest.mark.parametrize("index", range(COUNT))
def test_all_fixes_leave_no_more_copies_than_upstream(models, index):
    spec, programs = models[index]
    stock = programs["elide_on"]
    result = xferlint.fix(stock)
    before, after = copies(stock), copies(result.program)
    shared = sum(1 for p in result.applied if p.code == "XF004")
    assert len(after["h2d"]) + len(after["d2h"]) == len(before["h2d"]) + len(before["d2h"]) - shared, spec.describe()
    assert {p.code for p in result.applied} <= {"XF004"}, "stock ExecuTorch leaves no round trip or dead D2H"
    kept = [pair for pair in round_trip_pairs(result.program) if pair[2] != pair[3]]
    shared_copies = {n for p in result.applied for n in p.removes}
    for pair in (pair for pair in round_trip_pairs(stock) if pair[2] != pair[3]):
        d2h, h2d, _, target = pair
        # Every cross-device move stays; only a duplicate of one (same D2H, same device)
        # may go, and then the move it duplicated is still there.
        assert pair in kept or (h2d in shared_copies and any(k[0] == d2h and k[3] == target for k in kept)), (
            f"{spec.describe()}: lost {pair}")
    assert xferlint.lint(result.program, select=["XF001", "XF003", "XF004"]) == [], spec.describe()


def test_the_random_models_exercise_every_fix(models):
    """The sample is worth something only if it has round trips, duplicates and
    cross-device staging in it."""
    codes = {f.code for _, programs in models for p in programs.values() for f in xferlint.lint(p)}
    assert {"XF001", "XF002", "XF004"} <= codes
