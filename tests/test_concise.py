"""Concise and full text on the bundled sample models (entry points and `.pt2` archives),
colour, -q / -s, and `per-file-ignores`.

The sample models are linted once (in process) and rendered in every text form from that
one report; the CLI tests use single small samples.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys

import pytest

from xferlint.reporters import ReportOptions, emit
from xferlint.rules.base import format_bytes

# The problem matcher in the README: path:line:col, or input:method:instr N for a .pte
# finding without source, then the code, the fix mark and the message.
MATCHER = re.compile(r"^(?P<file>[^:\s][^:]*):(?:(?P<line>\d+):(?P<col>\d+)|(?P<method>[\w.]+):(?P<node>[^:]+)): "
                     r"(?P<code>XF\d{3}) (?:\[\*\] )?(?P<message>.+)$")
FX_NAMES = re.compile(r"_h2d_copy|_d2h_copy|getitem|executorch_call_delegate|aten_\w+_default|_to_copy|alloc")


@pytest.fixture(scope="module")
def samples(repo_root):
    from xferlint.fixes.driver import settle_fixability
    from xferlint.frontends.discovery import from_settings
    from xferlint.pipeline import check_paths, configure
    from xferlint.selection import select_rules

    here = os.getcwd()
    os.chdir(repo_root)
    try:
        rules = select_rules()
        configure(rules, max_transfer_bytes=None)
        run = check_paths(["sample_models"], rules, discovery=from_settings(None, ()))
        settle_fixability(run, rules)
        report = run.report()
        concise = emit(report, "concise", ReportOptions())
        full = emit(report, "full", ReportOptions())
    finally:
        os.chdir(here)
    assert not report.errors, report.errors
    return report, concise, full


def _finding_lines(text: str, report) -> list[str]:
    return text.splitlines()[: len(report.findings)]


def test_every_sample_finding_is_one_short_line(samples):
    report, concise, _ = samples
    lines = _finding_lines(concise, report)
    assert len(report.findings) >= 40
    assert any(".pt2:" in line for line in lines)  # the archives' findings are in there too
    for line in lines:
        assert len(line) < 160, line
        assert MATCHER.match(line), line
        assert not FX_NAMES.search(line), line
    mean = sum(map(len, lines)) / len(lines)
    assert mean < 150, mean


def test_the_short_message_carries_devices_and_the_findings_own_bytes(samples):
    report, _, _ = samples
    for finding in report.findings:
        assert finding.detail and finding.detail != finding.message
        assert any(device in finding.message for device in finding.devices if device != "unknown"), finding.message
        if finding.bytes is not None and finding.code not in ("XF012",):
            assert format_bytes(finding.bytes) in finding.message, finding.message


def test_text_is_concise(samples):
    report, concise, _ = samples
    assert emit(report, "text", ReportOptions()) == concise


def test_full_shows_the_source_line_and_the_remedy(samples):
    report, _, full = samples
    for finding in report.findings:
        assert finding.detail.split()[-1] in full  # the whole detail is there, wrapped
    assert "tag_constant_data" in full and "tag_constant_data" not in "".join(f.message for f in report.findings)
    assert "help: `xferlint rule XF001`" in full
    assert re.search(r"^  \d+ \| ", full, re.M)  # the source line under the finding


def test_an_archive_or_dict_program_is_named_before_the_message(samples):
    report, concise, _ = samples
    lines = _finding_lines(concise, report)
    assert any(re.search(r" XF006 program\[edge\]: ", line) for line in lines)
    assert any(re.search(r" XF001 (?:\[\*\] )?round_trip\.pt2: ", line) for line in lines)
    assert not any("(in program[" in line for line in lines)


# --------------------------------------------------------------------------- CLI


SAMPLE = "sample_models/redundant_round_trip.py"


def _check(repo_root, *args, env=None, paths=(SAMPLE,)):
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    environment.update(env or {})
    exe = os.path.join(os.path.dirname(sys.executable), "xferlint")
    return subprocess.run([exe, "check", *paths, "--isolated", *args], cwd=repo_root, capture_output=True,
                          text=True, timeout=300, env=environment)


@pytest.fixture(scope="module")
def on_a_tty(repo_root):
    """The same check with stdout on a pseudo-terminal, as a user's shell runs it."""
    exe = os.path.join(os.path.dirname(sys.executable), "xferlint")
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}

    def run(*args, env=None):
        controller, terminal = pty.openpty()
        try:
            done = subprocess.run([exe, "check", SAMPLE, "--isolated", "-q", *args], cwd=repo_root,
                                  stdout=terminal, stderr=subprocess.PIPE, timeout=300,
                                  env={**environment, **(env or {})})
            os.close(terminal)
            terminal = None
            chunks = []
            while True:
                try:
                    chunk = os.read(controller, 65536)
                except OSError:  # EIO: the writer is gone
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            return done.returncode, b"".join(chunks).decode()
        finally:
            if terminal is not None:
                os.close(terminal)
            os.close(controller)

    return run


def test_colour_on_a_terminal_and_off_by_no_color_or_flag(on_a_tty):
    rc, text = on_a_tty()
    assert rc == 1 and "\x1b[1;31mXF001\x1b[0m" in text and "\x1b[36m[*]\x1b[0m" in text
    for args, env in (((), {"NO_COLOR": "1"}), (("--no-color",), None)):
        rc, text = on_a_tty(*args, env=env)
        assert rc == 1 and "XF001 [*]" in text and "\x1b[" not in text


def test_no_colour_into_a_pipe_or_a_file(repo_root, tmp_path):
    done = _check(repo_root, "-q")
    assert done.returncode == 1 and "\x1b[" not in done.stdout and "XF001 [*]" in done.stdout
    forced = _check(repo_root, "-q", "-o", str(tmp_path / "out.txt"), env={"FORCE_COLOR": "1"})
    assert forced.returncode == 1 and "\x1b[" not in (tmp_path / "out.txt").read_text()
    assert "\x1b[" in _check(repo_root, "-q", env={"FORCE_COLOR": "1"}).stdout


def test_quiet_prints_the_findings_only_and_silent_nothing(repo_root, tmp_path):
    quiet = _check(repo_root, "-q")
    assert quiet.returncode == 1
    assert [line.split(": ", 1)[1][:9] for line in quiet.stdout.splitlines()] == ["XF001 [*]", "XF001 [*]"]
    silent = _check(repo_root, "-s", "-o", str(tmp_path / "report.json"), "--output-format", "json")
    assert (silent.returncode, silent.stdout, silent.stderr) == (1, "", "")
    assert '"XF001"' in (tmp_path / "report.json").read_text()  # -o is still written
    missing = _check(repo_root, "-s", paths=(SAMPLE, "no_such_model.py"))
    assert (missing.returncode, missing.stdout, missing.stderr) == (2, "", "")


def test_quiet_and_silent_exclude_each_other(repo_root):
    done = _check(repo_root, "-q", "-s")
    assert done.returncode == 2 and "not allowed with" in done.stderr


def test_full_format_on_the_command_line(repo_root):
    done = _check(repo_root, "--output-format", "full")
    assert done.returncode == 1
    flowing = " ".join(done.stdout.split())  # the detail is wrapped at 100 columns
    assert "Feed `getitem` to the consumer directly" in flowing and "Found 2 findings" in done.stdout
