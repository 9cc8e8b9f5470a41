"""The check pipeline: load -> analyze -> rules, for one input or many.

    input --frontend--> ProgramView --analyzer--> DeviceFacts --rules--> [Finding]

The Python API (`api.py`), the CLI, the fixes and worker processes all run programs
through this module; it imports only the stages below it (frontends, analyzer, rules,
report), never the API or the CLI.
"""

from __future__ import annotations

import gc
from dataclasses import field, replace
from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence

from xferlint.analyzer.facts import DeviceFacts
from xferlint.analyzer.summary import MethodTransfers, method_transfers, named_copy_bytes, resummarized
from xferlint.analyzer.view import ProgramView
from xferlint.collector import collector_paused
from xferlint.errors import InputError, UnmodelledOpError, XferlintError
from xferlint.findings import Finding, InputErrorEntry
from xferlint.frontends import LoadedProgram
from xferlint.frontends.bounded import message_line
from xferlint.frontends.discovery import Discovery
from xferlint.frontends.entrypoints import EntryPoint, ProgramObject, expand, first_of_each, load_entry_point
from xferlint.records import dataclass
from xferlint.report import Report, build_report
from xferlint.rules._lint import lint_method
from xferlint.rules.base import Rule
from xferlint.suppression_record import Record

if TYPE_CHECKING:  # only the html and model-explorer formats draw timelines
    from xferlint.analyzer.timeline import MethodTimeline


def analyze(view: ProgramView, rules: Sequence[Rule], transfers: Optional[list[MethodTransfers]] = None,
            timelines: Optional[list[MethodTimeline]] = None, record: Optional[Record] = None,
            lints: Optional[list[tuple]] = None, sizes: Optional[dict] = None) -> list[Finding]:
    """Run the analysis and every rule over every method of a program; with `transfers`,
    also append each method's transfer summary to it, with `timelines` its device timeline
    (for the HTML and Model Explorer reporters). Findings a noqa comment suppresses are
    left out; `record` (one per run) keeps them and the program's source files, for SARIF
    and XF100 (`comment_findings`). With `lints`, also each method's lint (program,
    method, rules, context, findings) when it has a fixable finding, for the fix trial
    that decides which are (`rules._lint.remember`). With `sizes` (and `transfers`), also
    the bytes of the copies each method's findings name (`CheckRun.copy_sizes`)."""
    with collector_paused():
        return _analyze(view, rules, transfers, timelines, record, lints, sizes)


def _analyze(view: ProgramView, rules: Sequence[Rule], transfers: Optional[list[MethodTransfers]],
             timelines: Optional[list[MethodTimeline]] = None, record: Optional[Record] = None,
             lints: Optional[list[tuple]] = None, sizes: Optional[dict] = None) -> list[Finding]:
    findings: list[Finding] = []
    if record is None:
        record = Record()
    elif record.tracks_sources:
        record.add_program(view)
    for method in view.methods:
        ctx, mine = lint_method(view, method, rules)
        if lints is not None and any(f.fixable for f in mine):
            lints.append((view, method, rules, ctx, list(mine)))
        mine = record.split(mine)  # `# xferlint: noqa: XF006` on the finding's line
        findings.extend(mine)
        if transfers is not None:
            transfers.append(method_transfers(view.input, view.name, method, ctx.facts, mine))
            if sizes is not None and mine:
                sizes[view.input, view.name, method.name] = named_copy_bytes(ctx.facts, mine)
        if timelines is not None:
            from xferlint.analyzer.timeline import method_timeline

            timelines.append(method_timeline(view.input, view.name, view.kind, method, ctx.facts))
    return findings


def _by_method(findings: Iterable[Finding]) -> dict[str, list[Finding]]:
    """Findings by method name (each method's transfers read only its own: a scan of the
    program's findings per method was quadratic in methods)."""
    out: dict[str, list[Finding]] = {}
    for f in findings:
        out.setdefault(f.method, []).append(f)
    return out


def new_record(rules: Sequence[Rule], project_root: Optional[str] = None) -> Record:
    """The suppression record of a run with `rules`; comments outside `project_root` (when
    given) are not honoured."""
    enabled = frozenset(rule.code for rule in rules)
    tracks = any(type(rule).check_suppressions is not Rule.check_suppressions for rule in rules)
    return Record(root=project_root, enabled=enabled, tracks_sources=tracks)


