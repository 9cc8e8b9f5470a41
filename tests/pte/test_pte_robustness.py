"""Bad `.pte` input: one clear line and exit 2, never a crash, a hang or a traceback.

Targeted corruptions of real lowered programs (an index pointed out of range, a count made
huge, the file cut short at each structural boundary, a wrong identifier) check the message
says what is wrong; a bounded fuzz run over thousands of mutated real programs checks that
nothing but a one-line InputError ever comes out, and that the CLI keeps linting the other
inputs and prints no traceback.
"""

from __future__ import annotations

import os
import random
import struct
import subprocess
import sys
import time

import pytest

from pte_fuzz import fixable_mutants, lint_bytes, mutate
from xferlint.frontends.pte.schema import generated
from xferlint.testing import synthetic_pte

FUZZ_CASES = 2500
FUZZ_SOURCES = ["addsin-noelide", "cond-nested", "map-nested", "multi-output", "two-methods", "host-stacktrace"]


def _patch(data: bytes, pos: int, value: int) -> bytes:
    buf = bytearray(data)
    struct.pack_into("<I", buf, pos, value & 0xFFFFFFFF)
    return bytes(buf)


def _plan(data: bytes):
    fb = generated()
    return fb.Program.Program.GetRootAs(data, 0).ExecutionPlan(0)


def _kernel_args_pos(data: bytes, instruction: int) -> int:
    """Byte offset of the first argument of a KernelCall / DelegateCall."""
    fb = generated()
    ins = _plan(data).Chains(0).Instructions(instruction)
    call = fb.KernelCall.KernelCall()
    call.Init(ins.InstrArgs().Bytes, ins.InstrArgs().Pos)
    return call._tab.Vector(call._tab.Offset(6))


def _field_pos(table, vtable_offset: int) -> int:
    """Byte offset of a scalar field (which must be stored, i.e. not its default)."""
    tab = getattr(table, "_tab", table)
    offset = tab.Offset(vtable_offset)
    assert offset, "the field holds its default and is not stored"
    return tab.Pos + offset


_bare = synthetic_pte.ladder(50)  # a program as a serializer writes it without segments


