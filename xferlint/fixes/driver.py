"""Fixing what a check loaded: one program (`xferlint fix`) or every program of a run
(`check --fix` / `--diff`), each with the code that owns its native form."""

from __future__ import annotations

from typing import Optional, Sequence

from xferlint.analyzer.view import ProgramView
from xferlint.errors import FixError, UsageError
from xferlint.frontends import Detached, LoadedProgram
from xferlint.frontends.entrypoints import expand
from xferlint.findings import Finding
from xferlint.frozen import Frozen
from xferlint.pipeline import CheckRun, collector_paused, load_entry
from xferlint.rules.base import Rule

# The planners and the fixers are imported when a program has something fixable: a check
# whose findings have no fix never loads them.

EXPORTED_NOT_FIXED = ("an ExportedProgram is fixed through its archive: torch.export.save it and run "
                      "`xferlint fix model.pt2 -o fixed.pt2`")
FILE_KINDS = frozenset({"pte", "pt2"})  # fixed by trying the fix: the re-read file decides


def fix_loaded(loaded: LoadedProgram, rules: Sequence[Rule], *, unsafe_fixes: bool = False, strict: bool = False,
               decisions_only: bool = False):
    """Fix a program a frontend loaded. Raises FixError when it cannot be fixed at all.
    `decisions_only`: only which fixes apply and why the others are refused are wanted
    (a `.pte` trial then lints less; see `xferlint.fixes.pte.fix.fix_pte_loaded`)."""
    view = loaded.view
    origin = ProgramView(input=view.input, name=view.name, kind=view.kind, file=view.file)
    if view.kind == "pt2":
        from xferlint.fixes.pt2 import fix_pt2

        return fix_pt2(loaded, rules, origin, unsafe_fixes=unsafe_fixes, strict=strict)
    if view.kind == "pte":
        from xferlint.fixes.pte import fix_pte

        return fix_pte(loaded, rules, origin, unsafe_fixes=unsafe_fixes, strict=strict, decisions_only=decisions_only)
    if isinstance(loaded.native, Detached):  # loaded (and fixed) in a worker process
        return loaded.native.fixed(view.input)
    if loaded.native is None:
        raise FixError(f"{view.input}: a hand-built ProgramView has no program behind it to fix")
    from xferlint.fixes import fix_native

    return fix_native(loaded.native, rules, origin, unsafe_fixes=unsafe_fixes, strict=strict)


def _is_exported_program(native) -> bool:
    if isinstance(native, Detached):  # loaded in a worker process: its class names came back
        return "ExportedProgram" in native.classes
    return any(c.__name__ == "ExportedProgram" for c in type(native).__mro__)


def fix_input(spec: str, rules: Sequence[Rule], *, unsafe_fixes: bool = False, strict: bool = False):
    """Load the one program `spec` names and fix it (what `xferlint fix` runs)."""
    entries = expand(spec)
    if len(entries) != 1:
        raise UsageError(f"{spec}: names {len(entries)} inputs; `xferlint fix` writes one program, name one of them")
    loaded = load_entry(entries[0], strict)
    if len(loaded) != 1:
        names = ", ".join(p.view.input for p in loaded)  # each a valid input: `model.py:program[edge]`
        raise UsageError(f"{spec}: holds {len(loaded)} programs ({names}); `xferlint fix` writes one, so name "
                         "one of them")
    return fix_loaded(loaded[0], rules, unsafe_fixes=unsafe_fixes, strict=strict)


def _refusals(result) -> dict[tuple, str]:
    """Finding key -> why its fix was not applied (fixes that only want --unsafe-fixes are
    not refused: they stay fixable, as unsafe, when `_unsafe_refusals` does not refuse them)."""
    return {(s.code, s.method, s.nodes): s.reason for s in result.skipped if not s.unsafe}


def _unsafe_refusals(loaded: LoadedProgram, rules: Sequence[Rule], strict: bool, result) -> dict[tuple, str]:
    """Finding key -> why `xferlint fix --unsafe-fixes` would not apply it, for the fixes
    a trial without unsafe fixes (`result`) left because they are unsafe: a file's fix is
    marked fixable only where a trial applied it, unsafe or not. An empty dict when
    `result` left none (no second trial)."""
    unsafe = {(s.code, s.method, s.nodes) for s in result.skipped if s.unsafe}
    if not unsafe:
        return {}
    try:
        refused = _refusals(fix_loaded(loaded, rules, unsafe_fixes=True, strict=strict, decisions_only=True))
    except FixError as exc:  # the safe fixes stand: the trial that decided them went through
        return {key: str(exc) for key in unsafe}
    return {key: reason for key, reason in refused.items() if key in unsafe}


def _planned_refusals(view: ProgramView, rules: Sequence[Rule], unsafe_fixes: bool) -> dict[tuple, str]:
    """The refusals planning alone decides (torch-free): what no planner can fix here."""
    from xferlint.fixes.engine import plan_method

    refused: dict[tuple, str] = {}
    for method in view.methods:
        for no in plan_method(view, method, rules, unsafe_fixes).no_fix:
            refused[no.key] = no.reason
    return refused


def _mark_refused(findings: list[Finding], refused: dict[tuple, str]) -> list[Finding]:
    from xferlint.fixes.plan import finding_key

    out = []
    for f in findings:
        reason = refused.get(finding_key(f)) if f.fixable else None
        out.append(f if reason is None else _unfixable(f, reason))
    return out


