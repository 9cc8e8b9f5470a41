"""The `xferlint` command: argument parsing, settings, exit codes. No analysis here.

Exit codes: 0 clean (or --exit-zero), 1 findings, 2 usage error, an input that could not
be loaded, or an internal error.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
import warnings
from typing import Optional, Sequence

from xferlint import __version__
from xferlint.errors import UsageError, XferlintError

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _quiet_libraries() -> None:
    """Keep import-time chatter of torch/torchao/executorch out of the report."""
    for name in ("torchao", "torch.utils._pytree", "torch._export", "torch.export", "executorch"):
        logging.getLogger(name).setLevel(logging.ERROR)
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
    parser.add_argument("--project-root", metavar="DIR", help="Show paths relative to DIR (default: cwd)")


def _byte_budget(text: str) -> int:
    """`--max-transfer-bytes`: a whole number of bytes, 0 or more."""
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of bytes, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"a budget cannot be negative ({value})")
    return value


FORMATS = ("text", "json", "sarif", "html", "model-explorer")  # reporters.FORMATS, without importing the reporters


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xferlint",
        description="Find and fix device-transfer anti-patterns in ExecuTorch programs.",
    )
    parser.add_argument("--version", action="version", version=f"xferlint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = sub.add_parser("check", help="Lint programs (entry points, directories, .pte files)")
    check.add_argument("paths", nargs="+", metavar="PATH",
                       help="file.py, file.py:attr, package.module:attr, a .pte file or a directory")
    _add_selection(check)
    check.add_argument("--output-format", "--format", dest="output_format", choices=FORMATS,
                       help="Output format (default: text); html: a self-contained page with a device timeline "
                            "per method; model-explorer: node data (device per node, bytes per copy) for Model Explorer")
    check.add_argument("-o", "--output", metavar="FILE", help="Write the report to FILE (atomically)")
    check.add_argument("--exit-zero", action="store_true", default=None, help="Exit 0 even when there are findings")
    check.add_argument("--statistics", action="store_true", default=None, help="Show counts per rule")
    check.add_argument("--max-transfer-bytes", type=_byte_budget, metavar="N",
                       help="Per-call transfer budget of every method, in bytes: a method whose copies move "
                            "more is a finding (XF009)")
    check.add_argument("--fix", action="store_true",
                       help="Apply the safe fixes and report what remains (.pte inputs are rewritten in place; "
                            "entry points, which are code, are fixed in memory: `xferlint fix` writes them)")
    check.add_argument("--unsafe-fixes", action="store_true", default=None,
                       help="With --fix/--diff, also apply the fixes marked unsafe")
    check.add_argument("--diff", action="store_true",
                       help="Show the copies the fixes would remove as a diff and write nothing; "
                            "exit 1 if there is something to fix")
    check.add_argument("--etrecord", metavar="FILE",
                       help="ETRecord of the .pte inputs (executorch.devtools.generate_etrecord): findings on "
                            "their instructions point at the model source")
    check.add_argument("--only-programs", action="store_true",
                       help="Skip inputs that are no program (a .py file without a top-level `program`, an "
                            "unknown suffix) instead of failing on them: for pre-commit, which passes every changed file")
    _add_common(check)

    rule = sub.add_parser("rule", help="Explain a rule (or every rule with --all)")
    rule.add_argument("code", nargs="?", help="Rule code or name, e.g. XF001 or redundant-round-trip")
    rule.add_argument("--all", action="store_true", help="Explain every rule")
    rule.add_argument("--format", choices=("text", "json"), default="text")

    fix = sub.add_parser("fix", help="Write a fixed program: the copies XF001/XF003/XF004 flag removed")
    fix.add_argument("input", metavar="INPUT", help="file.py[:attr], package.module:attr or a .pte file: one program")
    fix.add_argument("-o", "--output", metavar="OUTPUT.pte", required=True,
                     help="Where to write the fixed program (atomically)")
    fix.add_argument("--unsafe-fixes", action="store_true", default=None, help="Also apply the fixes marked unsafe")
    fix.add_argument("--diff", action="store_true", help="Also print the copies removed, as a diff")
    _add_selection(fix)
    _add_common(fix)

    sub.add_parser("schema", help="Print the JSON Schema of `check --output-format json`")
    return parser


def _settings(args: argparse.Namespace):
    from xferlint.config import Settings, load_settings

    base, _ = (Settings(), None) if args.isolated else load_settings(args.config)
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
        }.items()
        if value is not None
    }
    if getattr(args, "select", None):
        overrides["select"] = args.select
    overrides["extend_select"] = list(base.extend_select) + list(getattr(args, "extend_select", None) or [])
    overrides["ignore"] = list(base.ignore) + list(getattr(args, "ignore", None) or [])
    return dataclasses.replace(base, **overrides)


def _write(text: str, output: Optional[str]) -> None:
    if output:
        from xferlint.fsutil import write_atomic

        try:
            write_atomic(output, text.encode("utf-8"))
        except OSError as exc:  # a user error (no such directory, read-only): one line, exit 2
            raise UsageError(f"{output}: cannot write the report ({exc.strerror or exc})") from None
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def _is_program_input(path: str) -> bool:
    """For --only-programs: a directory, a program file, or a .py file that defines one."""
    from xferlint.frontends.entrypoints import PROGRAM_SUFFIXES, defines_program

    if os.path.isdir(path) or path.endswith(PROGRAM_SUFFIXES):
        return True
    base, _, attr = path.rpartition(":")
    if base.endswith(".py") and attr.isidentifier():
        return True  # an attribute named on purpose
    return path.endswith(".py") and os.path.isfile(path) and defines_program(path)


def cmd_check(args: argparse.Namespace) -> int:
    from xferlint.pipeline import check_paths, configure
    from xferlint.reporters import TIMELINE_FORMATS, ReportOptions, emit
    from xferlint.selection import select_rules

    settings = _settings(args)
    rules = select_rules(settings.select, settings.ignore, settings.extend_select)
    configure(rules, max_transfer_bytes=settings.max_transfer_bytes)
    paths = [p for p in args.paths if _is_program_input(p)] if args.only_programs else args.paths
    source_map = None
    if getattr(args, "etrecord", None):
        from xferlint.frontends.pte.debug import read_etrecord  # torch-free

        source_map = read_etrecord(args.etrecord)
    draws = settings.output_format in TIMELINE_FORMATS
    run = check_paths(paths, rules, strict=settings.strict, source_map=source_map, timelines=draws)
    if args.diff:
        return _check_diff(run, rules, settings)
    if args.fix:
        _check_fix(run, rules, settings)
    report = run.report()
    for error in report.errors:
        print(f"error: {error.message}", file=sys.stderr)
    options = ReportOptions(statistics=settings.statistics, project_root=settings.project_root,
                            rules=tuple(type(rule) for rule in rules), timelines=tuple(run.timelines or ()))
    _write(emit(report, settings.output_format, options), settings.output)
    if report.errors:
        return EXIT_ERROR
    if report.findings and not settings.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _check_diff(run, rules, settings) -> int:
    """`check --diff`: the fixes as diffs on stdout, nothing written; 1 if any."""
    from xferlint.fixes.driver import fix_run

    results, notes = fix_run(run, rules, unsafe_fixes=settings.unsafe_fixes, strict=settings.strict)
    for error in run.errors:
        print(f"error: {error.message}", file=sys.stderr)
    for note in notes:
        print(f"xferlint: {note}", file=sys.stderr)
    sys.stdout.write("".join(r.diff() for r in results))
    changed = [r for r in results if r.changed]
    fixes = sum(len(r.applied) for r in changed)
    print(f"Would fix {fixes} finding{'s' if fixes != 1 else ''}." if fixes else "No fixes available.",
          file=sys.stderr)
    if run.errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if changed else EXIT_CLEAN


def _check_fix(run, rules, settings) -> None:
    """`check --fix`: fix in place what can be written back, in memory otherwise."""
    from xferlint.fixes.driver import fix_run
    from xferlint.fsutil import write_atomic

    results, notes = fix_run(run, rules, unsafe_fixes=settings.unsafe_fixes, strict=settings.strict)
    for note in notes:
        print(f"xferlint: {note}", file=sys.stderr)
    for result in results:
        for line in result.summary_lines():
            print(line, file=sys.stderr)
        origin = next((p.view for p in run.loaded if p.view.input == result.input), None)
        if not result.changed or origin is None:
            continue
        if origin.kind == "pte" and origin.file:
            write_atomic(origin.file, result.buffer)
        else:
            print(f"{result.input}: fixed in memory only (an entry point is code); write the fixed program with "
                  f"`xferlint fix {result.input} -o OUT.pte`, or use xferlint.fixes.FixTransfersPass in its "
                  "to_executorch", file=sys.stderr)


def cmd_fix(args: argparse.Namespace) -> int:
    from xferlint.fixes.driver import fix_input
    from xferlint.fsutil import write_atomic
    from xferlint.selection import select_rules

    settings = _settings(args)
    rules = select_rules(settings.select, settings.ignore, settings.extend_select)
    output = args.output
    directory = os.path.dirname(os.path.abspath(output))
    if not output.endswith(".pte") or os.path.isdir(output):
        raise UsageError(f"{output}: the output must be a .pte file")
    if not os.path.isdir(directory):
        raise UsageError(f"{output}: directory {directory} does not exist")
    result = fix_input(args.input, rules, unsafe_fixes=settings.unsafe_fixes, strict=settings.strict)
    data, extra = result.buffer, result.data_files
    write_atomic(output, data)
    for name, blob in sorted(extra.items()):
        write_atomic(os.path.join(directory, name), blob)
    if args.diff:
        sys.stdout.write(result.diff())
    for line in result.summary_lines() + result.notes:
        print(line)
    print(f"wrote {output} ({len(data)} bytes)" + (f" and {', '.join(sorted(extra))}" if extra else ""))
    return EXIT_FINDINGS if result.skipped else EXIT_CLEAN


def cmd_rule(args: argparse.Namespace) -> int:
    from xferlint.docs import explain

    if not args.all and not args.code:
        raise UsageError("name a rule (e.g. `xferlint rule XF001`) or pass --all")
    sys.stdout.write(explain(None if args.all else args.code, fmt=args.format))
    return EXIT_CLEAN


def cmd_schema(args: argparse.Namespace) -> int:
    import json

    from xferlint.report import json_schema

    sys.stdout.write(json.dumps(json_schema(), indent=2, sort_keys=True) + "\n")
    return EXIT_CLEAN


def main(argv: Optional[Sequence[str]] = None) -> int:
    _quiet_libraries()
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    handler = {"check": cmd_check, "fix": cmd_fix, "rule": cmd_rule, "schema": cmd_schema}[args.command]
    try:
        return handler(args)
    except XferlintError as exc:
        print(f"xferlint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("xferlint: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, exit 2
        print(f"xferlint: internal error: {type(exc).__name__}: {exc} (please report it)", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
