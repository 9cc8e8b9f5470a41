"""`xferlint check` and `xferlint fix` with entry points run in worker processes.

    inputs --expand--> slots (in input order)
      .pte / .pt2      -> pipeline.check_entry here (torch-free, fast)
      Python entry pt  -> a forked worker: load (user code) -> analyze -> rules
                          -> Partial (views, findings, transfers, timelines: plain data)
    slots --merge in input order--> CheckRun (as pipeline.check_paths builds it)

torch and ExecuTorch are imported here once, and only when some input is an entry point,
so every worker starts warm. A worker's native program (the ExecutorchProgramManager)
stays in it: the run holds its view with a `Detached` native. Planning fixes (the `[*]`
marks) needs only the view; `check --diff` needs the fixes themselves, so with
`fix=FixOptions(...)` the worker also tries them and sends the FixResult back without its
program. `xferlint fix` on an entry point lowers and fixes in one worker and gets the
emitted bytes back.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence, Union

from xferlint.errors import FixError, InputError, InterruptedInput, XferlintError
from xferlint.findings import InputErrorEntry
from xferlint.frontends import Detached, LoadedProgram
from xferlint.frontends.discovery import Discovery
from xferlint.frontends.entrypoints import EntryPoint, expand, first_of_each, stdout_to_stderr
from xferlint.pipeline import CheckRun, check_entry, collector_paused, comment_findings, error_entry, new_record
from xferlint.progress import Progress
from xferlint.records import dataclass
from xferlint.rules.base import Rule
from xferlint.suppression_record import Record
from xferlint.workers.files import Claims, SettleOptions, Tally, check_file, claim_task, warm_up, workers_for

if TYPE_CHECKING:
    from xferlint.workers.cache import ResultCache
    from xferlint.workers.payloads import Partial
    from xferlint.workers.pool import Done, Failed

PRELOAD = ("torch", "executorch.exir", "xferlint.frontends.executorch")


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def timed_out(label: str, seconds: float) -> str:
    return f"{label}: entry point did not finish within {seconds:g} s"


@dataclass(frozen=True, slots=True)
class FixOptions:
    """Try the fixes in the worker too (`check --diff`)."""

    unsafe_fixes: bool = False


def preload(extra: Sequence[str] = ()) -> None:
    """Import torch and ExecuTorch once, here, so that forked workers start with them.
    A failure is left to each worker to report against its input."""
    with stdout_to_stderr():
        for name in PRELOAD + tuple(extra):
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - ImportError and whatever an import raises
                return


def check_paths(paths: Iterable[str], rules: Sequence[Rule], *, strict: bool = False,
                source_map: Optional[dict] = None, discovery: Optional[Discovery] = None, timelines: bool = False,
                jobs: Optional[int] = None, timeout: Optional[float] = None, quiet: bool = False,
                fix: Optional[FixOptions] = None, project_root: Optional[str] = None,
                settle: Optional[SettleOptions] = None, cache: Optional[ResultCache] = None) -> CheckRun:
    """pipeline.check_paths with every Python entry point in a worker, `jobs` at a time,
    each within `timeout` seconds; progress on stderr when it is a terminal (not `quiet`).
    With `settle` (a plain check), program files too are checked in `jobs` workers and
    their fixability settled there (xferlint.workers.files), and with `cache` too a file
    checked before, unchanged, is read back from it (xferlint.workers.cache). Each input
    keeps its own suppression record, merged in input order."""
    template = new_record(rules, project_root)
    slots: list[Union[InputErrorEntry, EntryPoint]] = []
    seen: set = set()
    for spec in paths:
        try:
            slots.extend(first_of_each(expand(spec, discovery), seen))
        except InputError as exc:
            slots.append(error_entry(spec, exc))
    parts: list[Optional[CheckRun]] = [None] * len(slots)
    remote = [i for i, s in enumerate(slots) if isinstance(s, EntryPoint) and not s.is_program_file]
    with Progress(len(slots), quiet=quiet) as progress:
        here = [(i, s) for i, s in enumerate(slots) if isinstance(s, EntryPoint) and s.is_program_file]
        if settle is None:  # only a plain check, which settles fixability here, reads and fills the cache
            cache = None
        with collector_paused():  # program files run no user code: the run's heap only grows
            if cache is not None:
                here = _cached_files(here, cache, parts, timelines, template)
            read_back = sum(part is not None for part in parts)  # counted as done from the start
            spread = workers_for(here, jobs or default_jobs()) if settle is not None else 0
            if spread:
                warm_up(here, timelines)  # what every child would otherwise import on its own
                given = len(here)
                here = _program_files_in_workers(here, spread, parts, rules, strict, source_map, timelines, template,
                                                 settle, progress, cache, read_back)
                read_back += given - len(here)  # what the workers reported: the count goes on from there
            check, new_part = _checker(rules, strict, source_map), lambda: _part(timelines, template)
            with progress.ticking():  # after the workers are forked: no thread runs across a fork
                for done, (i, slot) in enumerate(here, read_back):
                    progress.update(done, [slot.label], action="checking")
                    if cache is not None:  # checked and settled as a worker would, and kept
                        got = check_file(slot, check, new_part, rules, strict, settle, cache)
                        parts[i] = _from_partial(got, timelines, template, settled=True)
                        continue
                    parts[i] = _part(timelines, template)
                    check_entry(parts[i], slot, rules, strict, source_map)
        done = len(slots) - len(remote)  # and the inputs that did not expand
        if remote:  # only entry points need workers: a .pte-only run never imports the pool
            from xferlint.workers.pool import Task, run_tasks, write_stderr

            preload(("xferlint.fixes.program",) if fix is not None else ())
            tasks = [Task(slots[i].label, _check_task(slots[i], rules, strict, timelines, fix, template))
                     for i in remote]

            def write(data: bytes) -> None:
                progress.clear()  # user output goes on its own lines, the progress line redrawn after
                write_stderr(data)

            outcomes = run_tasks(tasks, jobs or default_jobs(), timeout,
                                 on_change=(lambda n, running: progress.update(done + n, running))
                                 if progress.enabled else None,
                                 write=write, timeout_message=timed_out)
            for i, outcome in zip(remote, outcomes):
                parts[i] = _merged_part(slots[i], outcome, timelines, template)
    run = CheckRun(timelines=[] if timelines else None, record=template)
    for slot, part in zip(slots, parts):
        run.inputs += 1
        if part is None:
            run.errors.append(slot)  # an input that did not expand
            continue
        _absorb(run, part)
    run.comment_findings = comment_findings(run.record, rules)
    return run


def _part(timelines: bool, template: Record) -> CheckRun:
    return CheckRun(timelines=[] if timelines else None, record=template.blank())


def _absorb(run: CheckRun, part: CheckRun) -> None:
    run.errors.extend(part.errors)
    run.loaded.extend(part.loaded)
    run.findings.extend(part.findings)
    run.transfers.extend(part.transfers)
    run.lints.extend(part.lints)
    if part.copy_sizes:
        if run.copy_sizes is None:
            run.copy_sizes = {}
        run.copy_sizes.update(part.copy_sizes)
    run.record.absorb(part.record)
    if run.timelines is not None and part.timelines is not None:
        run.timelines.extend(part.timelines)


def _cached_files(here: list, cache: ResultCache, parts: list, timelines: bool, template: Record) -> list:
    """Fill `parts` with the files `cache` holds unchanged; returns the others."""
    left = []
    for i, slot in here:
        got = cache.look_up(slot.label, slot.file)
        if got is None:
            left.append((i, slot))
        else:
            parts[i] = _from_partial(got, timelines, template, settled=True)
    return left


def _checker(rules: Sequence[Rule], strict: bool, source_map: Optional[dict]):
    def check(part: CheckRun, slot: EntryPoint) -> None:
        check_entry(part, slot, rules, strict, source_map)

    return check


def _program_files_in_workers(here: list, count: int, parts: list, rules: Sequence[Rule], strict: bool,
                              source_map: Optional[dict], timelines: bool, template: Record,
                              settle: SettleOptions, progress: Progress, cache: Optional[ResultCache] = None,
                              before: int = 0) -> list:
    """Check the program files `here` in `count` workers that take them from one queue
    (xferlint.workers.files) into `parts`, each kept in `cache` (when given) by the worker
    that checked it; returns the files no worker reported (its worker failed), for this
    process to check. `before`: the inputs done already (read back from the cache), which
    the progress line counts too."""
    from xferlint.workers.pool import Done, Task, run_tasks

    check = _checker(rules, strict, source_map)
    try:
        claims = Claims(here)
    except OSError:  # no pipe to spare (EMFILE): the files are checked here, as with -j 1
        return list(here)
    try:
        tally = Tally() if progress.enabled else None  # only a line that is drawn reads it
    except OSError:  # as above
        claims.close()
        return list(here)

    def on_change(finished: int, running: list[str]) -> None:
        """The files done and the ones in hand, oldest first (the one holding the run), as
        the children tell them: what they send back comes only when each ends."""
        tally.drain()
        in_hand = [here[k][1].label for k in tally.in_hand] if finished < count else []
        progress.update(before + min(tally.finished, len(here)), in_hand, action="checking")

    try:
        task = claim_task(here, claims, check, lambda: _part(timelines, template), rules, strict, settle, cache,
                          tally)
        label = f"{len(here)} program files in {count} workers"
        # a worker the system refuses to start (EAGAIN, EMFILE) is a Failed outcome: its files stay here
        outcomes = run_tasks([Task(label, task) for _ in range(count)], count, None,
                             on_change=on_change if progress.enabled else None)
    finally:
        claims.close()
        if tally is not None:
            tally.close()
    reported = [False] * len(here)
    for outcome in outcomes:
        if not isinstance(outcome, Done):
            continue
        for k, got in outcome.payload:
            i, slot = here[k]
            parts[i] = _merged_part(slot, outcome, timelines, template, got=got, settled=True)
            reported[k] = True
    return [item for item, done in zip(here, reported) if not done]


def _merged_part(entry: EntryPoint, outcome: Union[Done, Failed], timelines: bool, template: Record,
                 got: Optional[Partial] = None, settled: bool = False) -> CheckRun:
    """The part of one input a worker checked (`got`: its Partial when the outcome held
    several); `settled`: its findings' fixability was decided there."""
    from xferlint.workers.pool import Failed

    if isinstance(outcome, Failed):
        part = _part(timelines, template)
        part.errors.append(InputErrorEntry(input=entry.label, message=outcome.message, kind="input"))
        return part
    return _from_partial(got if got is not None else outcome.payload, timelines, template, settled)


