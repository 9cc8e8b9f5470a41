"""Fix a `.pt2`: XF001 / XF002 / XF003 / XF004 plans applied to its serialized graph.

The plans are the frontend-neutral ones (`xferlint.fixes.engine.plan_method`). Each is
checked against the model JSON (`graph.plan_problems`: its nodes are there, a rewired value
is the same tensor but for its device), the accepted ones are applied to a copy of the
JSON (`graph.apply_plans`), the archive is written anew with only `models/<name>.json`
changed (`archive.replace_member`), read back by the `.pt2` frontend and linted: the fixed
findings must be gone and nothing new of those rules (nor any error) may appear, else the
round is refused and the program kept as it was. Rounds repeat until nothing is left.

`.pt2` node names are the FX names, so they survive the edits: findings before and after
compare as they are. Everything here is torch-free.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.view import MethodView, ProgramView
from xferlint.errors import FixError
from xferlint.findings import Finding
from xferlint.fixes.engine import MAX_ROUNDS, check_fixed, plan_method
from xferlint.fixes.outcome import MethodOutcome, Skipped
from xferlint.fixes.pt2.archive import replace_member
from xferlint.fixes.pt2.graph import apply_plans, plan_problems
from xferlint.fixes.result import FixResult
from xferlint.frontends import LoadedProgram
from xferlint.frontends.pt2.view import Pt2Native, load_pt2_bytes
from xferlint.rules.base import Rule, RuleContext


def _lint(view: ProgramView, method: MethodView, rules: Sequence[Rule]) -> list[Finding]:
    ctx = RuleContext(program=view, method=method, facts=DeviceFacts.compute(method))
    return [f for rule in rules for f in rule.check(ctx)]


def _skip(outcome: MethodOutcome, exclude: set, plan, reason: str, unsafe: bool = False) -> None:
    outcome.skipped.append(Skipped(plan.code, plan.name, plan.method, tuple(plan.finding), reason, unsafe=unsafe))
    exclude.add(plan.key)


def _member(native: Pt2Native) -> str:
    archive = native.archive
    return f"{archive.root}/models/{archive.model_name}.json"


def _reload(loaded: LoadedProgram, data: bytes) -> LoadedProgram:
    view = loaded.view
    return load_pt2_bytes(data, label=view.input, path=view.file)


def _round(loaded: LoadedProgram, rules: Sequence[Rule], unsafe_fixes: bool, outcome: MethodOutcome,
           exclude: set) -> LoadedProgram | None:
    """One round on the (only) method; the fixed program, or None when nothing applied."""
    view, native = loaded.view, loaded.native
    method = view.methods[0]
    planning = plan_method(view, method, rules, unsafe_fixes, exclude=exclude)
    for no in planning.no_fix:
        _skip(outcome, exclude, no, no.reason)
    for plan in planning.unsafe:
        _skip(outcome, exclude, plan, "the fix is unsafe: " + plan.summary, unsafe=True)
    model = native.archive.model
    accepted = []
    for selected, plan, problem in zip(planning.selected, planning.plans,
                                       plan_problems(model, method, planning.plans)):
        if problem is not None:
            _skip(outcome, exclude, plan, problem)
            continue
        accepted.append(selected)
    if not accepted:
        return None
    plans = planning.resolve(accepted)
    try:
        fixed_model = apply_plans(model, method, plans)
        data = replace_member(native.data, _member(native), json.dumps(fixed_model).encode("utf-8"))
        fixed = _reload(loaded, data)
    except FixError:
        raise
    except Exception as exc:  # noqa: BLE001 - an edit that does not read back is a bug: keep the old program
        for plan in plans:
            _skip(outcome, exclude, plan, f"the fixed archive does not read back ({exc})")
        return None
    problem = check_fixed(fixed.view, fixed.view.methods[0], rules, planning, plans)
    if problem is not None:
        for plan in plans:
            _skip(outcome, exclude, plan, problem)
        return None
    outcome.applied.extend(plans)
    return fixed


def fix_pt2_loaded(loaded: Any, rules: Sequence[Rule], *, unsafe_fixes: bool = False) -> FixResult:
    """Fix a `.pt2` the frontend read (`load_pt2_bytes` / `load_pt2_file`); the result's
    `program` is the fixed archive's bytes (the input's when nothing could be fixed)."""
    native = loaded.native
    if not isinstance(native, Pt2Native):
        raise FixError(f"{loaded.view.input}: not a .pt2 program")
    view: ProgramView = loaded.view
    method = view.methods[0]
    outcome = MethodOutcome(method=method.name, before=method, after=method, findings=_lint(view, method, rules))
    exclude: set = set()
    current = loaded
    for _ in range(MAX_ROUNDS):
        fixed = _round(current, rules, unsafe_fixes, outcome, exclude)
        if fixed is None:
            break
        current = fixed
    final: ProgramView = current.view
    outcome.after = final.methods[0] if outcome.applied else method
    outcome.remaining = _lint(final, final.methods[0], rules)
    result = FixResult(view.input, current.native.data, methods=[outcome], remaining=list(outcome.remaining))
    return result
