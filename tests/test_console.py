"""The console script (`xferlint.console_script:main`, then `xferlint.cli:console`): it ends
the process with os._exit to skip freeing the heap, so everything the user gets must be out
before that: the whole report on a pipe, the exit code, and what atexit handlers do. Its
start-up leaves out what a check never uses (`inspect`, the collector while modules load)
without changing what user code or data classes see."""

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


def _run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=BUFFERED)


def test_the_console_script_checks_a_pte_without_importing_inspect(tmp_path):
    program, out, marker = tmp_path / "ladder.pte", tmp_path / "report.json", tmp_path / "modules"
    program.write_bytes(sp.ladder(3))
    done = _run_python(
        "import atexit, sys\n"
        f"atexit.register(lambda: open({str(marker)!r}, 'w').write(' '.join(\n"
        "    m for m in ('inspect', 'ast', 'dis', 'tokenize') if m in sys.modules)))\n"
        "from xferlint.console_script import main\n"
        f"sys.argv = ['xferlint', 'check', {str(program)!r}, '--format', 'json', '-o', {str(out)!r}]\n"
        "main()\n")
    assert done.returncode == 1, done.stderr
    assert json.loads(out.read_text())["findings"]
    assert marker.read_text() == ""  # none of them was imported


def test_a_data_class_without_a_docstring_still_gets_the_standard_one():
    done = _run_python(
        "import sys\n"
        "from xferlint.console_script import import_dataclasses_lazily\n"
        "import_dataclasses_lazily()\n"
        "assert 'dataclasses' in sys.modules and 'inspect' not in sys.modules\n"
        "import dataclasses\n"
        "@dataclasses.dataclass\n"
        "class Point:\n"
        "    x: int\n"
        "    label: str = 'origin'\n"
        "import inspect\n"
        "assert type(inspect).__name__ == 'module', type(inspect)  # everyone else gets the real module\n"
        "assert dataclasses.inspect is inspect  # and so does dataclasses, once it used it\n"
        "print(Point.__doc__)\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Point(x: int, label: str = 'origin')"


def test_entry_points_run_with_the_collector_on(xferlint_exe, tmp_path):
    """Start-up pauses the collector; user code must find it running again, in a worker
    (-j 2) or in the process itself (-j 1)."""
    (tmp_path / "model.py").write_text(
        "import gc, os\n"
        "open(f'collector-{os.getpid()}', 'w').write(str(gc.isenabled()))\n"
        "program = None\n")
    for jobs in ("1", "2"):
        done = subprocess.run([xferlint_exe, "check", "--isolated", "-j", jobs, "model.py"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    seen = [path.read_text() for path in tmp_path.glob("collector-*")]
    assert seen and set(seen) == {"True"}, seen


def test_one_line_escapes_what_breaks_a_line_and_keeps_tabs():
    """A newline, a carriage return or ESC in a name is written as its escape (and then a
    backslash too, so the text reads back); a tab, which breaks no line, stays as a source
    line has it, and leaves the backslashes beside it alone."""
    from xferlint.console import one_line

    assert one_line("new\nline\r\x1b[31m.pte") == "new\\nline\\r\\x1b[31m.pte"
    assert one_line("a\\b\n") == "a\\\\b\\n"
    assert one_line('x = "\\n"\t# aligned') == 'x = "\\n"\t# aligned'
    assert one_line("\tindented\nnext\\") == "\tindented\\nnext\\\\"
    assert one_line("plain ünï 模型") == "plain ünï 模型"
