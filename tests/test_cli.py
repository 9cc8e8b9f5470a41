"""The `xferlint` command as users and CI run it.

Exit codes, the one-line-per-bad-input contract and "no traceback" are checked through
real subprocesses of the installed console script (each re-imports torch, ~5 s, so bad
inputs are batched into one invocation). Finer behaviour (selection, config, -o, JSON
determinism) runs `xferlint.cli.main` in-process, where the entry points' modules and
their lowered programs are imported once.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import jsonschema
import pytest

from hand_built import dead_copy_view
from xferlint.cli import main

FINDING_KEYS = {"code", "name", "severity", "message", "input", "method", "nodes", "devices", "bytes", "location",
                "fixable"}

# The model each good entry point lowers is defined in the entry file itself, so that
# findings are located in it. `{devices}` and `{extra}` are filled per file.
MODEL = textwrap.dedent(
    """\
    import torch

    from xferlint.testing import lower


    class Pair(torch.nn.Module):
        def forward(self, x, y):
            a = x + y  # SOURCE-LINE
            return torch.sin(a)


    def build():
        inputs = (torch.ones(4, 4), torch.ones(4, 4))
        return lower(Pair(), inputs, {devices}{extra})
    """
)

GOOD = {
    # one XF001; prints on stdout at import time
    "roundtrip.py": MODEL.format(devices='["cuda:0", "cuda:0"]', extra=", elide=False")
    + 'print("chatter at import time")\nprogram = build()\nalt_name = program\n',
    # one XF002; a zero-argument callable that prints, from Python and from C (memoized:
    # the in-process tests call it many times)
    "staging.py": MODEL.format(devices='["cuda:0", "cuda:1"]', extra="")
    + textwrap.dedent(
        """\
        import functools


        @functools.lru_cache(maxsize=None)
        def program():
            import os
            print("chatter from the callable")
            os.write(1, b"chatter written to fd 1\\n")
            return build()
        """
    ),
    # one XF003, in a dict of programs
    "dead.py": MODEL.format(devices='["cuda:0", "cuda:0"]', extra=", elide=False, rewire_without_dce=True")
    + 'program = {"rewired": build()}\n',
}

BAD = {
    "no_program.py": "x = 1\n",
    "import_raises.py": 'program = None\nraise RuntimeError("boom at import")\n',
    "wrong_type.py": "program = 42\n",
    "syntax_error.py": "def program(:\n    pass\n",
    "call_raises.py": 'def program():\n    raise ValueError("no model today")\n',
    "needs_args.py": "def program(x):\n    return x\n",
    "empty_dict.py": "program = {}\n",
    "dict_of_junk.py": 'program = {"a": "not a program"}\n',
}


def _write_tree(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    """A workspace outside the repo: entry points good and bad, a project directory to
    discover, a package to import by dotted name."""
    root = tmp_path_factory.mktemp("cli")
    _write_tree(root, GOOD)
    _write_tree(root, BAD)
    _write_tree(root, {
        # discovery: only files whose top level binds `program` are imported
        "project/model_a.py": MODEL.format(devices='["cuda:0", "cuda:0"]', extra=", elide=False")
        + "program = {'eager': build(), 'lazy': build}\n",
        "project/sub/model_b.py": MODEL.format(devices='["cuda:0", "cuda:1"]', extra="")
        + "def program():\n    return build()\n",
        "project/helper.py": "open(__file__ + '.imported', 'w').close()\nraise RuntimeError('helper imported')\n",
        "project/README.txt": "not python\n",
        # a package on sys.path through the current directory
        "mypkg/__init__.py": "",
        "mypkg/models.py": MODEL.format(devices='["cuda:0", "cuda:0"]', extra=", elide=False")
        + "programs = {'first': build(), 'second': build}\nfactory = build\n",
    })
    return root


def _run(exe, *args, cwd):
    done = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout, done.stderr[-3000:]
    return done


def _source_line(path) -> int:
    with open(path, encoding="utf-8") as handle:
        return next(i for i, line in enumerate(handle, 1) if line.rstrip().endswith("# SOURCE-LINE"))


@pytest.fixture(scope="module")
def schema(xferlint_exe, tmp_path_factory):
    done = _run(xferlint_exe, "schema", cwd=tmp_path_factory.mktemp("schema"))
    assert done.returncode == 0
    schema = json.loads(done.stdout)
    jsonschema.validators.validator_for(schema).check_schema(schema)
    return schema


def _validate(report: dict, schema: dict) -> None:
    jsonschema.validate(report, schema)
    assert {"version", "findings", "errors", "summary"} <= set(report)
    for finding in report["findings"]:
        assert FINDING_KEYS <= set(finding), FINDING_KEYS - set(finding)


# --------------------------------------------------------------------------- subprocess


def test_clean_program_exits_0(xferlint_exe, repo_root):
    done = _run(xferlint_exe, "check", "sample_models/same_device_elided.py", "--isolated", cwd=repo_root)
    assert done.returncode == 0, done.stderr
    assert "All checks passed!" in done.stdout
    assert "error" not in done.stderr.lower()


def test_findings_exit_1_in_text_format(xferlint_exe, ws):
    done = _run(xferlint_exe, "check", "roundtrip.py", "--isolated", cwd=ws)
    assert done.returncode == 1, done.stderr
    first = done.stdout.splitlines()[0]
    match = re.match(r"^(?P<path>[^:]+):(?P<line>\d+):(?P<col>\d+): XF001 \[\*\] (?P<message>.+)$", first)
    assert match, first
    assert match["path"] == "roundtrip.py" and int(match["line"]) == _source_line(ws / "roundtrip.py")
    assert int(match["col"]) == 9  # `a = x + y` is indented by 8
    assert "cuda:0" in match["message"]
    assert "Found 1 finding (1 XF001)" in done.stdout
    # What the entry point printed went to stderr, not into the report.
    assert "chatter" not in done.stdout and "chatter at import time" in done.stderr


BAD_INPUTS = ["missing_file.py", *BAD, "roundtrip.py:missing_attr", "nopkg.nomod:attr", "mypkg.models:nothing"]
DISCOVERED = ["project", "mypkg.models:programs", "mypkg.models:factory"]


@pytest.fixture(scope="module")
def batch(xferlint_exe, ws):
    """One invocation with every bad input, good single files, a directory to discover
    and a package's attributes (each subprocess re-imports torch: batch what can be)."""
    done = _run(xferlint_exe, "check", *BAD_INPUTS, "roundtrip.py", "staging.py", *DISCOVERED,
                "--format", "json", "--isolated", cwd=ws)
    return done, json.loads(done.stdout)  # what user code printed (Python or C level) is not in it


