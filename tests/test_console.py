"""The console script (`xferlint.cli:console`): it ends the process with os._exit to skip
freeing the heap, so everything the user gets must be out before that: the whole report on
a pipe, the exit code, and what atexit handlers do."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from xferlint.testing import synthetic_pte as sp


# stdout buffered, as on a pipe by default (the environment may ask for unbuffered output)
BUFFERED = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def _console(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "xferlint.cli", *args], capture_output=True, text=True,
                          timeout=120, env=BUFFERED)


def test_a_large_report_on_a_pipe_arrives_whole_with_the_exit_code(tmp_path):
    program = tmp_path / "ladder.pte"
    program.write_bytes(sp.ladder(200))  # hundreds of findings: far more than a pipe buffer holds
    done = _console(["check", str(program), "--format", "json"])
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert len(report["findings"]) > 300
    assert len(done.stdout) > 65536


def test_clean_and_usage_exit_codes_are_kept(tmp_path):
    program = tmp_path / "ladder.pte"
    program.write_bytes(sp.ladder(2))
    assert _console(["check", str(program), "--exit-zero", "--format", "json"]).returncode == 0
    assert _console(["check", str(tmp_path / "missing.pte")]).returncode == 2


def test_atexit_handlers_still_run(tmp_path):
    marker = tmp_path / "ran"
    code = ("import atexit, sys\n"
            f"atexit.register(lambda: open({str(marker)!r}, 'w').write('yes'))\n"
            "from xferlint.cli import console\n"
            "sys.argv = ['xferlint', 'rule', 'XF001']\n"
            "console()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=BUFFERED)
    assert done.returncode == 0, done.stderr
    assert "redundant-round-trip" in done.stdout
    assert marker.read_text() == "yes"
