"""Fixing what a check loaded: one program (`xferlint fix`) or every program of a run
(`check --fix` / `--diff`), each with the code that owns its native form."""

from __future__ import annotations

from typing import Sequence

from xferlint.analyzer.view import ProgramView
from xferlint.errors import FixError, UsageError
from xferlint.frontends import LoadedProgram
from xferlint.frontends.entrypoints import expand
from xferlint.pipeline import CheckRun, load_entry
from xferlint.rules.base import Rule


def fix_loaded(loaded: LoadedProgram, rules: Sequence[Rule], *, unsafe_fixes: bool = False, strict: bool = False):
    """Fix a program a frontend loaded. Raises FixError when it cannot be fixed at all."""
    view = loaded.view
    origin = ProgramView(input=view.input, name=view.name, kind=view.kind, file=view.file)
    if view.kind == "pte":
        from xferlint.fixes.pte import fix_pte

        return fix_pte(loaded, rules, origin, unsafe_fixes=unsafe_fixes, strict=strict)
    if loaded.native is None:
        raise FixError(f"{view.input}: a hand-built ProgramView has no program behind it to fix")
    from xferlint.fixes import fix_native

    return fix_native(loaded.native, rules, origin, unsafe_fixes=unsafe_fixes, strict=strict)


def fix_input(spec: str, rules: Sequence[Rule], *, unsafe_fixes: bool = False, strict: bool = False):
    """Load the one program `spec` names and fix it (what `xferlint fix` runs)."""
    entries = expand(spec)
    if len(entries) != 1:
        raise UsageError(f"{spec}: names {len(entries)} inputs; `xferlint fix` writes one program, name one of them")
    loaded = load_entry(entries[0], strict)
    if len(loaded) != 1:
        names = ", ".join(p.view.name for p in loaded)
        raise UsageError(f"{spec}: holds {len(loaded)} programs ({names}); `xferlint fix` writes one, so point at "
                         "an attribute that holds just one (file.py:NAME)")
    return fix_loaded(loaded[0], rules, unsafe_fixes=unsafe_fixes, strict=strict)


def fix_run(run: CheckRun, rules: Sequence[Rule], *, unsafe_fixes: bool = False, strict: bool = False):
    """Fix every program of a check run that has fixable findings (`check --fix/--diff`).

    Returns (results, notes): the FixResult of each program fixed, and one line per
    program that could not be fixed at all. The run's findings of a fixed program are
    replaced by those of the fixed program."""
    results, notes = [], []
    for loaded in run.loaded:
        view = loaded.view
        mine = [f for f in run.findings if f.input == view.input and f.program == view.name]
        if not any(f.fixable for f in mine):
            continue
        try:
            result = fix_loaded(loaded, rules, unsafe_fixes=unsafe_fixes, strict=strict)
        except FixError as exc:
            notes.append(str(exc))
            continue
        results.append(result)
        replaced = {id(f) for f in mine}
        run.findings = [f for f in run.findings if id(f) not in replaced] + list(result.remaining)
    return results, notes