def test_bad_inputs_one_line_each_and_the_rest_still_linted(batch, schema):
    done, report = batch
    assert done.returncode == 2, done.stderr
    stderr_lines = done.stderr.splitlines()
    for label in BAD_INPUTS:
        naming = [line for line in stderr_lines if label in line]
        assert len(naming) == 1, f"{label}: {naming}\n{done.stderr}"
        assert naming[0].startswith("error: ")
    _validate(report, schema)
    for text in ("chatter at import time", "chatter from the callable", "chatter written to fd 1"):
        assert text in done.stderr and text not in done.stdout
    singles = sorted((f["input"], f["code"]) for f in report["findings"] if f["input"].startswith(("roundtrip", "staging")))
    assert singles == [("roundtrip.py:program", "XF001"), ("staging.py:program", "XF002")]
    errors = {e["input"]: e["message"] for e in report["errors"]}
    assert len(errors) == len(BAD_INPUTS) == report["summary"]["errors"]
    expected = {
        "missing_file.py": "no such file",
        "no_program.py:program": "no top-level `program`",
        "import_raises.py:program": "RuntimeError: boom at import",
        "wrong_type.py:program": "int; expected an ExportedProgram",
        "syntax_error.py:program": "syntax error at line 1",
        "call_raises.py:program": "ValueError: no model today",
        "needs_args.py:program": "must take no arguments",
        "empty_dict.py:program": "empty dict",
        "dict_of_junk.py:program": "str; expected an ExportedProgram",
        "roundtrip.py:missing_attr": "no attribute `missing_attr`",
        "nopkg.nomod:attr": "no module named 'nopkg'",
        "mypkg.models:nothing": "no attribute `nothing`",
    }
    for label, fragment in expected.items():
        assert label in errors, sorted(errors)
        assert fragment in errors[label], errors[label]
        assert "\n" not in errors[label]
    # 12 bad inputs, 2 single files, 2 discovered files and 2 package attributes.
    assert report["summary"]["inputs"] == len(BAD_INPUTS) + 2 + 4
    assert report["summary"]["programs"] == 2 + 6