def _cases(pte_bytes):
    noelide = pte_bytes("addsin-noelide")
    cond = pte_bytes("cond-nested")
    plan = _plan(noelide)
    values_vector = plan._tab.Vector(plan._tab.Offset(8))
    fb = generated()
    kernel = plan.Chains(0).Instructions(3).InstrArgs()  # op_index 1 (0 is not stored)
    jump_table = _plan(cond).Chains(0).Instructions(2).InstrArgs()
    jump = fb.JumpFalseCall.JumpFalseCall()
    jump.Init(jump_table.Bytes, jump_table.Pos)
    return {
        "empty": (b"", "empty file"),
        "tiny": (noelide[:5], "too short"),
        "wrong magic": (noelide[:4] + b"XXXX" + noelide[8:], "not an ExecuTorch program"),
        "zip": (b"PK\x03\x04" + bytes(60), "zip archive"),
        "old schema": (noelide[:4] + b"ET09" + noelide[8:], "schema version ET09"),
        "truncated program": (noelide[: len(noelide) // 3], "truncated"),
        "truncated segments": (noelide[:-40], "truncated"),
        # no extended header to give the size away: a read past the end says what it means
        "truncated flatbuffer": (_bare[: len(_bare) // 2], "truncated or corrupt: execution_plan[0] points past the "
                                 f"program's end at byte {len(_bare) // 2} (cut short when copied or downloaded?)"),
        "value index out of range": (_patch(noelide, _kernel_args_pos(noelide, 0), 9999),
                                     "refers to value 9999"),
        "negative value index": (_patch(noelide, _kernel_args_pos(noelide, 0), -7), "refers to value -7"),
        "operator index out of range": (_patch(noelide, _field_pos(kernel, 4), 77), "calls operator 77"),
        "delegate index out of range": (_patch(noelide, _field_pos(plan.Chains(0).Instructions(5).InstrArgs(), 4), 5),
                                        "calls delegate 5"),
        "huge value count": (_patch(noelide, values_vector - 4, 0xFFFFFFF0), "claims"),
        "jump out of range": (_patch(cond, _field_pos(jump, 6), 4000), "jumps to instruction 4000"),
        "root offset out of range": (_patch(noelide, 0, 0x7FFFFFF0), "root table offset"),
    }


CASE_NAMES = ["empty", "tiny", "wrong magic", "zip", "old schema", "truncated program", "truncated segments",
              "truncated flatbuffer",
              "value index out of range", "negative value index", "operator index out of range",
              "delegate index out of range", "huge value count", "jump out of range", "root offset out of range"]


@pytest.mark.parametrize("case", CASE_NAMES)
def test_corrupt_file_gives_one_clear_line(pte_bytes, case):
    data, expected = _cases(pte_bytes)[case]
    message = lint_bytes(data, label="bad.pte")
    assert message is not None, f"{case}: accepted"
    assert message.startswith("bad.pte: ")
    assert expected in message, message
    assert "\n" not in message and len(message) < 400


def test_cli_reports_bad_inputs_and_lints_the_rest(pte_bytes, pte_file, tmp_path):
    cases = _cases(pte_bytes)
    bad = []
    for case in ("truncated program", "value index out of range", "huge value count", "wrong magic"):
        path = tmp_path / (case.replace(" ", "-") + ".pte")
        path.write_bytes(cases[case][0])
        bad.append(str(path))
    good = pte_file("addsin-noelide")
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "xferlint.cli", "check", *bad, good, "--isolated", "--format", "json", "-o", str(report)],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == len(bad), done.stderr
    assert "Traceback" not in done.stderr
    for path, line in zip(sorted(bad), sorted(lines)):
        assert line.startswith(f"error: {path}: "), line
    import json

    data = json.loads(report.read_text())
    assert [f["code"] for f in data["findings"]] == ["XF001"]  # the good file is still linted
    assert len(data["errors"]) == len(bad)


def test_unreadable_paths(tmp_path):
    from xferlint.pipeline import check_paths
    from xferlint.selection import select_rules

    directory = tmp_path / "dir.pte"
    directory.mkdir()
    run = check_paths([str(tmp_path / "missing.pte"), str(directory)], select_rules())
    messages = sorted(e.message for e in run.errors)
    assert len(messages) == 2 and all("\n" not in m for m in messages)
    assert any("no such file" in m for m in messages)


def test_a_jump_to_itself_does_not_hang(pte_bytes):
    """A JumpFalse that jumps to itself is an infinite loop at run time; linting it ends."""
    cond = pte_bytes("cond-nested")
    fb = generated()
    table = _plan(cond).Chains(0).Instructions(2).InstrArgs()
    jump = fb.JumpFalseCall.JumpFalseCall()
    jump.Init(table.Bytes, table.Pos)
    looped = _patch(cond, _field_pos(jump, 6), 2)
    assert lint_bytes(looped) is None


def test_fuzzed_real_programs_never_crash(pte_bytes):
    """Thousands of mutated real programs: each lints or is refused with one line."""
    sources = [pte_bytes(name) for name in FUZZ_SOURCES]
    rnd = random.Random(20240611)
    refused = linted = 0
    started = time.monotonic()
    for case in range(FUZZ_CASES):
        data = mutate(sources[case % len(sources)], rnd)
        try:
            message = lint_bytes(data)
        except Exception as exc:  # noqa: BLE001 - the point of the test
            raise AssertionError(f"case {case}: {type(exc).__name__}: {exc}") from exc
        if message is None:
            linted += 1
        else:
            refused += 1
            assert "\n" not in message and message.startswith("fuzz.pte: "), (case, message[:300])
        if time.monotonic() - started > 60:  # a bound on the test, not a speed assertion
            break
    assert refused + linted >= min(FUZZ_CASES, 500)
    assert refused and linted  # the mutations hit both valid-but-changed and broken files


def test_the_pinned_tables_read_mutated_programs_as_the_generated_classes_do(pte_bytes, monkeypatch):
    """The struct stand-ins the pinned schema reads with (`tables.py`) walk the program as
    ExecuTorch's generated classes do: on mutated real programs both read the same program,
    or both refuse the file."""
    from xferlint.frontends.pte import program as pp
    from xferlint.frontends.pte import schema
    from xferlint.frontends.pte.container import PteFormatError

    def read(data: bytes, pinned: bool):
        monkeypatch.setattr(schema, "_PINNED", [pinned])
        try:
            return pp.read_program(data)
        except PteFormatError:
            return "refused"

    sources = [pte_bytes(name) for name in FUZZ_SOURCES]
    rnd = random.Random(20261205)
    outcomes = set()
    for case in range(400):
        data = mutate(sources[case % len(sources)], rnd)
        ours = read(data, True)
        assert ours == read(data, False), case
        outcomes.add(ours == "refused")
    assert outcomes == {True, False}


def test_fixing_fuzzed_programs_never_crashes(pte_bytes):
    """`xferlint fix` on mutated fixable programs: a fixed file that reads back, or one line;
    and fixing the fixed file again changes nothing (case 382 of this seed once needed a
    second pass: XF004's fixes made room in the memory plan for a third)."""
    from xferlint.errors import XferlintError
    from xferlint.fixes.pte.fix import fix_pte_bytes
    from xferlint.frontends.pte.program import read_program
    from xferlint.selection import select_rules

    rules = select_rules()
    changed = 0
    for case, data in fixable_mutants(pte_bytes):
        try:
            result = fix_pte_bytes(data, rules, label="fuzz.pte")
        except XferlintError as exc:
            assert "\n" not in str(exc)
            continue
        if result.changed:
            changed += 1
            read_program(result.buffer)  # what fix writes always reads back
            again = fix_pte_bytes(result.buffer, rules, label="again.pte")
            assert not again.changed, (case, [p.code for p in result.applied], [p.code for p in again.applied])
    assert changed


def test_two_methods_of_the_same_name_are_malformed(pte_bytes):
    """Rename `forward` to `encode` in place (the string's length shrinks by one): the
    program then has two methods named `encode`, which ExecuTorch cannot address."""
    import struct

    from xferlint.frontends.pte import program as pp
    from xferlint.frontends.pte.container import PteFormatError

    data = bytearray(pte_bytes("two-methods"))
    at = data.find(struct.pack("<I", 7) + b"forward\0")
    assert at >= 0
    data[at:at + 12] = struct.pack("<I", 6) + b"encode\0\0"
    with pytest.raises(PteFormatError, match="are both named 'encode'; method names must be unique"):
        pp.read_program(bytes(data))


def test_fifos_devices_and_sparse_files_are_refused_without_reading_them(tmp_path, pte_bytes):
    """Only regular files are read, and a file's header is checked before the rest: a FIFO
    with no writer (given or inside a directory), a link to /dev/zero, a socket and a 2 GiB
    sparse file are each one line, at once; the good file beside them is linted."""
    from xferlint.pipeline import check_paths
    from xferlint.selection import select_rules

    import socket

    os.mkfifo(tmp_path / "fifo.pte")
    (tmp_path / "zero.pte").symlink_to("/dev/zero")
    listening = socket.socket(socket.AF_UNIX)  # a socket cannot even be opened: said as what it is
    listening.bind(str(tmp_path / "sock.pte"))
    with open(tmp_path / "sparse.pte", "wb") as handle:
        handle.truncate(2 << 30)
    inside = tmp_path / "dir"
    inside.mkdir()
    os.mkfifo(inside / "pipe.pte")
    (inside / "good.pte").write_bytes(pte_bytes("addsin-noelide"))
    names = ("fifo.pte", "zero.pte", "sparse.pte", "sock.pte", "dir")
    run = check_paths([str(tmp_path / n) for n in names], select_rules())
    listening.close()
    messages = {os.path.basename(e.input): e.message for e in run.errors}
    assert set(messages) == {"fifo.pte", "zero.pte", "sparse.pte", "sock.pte", "pipe.pte"}
    assert messages["sock.pte"].endswith("sock.pte: is a socket, not a .pte file; only regular files are read")
    assert "is a FIFO, not a .pte file" in messages["fifo.pte"] and "is a FIFO" in messages["pipe.pte"]
    assert "is a character device" in messages["zero.pte"]
    assert "not an ExecuTorch program" in messages["sparse.pte"]
    assert [loaded.view.input for loaded in run.loaded] == [str(inside / "good.pte")]


def test_dangling_and_looping_links_say_so(tmp_path, pte_bytes):
    """A symbolic link that leads nowhere is listed by `ls`: its one line says it is a link
    to nothing, not that there is no such file; a truly missing path says that."""
    from xferlint.errors import InputError
    from xferlint.frontends.files import read_input
    from xferlint.pipeline import check_paths
    from xferlint.selection import select_rules

    (tmp_path / "dangling.pte").symlink_to(tmp_path / "gone.pte")
    (tmp_path / "a.pte").symlink_to(tmp_path / "b.pte")
    (tmp_path / "b.pte").symlink_to(tmp_path / "a.pte")
    (tmp_path / "good.pte").write_bytes(pte_bytes("addsin-noelide"))
    names = ("dangling.pte", "a.pte", "missing.pte", "good.pte")
    run = check_paths([str(tmp_path / n) for n in names], select_rules())
    messages = {os.path.basename(e.input): e.message for e in run.errors}
    assert set(messages) == set(names[:3])
    for name in ("dangling.pte", "a.pte"):
        assert messages[name].endswith("a symbolic link to nothing (its target is missing, or the links go round "
                                       "in a loop)"), messages[name]
    assert messages["missing.pte"].endswith(": no such file")
    assert [loaded.view.input for loaded in run.loaded] == [str(tmp_path / "good.pte")]
    with pytest.raises(InputError, match="a.pte: a symbolic link to nothing"):  # a reader given the path itself
        read_input(str(tmp_path / "a.pte"), "a.pte", what="a .pte file", limit=1 << 20)


def test_an_etrecord_that_is_no_regular_file_is_one_line(tmp_path):
    from xferlint.errors import InputError
    from xferlint.frontends.pte.debug import read_etrecord

    os.mkfifo(tmp_path / "rec.bin")
    for path, problem in ((str(tmp_path / "rec.bin"), "is a FIFO"), ("/dev/zero", "is a character device")):
        with pytest.raises(InputError, match=problem):
            read_etrecord(path)


def test_source_lines_are_read_from_regular_files_only(tmp_path):
    from xferlint.frontends.pte.debug import location_of

    os.mkfifo(tmp_path / "model.py")
    trace = f'File "{tmp_path / "model.py"}", line 3, in forward\n    y = x + 1'
    location = location_of(trace)
    assert location is not None and location.line == 3 and location.column == 1


def test_names_with_line_breaks_and_escapes_stay_one_line(tmp_path, pte_bytes):
    """A file name may hold a newline or a terminal escape. Each finding, summary line and
    error is still one line, with those characters written as escapes (a backslash too, so
    the text reads back unambiguously); the JSON report keeps the name as it is."""
    import json

    good, bad = "good\nname\x1b[31m.pte", "bad\nna\\me.pte"
    (tmp_path / good).write_bytes(pte_bytes("addsin-noelide"))
    (tmp_path / bad).write_bytes(pte_bytes("addsin-noelide")[:100])
    command = [sys.executable, "-m", "xferlint.cli", "check", good, bad, "--isolated", "--statistics"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"error: bad\\nna\\\\me.pte: {done.stderr.split(': ', 2)[2].strip()}"]
    assert "\x1b" not in done.stdout and "\x1b" not in done.stderr
    assert any(line.startswith("  good\\nname\\x1b[31m.pte forward: ") for line in done.stdout.splitlines()), \
        done.stdout
    concise = subprocess.run(command[:-1], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    line = concise.stdout.splitlines()[0]
    assert line.startswith("good\\nname\\x1b[31m.pte:forward:instr ") and " XF001 " in line, concise.stdout
    report = subprocess.run(command[:-1] + ["--format", "json"], capture_output=True, text=True, timeout=120,
                            cwd=tmp_path)
    data = json.loads(report.stdout)
    assert {f["input"] for f in data["findings"]} == {good}
    assert [e["input"] for e in data["errors"]] == [bad]
    fixable = "fix\nme.pte"
    (tmp_path / fixable).write_bytes(synthetic_pte.round_trip_chain(3, own_bytes=True))  # every fix applies
    diff = subprocess.run([sys.executable, "-m", "xferlint.cli", "check", fixable, "--isolated", "--diff"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert diff.stdout.splitlines()[:2] == ["--- fix\\nme.pte (forward)", "+++ fix\\nme.pte (forward, fixed)"], \
        diff.stderr


def test_an_empty_argument_says_so(tmp_path, pte_bytes):
    """`xferlint check "$MODEL"` with MODEL unset: the line quotes the blank argument and
    says what it is, the other inputs are still linted."""
    from xferlint.pipeline import check_paths
    from xferlint.selection import select_rules

    good = tmp_path / "good.pte"
    good.write_bytes(pte_bytes("addsin-noelide"))
    run = check_paths(["", " ", str(good)], select_rules())
    assert [e.message for e in run.errors] == [
        f"{blank!r}: an empty argument, not a file or entry point (an unset shell variable?)" for blank in ("", " ")]
    assert [loaded.view.input for loaded in run.loaded] == [str(good)]


def _closing(fd: int):
    return lambda: os.close(fd)


def test_closed_or_full_standard_streams(xferlint_exe, pte_file, tmp_path):
    """stdout closed (`>&-`) or full (`> /dev/full`): one error line, exit 2, no traceback.
    stderr closed (`2>&-`): its lines are dropped, not written into the report on stdout."""
    good, missing = pte_file("addsin-noelide"), str(tmp_path / "missing.pte")
    check = [xferlint_exe, "check", good, "--isolated"]
    closed = subprocess.run(check, stderr=subprocess.PIPE, text=True, timeout=120, preexec_fn=_closing(1))
    assert closed.returncode == 2
    assert closed.stderr.splitlines() == [
        "error: standard output is closed: nowhere to write the report (-o FILE writes it to a file)"]
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            done = subprocess.run(check, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
        assert done.returncode == 2
        assert done.stderr.splitlines() == ["error: standard output: cannot write the report (No space left on device)"]
        for argv, what in ((["rule", "XF001"], "the rule's text"), (["schema"], "the schema"),
                           (["fix", good, "-o", str(tmp_path / "fixed.pte")], "the summary")):
            with open("/dev/full", "w") as full:
                done = subprocess.run([xferlint_exe, *argv], stdout=full, stderr=subprocess.PIPE, text=True,
                                      timeout=120)
            assert done.returncode == 2
            assert done.stderr.splitlines() == [f"error: standard output: cannot write {what} (No space left on "
                                                "device)"], done.stderr
        assert not (tmp_path / "fixed.pte").exists()
    closed = subprocess.run([xferlint_exe, "schema"], stderr=subprocess.PIPE, text=True, timeout=120,
                            preexec_fn=_closing(1))
    assert closed.returncode == 2
    assert closed.stderr.splitlines() == ["error: standard output is closed: nowhere to write the schema"]
    quiet = subprocess.run(check + [missing, "--format", "json"], stdout=subprocess.PIPE, text=True, timeout=120,
                           preexec_fn=_closing(2))
    import json

    assert quiet.stdout.startswith("{"), (quiet.returncode, quiet.stdout[:300])
    report = json.loads(quiet.stdout)
    assert quiet.returncode == 2 and len(report["errors"]) == 1 and report["findings"]


def test_paths_before_and_after_options(capsys, pte_file, tmp_path):
    """`xferlint check a.pte --select XF001 b.pte`: paths on both sides of the options are
    all inputs (as ruff and mypy take them); an unknown option is still one usage error."""
    import json

    from xferlint.cli import main

    good, missing = pte_file("addsin-noelide"), str(tmp_path / "missing.pte")
    code = main(["check", good, "--isolated", "--select", "XF001", missing, "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 2 and [e["input"] for e in report["errors"]] == [missing] and report["findings"]
    with pytest.raises(SystemExit) as usage:
        main(["check", good, "--bogus", missing])
    assert usage.value.code == 2
    assert capsys.readouterr().err == f"error: unrecognized arguments: --bogus {missing} (see `xferlint --help`)\n"
    with pytest.raises(SystemExit):
        main(["fix", good, "-o", str(tmp_path / "out.pte"), missing])  # fix takes one input
    assert capsys.readouterr().err == f"error: unrecognized arguments: {missing} (see `xferlint --help`)\n"


def test_a_removed_working_directory_is_one_line(xferlint_exe, pte_file, tmp_path):
    """The shell's directory was removed under it: check and fix say so in one line; the
    commands that read no paths still run."""
    gone = tmp_path / "gone"
    gone.mkdir()

    def enter_and_remove():
        os.chdir(gone)
        os.rmdir(gone)

    good = pte_file("addsin-noelide")
    for argv in (["check", good], ["fix", good, "-o", str(tmp_path / "fixed.pte")]):
        done = subprocess.run([xferlint_exe, *argv], capture_output=True, text=True, timeout=120,
                              preexec_fn=enter_and_remove)
        gone.mkdir()
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr == ("error: the current directory no longer exists (removed while the shell was in it?); "
                               "cd into one that does\n")
    done = subprocess.run([xferlint_exe, "rule", "XF001"], capture_output=True, text=True, timeout=120,
                          preexec_fn=enter_and_remove)
    assert done.returncode == 0 and done.stdout.startswith("# redundant-round-trip (XF001)")


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_program_named_twice_is_linted_and_counted_once(capsys, monkeypatch, tmp_path, pte_bytes, jobs):
    """The same file by another spelling, through a link, or inside a directory also given:
    one program, its findings once, under the name it was first given (as ruff counts)."""
    import json

    from xferlint.cli import main
    from xferlint.pipeline import check_paths
    from xferlint.selection import select_rules

    monkeypatch.chdir(tmp_path)
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "a.pte").write_bytes(pte_bytes("addsin-noelide"))
    (tmp_path / "link.pte").symlink_to(tmp_path / "dir" / "a.pte")
    names = ["dir/a.pte", "./dir/a.pte", "link.pte", "dir", str(tmp_path / "dir" / "a.pte")]
    assert main(["check", *names, "--isolated", "--format", "json", "-j", jobs]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["summary"]["programs"] == 1
    assert [f["input"] for f in report["findings"]] == ["dir/a.pte"]
    once = check_paths(names, select_rules())
    assert [loaded.view.input for loaded in once.loaded] == ["dir/a.pte"] and once.inputs == 1


def test_a_file_name_that_is_no_utf8_gives_valid_reports(xferlint_exe, tmp_path, pte_bytes):
    """Linux file names are bytes: `\\xff.pte` is no UTF-8. Every report is still valid
    UTF-8 (JSON on stdout and in a file, SARIF, the text); JSON gives the name back as the
    characters Python holds it as (so `os.fsencode` gives its bytes), SARIF's URI quotes its
    bytes, and a baseline written for it accepts its findings."""
    import json

    name = os.fsdecode(b"\xff\xfe.pte")
    (tmp_path / name).write_bytes(pte_bytes("addsin-noelide"))

    def run(*argv):
        done = subprocess.run([xferlint_exe, "check", name, "--isolated", *argv], capture_output=True,
                              timeout=120, cwd=tmp_path)
        assert b"internal error" not in done.stderr and b"Traceback" not in done.stderr, done.stderr
        return done.returncode, done.stdout.decode("utf-8")  # strict: valid UTF-8 or this raises

    code, out = run("--format", "json")
    assert code == 1 and {f["input"] for f in json.loads(out)["findings"]} == {name}
    assert os.fsencode(json.loads(out)["findings"][0]["input"]) == b"\xff\xfe.pte"
    assert run("--format", "json", "-o", "report.json")[0] == 1
    assert json.loads((tmp_path / "report.json").read_text(encoding="utf-8")) == json.loads(out)
    code, out = run("--format", "sarif")
    uris = {loc["physicalLocation"]["artifactLocation"]["uri"] for result in json.loads(out)["runs"][0]["results"]
            for loc in result["locations"]}
    assert uris == {"%FF%FE.pte"}
    code, out = run()
    assert out.startswith("\\udcff\\udcfe.pte:forward:instr ")
    assert run("--write-baseline", "baseline.json")[0] == 0
    assert run("--baseline", "baseline.json")[0] == 0  # every finding accepted


@pytest.mark.parametrize("fmt", ["html", "full", "sarif"])
def test_a_stack_trace_naming_a_fifo_does_not_hang_any_report(tmp_path, monkeypatch, fmt):
    """A `.pte`'s stack trace names a FIFO as its source file (a crafted file, or a build
    tree reused): every report that shows source lines finishes, with the line the trace
    itself holds; none opens the FIFO."""
    from xferlint.cli import main

    fifo = tmp_path / "model.py"
    os.mkfifo(fifo)
    monkeypatch.setattr(synthetic_pte, "TRACED_FILE", str(fifo))
    program = tmp_path / "traced.pte"
    program.write_bytes(synthetic_pte.serialize([synthetic_pte.traced(synthetic_pte._loops_plan(2, 3), period=10)]))
    report = tmp_path / f"report.{fmt}"
    done = []

    def run():
        done.append(main(["check", str(program), "--isolated", "--format", fmt, "-o", str(report)]))

    import threading

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(60)
    if worker.is_alive():  # let the thread go: open the FIFO's other end, once
        with open(fifo, "w"):
            pass
        pytest.fail(f"the {fmt} report blocked on the FIFO")
    assert done == [1] and "x = self.step" in report.read_text()


def test_python_files_that_are_fifos_or_devices_are_one_line_not_a_hang(tmp_path, pte_bytes):
    """A FIFO named model.py inside a directory (discovery reads each .py to see whether it
    binds `program`), given by name, or a link to /dev/zero: one line each, at once; nothing
    is imported, and the `.pte` beside them is linted. In a child process with a deadline
    and a memory limit: what this guards against is a hang and an endless read."""
    import json
    import resource

    inside = tmp_path / "models"
    inside.mkdir()
    os.mkfifo(inside / "model.py")
    (inside / "good.pte").write_bytes(pte_bytes("addsin-noelide"))
    os.mkfifo(tmp_path / "named.py")
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    script = (
        "import json, sys\n"
        "from xferlint.pipeline import check_paths\n"
        "from xferlint.selection import select_rules\n"
        "run = check_paths(sys.argv[1:], select_rules())\n"
        "print(json.dumps([sorted(e.message for e in run.errors), [l.view.input for l in run.loaded]]))\n"
    )

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    done = subprocess.run([sys.executable, "-c", script, str(inside), str(tmp_path / "named.py"),
                           str(tmp_path / "zero.py:program")], capture_output=True, text=True, timeout=120,
                          preexec_fn=limited)
    messages, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert messages == sorted([
        f"{inside / 'model.py'}:program: is a FIFO, not a Python file; only regular files are read",
        f"{tmp_path / 'named.py'}:program: is a FIFO, not a Python file; only regular files are read",
        f"{tmp_path / 'zero.py'}:program: is a character device, not a Python file; only regular files are read",
    ]), messages
    assert loaded == [str(inside / "good.pte")]


def test_without_git_a_work_tree_walked_gets_a_note(tmp_path, monkeypatch, capsys, pte_bytes):
    """A slim CI image without git: .gitignore cannot be applied, so the walk says so once
    (what it ignores is linted too), and nothing is said outside a work tree."""
    import xferlint.frontends.discovery as discovery
    from xferlint.cli import main

    project = tmp_path / "project"
    (project / "ignored").mkdir(parents=True)
    (project / ".git").mkdir()
    (project / ".gitignore").write_text("ignored/\n")
    (project / "a.pte").write_bytes(pte_bytes("addsin-noelide"))
    (project / "ignored" / "b.pte").write_bytes(pte_bytes("addsin-noelide"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    monkeypatch.setattr(discovery, "_NO_GIT_NOTED", [])
    monkeypatch.chdir(project)
    assert main(["check", ".", "ignored", "--isolated", "--format", "json", "--no-cache"]) == 1
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert notes == ["note: .: git was not found, so .gitignore is not applied here (what it ignores is linted "
                     "too); install git, or name what to skip with --extend-exclude"]
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.pte").write_bytes(pte_bytes("addsin-noelide"))
    monkeypatch.setattr(discovery, "_NO_GIT_NOTED", [])
    monkeypatch.chdir(plain)
    assert main(["check", ".", "--isolated", "--no-cache"]) == 1
    assert "note:" not in capsys.readouterr().err