def comment_findings(record: Record, rules: Sequence[Rule]) -> list[Finding]:
    """The findings about the suppression comments of a whole run (XF100), once every
    program was analysed."""
    return [f for rule in rules for f in rule.check_suppressions(record)]


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
        view = program.obj
        if view.file is None and program.file is not None:
            # a view built by hand in an entry point is that file's program: its findings point
            # there (SARIF's physical location) and per-file-ignores on the file apply to them
            view = replace(view, file=program.file)
        return LoadedProgram(view=view, native=None)
    from xferlint.frontends.executorch import load_graph_program

    with collector_paused():
        return load_graph_program(program.obj, input=program.label, name=program.name, file=program.file,
                                  strict=strict)


def load_pte(entry: EntryPoint, strict: bool = False, source_map: Optional[dict] = None) -> LoadedProgram:
    from xferlint.frontends.pte.view import load_pte_file  # the torch-free frontend

    with collector_paused():
        return load_pte_file(entry.file, label=entry.label, strict=strict, source_map=source_map)


def load_pt2(entry: EntryPoint, strict: bool = False) -> LoadedProgram:
    from xferlint.frontends.pt2.view import load_pt2_file  # the torch-free frontend

    with collector_paused():
        return load_pt2_file(entry.file, label=entry.label, strict=strict)


def load_entry(entry: EntryPoint, strict: bool = False, source_map: Optional[dict] = None) -> list[LoadedProgram]:
    """Every program one expanded input holds (a `.pte` or `.pt2` file holds one)."""
    if entry.is_pte:
        return [load_pte(entry, strict, source_map)]
    if entry.is_pt2:
        return [load_pt2(entry, strict)]
    return [load_program(p, strict) for p in load_entry_point(entry)]


@dataclass
class CheckRun:
    """What a check over many inputs produced: findings, per-input errors, loaded programs."""

    findings: list[Finding] = field(default_factory=list)
    errors: list[InputErrorEntry] = field(default_factory=list)
    loaded: list[LoadedProgram] = field(default_factory=list)
    inputs: int = 0
    transfers: list[MethodTransfers] = field(default_factory=list)
    # Per-method device timelines, collected only when a reporter needs them (`timelines=True`).
    timelines: Optional[list[MethodTimeline]] = None
    # What noqa comments suppressed (kept for SARIF), and the findings about the comments
    # themselves (XF100), which no program fix touches: `report()` adds them.
    record: Record = field(default_factory=Record)
    comment_findings: list[Finding] = field(default_factory=list)
    # The lints of the methods with fixable findings (see `analyze`), for the fix trial.
    lints: list[tuple] = field(default_factory=list, repr=False)
    # (input, program, method) -> the bytes of the copies its findings name, kept where a
    # program is checked in a worker and comes back without its methods (`analyze`): what
    # `replace_many` counts its transfers' flagged bytes and savings again with.
    copy_sizes: Optional[dict] = field(default=None, repr=False)
    # `findings_of`'s index: (the findings list it was made from, its length, the index)
    _by_program: Optional[tuple] = field(default=None, init=False, repr=False, compare=False)

    def findings_of(self, view: ProgramView) -> list[Finding]:
        """The findings of program `view`, in run order. Through an index of the findings by
        program, made once per state of `findings` (checks and fixes ask this of every one
        of thousands of programs); the run only ever replaces or extends that list."""
        cached = self._by_program
        findings = self.findings
        if cached is None or cached[0] is not findings or cached[1] != len(findings):
            index: dict[tuple[str, str], list[Finding]] = {}
            for f in findings:
                index.setdefault((f.input, f.program), []).append(f)
            cached = self._by_program = (findings, len(findings), index)
        return list(cached[2].get((view.input, view.name), ()))

    def replace_findings(self, view: ProgramView, findings: list[Finding], after: Optional[ProgramView] = None) -> None:
        """Put `findings` (and the transfer summary of `after`, default `view`) in place of
        what the run holds for program `view`, so every number agrees with them."""
        self.replace_many([(view, findings, after)])

    def replace_many(self, replacements: Sequence[tuple]) -> None:
        """`replace_findings(view, findings[, after])` for each tuple in turn, in one pass over
        the run (a check over thousands of files replaces the findings of many of them)."""
        keys = [(r[0].input, r[0].name) for r in replacements]
        if len(set(keys)) != len(keys):  # the same program twice: the calls depend on each other
            for replacement in replacements:
                self.replace_many([replacement])
            return
        replaced = set(keys)
        self.findings = [f for f in self.findings if (f.input, f.program) not in replaced] + [
            f for r in replacements for f in r[1]]
        known = {id(lint[1]): lint for lint in self.lints}  # facts the check computed already

        def facts(m):
            lint = known.get(id(m))
            return lint[3].facts if lint is not None and lint[1] is m else DeviceFacts.compute(m)

        before: dict[tuple[str, str], list[MethodTransfers]] = {}
        kept = []
        for t in self.transfers:
            if (t.input, t.program) in replaced:
                before.setdefault((t.input, t.program), []).append(t)
            else:
                kept.append(t)
        self.transfers = kept
        for view, findings, *after in replacements:
            by_method = _by_method(findings)
            shown = after[0] if after and after[0] is not None else view
            if not shown.methods:  # checked in a worker, which kept its methods: the same copies, fewer findings
                sizes = self.copy_sizes or {}
                self.transfers.extend(resummarized(t, sizes.get((t.input, t.program, t.method), {}),
                                                   by_method.get(t.method, ()))
                                      for t in before.get((view.input, view.name), ()))
                continue
            self.transfers.extend(method_transfers(view.input, view.name, m, facts(m), by_method.get(m.name, ()))
                                  for m in shown.methods)

    def report(self, suppressed: int = 0) -> Report:
        """The report of the run; `suppressed`: findings a baseline accepted, on top of
        those comments suppressed (the summary counts both)."""
        return build_report(self.findings + self.comment_findings, self.errors, self.inputs, len(self.loaded),
                            transfers=self.transfers, suppressed=len(self.record.suppressed) + suppressed)