def test_unknown_select_code_is_a_usage_error(xferlint_exe, ws):
    done = _run(xferlint_exe, "check", "roundtrip.py", "--select", "XF001,XF999", "--isolated", cwd=ws)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "'XF999'" in lines[0] and "XF001 (redundant-round-trip)" in lines[0], done.stderr
    assert done.stdout == ""


def test_invalid_config_key_names_the_key(xferlint_exe, ws, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.xferlint]\nselct = ["XF001"]\n')
    done = _run(xferlint_exe, "check", str(ws / "roundtrip.py"), cwd=tmp_path)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "'selct'" in lines[0] and "pyproject.toml" in lines[0] and "extend-select" in lines[0]


def test_discovery_packages_dicts_and_callables(batch, ws):
    done, report = batch
    found = sorted((f["input"], f["code"]) for f in report["findings"] if f["input"].startswith(("project", "mypkg")))
    sep = os.sep
    assert found == sorted([
        (f"project{sep}model_a.py:program[eager]", "XF001"),
        (f"project{sep}model_a.py:program[lazy]", "XF001"),
        (f"project{sep}sub{sep}model_b.py:program", "XF002"),
        ("mypkg.models:programs[first]", "XF001"),
        ("mypkg.models:programs[second]", "XF001"),
        ("mypkg.models:factory", "XF001"),
    ])
    assert {f["program"] for f in report["findings"]} >= {"eager", "lazy", "first", "second", "factory"}
    assert not [e for e in report["errors"] if e["input"].startswith("project")]
    # helper.py does not define `program`: discovery parsed it and never imported it.
    assert not (ws / "project" / "helper.py.imported").exists()
    assert "helper" not in done.stderr
    # Locations point at the entry files' own model source.
    for finding in report["findings"]:
        loc = finding["location"]
        assert loc is not None and loc["line"] == _source_line(loc["file"]), finding


# --------------------------------------------------------------------------- in-process


def _check(capfd, *args):
    """Run `xferlint check` in-process; returns (exit code, stdout, stderr)."""
    code = main(["check", *args])
    out, err = capfd.readouterr()
    assert "Traceback" not in err
    return code, out, err


def _codes(capfd, *args):
    code, out, err = _check(capfd, *args, "--format", "json", "--isolated")
    assert code in (0, 1), err
    return sorted(f["code"] for f in json.loads(out)["findings"])


@pytest.fixture
def in_ws(ws, monkeypatch):
    monkeypatch.chdir(ws)
    return ws


ALL3 = ("roundtrip.py", "staging.py", "dead.py")


@pytest.mark.parametrize(
    "selection, expected",
    [
        ([], ["XF001", "XF002", "XF003"]),
        (["--select", "XF001"], ["XF001"]),
        (["--select", "redundant-round-trip,XF003"], ["XF001", "XF003"]),
        (["--select", "XF00", "--ignore", "cross-device-staging"], ["XF001", "XF003"]),
        (["--select", "ALL", "--ignore", "XF001", "--ignore", "dead-device-to-host"], ["XF002"]),
        (["--select", "XF002", "--extend-select", "dead-device-to-host"], ["XF002", "XF003"]),
        (["--ignore", "XF"], []),
    ],
)
def test_selection_by_code_prefix_and_name(capfd, in_ws, selection, expected):
    assert _codes(capfd, *ALL3, *selection) == expected


@pytest.mark.parametrize("spelling", ["kebab", "snake"])
def test_config_in_pyproject(capfd, ws, tmp_path, monkeypatch, spelling):
    extend = "extend-select" if spelling == "kebab" else "extend_select"
    exit_zero = "exit-zero" if spelling == "kebab" else "exit_zero"
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(f"""\
        [tool.xferlint]
        select = ["XF002"]
        {extend} = ["redundant-round-trip"]
        format = "json"
        {exit_zero} = true
        """))
    nested = tmp_path / "deeper" / "still"
    nested.mkdir(parents=True)
    monkeypatch.chdir(nested)  # the nearest pyproject.toml upward is used
    code, out, err = _check(capfd, *(str(ws / f) for f in ALL3))
    assert code == 0, err
    assert sorted(f["code"] for f in json.loads(out)["findings"]) == ["XF001", "XF002"]
    # The command line wins over the file; --isolated ignores it.
    code, out, _ = _check(capfd, *(str(ws / f) for f in ALL3), "--select", "XF003", "--format", "text")
    assert code == 0 and "XF003" in out and "XF002" not in out
    code, out, _ = _check(capfd, *(str(ws / f) for f in ALL3), "--isolated")
    assert code == 1 and out.count(": XF00") == 3


