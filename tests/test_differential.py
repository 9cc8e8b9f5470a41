"""Differential test: xferlint against ExecuTorch itself, on random device programs.

Each random model (tests/randmodels.py: random DAGs of add/sin/mm and host-only
cos/relu/mul, random devices from None/cuda:0/cuda:1) is lowered with ExecuTorch's
same-device elision off, on, and off with a post-processing hook that rewires without
dead-code elimination. Then, reading the ground truth from the final graphs and their
TensorSpecs, never through xferlint:

(a) XF001 with elision off == the H2D copies ExecuTorch's own elision removes
    (H2D nodes in the off graph minus the on graph), and names exactly those pairs;
(b) with elision on there is no XF001;
(c) XF002 == the h2d(d2h(x)) pairs whose TensorSpec devices differ, in every variant;
(d) with the rewiring hook, XF003 == the _d2h_copy nodes nobody uses.

Seeds are fixed: a failure names the seed and the model, and reproduces with
`randmodels.generate(seed)`.
"""

from __future__ import annotations

from collections import Counter

import pytest

import randmodels

FIRST_SEED = 1000
COUNT = 25


@pytest.fixture(scope="module")
def models():
    """COUNT lowered random models (each: one edge lowering, three to_executorch runs)."""
    return randmodels.lowered_models(FIRST_SEED, COUNT)


def _pairs(findings, code):
    out = []
    for f in findings:
        if f.code == code:
            roles = {s.role: s.node for s in f.steps}
            out.append((roles["d2h"], roles["h2d"]))
    return sorted(out)


def _lint_counts(program):
    from xferlint.api import lint

    findings = lint(program, select=["XF001", "XF002", "XF003"])
    return findings, Counter(f.code for f in findings)


def test_most_random_models_lower(models):
    lowered, refused = models
    reasons = "\n".join(f"  {spec.describe()}: {why}" for spec, why in refused)
    assert len(lowered) == COUNT, f"only {len(lowered)} of {COUNT} lowered; refused:\n{reasons}"
    assert len(refused) <= COUNT // 5, f"ExecuTorch refused {len(refused)} random models:\n{reasons}"


@pytest.mark.parametrize("index", range(COUNT))
def test_xferlint_agrees_with_executorch(models, index):
    lowered, _ = models
    if index >= len(lowered):
        pytest.skip("fewer models lowered than asked for (see test_most_random_models_lower)")
    spec, programs = lowered[index]
    truth = {name: randmodels.copy_counts(p) for name, p in programs.items()}
    found = {name: _lint_counts(p) for name, p in programs.items()}
    off, on, rewire = truth["elide_off"], truth["elide_on"], truth["rewire"]
    context = f"model {spec.describe()}\n truth {truth}\n found { {k: dict(v[1]) for k, v in found.items()} }"

    # (a) every pair ExecuTorch's elision removes is an XF001 without it, and nothing else is.
    removed = len(off.h2d) - len(on.h2d)
    assert found["elide_off"][1]["XF001"] == removed, context
    assert _pairs(found["elide_off"][0], "XF001") == sorted(off.same_device_pairs), context
    assert len(off.same_device_pairs) == removed, context  # the ground truth is self-consistent
    # (b) stock ExecuTorch leaves none.
    assert found["elide_on"][1]["XF001"] == 0, context
    # (c) cross-device staging is kept by ExecuTorch and flagged in every variant.
    for name in programs:
        assert _pairs(found[name][0], "XF002") == sorted(truth[name].cross_device_pairs), f"{name}: {context}"
    assert len(on.cross_device_pairs) == len(off.cross_device_pairs), context
    # (d) the rewiring hook leaves its D2Hs dead; ExecuTorch's own pipelines never do.
    dead = sorted(s.node for f in found["rewire"][0] if f.code == "XF003" for s in f.steps if s.role == "d2h")
    assert dead == sorted(rewire.dead_d2h), context
    assert len(rewire.h2d) == len(off.h2d) - len(off.same_device_pairs), context  # the hook did its part
    assert set(rewire.dead_d2h) <= {d2h for d2h, _ in off.same_device_pairs}, context
    assert found["elide_off"][1]["XF003"] == len(off.dead_d2h) == 0, context
    assert found["elide_on"][1]["XF003"] == len(on.dead_d2h) == 0, context
    assert found["rewire"][1]["XF001"] == len(rewire.same_device_pairs) == 0, context


def test_random_models_exercise_every_pattern(models):
    """The generator is not degenerate: the cases the assertions above are about occur."""
    lowered, _ = models
    totals = Counter()
    for spec, programs in lowered:
        off = randmodels.copy_counts(programs["elide_off"])
        rewire = randmodels.copy_counts(programs["rewire"])
        totals["same"] += len(off.same_device_pairs)
        totals["cross"] += len(off.cross_device_pairs)
        totals["dead"] += len(rewire.dead_d2h)
        totals["multi_output"] += len(spec.outputs) > 1
        uses = Counter(a for op in spec.ops for a in op.args)
        totals["multi_use"] += any(n > 1 for n in uses.values())
        totals["host_ops"] += any(op.op in randmodels.HOST_OPS for op in spec.ops)
        totals["both_cuda"] += {"cuda:0", "cuda:1"} <= set(spec.devices)
    for key in ("same", "cross", "dead"):
        assert totals[key] >= 5, totals
    for key in ("multi_output", "multi_use", "host_ops", "both_cuda"):
        assert totals[key] >= len(lowered) // 4, totals


def test_generator_is_reproducible():
    assert randmodels.generate(FIRST_SEED) == randmodels.generate(FIRST_SEED)
    specs = {randmodels.generate(seed) for seed in range(FIRST_SEED, FIRST_SEED + 10)}
    assert len(specs) == 10


def test_shared_edge_lowering_matches_a_fresh_lowering(models):
    """lower_variants reuses one edge program; a fresh `lower()` gives the same graphs."""
    lowered, _ = models
    spec, programs = next((s, p) for s, p in lowered if randmodels.copy_counts(p["elide_off"]).same_device_pairs)
    fresh = randmodels.lower_spec(spec, elide=False)
    assert randmodels.copy_counts(fresh) == randmodels.copy_counts(programs["elide_off"])