def _from_partial(got: Partial, timelines: bool, template: Record, settled: bool = False) -> CheckRun:
    """The part of one input as a worker (or the results cache) gave it back."""
    part = _part(timelines, template)
    part.errors.extend(got.errors)
    for view, tried, classes in zip(got.views, got.fixes, got.classes):
        native = Detached(fix=tried, classes=classes, settled=settled) if not isinstance(tried, str) else \
            Detached(fix_error=tried, classes=classes)
        part.loaded.append(LoadedProgram(view=view, native=native))
    part.findings.extend(got.findings)
    part.transfers.extend(got.transfers)
    part.record = got.record
    part.copy_sizes = got.sizes
    if part.timelines is not None and got.timelines is not None:
        part.timelines.extend(got.timelines)
    return part


# --------------------------------------------------------------------------- in the worker


def _check_task(entry: EntryPoint, rules: Sequence[Rule], strict: bool, timelines: bool,
                fix: Optional[FixOptions], template: Record):
    from xferlint.workers.payloads import Partial  # here, in the parent: every forked worker has it

    def run() -> Partial:
        part = _part(timelines, template)
        try:
            check_entry(part, entry, rules, strict)
        except KeyboardInterrupt as exc:  # raised by the user's code (the worker ignores SIGINT)
            part.errors.append(error_entry(entry.label, InputError(_interrupted(entry.label, exc))))
        fixes = _try_fixes(part, rules, strict, fix) if fix is not None else [None] * len(part.loaded)
        return Partial(errors=part.errors, views=[loaded.view for loaded in part.loaded], findings=part.findings,
                       transfers=part.transfers, timelines=part.timelines, fixes=fixes,
                       classes=[Detached.class_names(loaded.native) for loaded in part.loaded],
                       record=part.record)

    return run


