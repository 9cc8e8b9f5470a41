"""The `xferlint` command: argument parsing, settings, exit codes. No analysis here.

Exit codes: 0 clean (or --exit-zero), 1 findings, 2 usage error, an input that could not
be loaded, or an internal error.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import warnings
from typing import Iterable, Optional, Sequence

from xferlint import __version__
from xferlint.console import error as print_error, note, one_line, set_quiet, terminal_columns
from xferlint.reporters import FORMATS, TEXT_FORMATS
from xferlint.errors import FixWriteError, UsageError, XferlintError

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _quiet_libraries() -> None:
    """Keep import-time warnings of torch/torchao/executorch out of the report (their
    loggers are quieted where they are imported: frontends.entrypoints.stdout_to_stderr)."""
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=UserWarning, module=r"(torch|executorch|torchao)(\.|$)")


def _add_selection(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("rule selection")
    group.add_argument("--select", action="append", metavar="RULES",
                       help="Comma-separated rules to enable (codes, prefixes, names, ALL); replaces the configured set")
    group.add_argument("--extend-select", action="append", metavar="RULES", help="Rules to enable on top of --select")
    group.add_argument("--ignore", action="append", metavar="RULES", help="Rules to disable")


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="pyproject.toml to read [tool.xferlint] from")
    parser.add_argument("--isolated", action="store_true", help="Ignore all configuration files")
    parser.add_argument("--strict", action="store_true", default=None,
                        help="Error on operators the analyzer does not model instead of assuming nothing")
    parser.add_argument("--project-root", metavar="DIR", help="Show paths relative to DIR (default: the cwd for text and JSON; for SARIF's "
                             "%%SRCROOT%% the git work tree holding the cwd, else the cwd)")


def _add_verbosity(parser: argparse.ArgumentParser) -> None:
    """-q / -s (ReportOptions.quiet / .silent carry them to the reporters and the progress display)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", action="store_true", help="Print the findings only: no summary or notes")
    group.add_argument("-s", "--silent", action="store_true",
                       help="Print nothing (a file named with -o is still written); the exit code says it all")


def _color(args: argparse.Namespace, settings) -> bool:
    """Colour on a terminal: never into a file (-o), off with --no-color or NO_COLOR, on with FORCE_COLOR."""
    if settings.output or getattr(args, "no_color", False) or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR", "0") not in ("", "0"):
        return True
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _number(convert, what: str, ok, refusal: str):
    """An argparse type: `convert(text)`, "expected {what}" when that fails and `refusal`
    (formatted with value and text) when `ok(value)` is false."""

    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(refusal.format(value=value, text=text))
        return value

    return parse


def _bytes(text: str) -> int:
    from xferlint.config import FractionalBytes, parse_bytes  # imported when a run reads its settings anyway

    try:
        return parse_bytes(text)
    except FractionalBytes as exc:  # a size, but no whole number of bytes: say so, not "expected a number"
        raise argparse.ArgumentTypeError(str(exc)) from None


# --max-transfer-bytes: whole bytes, 0 or more; -j N: 1 or more; --timeout SECONDS: above 0
_byte_budget = _number(_bytes, "a number of bytes, with or without a unit (65536, 64KiB)", lambda v: v >= 0,
                       "a budget cannot be negative ({text})")
_jobs = _number(int, "a whole number of jobs", lambda v: v >= 1, "at least 1 job (got {value})")
_seconds = _number(float, "a number of seconds", lambda v: v > 0, "a timeout above 0 seconds (got {text})")


def _add_workers(parser: argparse.ArgumentParser, jobs: bool = True) -> None:
    if jobs:
        parser.add_argument("-j", "--jobs", type=_jobs, metavar="N",
                            help="Worker processes at once: one per entry point, or per run of program files in "
                                 "a plain check (default: the cores available)")
    parser.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                        help="Give each entry point at most SECONDS to load and lint; one that takes longer is an "
                             "error (default: no limit)")


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter at the terminal's width, worked out without shutil (see
    `terminal_columns`): argparse makes one for every argument it adds."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: Optional[int] = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         terminal_columns() - 2 if width is None else width)  # argparse's own margin