def error_entry(label: str, exc: BaseException) -> InputErrorEntry:
    """The per-input error entry for an exception raised while loading or analysing `label`."""
    shown = label if label.strip() else repr(label)  # a blank argument, quoted: `'': ...`, not `: ...`
    if isinstance(exc, UnmodelledOpError):
        return InputErrorEntry(input=label, message=f"{shown}: {exc}", kind="unmodelled")
    if isinstance(exc, XferlintError):
        text = str(exc)
        return InputErrorEntry(input=label, message=text if text.startswith(shown) else f"{shown}: {text}", kind="input")
    first = message_line(str(exc))
    return InputErrorEntry(
        input=label,
        message=f"{shown}: internal error while analysing ({type(exc).__name__}: {first}); please report it",
        kind="internal",
    )


def check_paths(paths: Iterable[str], rules: Sequence[Rule], strict: bool = False,
                source_map: Optional[dict] = None, discovery: Optional[Discovery] = None,
                timelines: bool = False, project_root: Optional[str] = None) -> CheckRun:
    """Lint every input; one that fails becomes an error entry and the rest go on.
    `source_map` (from `--etrecord`) locates the instructions of `.pte` inputs;
    `discovery` says what directories are searched for; with `timelines`, the run also
    keeps every method's device timeline (`run.timelines`); noqa comments in files outside
    `project_root` (when given) are not honoured."""
    run = CheckRun(timelines=[] if timelines else None, record=new_record(rules, project_root))
    collecting = gc.isenabled()
    seen: set = set()
    try:
        for spec in paths:
            try:
                entries = first_of_each(expand(spec, discovery), seen)
            except InputError as exc:
                run.inputs += 1
                run.errors.append(error_entry(spec, exc))
                continue
            for entry in entries:
                run.inputs += 1
                # Program files (.pte, .pt2) run no user code and make no reference cycles:
                # the collector stays paused from one to the next (re-enabled after each, it
                # would sweep the growing run again and again); user code runs with it on.
                if entry.is_program_file:
                    gc.disable()
                elif collecting:
                    gc.enable()
                check_entry(run, entry, rules, strict, source_map)
    finally:
        if collecting:
            gc.enable()
    run.comment_findings = comment_findings(run.record, rules)
    return run


def check_entry(run: CheckRun, entry: EntryPoint, rules: Sequence[Rule], strict: bool,
                source_map: Optional[dict] = None) -> None:
    """Load and lint one expanded input into `run`."""
    try:
        loaded_list = load_entry(entry, strict, source_map)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - becomes an error entry, never a traceback
        run.errors.append(error_entry(entry.label, exc))
        return
    for loaded in loaded_list:
        transfers: list[MethodTransfers] = []
        timelines: Optional[list[MethodTimeline]] = [] if run.timelines is not None else None
        try:
            findings = analyze(loaded.view, rules, transfers, timelines, run.record, run.lints, run.copy_sizes)
        except Exception as exc:  # noqa: BLE001
            run.errors.append(error_entry(loaded.view.input, exc))
            continue
        run.loaded.append(loaded)
        run.findings.extend(findings)
        run.transfers.extend(transfers)
        if timelines is not None and run.timelines is not None:
            run.timelines.extend(timelines)
