"""Lint one method with a set of rules, remembering the last few results.

A check lints every method once; deciding which findings a fix will really remove lints
the same method again (its findings, the fix plans, the verification, what remains). A
view is immutable and the rules are not reconfigured in between, so the result is reused:
the key is the program with the rules and their options (`Rule.options`), then the method,
and an entry holds them, so an id is never mistaken for another object's. Every method of
the last few programs is kept (a fix trial goes over all of a program's methods per round). `remember` puts a
result computed earlier back in front (the check keeps each program's until its fix
trial, which comes after every input is checked).
"""

from __future__ import annotations

from typing import Optional, Sequence

from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.view import MethodView, ProgramView
from xferlint.findings import Finding
from xferlint.rules.base import Rule, RuleContext
from xferlint.run_caches import run_cache

_KEPT = 8  # programs: a fix trial lints every method of one program several times over
# (program, rules) key -> (program, rules, {id(method): entry}), oldest first; for one command
_LINTS: dict[tuple, tuple] = run_cache()


def _key(program: ProgramView, rules: Sequence[Rule]) -> tuple:
    options = tuple((id(r), tuple(getattr(r, k, None) for k in getattr(r, "options", ()))) for r in rules)
    return id(program), options


def _methods(program: ProgramView, rules: Sequence[Rule]) -> dict[int, tuple]:
    """The remembered lints of `program` under `rules` (id(method) -> (method, ctx,
    findings)), moved to the front of the program LRU."""
    key = _key(program, rules)
    hit = _LINTS.pop(key, None)
    if hit is None or hit[0] is not program or hit[1] != list(rules):
        hit = (program, list(rules), {})
    while len(_LINTS) >= _KEPT:
        del _LINTS[next(iter(_LINTS))]
    _LINTS[key] = hit
    return hit[2]


def remember(program: ProgramView, method: MethodView, rules: Sequence[Rule], ctx: RuleContext,
             findings: list[Finding]) -> None:
    """Record that `rules` on `method` gave `findings` (suppressed ones included) with `ctx`."""
    _methods(program, rules)[id(method)] = (method, ctx, list(findings))


def lint_method(program: ProgramView, method: MethodView, rules: Sequence[Rule],
                kept: Optional[dict[int, tuple]] = None) -> tuple[RuleContext, list[Finding]]:
    """The rule context of `method` and every rule's findings on it (suppressed ones too).
    `kept`: where to remember it (id(method) -> entry) instead of the process-wide cache."""
    if kept is None:
        kept = _methods(program, rules)
    hit = kept.get(id(method))
    if hit is not None and hit[0] is method:
        return hit[1], list(hit[2])
    ctx = RuleContext(program=program, method=method, facts=DeviceFacts.compute(method))
    findings = [f for rule in rules for f in rule.check(ctx)]
    kept[id(method)] = (method, ctx, list(findings))
    return ctx, findings


def facts_of(method: MethodView) -> DeviceFacts:
    """The method's DeviceFacts: those of a remembered lint, else computed."""
    for entry in reversed(_LINTS.values()):
        hit = entry[2].get(id(method))
        if hit is not None and hit[0] is method:
            return hit[1].facts
    return DeviceFacts.compute(method)
