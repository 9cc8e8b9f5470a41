"""The Python entry points and the check pipeline the CLI drives.

    input --frontend--> ProgramView --analyzer--> DeviceFacts --rules--> [Finding]
"""

from __future__ import annotations

import contextlib
import gc
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Optional, Sequence

from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.summary import MethodTransfers, method_transfers
from xferlint.analyzer.view import ProgramView
from xferlint.errors import InputError, UnmodelledOpError, XferlintError
from xferlint.findings import Finding, InputErrorEntry
from xferlint.frontends import LoadedProgram
from xferlint.frontends.entrypoints import EntryPoint, ProgramObject, expand, load_entry_point, resolve
from xferlint.report import Report, build_report
from xferlint.rules.base import Rule, RuleContext
from xferlint.selection import select_rules

_PROGRAM_TYPES = {"ExportedProgram", "EdgeProgramManager", "ExecutorchProgramManager"}


def is_program_object(obj: Any) -> bool:
    """True for the objects a frontend can read (without importing torch to find out)."""
    if isinstance(obj, ProgramView):
        return True
    return any(c.__name__ in _PROGRAM_TYPES for c in type(obj).__mro__)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the analysis.

    The view, the facts and the findings hold no reference cycles, so reference counting
    frees them; the collector would only sweep the ever larger heap again and again
    (about 45 % of a whole check on 10k-100k node programs, benchmarks/RESULTS.md).
    The caller's setting is restored afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def analyze(view: ProgramView, rules: Sequence[Rule], transfers: Optional[list[MethodTransfers]] = None) -> list[Finding]:
    """Run the analysis and every rule over every method of a program; with `transfers`,
    also append each method's transfer summary to it."""
    with _collector_paused():
        return _analyze(view, rules, transfers)


def _analyze(view: ProgramView, rules: Sequence[Rule], transfers: Optional[list[MethodTransfers]]) -> list[Finding]:
    findings: list[Finding] = []
    for method in view.methods:
        ctx = RuleContext(program=view, method=method, facts=DeviceFacts.compute(method))
        mine: list[Finding] = []
        for rule in rules:
            mine.extend(rule.check(ctx))
        findings.extend(mine)
        if transfers is not None:
            transfers.append(method_transfers(view.input, view.name, method, ctx.facts, mine))
    return findings


def configure(rules: Sequence[Rule], **options: Any) -> Sequence[Rule]:
    """Hand settings to the rules that declare them (`Rule.options`, e.g. XF009's
    `max_transfer_bytes`); options that are None are left at the rule's default."""
    for rule in rules:
        for key in getattr(rule, "options", ()):
            if options.get(key) is not None:
                setattr(rule, key, options[key])
    return rules


def load_program(program: ProgramObject, strict: bool = False) -> LoadedProgram:
    """Read a program object into a view with the frontend that owns its kind."""
    if isinstance(program.obj, ProgramView):
        return LoadedProgram(view=program.obj, native=None)
    from xferlint.frontends.executorch import load_graph_program

    with _collector_paused():
        return load_graph_program(program.obj, input=program.label, name=program.name, file=program.file,
                                  strict=strict)


def load_pte(entry: EntryPoint, strict: bool = False, source_map: Optional[dict] = None) -> LoadedProgram:
    from xferlint.frontends.pte import load_pte_file  # the torch-free frontend

    with _collector_paused():
        return load_pte_file(entry.file, label=entry.label, strict=strict, source_map=source_map)


@dataclass
class CheckRun:
    """What a check over many inputs produced: findings, per-input errors, loaded programs."""

    findings: list[Finding] = field(default_factory=list)
    errors: list[InputErrorEntry] = field(default_factory=list)
    loaded: list[LoadedProgram] = field(default_factory=list)
    inputs: int = 0
    transfers: list[MethodTransfers] = field(default_factory=list)

    def report(self) -> Report:
        return build_report(self.findings, self.errors, self.inputs, len(self.loaded), transfers=self.transfers)


def _error(label: str, exc: BaseException) -> InputErrorEntry:
    if isinstance(exc, UnmodelledOpError):
        return InputErrorEntry(input=label, message=f"{label}: {exc}", kind="unmodelled")
    if isinstance(exc, XferlintError):
        text = str(exc)
        return InputErrorEntry(input=label, message=text if text.startswith(label) else f"{label}: {text}", kind="input")
    first = (str(exc).strip().splitlines() or [""])[0]
    return InputErrorEntry(
        input=label,
        message=f"{label}: internal error while analysing ({type(exc).__name__}: {first}); please report it",
        kind="internal",
    )


def check_paths(paths: Iterable[str], rules: Sequence[Rule], strict: bool = False,
                source_map: Optional[dict] = None) -> CheckRun:
    """Lint every input; one that fails becomes an error entry and the rest go on.
    `source_map` (from `--etrecord`) locates the instructions of `.pte` inputs."""
    run = CheckRun()
    for spec in paths:
        try:
            entries = expand(spec)
        except InputError as exc:
            run.inputs += 1
            run.errors.append(_error(spec, exc))
            continue
        for entry in entries:
            run.inputs += 1
            _check_entry(run, entry, rules, strict, source_map)
    return run


