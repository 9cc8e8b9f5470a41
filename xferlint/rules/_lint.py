"""Lint one method with a set of rules, remembering the last few results.

A check lints every method once; deciding which findings a fix will really remove lints
the same method again (its findings, the fix plans, the verification, what remains). A
view is immutable and the rules are not reconfigured in between, so the result is reused:
the key is the program, the method and the rules with their options (`Rule.options`), and
an entry holds them, so an id is never mistaken for another object's. `remember` puts a
result computed earlier back in front (the check keeps each program's until its fix
trial, which comes after every input is checked).
"""

from __future__ import annotations

from typing import Sequence

from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.view import MethodView, ProgramView
from xferlint.findings import Finding
from xferlint.rules.base import Rule, RuleContext

_KEPT = 8
_LINTS: dict[tuple, tuple] = {}  # key -> (program, method, rules, ctx, findings), oldest first


def _key(program: ProgramView, method: MethodView, rules: Sequence[Rule]) -> tuple:
    options = tuple((id(r), tuple(getattr(r, k, None) for k in getattr(r, "options", ()))) for r in rules)
    return id(program), id(method), options


def remember(program: ProgramView, method: MethodView, rules: Sequence[Rule], ctx: RuleContext,
             findings: list[Finding]) -> None:
    """Record that `rules` on `method` gave `findings` (suppressed ones included) with `ctx`."""
    key = _key(program, method, rules)
    _LINTS.pop(key, None)
    while len(_LINTS) >= _KEPT:
        del _LINTS[next(iter(_LINTS))]
    _LINTS[key] = (program, method, list(rules), ctx, list(findings))


def lint_method(program: ProgramView, method: MethodView, rules: Sequence[Rule]) -> tuple[RuleContext, list[Finding]]:
    """The rule context of `method` and every rule's findings on it (suppressed ones too)."""
    hit = _LINTS.get(_key(program, method, rules))
    if hit is not None and hit[0] is program and hit[1] is method and hit[2] == list(rules):
        return hit[3], list(hit[4])
    ctx = RuleContext(program=program, method=method, facts=DeviceFacts.compute(method))
    findings = [f for rule in rules for f in rule.check(ctx)]
    remember(program, method, rules, ctx, findings)
    return ctx, findings


def facts_of(method: MethodView) -> DeviceFacts:
    """The method's DeviceFacts: those of a remembered lint, else computed."""
    for entry in reversed(_LINTS.values()):
        if entry[1] is method:
            return entry[3].facts
    return DeviceFacts.compute(method)