class _Parser(argparse.ArgumentParser):
    """argparse with xferlint's one error form: `error: ...` and exit 2, no usage block."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        self.exit(EXIT_ERROR, f"error: {one_line(message)} (see `{self.prog} --help`)\n")


# The sub-commands and their one-line help, in the order `xferlint --help` lists them.
_COMMANDS = {
    "check": "Lint programs (entry points, directories, .pte files)",
    "rule": "Explain a rule (or every rule with --all)",
    "fix": "Write a fixed program: the copies XF001/XF003/XF004 flag removed (and XF002 made direct in a .pt2)",
    "schema": "Print the JSON Schema of `check --output-format json`",
    "clean": "Remove the results cache that `check` keeps of program files",
}


def build_parser(command: Optional[str] = None) -> argparse.ArgumentParser:
    """The whole command line; with `command`, only that sub-command gets its arguments
    (the others stay listed, empty): argparse builds a help formatter per argument, and a
    run parses one sub-command, so the others' ~30 arguments are start-up time for nothing."""
    parser = _Parser(
        prog="xferlint",
        description="Find and fix device-transfer anti-patterns in ExecuTorch programs.",
    )
    parser.add_argument("--version", action="version", version=f"xferlint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, text in _COMMANDS.items():
        sub_parser = sub.add_parser(name, help=text)
        if command is None or command == name:
            _ARGUMENTS[name](sub_parser)
    return parser


def _add_check(check: argparse.ArgumentParser) -> None:
    check.add_argument("paths", nargs="+", metavar="PATH",
                       help="file.py, file.py:attr, package.module:attr, a .pte file or a directory")
    _add_selection(check)
    check.add_argument("--output-format", "--format", dest="output_format", choices=tuple(FORMATS),
                       help="Output format (default: concise, one line per finding; text is its old name); full: "
                            "each finding with its source line and detail; html: a self-contained page with a device "
                            "timeline per method; model-explorer: node data (device per node, bytes per copy)")
    check.add_argument("--no-color", action="store_true", help="No colour in the text output (also: NO_COLOR=1)")
    _add_verbosity(check)
    check.add_argument("-o", "--output", "--output-file", dest="output", metavar="FILE",
                       help="Write the report to FILE (atomically)")
    check.add_argument("--exit-zero", action="store_true", default=None, help="Exit 0 even when there are findings")
    check.add_argument("--statistics", action="store_true", default=None, help="Show counts per rule")
    check.add_argument("--max-transfer-bytes", type=_byte_budget, metavar="N",
                       help="Per-call transfer budget of every method, in bytes (65536) or with a unit (64KiB, "
                            "1.5MiB, 2GB): a method whose copies move more is a finding (XF009)")
    check.add_argument("--fix", action="store_true",
                       help="Apply the safe fixes and report what remains (.pte and .pt2 inputs are rewritten in place; "
                            "entry points, which are code, are fixed in memory: `xferlint fix` writes them)")
    check.add_argument("--unsafe-fixes", action="store_true", default=None,
                       help="With --fix/--diff, also apply the fixes marked unsafe")
    check.add_argument("--diff", action="store_true",
                       help="Show the copies the fixes would remove as a diff and write nothing; "
                            "exit 1 if there is something to fix")
    check.add_argument("--etrecord", metavar="FILE",
                       help="ETRecord of the .pte inputs (executorch.devtools.generate_etrecord): findings on "
                            "their instructions point at the model source")
    check.add_argument("--baseline", metavar="FILE",
                       help="Report only findings FILE does not record (written by --write-baseline)")
    check.add_argument("--write-baseline", metavar="FILE", help="Record the current findings in FILE and exit 0")
    check.add_argument("--prune-baseline", action="store_true",
                       help="With --baseline: drop the entries nothing matches any more from the file")
    check.add_argument("--add-noqa", action="store_true",
                       help="Write `# xferlint: noqa: CODE` on the line of every reported finding inside the project "
                            "root (keeping the line's comment and other tools' codes) and exit")
    check.add_argument("--exclude", action="append", metavar="PATTERNS",
                       help="Comma-separated glob patterns that directory discovery skips, replacing the defaults "
                            "(hidden and test folders, conftest.py, test_*.py, virtual envs, build output)")
    check.add_argument("--extend-exclude", action="append", metavar="PATTERNS",
                       help="Patterns to skip on top of the configured or default ones")
    check.add_argument("--no-cache", action="store_true",
                       help="Check every program file again, not reading or writing the results cache "
                            "(also: XFERLINT_NO_CACHE=1)")
    _add_cache_dir(check)
    check.add_argument("--only-programs", action="store_true",
                       help="Skip inputs that are no program (a .py file without a top-level `program`, an "
                            "unknown suffix) instead of failing on them: for pre-commit, which passes every changed file")
    _add_workers(check)
    _add_common(check)


def _add_rule(rule: argparse.ArgumentParser) -> None:
    rule.add_argument("code", nargs="?", help="Rule code or name, e.g. XF001 or redundant-round-trip")
    rule.add_argument("--all", action="store_true", help="Explain every rule")
    rule.add_argument("--format", choices=("text", "json"), default="text")


def _add_fix(fix: argparse.ArgumentParser) -> None:
    fix.add_argument("input", metavar="INPUT",
                     help="file.py[:attr], package.module:attr, a .pte or a .pt2 file: one program")
    fix.add_argument("-o", "--output", metavar="OUTPUT.pte", required=True,
                     help="Where to write the fixed program (atomically)")
    fix.add_argument("--unsafe-fixes", action="store_true", default=None, help="Also apply the fixes marked unsafe")
    fix.add_argument("--diff", action="store_true", help="Also print the copies removed, as a diff")
    _add_verbosity(fix)
    _add_selection(fix)
    _add_workers(fix, jobs=False)
    _add_common(fix)


def _add_cache_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cache-dir", metavar="DIR",
                        help="Where results of unchanged program files are kept between runs (also: XFERLINT_CACHE_DIR; "
                             "default: $XDG_CACHE_HOME/xferlint)")