def test_config_by_path(capfd, in_ws, tmp_path):
    config = tmp_path / "custom.toml"
    config.write_text('[tool.xferlint]\nignore = ["XF001"]\nformat = "json"\n')
    code, out, _ = _check(capfd, *ALL3, "--config", str(config))
    assert code == 1
    assert sorted(f["code"] for f in json.loads(out)["findings"]) == ["XF002", "XF003"]


def test_output_file_is_written_atomically(capfd, in_ws, tmp_path, schema):
    out_dir = tmp_path / "reports"
    out_dir.mkdir()
    target = out_dir / "report.json"
    target.write_text("old report\n")
    code, out, _ = _check(capfd, *ALL3, "--format", "json", "-o", str(target), "--isolated")
    assert code == 1
    assert out == ""  # the report went to the file, not stdout
    report = json.loads(target.read_text())
    _validate(report, schema)
    assert len(report["findings"]) == 3
    assert os.listdir(out_dir) == ["report.json"], "no temporary file left behind"


def test_an_in_process_check_keeps_nothing_of_its_run(capfd, in_ws):
    # An editor or a test calls `main` in a process that goes on: what the command kept to
    # the end (its programs, findings, report and text) is let go when it returns.
    from xferlint import run_caches

    code, out, _ = _check(capfd, *ALL3, "--format", "json", "--isolated")
    assert code == 1 and json.loads(out)["findings"]
    assert not any(run_caches._CACHES)


def test_unwritable_output_is_one_line(capfd, in_ws, tmp_path):
    target = tmp_path / "no" / "such" / "dir" / "report.json"
    code, out, err = _check(capfd, "roundtrip.py", "-o", str(target), "--isolated")
    assert code == 2
    lines = [line for line in err.splitlines() if str(target) in line]
    assert len(lines) == 1 and "cannot write" in lines[0], err
    assert not target.parent.exists()


def test_json_output_is_deterministic(capfd, in_ws):
    first = _check(capfd, *ALL3, "--format", "json", "--isolated")[1]
    second = _check(capfd, *reversed(ALL3), "--format", "json", "--isolated")[1]
    assert first == second
    report = json.loads(first)
    assert report["summary"]["by_code"] == {"XF001": 1, "XF002": 1, "XF003": 1}
    assert report["summary"]["findings"] == 3 and report["summary"]["fixable"] == 2
    # A finding's bytes are its copies' (a round trip or a staging moves 64 B each way, a dead
    # D2H once); the footer counts each copy once, and no copy is named twice here.
    by_code = {f["code"]: f["bytes"] for f in report["findings"]}
    assert by_code == {"XF001": 128, "XF002": 128, "XF003": 64}
    assert report["summary"]["bytes_flagged"] == sum(f["bytes"] for f in report["findings"]) == 5 * 64


def test_text_output_format(capfd, in_ws):
    code, out, _ = _check(capfd, *ALL3, "--isolated")
    assert code == 1
    lines = out.splitlines()
    pattern = re.compile(r"^(roundtrip|staging|dead)\.py:(\d+):(\d+): (XF00[123])( \[\*\])? \S")
    located = [pattern.match(line) for line in lines[:3]]
    assert all(located), lines
    for match in located:
        assert int(match[2]) == _source_line(in_ws / f"{match[1]}.py")
        assert (match[5] is not None) == (match[4] in ("XF001", "XF003"))  # [*] marks fixable rules
    assert "Found 3 findings (1 XF001, 1 XF002, 1 XF003) in 3 programs." in lines


def test_exit_zero_and_statistics(capfd, in_ws):
    code, out, err = _check(capfd, "roundtrip.py", "staging.py", "--exit-zero", "--statistics", "--isolated")
    assert code == 0, err
    lines = out.splitlines()
    assert "1\tXF001\t[*] redundant-round-trip" in lines
    assert "1\tXF002\tcross-device-staging" in lines
    assert not any(re.match(r"^\S+:\d+:\d+: XF", line) for line in lines), "statistics replace the findings"
    # --exit-zero does not hide input errors.
    assert _check(capfd, "roundtrip.py", "no_program.py", "--exit-zero", "--isolated")[0] == 2