def _check_entry(run: CheckRun, entry: EntryPoint, rules: Sequence[Rule], strict: bool,
                 source_map: Optional[dict] = None) -> None:
    try:
        if entry.is_pte:
            loaded_list = [load_pte(entry, strict, source_map)]
        else:
            loaded_list = [load_program(p, strict) for p in load_entry_point(entry)]
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - becomes an error entry, never a traceback
        run.errors.append(_error(entry.label, exc))
        return
    for loaded in loaded_list:
        transfers: list[MethodTransfers] = []
        try:
            findings = analyze(loaded.view, rules, transfers)
        except Exception as exc:  # noqa: BLE001
            run.errors.append(_error(loaded.view.input, exc))
            continue
        run.loaded.append(loaded)
        run.findings.extend(findings)
        run.transfers.extend(transfers)


def lint(
    obj: Any,
    *,
    name: str = "program",
    select: Optional[Iterable[str]] = None,
    ignore: Optional[Iterable[str]] = None,
    strict: bool = False,
    max_transfer_bytes: Optional[int] = None,
) -> list[Finding]:
    """Lint a program object in-process and return its findings, sorted.

    `obj` is an ExportedProgram, EdgeProgramManager, ExecutorchProgramManager, a dict of
    them by name, a zero-argument callable returning one, or a ProgramView. Errors raise
    (an XferlintError subclass) instead of becoming entries. `max_transfer_bytes` is the
    per-call budget of every method (XF009).
    """
    return lint_report(obj, name=name, select=select, ignore=ignore, strict=strict,
                       max_transfer_bytes=max_transfer_bytes).findings


def lint_report(
    obj: Any,
    *,
    name: str = "program",
    select: Optional[Iterable[str]] = None,
    ignore: Optional[Iterable[str]] = None,
    strict: bool = False,
    max_transfer_bytes: Optional[int] = None,
) -> Report:
    """Like `lint`, but the whole Report: findings and the summary, with the transfer
    summary (`report.summary.transfers`) of every method."""
    rules = configure(select_rules(select=select, ignore=ignore), max_transfer_bytes=max_transfer_bytes)
    entry = EntryPoint(label=name, attr=name)
    findings: list[Finding] = []
    transfers: list[MethodTransfers] = []
    programs = resolve(obj, entry, name)
    for program in programs:
        findings.extend(analyze(load_program(program, strict).view, rules, transfers))
    return build_report(findings, [], 1, len(programs), transfers=transfers)


def fix(
    obj: Any,
    *,
    name: str = "program",
    select: Optional[Iterable[str]] = None,
    ignore: Optional[Iterable[str]] = None,
    unsafe_fixes: bool = False,
    config: Any = None,
    strict: bool = False,
):
    """Fix an EdgeProgramManager or ExecutorchProgramManager; see `xferlint.fixes.fix`."""
    from xferlint.fixes import fix as _fix

    return _fix(obj, name=name, select=select, ignore=ignore, unsafe_fixes=unsafe_fixes, config=config,
                strict=strict)


def fix_loaded(loaded: LoadedProgram, rules: Sequence[Rule], *, unsafe_fixes: bool = False, strict: bool = False):
    """Fix a program a frontend loaded (what `xferlint fix` and `check --fix` run), with
    the code that owns its native form. Raises FixError when it cannot be fixed at all."""
    from xferlint.errors import FixError

    view = loaded.view
    origin = ProgramView(input=view.input, name=view.name, kind=view.kind, file=view.file)
    if view.kind == "pte":
        try:
            from xferlint.fixes.pte import fix_pte  # provided with the .pte fixes
        except ImportError:
            raise FixError(f"{view.input}: fixing a .pte file is not supported yet; fix the program before it is "
                           "written (`xferlint fix model.py:program -o model.pte`)") from None
        return fix_pte(loaded, rules, origin, unsafe_fixes=unsafe_fixes, strict=strict)
    if loaded.native is None:
        raise FixError(f"{view.input}: a hand-built ProgramView has no program behind it to fix")
    from xferlint.fixes import fix_native

    return fix_native(loaded.native, rules, origin, unsafe_fixes=unsafe_fixes, strict=strict)


def fix_input(spec: str, rules: Sequence[Rule], *, unsafe_fixes: bool = False, strict: bool = False):
    """Load the one program `spec` names and fix it (what `xferlint fix` runs)."""
    from xferlint.errors import UsageError

    entries = expand(spec)
    if len(entries) != 1:
        raise UsageError(f"{spec}: names {len(entries)} inputs; `xferlint fix` writes one program, name one of them")
    entry = entries[0]
    loaded = [load_pte(entry, strict)] if entry.is_pte else [load_program(p, strict) for p in load_entry_point(entry)]
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
    from xferlint.errors import FixError

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