_ARGUMENTS = {"check": _add_check, "rule": _add_rule, "fix": _add_fix, "schema": lambda schema: None,
              "clean": _add_cache_dir}


def _settings(args: argparse.Namespace):
    """The run's settings: the configuration's, overridden by the command line; and the
    configuration file they were read from (None: none, or --isolated)."""
    from xferlint.config import Settings, load_settings

    base, config = (Settings(), None) if args.isolated else load_settings(args.config)
    overrides = {
        key: value
        for key, value in {
            "output_format": getattr(args, "output_format", None),
            "output": getattr(args, "output", None),
            "exit_zero": getattr(args, "exit_zero", None),
            "statistics": getattr(args, "statistics", None),
            "max_transfer_bytes": getattr(args, "max_transfer_bytes", None),
            "strict": args.strict,
            "project_root": args.project_root,
            "unsafe_fixes": getattr(args, "unsafe_fixes", None),
            "jobs": getattr(args, "jobs", None),
            "timeout": getattr(args, "timeout", None),
        }.items()
        if value is not None
    }
    if getattr(args, "select", None):
        overrides["select"] = args.select
    if getattr(args, "exclude", None):
        overrides["exclude"] = _patterns(args.exclude)
    overrides["extend_exclude"] = list(base.extend_exclude) + _patterns(getattr(args, "extend_exclude", None))
    overrides["extend_select"] = list(base.extend_select) + list(getattr(args, "extend_select", None) or [])
    overrides["ignore"] = list(base.ignore) + list(getattr(args, "ignore", None) or [])
    settings = dataclasses.replace(base, **overrides)
    root = settings.project_root
    if root and not os.path.isdir(root):  # a typo would otherwise show every path absolute, silently
        raise UsageError(f"{root}: the project root (--project-root or `project-root`) is no directory")
    return settings, config


def _patterns(values) -> list[str]:
    return [p.strip() for value in values or () for p in value.split(",") if p.strip()]


def _write(text: str, output: Optional[str]) -> None:
    """The report to `output` (atomically) or stdout, a slice at a time: encoding a report of
    tens of MB whole would copy it once more into fresh memory."""
    from xferlint.fsutil import write_atomic_text

    if output:
        try:
            write_atomic_text(output, text)
        except OSError as exc:  # a user error (no such directory, read-only): one line, exit 2
            raise UsageError(f"{output}: cannot write the report ({exc.strerror or exc})") from None
        return
    _stdout(text, "the report", " (-o FILE writes it to a file)")