_FINDINGS = Frozen(Finding)


def _unfixable(finding: Finding, reason: str) -> Finding:
    """`replace(finding, fixable=False, fix_applicability=None, saves_bytes=None,
    fix_refused=reason)`, built as `xferlint.frozen` builds a slotted instance: replace()
    gathers every field by keyword for the frozen `__init__`, and a large `.pte` has tens of
    thousands of refused findings."""
    return _FINDINGS.like(finding, fixable=False, fix_applicability=None, saves_bytes=None, fix_refused=reason)


def settle_fixability(run: CheckRun, rules: Sequence[Rule], *, unsafe_fixes: bool = False,
                      strict: bool = False, keep_results: bool = True) -> dict[int, object]:
    """Mark fixable only what a fix will remove: a `.pte` or `.pt2` fix is tried (the
    re-read file decides; for a `.pte` also the memory-plan proof), a graph program's fixes
    are planned; a refused finding loses `[*]` and carries `fix_refused`. Returns the
    files' FixResults by id(loaded), for reuse; with `keep_results=False` (nothing will
    reuse them: a plain `check`) none, and a `.pte` trial only decides."""
    tried: dict[int, object] = {}
    lints: dict[int, list[tuple]] = {}
    for lint in run.lints:
        lints.setdefault(id(lint[0]), []).append(lint)
    keys = [(loaded.view.input, loaded.view.name) for loaded in run.loaded]
    if len(set(keys)) != len(keys):  # an input named twice: each replacement sees the one before
        for loaded in run.loaded:
            mine = run.findings_of(loaded.view)
            refused = _refused(loaded, mine, rules, unsafe_fixes, strict, tried, lints, keep_results)
            if refused:
                run.replace_findings(loaded.view, _mark_refused(mine, refused))
        return tried
    replacements = []
    with collector_paused():  # fix trials and plans: no user code, no reference cycles
        for loaded in run.loaded:
            mine = run.findings_of(loaded.view)
            refused = _refused(loaded, mine, rules, unsafe_fixes, strict, tried, lints, keep_results)
            if refused:
                replacements.append((loaded.view, _mark_refused(mine, refused)))
        run.replace_many(replacements)
    return tried


def _refused(loaded: LoadedProgram, mine: list[Finding], rules: Sequence[Rule], unsafe_fixes: bool, strict: bool,
             tried: dict[int, object], run_lints: dict[int, list[tuple]], keep: bool = True) -> dict[tuple, str]:
    """Finding key -> why its fix is refused, for one program whose findings are `mine`;
    its FixResult goes into `tried` when `keep`."""
    view = loaded.view
    if not any(f.fixable for f in mine) or (isinstance(loaded.native, Detached) and loaded.native.settled):
        return {}  # nothing to decide, or decided already where a worker checked it
    from xferlint.fixes.plan import finding_key
    from xferlint.rules._lint import remember

    for lint in run_lints.get(id(view), ()):  # the check's own lint of each method: not again
        if lint[0] is view:
            remember(*lint)

    try:
        if view.kind in FILE_KINDS:
            result = fix_loaded(loaded, rules, unsafe_fixes=unsafe_fixes, strict=strict, decisions_only=not keep)
            if keep:
                tried[id(loaded)] = result
            refused = _refusals(result)
            if not unsafe_fixes:
                refused.update(_unsafe_refusals(loaded, rules, strict, result))
            return refused
        if _is_exported_program(loaded.native):
            return {finding_key(f): EXPORTED_NOT_FIXED for f in mine}
        if loaded.native is None:
            return {finding_key(f): "a hand-built ProgramView has no program behind it to fix" for f in mine}
        return _planned_refusals(view, rules, unsafe_fixes)
    except FixError as exc:
        return {finding_key(f): str(exc) for f in mine}


def fix_run(run: CheckRun, rules: Sequence[Rule], *, unsafe_fixes: bool = False, strict: bool = False,
            tried: Optional[dict] = None, kinds: Optional[set] = None):
    """Fix every program of a check run that has fixable findings (`check --fix/--diff`),
    only those of `kinds` (view kinds: "pte", "pt2", "graph") when given.

    Returns (fixed, notes): (loaded, FixResult) of each program a fix was tried on, and one
    line per program that could not be fixed at all. `tried`: results `settle_fixability`
    already computed. The run is not changed: `adoption` says what puts a fixed program in its place."""
    fixed, notes = [], []
    tried = tried or {}
    for loaded in run.loaded:
        view = loaded.view
        if kinds is not None and view.kind not in kinds:
            continue
        if not any(f.fixable for f in run.findings_of(view)) and id(loaded) not in tried:
            continue
        try:
            result = tried.get(id(loaded)) or fix_loaded(loaded, rules, unsafe_fixes=unsafe_fixes, strict=strict)
        except FixError as exc:
            notes.append(str(exc))
            continue
        fixed.append((loaded, result))
    return fixed, notes


def adoption(loaded: LoadedProgram, result) -> tuple:
    """What reports the fixed program in place of `loaded`, for `CheckRun.replace_many`:
    (its view, its findings (a fix that was refused marked so), the fixed program's view,
    whose transfer summary is shown). A run that fixed thousands of files replaces them in
    one pass."""
    view = loaded.view
    after = ProgramView(input=view.input, name=view.name, kind=view.kind, file=view.file,
                        methods=tuple(m.after for m in result.methods)) if result.methods else view
    return view, _mark_refused(list(result.remaining), _refusals(result)), after