def _interrupted(label: str, exc: KeyboardInterrupt) -> str:
    """The error line of a KeyboardInterrupt the user's code raised: where, when the entry
    point's import or call raised it (`InterruptedInput`), else while lowering it."""
    if isinstance(exc, InterruptedInput):
        return exc.message
    return f"{label}: loading it raised KeyboardInterrupt"


def _try_fixes(part: CheckRun, rules: Sequence[Rule], strict: bool, fix: FixOptions) -> list:
    """The fixes `fix_run` will ask for: each program with a fixable finding once
    settle_fixability has marked what planning refuses (on a scratch copy: the findings
    sent back are the unsettled ones, which the parent settles as it would in-process)."""
    from xferlint.fixes.driver import fix_loaded, settle_fixability

    scratch = CheckRun(findings=list(part.findings), loaded=list(part.loaded), transfers=list(part.transfers))
    settle_fixability(scratch, rules, unsafe_fixes=fix.unsafe_fixes, strict=strict, keep_results=False)
    out: list = []
    for loaded in part.loaded:
        if not any(f.fixable for f in scratch.findings_of(loaded.view)):
            out.append(None)
            continue
        try:
            result = fix_loaded(loaded, rules, unsafe_fixes=fix.unsafe_fixes, strict=strict)
        except FixError as exc:
            out.append(str(exc))
            continue
        out.append(dataclasses.replace(result, program=None))
    return out