def _stdout(text: str, what: str = "the output", hint: str = "") -> None:
    """`text` on stdout, now (flushed), a slice at a time; a stdout closed when the process
    started (`>&-`) or that cannot take it (`> /dev/full`, a quota) is one error line and
    exit 2, not an internal error. A reader that went away (`| head`) is `main`'s to end
    quietly."""
    from xferlint.fsutil import text_pieces

    if sys.stdout is None:
        raise UsageError(f"standard output is closed: nowhere to write {what}{hint}")
    try:
        for piece in text_pieces(text):
            sys.stdout.write(piece)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise UsageError(f"standard output: cannot write {what} ({exc.strerror or exc})") from None


def _is_program_input(path: str) -> bool:
    """For --only-programs: a directory, a program file, or a .py file that defines one."""
    from xferlint.frontends.entrypoints import PROGRAM_SUFFIXES, defines_program

    if os.path.isdir(path) or path.endswith(PROGRAM_SUFFIXES):
        return True
    base, _, attr = path.rpartition(":")
    if base.endswith(".py") and attr.isidentifier():
        return True  # an attribute named on purpose
    return path.endswith(".py") and os.path.isfile(path) and defines_program(path)


def _report_options(args: argparse.Namespace, settings, rules, run, suppressed=(), absent=None):
    from xferlint.reporters import ReportOptions

    return ReportOptions(statistics=settings.statistics, project_root=settings.project_root,
                         rules=tuple(type(rule) for rule in rules), timelines=tuple(run.timelines or ()),
                         suppressed=tuple(suppressed), baseline_absent=absent,
                         full=settings.output_format == "full", quiet=args.quiet, silent=args.silent,
                         color=_color(args, settings), unsafe_fixes=bool(settings.unsafe_fixes))


def _refuse_combinations(args: argparse.Namespace, settings) -> None:
    if args.diff and args.fix:
        raise UsageError("--diff shows the fixes and writes nothing, --fix writes them: pass one of them")
    if args.diff and settings.output_format not in TEXT_FORMATS:
        raise UsageError(f"--diff prints a unified diff, not {settings.output_format}: drop --output-format "
                         f"{settings.output_format} (the JSON findings' `removes` lists the copies a fix deletes)")


def _refuse_overwriting(output: Optional[str], inputs: Iterable[Optional[str]], option: str = "-o") -> None:
    """`-o` (or `--write-baseline`) must not name a file the run reads: the report would
    replace the user's model (`xferlint check model.py -o model.py`, a slip of the
    keyboard). `xferlint fix -o` naming its input is another matter: the fixed program
    replacing it is what was asked, as is a baseline written over the one it was read from."""
    if not output or not os.path.exists(output):
        return
    for path in inputs:
        try:
            same = bool(path) and os.path.samefile(path, output)
        except OSError:  # an input that is not there: its own error line says so
            continue
        if same:
            what = "baseline" if option == "--write-baseline" else "report"
            raise UsageError(f"{output}: {option} names {path}, an input of this run, and the {what} would replace "
                             "it; name another file")


def _refuse_overwriting_any(args: argparse.Namespace, settings, files: list[Optional[str]],
                            baseline: Optional[str] = None) -> None:
    """Neither `-o` nor `--write-baseline` may name one of `files`; `-o` not the baseline
    read either (`--write-baseline` may: rewriting it is what was asked)."""
    _refuse_overwriting(settings.output, [*files, baseline])
    _refuse_overwriting(getattr(args, "write_baseline", None), files, "--write-baseline")


def _files_read(args: argparse.Namespace, config: Optional[str]) -> list[Optional[str]]:
    """The files a check reads that its command line names or implies, the baseline aside:
    its inputs, the ETRecord and the configuration (`config`, as `_settings` found it)."""
    from xferlint.frontends.entrypoints import file_of

    return [*map(file_of, args.paths), getattr(args, "etrecord", None), config]


