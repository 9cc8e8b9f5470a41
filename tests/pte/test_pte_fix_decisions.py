"""`check` runs the `.pte` fix trial only for its decisions (`decisions_only`: the programs
read back are linted with just the rules the decisions read); it must decide exactly what
the full trial (`xferlint fix`) decides: the same fixes applied, the same refusals with
the same reasons, the same fixed bytes. Checked on lowered and synthetic programs."""

from __future__ import annotations

import pytest

from xferlint.fixes.pte.fix import _Linter, fix_pte_loaded
from xferlint.frontends.pte.view import load_pte_bytes
from xferlint.rules.base import Rule
from xferlint.selection import select_rules
from xferlint.testing import synthetic_pte as sp

LOWERED = ["addsin-noelide", "addsin-noelide-naive", "addsin-rewired", "mixed-noelide", "mixed-noelide-naive",
           "mixed-rewired", "shared-input-naive", "cond-after-dead-copy"]
SYNTHETIC = {"ladder": lambda: sp.ladder(12), "fan-out": lambda: sp.fan_out(40),
             "in-place": lambda: sp.in_place_ladder(15), "loops": lambda: sp.loops(6),
             "methods": lambda: sp.methods(3)}


def _decided(data: bytes, rules, unsafe: bool, decisions_only: bool):
    result = fix_pte_loaded(load_pte_bytes(data, label="p.pte"), rules, unsafe_fixes=unsafe,
                            decisions_only=decisions_only)
    return ([(p.key, p.removes, p.rewires, p.copies) for p in result.applied],
            [(s.code, s.method, s.nodes, s.reason, s.unsafe) for s in result.skipped],
            result.changed, result.buffer)


def _same(data: bytes, rules=None) -> tuple:
    rules = select_rules() if rules is None else rules
    for unsafe in (False, True):
        full = _decided(data, rules, unsafe, False)
        assert _decided(data, rules, unsafe, True) == full
    return full


@pytest.mark.parametrize("name", LOWERED)
def test_decisions_equal_the_full_trial_on_lowered_programs(pte_bytes, name):
    _same(pte_bytes(name))


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_decisions_equal_the_full_trial_on_synthetic_programs(name):
    applied, skipped, _, _ = _same(SYNTHETIC[name]())
    if name == "ladder":  # refusals (the memory plan) and a fix in one trial
        assert applied and skipped


@pytest.mark.parametrize("select", [["XF001"], ["XF004"], ["XF001", "XF005"], ["XF007"]])
def test_decisions_equal_the_full_trial_under_a_rule_selection(select):
    _same(sp.ladder(12), select_rules(select))


class _Foreign(Rule):
    """A rule from outside the package: the trial cannot tell which codes it reports."""

    code = "XF901"
    name = "foreign"

    def check(self, ctx):
        return ()


def test_rules_from_outside_the_package_keep_the_full_lint():
    rules = [*select_rules(), _Foreign()]
    view = load_pte_bytes(sp.ladder(3), label="p.pte").view
    assert _Linter(rules, view, decisions_only=True).full
    assert not _Linter(select_rules(), view, decisions_only=True).full
    _same(sp.ladder(12), rules)