# --------------------------------------------------------------------------- xferlint fix


def fix_input(spec: str, rules: Sequence[Rule], *, unsafe_fixes: bool = False, strict: bool = False,
              timeout: Optional[float] = None):
    """fixes.driver.fix_input, an entry point loaded, lowered and fixed in a worker."""
    from xferlint.fixes import driver

    entries = expand(spec)
    if len(entries) != 1 or entries[0].is_program_file:
        return driver.fix_input(spec, rules, unsafe_fixes=unsafe_fixes, strict=strict)
    label = entries[0].label
    preload(("xferlint.fixes.program",))
    from xferlint.workers.payloads import Emitted, Refused

    def run() -> Any:
        try:
            result = driver.fix_input(spec, rules, unsafe_fixes=unsafe_fixes, strict=strict)
            program = result.program
            if not isinstance(program, (bytes, bytearray)):
                data = getattr(program, "_tensor_data", None) or {}
                program = Emitted(buffer=result.buffer, _tensor_data={k: bytes(v) for k, v in data.items()})
            return dataclasses.replace(result, program=program)
        except XferlintError as exc:
            return Refused(str(exc))
        except KeyboardInterrupt as exc:
            return Refused(_interrupted(label, exc))
        except Exception as exc:  # noqa: BLE001 - the line cli.main prints for an internal error
            return Refused(f"internal error: {type(exc).__name__}: {exc} (please report it)")

    from xferlint.workers.pool import Failed, Task, run_tasks

    (outcome,) = run_tasks([Task(label, run)], 1, timeout, timeout_message=timed_out)
    if isinstance(outcome, Failed):
        raise InputError(outcome.message)
    if isinstance(outcome.payload, Refused):
        raise XferlintError(outcome.payload.message)
    return outcome.payload