def cmd_check(args: argparse.Namespace) -> int:
    from xferlint.collector import collector_paused

    with collector_paused():  # loading modules makes no garbage: nothing for the collector to sweep
        from xferlint.fixes.driver import settle_fixability
        from xferlint.frontends.discovery import from_settings
        from xferlint.pipeline import configure
        from xferlint.per_file_ignores import apply as apply_per_file_ignores
        from xferlint.reporters import TIMELINE_FORMATS, emit
        from xferlint.selection import select_rules
        from xferlint.workers import FixOptions, check_paths

        settings, config = _settings(args)
    _refuse_combinations(args, settings)
    _refuse_overwriting_any(args, settings, _files_read(args, config), getattr(args, "baseline", None))
    rules = select_rules(settings.select, settings.ignore, settings.extend_select)
    configure(rules, max_transfer_bytes=settings.max_transfer_bytes)
    paths = [p for p in args.paths if _is_program_input(p)] if args.only_programs else args.paths
    source_map = None
    if getattr(args, "etrecord", None):
        from xferlint.frontends.pte.debug import read_etrecord  # torch-free

        source_map = read_etrecord(args.etrecord)
    discovery = from_settings(settings.exclude, settings.extend_exclude)
    draws = settings.output_format in TIMELINE_FORMATS
    from xferlint import noqa_commands
    from xferlint.fsutil import project_root

    root = project_root(settings.project_root)
    settle = _settle_options(args, settings)
    run = check_paths(paths, rules, strict=settings.strict, source_map=source_map, discovery=discovery,
                      timelines=draws, jobs=settings.jobs, timeout=settings.timeout,
                      quiet=bool(getattr(args, "quiet", False) or getattr(args, "silent", False)),
                      fix=FixOptions(unsafe_fixes=settings.unsafe_fixes) if args.diff else None,
                      project_root=root, settle=settle,
                      cache=_cache(args, rules, settings, settle, draws, root) if source_map is None else None)
    _refuse_overwriting_any(args, settings, [loaded.view.file for loaded in run.loaded])  # a directory's inputs
    noqa_commands.print_notes(run)
    apply_per_file_ignores(run, settings.per_file_ignores, settings.extend_per_file_ignores)
    tried = settle_fixability(run, rules, unsafe_fixes=settings.unsafe_fixes, strict=settings.strict,
                              keep_results=bool(args.diff or args.fix))  # only --diff / --fix reuse the trials
    if args.diff:
        return _check_diff(run, rules, settings, tried, settings.output)
    if args.fix:
        _check_fix(run, rules, settings, tried)
        noqa_commands.fix_comments(run)
    if args.prune_baseline and not args.baseline:
        raise UsageError("--prune-baseline needs --baseline FILE")
    accepted, absent = [], None
    if args.write_baseline or args.baseline:
        written, matched = _baseline(run, args)
        if written:
            return EXIT_CLEAN if not run.errors else EXIT_ERROR
        accepted, absent = noqa_commands.accepted_by_baseline(matched.baselined, args.baseline), tuple(matched.stale)
    if args.add_noqa:
        failed = noqa_commands.add_noqa(run, root)
        return EXIT_ERROR if failed or run.errors else EXIT_CLEAN
    from xferlint.pipeline import collector_paused

    with collector_paused():  # the report is plain data: no reference cycles to collect
        report = run.report(suppressed=len(accepted))
        for error in report.errors:
            print_error(error.message)
        options = _report_options(args, settings, rules, run, tuple(run.record.suppressed) + tuple(accepted),
                                  absent)
        text = emit(report, settings.output_format, options)
    from xferlint import run_caches

    run_caches.keep(run, report, text)  # freed with the run's programs, not as this returns
    _write(text, settings.output)
    if settings.output_format == "model-explorer":
        from xferlint.reporters.model_explorer import left_out

        missing = left_out(options.timelines)
        if missing:
            note(missing)
    if report.errors:
        return EXIT_ERROR
    if report.findings and not settings.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _cache(args: argparse.Namespace, rules, settings, settle, timelines: bool, root: str):
    """The results cache of a plain check (None: --no-cache, XFERLINT_NO_CACHE, or a run
    that needs the programs themselves)."""
    if settle is None or args.no_cache:
        return None
    from xferlint.workers.cache import default_folder, open_cache

    return open_cache(args.cache_dir or default_folder(), rules, strict=settings.strict, timelines=timelines,
                      project_root=root, settle=settle)