@pytest.mark.parametrize("selector", ["XF001", "redundant-round-trip"])
def test_rule_command(capfd, selector):
    assert main(["rule", selector]) == 0
    out, _ = capfd.readouterr()
    assert out.startswith("# redundant-round-trip (XF001)")
    assert "## What it does" in out and "## Fix safety" in out


def test_unknown_rule_and_no_command(capfd):
    assert main(["rule", "XF999"]) == 2
    _, err = capfd.readouterr()
    assert len(err.strip().splitlines()) == 1 and "XF999" in err
    assert main([]) == 2


def test_file_attribute_entry_point(capfd, in_ws):
    code, out, _ = _check(capfd, "roundtrip.py:alt_name", "--format", "json", "--isolated")
    assert code == 1
    (finding,) = json.loads(out)["findings"]
    assert finding["input"] == "roundtrip.py:alt_name" and finding["program"] == "alt_name"


HAND_BUILT = dead_copy_view("built.py:program")


def test_a_view_built_in_an_entry_point_is_that_files_program(capfd, tmp_path, monkeypatch):
    """A ProgramView built by hand (no file of its own) is the entry point file's program:
    its findings name the file, SARIF points there, and per-file-ignores on it apply."""
    (tmp_path / "built.py").write_text(HAND_BUILT)
    monkeypatch.chdir(tmp_path)
    code, out, _ = _check(capfd, "built.py", "--format", "json", "--isolated")
    (finding,) = json.loads(out)["findings"]
    assert code == 1 and finding["code"] == "XF003" and finding["file"] == str(tmp_path / "built.py")
    code, out, _ = _check(capfd, "built.py", "--format", "sarif", "--isolated")
    (result,) = json.loads(out)["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("built.py")
    (tmp_path / "pyproject.toml").write_text('[tool.xferlint]\nper-file-ignores = {"built.py" = ["XF003"]}\n')
    code, out, _ = _check(capfd, "built.py", "--format", "json")
    assert code == 0 and json.loads(out)["findings"] == []


def test_a_crashing_rule_is_an_error_entry_not_a_traceback(capfd, in_ws, monkeypatch):
    from xferlint.rules.redundant_round_trip import RedundantRoundTrip

    original = RedundantRoundTrip.check

    def crash_on_roundtrip(self, ctx):
        if ctx.program.input.startswith("roundtrip.py"):
            raise RuntimeError("rule blew up " + "y" * 5000)
        return original(self, ctx)

    monkeypatch.setattr(RedundantRoundTrip, "check", crash_on_roundtrip)
    code, out, err = _check(capfd, "roundtrip.py", "staging.py", "--format", "json", "--isolated")
    assert code == 2
    lines = [line for line in err.splitlines() if "rule blew up" in line]
    assert len(lines) == 1 and "roundtrip.py" in lines[0] and "internal error" in lines[0], err
    assert len(lines[0]) < 800  # one readable line, however long the message
    report = json.loads(out)
    assert [(f["input"], f["code"]) for f in report["findings"]] == [("staging.py:program", "XF002")]
    assert [(e["input"], e["kind"]) for e in report["errors"]] == [("roundtrip.py:program", "internal")]


# --------------------------------------------------------------------------- honest output (issue 10)


def test_every_printed_program_name_is_a_valid_input(capfd, in_ws):
    """`dead.py:program[rewired]` as the output prints it selects that program of the dict."""
    code, out, _ = _check(capfd, "dead.py", "--format", "json", "--isolated")
    (label,) = {f["input"] for f in json.loads(out)["findings"]}
    assert label == "dead.py:program[rewired]"
    code, out, err = _check(capfd, label, "--format", "json", "--isolated")
    assert code == 1 and [f["code"] for f in json.loads(out)["findings"]] == ["XF003"]
    code, out, err = _check(capfd, "dead.py:program[nope]", "--isolated")
    assert code == 2 and "has no program named 'nope' (it has: rewired)" in err


@pytest.mark.parametrize("argv, problem", [
    (["--select", ""], "--select: empty rule selector"),
    (["--select", "XF001,,XF003"], "--select: empty rule selector"),
    (["--ignore", ","], "--ignore: empty rule selector"),
    (["--select", "XF999"], "unknown rule selector 'XF999'"),
    (["--diff", "--format", "json"], "--diff prints a unified diff, not json"),
    (["--diff", "--fix"], "pass one of them"),
    (["--project-root", "roundtrip.py"], "roundtrip.py: the project root (--project-root or `project-root`) is no "
                                         "directory"),
    (["--project-root", "no/such/dir"], "no/such/dir: the project root"),
])
def test_usage_errors_are_one_line_exit_2(capfd, in_ws, argv, problem):
    code, out, err = _check(capfd, "roundtrip.py", "--isolated", *argv)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [err.strip()] and err.startswith("error: ") and problem in err


@pytest.mark.parametrize("command", ["check", "rule", "fix", "schema"])
def test_a_parser_built_for_one_command_parses_and_helps_like_the_whole_one(command):
    from xferlint.cli import build_parser

    argv = {"check": ["check", "a.pte", "--format", "json", "-j", "2"], "rule": ["rule", "XF001", "--format", "json"],
            "fix": ["fix", "a.pte", "-o", "b.pte", "--diff"], "schema": ["schema"]}[command]
    whole, one = build_parser(), build_parser(command)
    assert vars(one.parse_args(argv)) == vars(whole.parse_args(argv))
    assert one.format_help() == whole.format_help()  # every command listed, with its help
    sub = next(a for a in whole._actions if a.dest == "command")
    one_sub = next(a for a in one._actions if a.dest == "command")
    assert one_sub.choices[command].format_help() == sub.choices[command].format_help()


def test_argparse_errors_have_the_same_form(capfd):
    with pytest.raises(SystemExit) as exit_info:
        main(["check", "--no-such-option", "x.pte"])
    assert exit_info.value.code == 2
    err = capfd.readouterr().err
    assert err.startswith("error: unrecognized arguments: --no-such-option") and "usage:" not in err


@pytest.mark.parametrize("text, problem", [
    ('[tool.xferlint\nselect = ["XF001"]\n', "not valid TOML"),
    ('[tool.xferlint]\nignore = ["XF999"]\n', "[tool.xferlint] ignore: unknown rule selector 'XF999'"),
    ('[tool.xferlint]\nextend-select = [""]\n', "[tool.xferlint] extend-select: empty rule selector"),
    ('[tool.xferlint]\nselect = []\n', "[tool.xferlint] select: empty, so no rule would run"),
])
def test_a_bad_discovered_config_is_an_error_naming_the_file(capfd, ws, tmp_path, monkeypatch, text, problem):
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text(text)
    monkeypatch.chdir(project / "src")
    code, out, err = _check(capfd, str(ws / "roundtrip.py"))
    assert code == 2 and out == ""
    assert err.startswith(f"error: {project / 'pyproject.toml'}: ") and problem in err, err


def test_a_broken_pyproject_without_our_table_is_not_ours(capfd, ws, tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[project\nname = 'x'\n")
    monkeypatch.chdir(tmp_path)
    code, _, err = _check(capfd, str(ws / "roundtrip.py"), "--select", "XF001")
    assert code == 1, err


def test_directory_discovery_skips_tests_hidden_venvs_and_gitignored(capfd, ws, tmp_path, monkeypatch):
    model = (ws / "roundtrip.py").read_text()
    trap = "import pathlib\npathlib.Path(__file__).with_suffix('.imported').touch()\nprogram = None\n"
    _write_tree(tmp_path, {
        "models/real.py": model,
        "conftest.py": trap,
        "tests/conftest.py": trap,
        "tests/test_models.py": trap,
        "tests/fixture_model.py": model,
        "models/model_test.py": trap,
        ".hidden/m.py": trap,
        "env/pyvenv.cfg": "home = /usr\n",
        "env/lib/m.py": trap,
        "generated/m.py": trap,
        "vendor/m.py": trap,
        ".gitignore": "generated/\n",
    })
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    code, out, err = _check(capfd, ".", "--format", "json", "--isolated", "--extend-exclude", "vendor")
    assert code == 1, err
    report = json.loads(out)
    assert {f["input"] for f in report["findings"]} == {os.path.join("models", "real.py") + ":program"}
    assert report["errors"] == []
    assert not list(tmp_path.rglob("*.imported")), "no skipped file was imported"
    # named on purpose, a test folder is linted
    code, out, err = _check(capfd, "tests", "--format", "json", "--isolated")
    assert code == 1, err
    assert {f["input"] for f in json.loads(out)["findings"]} == {os.path.join("tests", "fixture_model.py") + ":program"}
    # --exclude replaces the defaults; in the config too
    (tmp_path / "pyproject.toml").write_text('[tool.xferlint]\nextend-exclude = ["models"]\n')
    code, out, err = _check(capfd, ".", "--extend-exclude", "vendor")
    assert code == 2 and "no entry points found" in err


def test_output_refuses_a_read_only_file_and_writes_through_links(capfd, in_ws, tmp_path):
    locked = tmp_path / "locked.json"
    locked.write_text("keep me")
    os.chmod(locked, 0o444)
    code, out, err = _check(capfd, "roundtrip.py", "--format", "json", "-o", str(locked), "--isolated")
    assert code == 2 and "the file is read-only" in err and str(locked) in err
    assert locked.read_text() == "keep me"
    target = tmp_path / "real.json"
    link = tmp_path / "link.json"
    link.symlink_to(target)
    code, _, err = _check(capfd, "roundtrip.py", "--format", "json", "-o", str(link), "--isolated")
    assert code == 1, err
    assert link.is_symlink() and json.loads(target.read_text())["findings"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "locked.json", "real.json"]


def test_fix_of_a_dict_names_each_program_as_an_input(capfd, in_ws, tmp_path):
    """`xferlint fix` writes one program: given a dict, it names each as the input that
    selects it, and the first of those fixes that one."""
    code = main(["fix", "project/model_a.py", "-o", str(tmp_path / "out.pte"), "--isolated"])
    err = capfd.readouterr().err
    assert code == 2 and err == ("error: project/model_a.py: holds 2 programs (project/model_a.py:program[eager], "
                                 "project/model_a.py:program[lazy]); `xferlint fix` writes one, so name one of "
                                 "them\n"), err
    assert main(["fix", "project/model_a.py:program[eager]", "-o", str(tmp_path / "out.pte"), "--isolated"]) in (0, 1)
    assert (tmp_path / "out.pte").exists()


def test_an_entry_point_named_twice_is_linted_once(capfd, in_ws):
    """`m.py`, `m.py:program` and `./m.py` name one entry point: lowered and counted once."""
    code, out, _ = _check(capfd, "roundtrip.py", "--format", "json", "--isolated")
    single = json.loads(out)
    code, out, _ = _check(capfd, "roundtrip.py", "roundtrip.py:program", "./roundtrip.py", "--format", "json",
                          "--isolated")
    report = json.loads(out)
    assert code == 1 and report["summary"]["programs"] == 1
    assert report["findings"] == single["findings"]


def test_output_never_replaces_an_input_of_the_run(capfd, in_ws, tmp_path):
    """`-o` naming a file the run reads (given, with its attribute, found in a directory, or
    its configuration) is one line and exit 2, and the file is as it was: a slip of the keyboard must not put a
    report where the model was."""
    model, discovered, config = in_ws / "roundtrip.py", in_ws / "project" / "model_a.py", tmp_path / "xferlint.toml"
    config.write_text('[tool.xferlint]\nignore = ["XF002"]\n')
    before = {path: path.read_bytes() for path in (model, discovered, config)}
    for argv, output in ((["roundtrip.py", "--isolated"], "roundtrip.py"),
                         (["roundtrip.py:program", "--isolated"], "./roundtrip.py"),
                         (["project", "--isolated"], str(discovered)),
                         (["roundtrip.py", "--config", str(config)], str(config))):
        code, out, err = _check(capfd, *argv, "--format", "json", "-o", output)
        lines = err.strip().splitlines()
        assert code == 2 and out == "", err
        assert len(lines) == 1 and lines[0].startswith(f"error: {output}: -o names "), err
        assert lines[0].endswith(", an input of this run, and the report would replace it; name another file"), err
    code, _, err = _check(capfd, "roundtrip.py", "--isolated", "--write-baseline", "roundtrip.py")
    assert code == 2 and err.strip().endswith("the baseline would replace it; name another file"), err
    baseline = tmp_path / "baseline.json"
    code, _, _ = _check(capfd, "roundtrip.py", "--isolated", "--write-baseline", str(baseline))
    before[baseline] = baseline.read_bytes()
    code, _, err = _check(capfd, "roundtrip.py", "--isolated", "--baseline", str(baseline), "-o", str(baseline))
    assert code == 2 and "the report would replace it" in err, err
    assert {path: path.read_bytes() for path in before} == before
    code, _, err = _check(capfd, "roundtrip.py", "--isolated", "--baseline", str(baseline),
                          "--write-baseline", str(baseline))
    assert code == 0, err  # a baseline written over the one it was read from: asked for


def test_output_to_a_fifo_without_reader_is_an_error_not_a_hang(capfd, in_ws, tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    code, _, err = _check(capfd, "roundtrip.py", "-o", str(fifo), "--isolated")
    assert code == 2 and "a FIFO with no reader" in err


@pytest.mark.parametrize("comment, kept", [
    ("# xferlint: noqa: XF001", False),
    ("# noqa: E501, XF001", False),
    ("# xferlint: noqa", False),
    ("# xferlint: noqa: XF004", True),
    ("# noqa", True),  # a bare noqa belongs to other tools
    ("# noqa: E501", True),
])
def test_suppression_comments_on_the_finding_line(capfd, tmp_path, monkeypatch, comment, kept):
    monkeypatch.chdir(tmp_path)  # the project: comments outside it are not honoured
    source = MODEL.format(devices='["cuda:0", "cuda:0"]', extra=", elide=False").replace(
        "# SOURCE-LINE", comment) + "program = build()\n"
    (tmp_path / "model.py").write_text(source)
    code, out, err = _check(capfd, str(tmp_path / "model.py"), "--format", "json", "--isolated", "--select", "XF001")
    report = json.loads(out)
    assert [f["code"] for f in report["findings"]] == (["XF001"] if kept else []), err
    assert code == (1 if kept else 0)
    if not kept:
        assert report["summary"]["transfers"]["flagged_bytes"] == 0


def test_a_file_level_suppression(capfd, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = "# xferlint: noqa-file: XF001\n" + MODEL.format(devices='["cuda:0", "cuda:0"]', extra=", elide=False") \
        + "program = build()\n"
    (tmp_path / "model.py").write_text(source)
    code, out, _ = _check(capfd, str(tmp_path / "model.py"), "--format", "json", "--isolated")
    assert code == 0 and json.loads(out)["findings"] == []


def test_a_baseline_accepts_todays_findings_and_fails_on_new_ones(xferlint_exe, tmp_path):
    """Subprocesses: the model file changes between runs (an in-process run caches it)."""
    model = tmp_path / "model.py"
    one = MODEL.format(devices='["cuda:0", "cuda:0"]', extra=", elide=False") + "program = build()\n"
    model.write_text(one)

    def check(*args):
        done = _run(xferlint_exe, "check", "model.py", "--isolated", *args, cwd=tmp_path)
        return done.returncode, done.stdout, done.stderr

    code, _, err = check("--write-baseline", "xferlint-baseline.json")
    assert code == 0 and "Recorded 1 finding in xferlint-baseline.json" in err
    assert json.loads((tmp_path / "xferlint-baseline.json").read_text())["entries"][0]["code"] == "XF001"
    # code moves down: the entry still matches, the gate stays green, nothing is counted
    model.write_text("# a new header comment\n\n\n" + one)
    code, out, err = check("--baseline", "xferlint-baseline.json", "--format", "json")
    assert code == 0 and json.loads(out)["findings"] == [] and "1 finding accepted" in err
    assert json.loads(out)["summary"]["transfers"]["flagged_bytes"] == 0
    # -q: the findings only, so the note goes; the outcome is the same
    code, out, err = check("--baseline", "xferlint-baseline.json", "--format", "json", "-q")
    assert code == 0 and json.loads(out)["findings"] == [] and "note:" not in err
    # a second program with the same finding is new
    model.write_text(one + "program = {'program': program, 'other': build()}\n")
    code, out, _ = check("--baseline", "xferlint-baseline.json", "--format", "json")
    assert code == 1 and [f["program"] for f in json.loads(out)["findings"]] == ["other"]
    # nothing left to match: stale, pruned on request
    model.write_text(MODEL.format(devices='["cuda:0", "cuda:0"]', extra="") + "program = build()\n")
    code, _, err = check("--baseline", "xferlint-baseline.json", "--prune-baseline")
    assert code == 0 and "pruned 1 stale entry" in err
    assert json.loads((tmp_path / "xferlint-baseline.json").read_text())["entries"] == []
    code, _, err = check("--baseline", "missing.json")
    assert code == 2 and "missing.json: no such file" in err
