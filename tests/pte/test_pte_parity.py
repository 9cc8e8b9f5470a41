"""XF001-XF004 on a `.pte` give what they give on the program's graphs.

Each program is lowered once by ExecuTorch; the ExecutorchProgramManager is linted through
the graph frontend and its `.pte` bytes through the `.pte` frontend, and the finding counts
per rule must be equal. The programs include ExecuTorch's elision on and off, a
post-processing hook that leaves dead D2H copies behind (`rewire_without_dce`), devices
cuda:0 and cuda:1, a host tensor copied to one device several times, delegates with several
outputs, parameters, control flow, two methods, and random models (`tests/randmodels.py`).
"""

from __future__ import annotations

from collections import Counter

import pytest

from xferlint.pipeline import analyze, load_program
from xferlint.frontends.entrypoints import ProgramObject
from xferlint.frontends.pte.view import load_pte_bytes
from xferlint.selection import select_rules

PARITY_CODES = ("XF001", "XF002", "XF003", "XF004")
NAMED = ["addsin-elided", "addsin-noelide", "addsin-rewired", "addsin-cross", "mixed-noelide", "mixed-elided",
         "mixed-rewired", "mixed-two-devices", "shared-input", "linear-stack", "multi-output", "cond-nested",
         "map-nested", "two-methods", "skip-io-planned"]
RANDOM_SEEDS = (3, 11, 42)
VARIANTS = {"elided": {}, "noelide": {"elide": False}, "rewired": {"elide": False, "rewire_without_dce": True}}


def _counts(view, rules) -> dict[tuple[str, str], int]:
    return dict(Counter((f.method, f.code) for f in analyze(view, rules) if f.code in PARITY_CODES))


@pytest.fixture(scope="module")
def rules():
    chosen = [r for r in select_rules() if r.code in PARITY_CODES]
    assert {"XF001", "XF002", "XF003"} <= {r.code for r in chosen}
    return chosen


def _check(program, rules, label):
    graph = _counts(load_program(ProgramObject(label, label, program, None)).view, rules)
    pte = _counts(load_pte_bytes(bytes(program.buffer), label=f"{label}.pte").view, rules)
    assert pte == graph, f"{label}: graph {graph} != pte {pte}"
    return graph


@pytest.mark.parametrize("name", NAMED)
def test_named_programs(pte_program, rules, name):
    _check(pte_program(name), rules, name)


def test_named_programs_cover_every_pattern(pte_program, rules):
    """The parity above is not vacuous: the programs produce every rule's findings."""
    seen: Counter = Counter()
    for name in NAMED:
        seen.update(code for (_, code) in _check(pte_program(name), rules, name))
    for rule in rules:
        assert seen[rule.code] > 0, f"no program gives {rule.code}"


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_random_programs(lowered_once, rules, seed, variant):
    from randmodels import generate, lower_spec

    spec = generate(seed)
    try:
        program = lowered_once(f"pte-random:{seed}:{variant}", lambda: lower_spec(spec, **VARIANTS[variant]))
    except Exception as exc:  # noqa: BLE001 - a model ExecuTorch refuses is not ours to test
        pytest.skip(f"ExecuTorch refuses {spec.describe()}: {type(exc).__name__}")
    _check(program, rules, f"random-{seed}-{variant}")