def _settle_options(args: argparse.Namespace, settings):
    """A check settles fixability where it checks each program file (in workers), a
    baseline and --add-noqa included (they read findings only); --fix/--diff need the
    programs here."""
    from xferlint.workers import SettleOptions

    if args.diff or args.fix:
        return None
    return SettleOptions(unsafe_fixes=settings.unsafe_fixes,
                         ignores=(settings.per_file_ignores, settings.extend_per_file_ignores))


def _baseline(run, args):
    """Apply `--baseline` to the run: (True, None) when `--write-baseline` wrote a file
    instead, else (False, what matching gave)."""
    from xferlint import baseline

    path = args.write_baseline or args.baseline
    root = os.path.dirname(os.path.abspath(path))
    if args.write_baseline:
        entries = baseline.entries_of(run.findings, root)
        _write_file(path, baseline.render(entries))
        total = sum(e.count for e in entries)
        print(f"Recorded {total} finding{'s' if total != 1 else ''} in {one_line(path)}.", file=sys.stderr)
        return True, None
    matched = baseline.apply(run.findings, baseline.read(path), root)
    new_ids = {id(f) for f in matched.new}
    replacements = []
    for loaded in run.loaded:
        mine = run.findings_of(loaded.view)
        if any(id(f) not in new_ids for f in mine):
            replacements.append((loaded.view, [f for f in mine if id(f) in new_ids]))
    run.replace_many(replacements)  # in one pass, not one rebuild of the run per program
    if matched.baselined:
        note(f"{len(matched.baselined)} finding{'s' if len(matched.baselined) != 1 else ''} accepted by "
             f"{path}")
    if matched.stale and args.prune_baseline:
        _write_file(path, baseline.render(matched.kept))
        note(f"pruned {len(matched.stale)} stale entr{'ies' if len(matched.stale) != 1 else 'y'} from {path}")
    elif matched.stale:
        note(f"{len(matched.stale)} entr{'ies' if len(matched.stale) != 1 else 'y'} of {path} no longer match "
             "(fixed or changed); --prune-baseline drops them")
    return False, matched


def _write_file(path: str, text: str) -> None:
    from xferlint.fsutil import write_atomic_text

    try:
        write_atomic_text(path, text)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write ({exc.strerror or exc})") from None


def _check_diff(run, rules, settings, tried, output) -> int:
    """`check --diff`: the fixes as diffs (stdout or -o), nothing else written; 1 if any."""
    from xferlint.fixes.driver import fix_run

    fixed, notes = fix_run(run, rules, unsafe_fixes=settings.unsafe_fixes, strict=settings.strict, tried=tried)
    for error in run.errors:
        print_error(error.message)
    for text in notes:
        note(text)
    for _, result in fixed:
        for line in result.refusal_lines():
            print(one_line(line), file=sys.stderr)
    from xferlint.noqa_commands import comment_diff

    comments, mended = comment_diff(run)  # XF100: the stale noqa codes in the model source
    _write("".join(result.diff() for _, result in fixed) + comments, output)
    fixes = sum(len(result.applied) for _, result in fixed) + mended
    print(f"Would fix {fixes} finding{'s' if fixes != 1 else ''}." if fixes else "No fixes available.",
          file=sys.stderr)
    if run.errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if fixes else EXIT_CLEAN


def _check_fix(run, rules, settings, tried) -> None:
    """`check --fix`: rewrite each fixable `.pte` in place and report the program as it is
    now; an entry point is code, so it is reported as it is and `xferlint fix` named."""
    from xferlint.fixes.driver import adoption, fix_run
    from xferlint.fsutil import write_atomic
    from xferlint.pipeline import error_entry

    fixed, notes = fix_run(run, rules, unsafe_fixes=settings.unsafe_fixes, strict=settings.strict, tried=tried,
                           kinds={"pte", "pt2"})
    for text in notes:
        note(text)
    adopted = []
    for loaded, result in fixed:
        if result.changed and loaded.view.file:
            try:
                write_atomic(loaded.view.file, result.buffer)
            except OSError as exc:
                run.errors.append(error_entry(result.input, FixWriteError(loaded.view.file, exc)))
                continue
        for line in result.summary_lines():
            print(one_line(line), file=sys.stderr)
        adopted.append(adoption(loaded, result))
    run.replace_many(adopted)  # every fixed program in one pass over the run
    for loaded in run.loaded:
        if loaded.view.kind not in ("pte", "pt2") and any(f.fixable for f in run.findings_of(loaded.view)):
            print(f"{one_line(loaded.view.input)}: not fixed: an entry point is code, --fix rewrites only .pte and .pt2 files; "
                  f"write the fixed program with `xferlint fix {one_line(loaded.view.input)} -o OUT.pte`", file=sys.stderr)


def cmd_fix(args: argparse.Namespace) -> int:
    from xferlint.fsutil import write_atomic
    from xferlint.selection import select_rules
    from xferlint.workers import fix_input

    settings, _ = _settings(args)
    rules = select_rules(settings.select, settings.ignore, settings.extend_select)
    output = args.output
    directory = os.path.dirname(os.path.abspath(output))
    suffix = ".pt2" if args.input.endswith(".pt2") else ".pte"  # a .pt2 is fixed into a .pt2
    if not output.endswith(suffix) or os.path.isdir(output):
        raise UsageError(f"{output}: the output must be a {suffix} file")
    if not os.path.isdir(directory):
        raise UsageError(f"{output}: directory {directory} does not exist")
    if os.path.isfile(output) and not os.stat(output).st_mode & 0o222:
        raise UsageError(f"{output}: the file is read-only; not replacing it")
    result = fix_input(args.input, rules, unsafe_fixes=settings.unsafe_fixes, strict=settings.strict,
                       timeout=settings.timeout)
    from xferlint.noqa_commands import fix_comments_of

    fix_comments_of(args.input, rules, settings.project_root, settings.strict)  # XF100: the model's comments
    lines = [] if args.quiet else result.summary_lines() + result.notes
    _stdout((result.diff() if args.diff else "") + "".join(one_line(line) + "\n" for line in lines), "the summary")
    if not result.changed and isinstance(result.program, (bytes, bytearray)):
        # a file nothing was fixed in: the output would be a copy of the input
        _stdout(f"{one_line(output)} not written: nothing was fixed in {one_line(args.input)}\n", "the summary")
        return EXIT_FINDINGS if result.skipped else EXIT_CLEAN
    data, extra = result.buffer, result.data_files
    for path, blob in [(output, data)] + [(os.path.join(directory, n), b) for n, b in sorted(extra.items())]:
        try:
            write_atomic(path, blob)
        except OSError as exc:
            raise FixWriteError(path, exc) from None
    also = f" and {', '.join(sorted(extra))}" if extra else ""
    _stdout(f"wrote {one_line(output)} ({len(data)} bytes){also}\n", "the summary")
    return EXIT_FINDINGS if result.skipped else EXIT_CLEAN


def cmd_rule(args: argparse.Namespace) -> int:
    from xferlint.docs import explain

    if not args.all and not args.code:
        raise UsageError("name a rule (e.g. `xferlint rule XF001`) or pass --all")
    _stdout(explain(None if args.all else args.code, fmt=args.format), "the rule's text")
    return EXIT_CLEAN


def cmd_schema(args: argparse.Namespace) -> int:
    import json

    from xferlint.report import json_schema

    _stdout(json.dumps(json_schema(), indent=2, sort_keys=True) + "\n", "the schema")
    return EXIT_CLEAN


def cmd_clean(args: argparse.Namespace) -> int:
    from xferlint.workers.cache import clear, default_folder

    folder = args.cache_dir or default_folder(even_if_off=True)
    if folder is None:
        print("No results cache: no home folder to keep it in (--cache-dir names one).", file=sys.stderr)
        return EXIT_CLEAN
    removed = clear(folder)
    print(f"Removed {removed} results cache entr{'y' if removed == 1 else 'ies'} from {one_line(folder)}.", file=sys.stderr)
    return EXIT_CLEAN


class Terminated(BaseException):
    """SIGTERM or SIGHUP: unwinds like Ctrl-C, so temporary files are removed on the way."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum, frame) -> None:
    raise Terminated(signum)


def _catch_termination() -> None:
    import signal

    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            try:
                signal.signal(getattr(signal, name), _on_signal)
            except ValueError:  # not the main thread (an embedding program): leave it be
                pass


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """`parser.parse_args(argv)`, with a check's paths before and after its options
    (`xferlint check a.pte --select XF001 b.pte`, as ruff and mypy take them): argparse
    takes one run of positionals and leaves the rest unrecognised, and its intermixed
    parsing does not support sub-commands."""
    args, extra = parser.parse_known_args(argv)
    if extra and args.command == "check" and not any(item.startswith("-") for item in extra):
        args.paths = [*args.paths, *extra]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _working_directory_exists() -> bool:
    """check's and fix's paths are shown, and configs found, relative to it."""
    try:
        os.getcwd()
    except FileNotFoundError:
        return False
    return True


def main(argv: Optional[Sequence[str]] = None, *, exiting: bool = False) -> int:
    """Run one command. `exiting`: the process ends right after (the console script), so
    the run's programs are left for the operating system to reclaim, not freed."""
    _quiet_libraries()
    _catch_termination()
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv and argv[0] in _COMMANDS else None)
    args = _parse(parser, argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    handler = {"check": cmd_check, "fix": cmd_fix, "rule": cmd_rule, "schema": cmd_schema,
               "clean": cmd_clean}[args.command]
    if args.command in ("check", "fix") and not _working_directory_exists():
        print_error("the current directory no longer exists (removed while the shell was in it?); "
                    "cd into one that does")
        return EXIT_ERROR
    set_quiet(bool(getattr(args, "quiet", False)))
    if getattr(args, "silent", False):
        return _silently(handler, args, exiting)
    return _run(handler, args, exiting)


def _silently(handler, args: argparse.Namespace, exiting: bool) -> int:
    """-s: stdout and stderr go nowhere (a file named with -o is still written)."""
    import contextlib

    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        return _run(handler, args, exiting)


def _run(handler, args: argparse.Namespace, exiting: bool) -> int:
    from xferlint.collector import one_command
    from xferlint import run_caches

    try:
        with one_command():
            try:
                return handler(args)
            finally:
                if not exiting:  # freeing a 100k-instruction program's objects: ~0.14 s
                    run_caches.clear()  # the run's programs are freed here, once
    except XferlintError as exc:
        print_error(str(exc))
        return EXIT_ERROR
    except KeyboardInterrupt:
        print_error("interrupted")
        return 130
    except Terminated as exc:
        print_error("terminated")
        return 128 + exc.signum
    except BrokenPipeError:  # `xferlint check ... | head`: the reader is gone, so is the output
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, exit 2
        print_error(f"internal error: {type(exc).__name__}: {exc} (please report it)")
        return EXIT_ERROR


def _hold_closed_descriptors() -> None:
    """A standard descriptor closed when the process started (`2>&-`) is held open on
    /dev/null. Otherwise the next file xferlint opens takes its number, and what is meant
    for stderr lands in that file; and with `sys.stderr` None, `print(file=sys.stderr)`
    writes to stdout, into the report. What was meant for a closed stderr is dropped; a
    closed stdout is still an error when the report is due (`_write`)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)  # the lowest free number: this one
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")
    if sys.stdout is not None and hasattr(sys.stdout, "reconfigure"):
        # what a -o file gets too (`fsutil.encoded_pieces`): a file name that is no UTF-8 as
        # escapes, not as a crash (strict) nor as raw bytes that leave the report invalid UTF-8
        sys.stdout.reconfigure(errors="backslashreplace")


def console() -> None:
    """The console script: `main`, then the process ends without freeing its heap.

    A check of a large program leaves millions of objects; tearing them down one by one at
    interpreter exit costs 3-8 % of the run and changes nothing the user sees (mypy ends
    the same way). Output is flushed and atexit handlers run first, so only the freeing
    is skipped. In-process callers (the API, the tests) call `main` and keep Python's
    usual exit."""
    _hold_closed_descriptors()
    code = main(exiting=True)
    import atexit

    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # closed when the process started (`>&-`): nothing was written there
            continue
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader gone (`| head`) or a stream closed: nothing to save
            code = code or EXIT_ERROR
    getattr(atexit, "_run_exitfuncs", lambda: None)()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    console()
