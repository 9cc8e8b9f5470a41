"""Entry points in worker processes (issue 11 items 4 and 5).

The pool (xferlint/workers/pool.py) is tested in-process with plain Python tasks (no torch);
the CLI through real subprocesses, -j 1 and -j 2 side by side on the same inputs: entry
points that exit, hang, raise KeyboardInterrupt, raise, segfault and are SIGKILLed (what the
OOM killer does: the model kills itself rather than exhausting a shared machine's memory),
mixed with good ones; Ctrl-C in the middle of a run; the progress line on a terminal.
"""

from __future__ import annotations

import io
import json
import os
import pty
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from hand_built import dead_copy_view
from xferlint.progress import Progress
from xferlint.workers.pool import Done, Failed, Task, run_tasks

# --------------------------------------------------------------------------- the pool


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _pid_file_task(path: str, then):
    def run():
        with open(path, "w") as handle:
            handle.write(str(os.getpid()))
        return then()

    return run


def _sleep_forever():
    while True:
        time.sleep(0.05)


def _segfault():
    import ctypes

    ctypes.string_at(0)


def _raise():
    raise ValueError("from the task")


def test_pool_outcomes_in_order_each_failure_one_line(tmp_path):
    pid_file = str(tmp_path / "sleeper.pid")
    tasks = [
        Task("ok", lambda: {"n": 1}),
        Task("exits", lambda: os._exit(3)),
        Task("sleeps", _pid_file_task(pid_file, _sleep_forever)),
        Task("segv", _segfault),
        Task("killed", lambda: os.kill(os.getpid(), signal.SIGKILL)),
        Task("raises", _raise),
        Task("big", lambda: b"x" * (3 << 20)),  # larger than a pipe's buffer
    ]
    outcomes = run_tasks(tasks, jobs=2, timeout=3, write=lambda data: None,
                         timeout_message=lambda label, s: f"{label}: over {s:g} s")
    assert outcomes[0] == Done({"n": 1})
    assert outcomes[6] == Done(b"x" * (3 << 20))
    messages = [o.message for o in outcomes[1:6]]
    assert all(isinstance(o, Failed) for o in outcomes[1:6])
    assert "exited with status 3" in messages[0]
    assert messages[1] == "sleeps: over 3 s"
    assert "crashed (SIGSEGV)" in messages[2]
    assert "killed (SIGKILL" in messages[3]
    assert "ValueError: from the task" in messages[4] and messages[4].startswith("raises: ")
    assert all("\n" not in m for m in messages)
    with open(pid_file) as handle:
        assert _gone(int(handle.read()))


def test_a_timeout_longer_than_the_clock_holds_is_no_limit():
    """`--timeout 1e308` (or `timeout = 1e308` in the config) never expires: the tasks run
    to their end, not into select's overflow (an internal error once)."""
    outcomes = run_tasks([Task("a", lambda: 1), Task("b", lambda: 2)], jobs=2, timeout=1e308,
                         write=lambda data: None, timeout_message=lambda label, s: label)
    assert outcomes == [Done(1), Done(2)]


def _oom_score() -> int:
    with open("/proc/self/oom_score_adj") as handle:
        return int(handle.read())


@pytest.mark.skipif(not os.path.exists("/proc/self/oom_score_adj"), reason="Linux's OOM killer only")
def test_a_worker_is_the_oom_killers_first_choice():
    """A model that exhausts memory should be the process the kernel kills (its input's one
    error line), not the parent holding the run's results: each worker asks to go first."""
    before = _oom_score()
    assert run_tasks([Task("score", _oom_score)], jobs=1, timeout=30, write=lambda data: None,
                     timeout_message=lambda label, s: label) == [Done(1000)]
    assert _oom_score() == before  # the parent is left as it was


def _chatty(text: str, delay: float):
    def run():
        time.sleep(delay)
        print(text, flush=True)
        os.write(2, f"{text} on fd 2\n".encode())
        return text

    return run


def test_pool_output_in_task_order_whatever_finishes_first():
    for jobs in (1, 3):
        written = bytearray()
        tasks = [Task("slow", _chatty("first", 0.3)), Task("fast", _chatty("second", 0)),
                 Task("faster", _chatty("third", 0))]
        outcomes = run_tasks(tasks, jobs=jobs, write=written.extend)
        assert [o.payload for o in outcomes] == ["first", "second", "third"]
        assert written.decode() == "first\nfirst on fd 2\nsecond\nsecond on fd 2\nthird\nthird on fd 2\n"


def test_a_task_no_process_can_be_started_for_is_one_failure_the_others_run(monkeypatch):
    """The process limit reached (EAGAIN) or no descriptor left for its pipes (EMFILE):
    that task fails with one line naming it, no descriptor is left open, the others run."""
    import errno

    real_fork, real_pipe = os.fork, os.pipe
    calls = {"fork": 0, "pipe": 0}

    def fork():
        calls["fork"] += 1
        if calls["fork"] == 2:
            raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
        return real_fork()

    def pipe():
        calls["pipe"] += 1
        if calls["pipe"] == 6:  # the third task's first pipe (two per task)
            raise OSError(errno.EMFILE, "Too many open files")
        return real_pipe()

    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    monkeypatch.setattr(os, "fork", fork)
    monkeypatch.setattr(os, "pipe", pipe)
    tasks = [Task(name, lambda name=name: name) for name in ("a", "b", "c", "d")]
    outcomes = run_tasks(tasks, jobs=1, write=lambda data: None)
    monkeypatch.setattr(os, "fork", real_fork)
    monkeypatch.setattr(os, "pipe", real_pipe)
    assert outcomes[0] == Done("a") and outcomes[3] == Done("d")
    assert outcomes[1] == Failed("b: no process could be started to run it (Resource temporarily unavailable)")
    assert outcomes[2] == Failed("c: no process could be started to run it (Too many open files)")
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) == before


def test_pool_interrupted_kills_every_worker(tmp_path):
    pid_files = [str(tmp_path / f"{i}.pid") for i in range(2)]
    tasks = [Task(f"t{i}", _pid_file_task(p, _sleep_forever)) for i, p in enumerate(pid_files)]

    def interrupt_once_both_run(done, running):
        if len(running) == 2 and all(os.path.exists(p) and os.path.getsize(p) for p in pid_files):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_tasks(tasks, jobs=2, on_change=interrupt_once_both_run, write=lambda data: None)
    for path in pid_files:
        with open(path) as handle:
            assert _gone(int(handle.read()))


# --------------------------------------------------------------------------- progress


def _screen(transcript: str) -> str:
    """What a terminal shows after `transcript`: `\\r` returns, ESC[K erases to the end."""
    lines, line, col = [], [], 0
    for part in re.split(r"(\r|\n|\x1b\[K)", transcript):
        if part == "\r":
            col = 0
        elif part == "\n":
            lines.append("".join(line))
            line, col = [], 0
        elif part == "\x1b[K":
            del line[col:]
        else:
            for ch in part:
                if col < len(line):
                    line[col] = ch
                else:
                    line.append(ch)
                col += 1
    if line:
        lines.append("".join(line))
    return "\n".join(lines)


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_waits_a_second_then_shows_and_leaves_nothing():
    clock, stream = _Clock(), io.StringIO()
    with Progress(3, stream=stream, enabled=True, clock=clock) as progress:
        progress.update(0, ["a.py:program"])
        assert stream.getvalue() == ""  # a quick run shows nothing
        clock.now += 1.5
        progress.update(1, ["b.py:program", "c.py:program"])
        assert _screen(stream.getvalue()) == "xferlint: 1/3 inputs, lowering b.py:program (+1 more), 2 s"
        progress.clear()
        stream.write("user output\n")
        clock.now += 2
        progress.update(2, ["c.py:program"])
    assert _screen(stream.getvalue()) == "user output"  # and the progress line gone


def test_progress_redraws_at_most_ten_times_a_second_and_shows_the_latest():
    clock, stream = _Clock(), io.StringIO()
    with Progress(500, stream=stream, enabled=True, clock=clock) as progress:
        clock.now += 1.5
        for done in range(200):  # a directory of small programs: hundreds of inputs a second
            progress.update(done, [f"dir/p{done}.pte"], action="checking")
            clock.now += 0.001
        assert stream.getvalue().count("\r") == 2  # at 1.5 s, and once 0.1 s had passed
        clock.now += 0.1
        progress.update(200, ["dir/p200.pte"], action="checking")
        assert _screen(stream.getvalue()) == "xferlint: 200/500 inputs, checking dir/p200.pte, 2 s"


def test_progress_ticks_while_one_long_input_is_checked_and_stops_with_it():
    """`ticking()`: while one input takes long (nothing calls `update`), the line is redrawn
    from a thread with the elapsed time moving; the ticks end with the block."""
    stream = io.StringIO()
    with Progress(1, stream=stream, enabled=True, delay=0.0) as progress:
        progress.update(0, ["big.pte"], action="checking")
        drawn = stream.getvalue().count("\r")
        with progress.ticking(interval=0.01):
            time.sleep(1.2)
        after = stream.getvalue()
        assert after.count("\r") > drawn
        assert re.fullmatch(r"xferlint: 0/1 inputs, checking big\.pte, [12] s", _screen(after))
        time.sleep(0.1)
        assert stream.getvalue() == after
    assert _screen(stream.getvalue()) == ""


def _read_terminal(leader: int) -> bytes:
    """Everything written to a pseudo-terminal until the run on its other end closes it."""
    transcript = bytearray()
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the run ended and closed the terminal
            break
        if not chunk:
            break
        transcript += chunk
    os.close(leader)
    return bytes(transcript)


def _on_a_terminal(cwd, script: str, *args: str) -> tuple[int, str]:
    """Run `script` with its stderr on a pseudo-terminal: (exit code, what it drew there)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.DEVNULL, stderr=follower,
                            cwd=cwd, env={**os.environ, "XFERLINT_NO_CACHE": "1"})
    os.close(follower)
    transcript = _read_terminal(leader)
    return proc.wait(timeout=120), transcript.decode(errors="replace")


_SLOW_FILE = r"""
import sys, time
import xferlint.workers.check as check
real = check.check_entry
def slow(*args, **kwargs):  # a program file that takes seconds to check, as 100,000 instructions do
    time.sleep(1.6)
    return real(*args, **kwargs)
check.check_entry = slow
from xferlint.cli import main
sys.exit(main(["check", "--isolated", "-j", "1", "--format", "json", "-o", sys.argv[2], sys.argv[1]]))
"""


def test_one_long_program_file_shows_progress_on_a_terminal(tmp_path):
    """A single `.pte` checked in this process for over a second: the progress line shows
    it (no other input finishes meanwhile to redraw it), and is gone when the run ends."""
    from xferlint.testing import synthetic_pte as sp

    pte = tmp_path / "ladder.pte"
    pte.write_bytes(sp.ladder(3))
    code, shown = _on_a_terminal(tmp_path, _SLOW_FILE, pte.name, "out.json")
    assert code == 1  # findings
    assert "xferlint: 0/1 inputs, checking ladder.pte, 1 s" in shown
    assert _screen(shown).strip() == ""
    assert json.loads((tmp_path / "out.json").read_text())["findings"]


_SLOW_BIG_FILE = r"""
import sys, time
import xferlint.workers.check as check
real = check.check_entry
def slow(part, slot, *args, **kwargs):  # the largest file holds the run, as a large program does
    if slot.label.startswith("big"):
        time.sleep(2.5)
    return real(part, slot, *args, **kwargs)
check.check_entry = slow
from xferlint.cli import main
sys.exit(main(["check", "--isolated", "-j", "2", "--format", "json", "-o", "out.json", *sys.argv[1:]]))
"""


def test_progress_names_the_file_a_worker_still_has_in_hand(tmp_path):
    """Eight program files over two workers: one takes the large slow one, the other the
    seven small ones and is done. The line counts seven done and names the file still being
    checked, not the one taken last (it named small7.pte until the workers said which files
    they start and finish)."""
    from xferlint.testing import synthetic_pte as sp

    (tmp_path / "big.pte").write_bytes(sp.ladder(40))  # the largest: taken first
    names = [f"small{i}.pte" for i in range(1, 8)]
    for name in names:
        (tmp_path / name).write_bytes(sp.ladder(2))
    code, shown = _on_a_terminal(tmp_path, _SLOW_BIG_FILE, "big.pte", *names)
    assert code == 1  # findings
    assert re.search(r"xferlint: 7/8 inputs, checking big\.pte, [12] s", shown)
    assert "7/8 inputs, checking small" not in shown
    assert _screen(shown).strip() == ""
    assert len(json.loads((tmp_path / "out.json").read_text())["summary"]["by_code"]) > 0


def test_tally_keeps_the_files_in_hand_in_the_order_they_started():
    from xferlint.workers.files import Tally

    tally = Tally()
    try:
        for k, finished in ((4, False), (0, False), (9, False), (0, True)):
            tally.note(k, finished=finished)
        tally.drain()
        assert (list(tally.in_hand), tally.finished) == ([4, 9], 1)
        tally.note(4, finished=True)
        tally.note(2, finished=False)
        tally.drain()
        assert (list(tally.in_hand), tally.finished) == ([9, 2], 2)
        for _ in range(100_000):  # nobody drains: a full pipe drops tokens, the writer never waits
            tally.note(2, finished=True)
        tally.drain()
        assert 2 < tally.finished < 100_002 and list(tally.in_hand) == [9]
    finally:
        tally.close()


def test_progress_off_when_quiet_or_not_a_terminal():
    for kwargs in ({"quiet": True, "enabled": True}, {}):
        clock, stream = _Clock(), io.StringIO()  # StringIO is not a terminal
        progress = Progress(2, stream=stream, clock=clock, **kwargs)
        clock.now += 5
        progress.update(1, ["a.py:program"])
        progress.close()
        assert stream.getvalue() == ""


# --------------------------------------------------------------------------- the command

MODEL = textwrap.dedent(
    """\
    import torch

    from xferlint.testing import lower


    class Pair(torch.nn.Module):
        def forward(self, x, y):
            a = x + y
            return torch.sin(a)


    def build(devices, **kwargs):
        return lower(Pair(), (torch.ones(4, 4), torch.ones(4, 4)), devices, **kwargs)
    """
)

# A good entry point that needs no lowering: a hand-built view with one dead D2H (XF003).
FAST = dead_copy_view("fast.py:program")

HANG = "import os, time\nopen('hang.pid', 'w').write(str(os.getpid()))\nwhile True:\n    time.sleep(0.05)\nprogram = None\n"

FILES = {
    "good.py": MODEL + 'print("chatter from good.py")\nprogram = build(["cuda:0", "cuda:0"], elide=False)\n',
    "staging.py": MODEL + 'def program():\n    print("chatter from staging.py")\n    return build(["cuda:0", "cuda:1"])\n',
    "fast.py": FAST,
    "exits.py": "import os\nprint('leaving', flush=True)\nos._exit(3)\nprogram = None\n",
    "sysexit.py": "import sys\nsys.exit(4)\nprogram = None\n",
    "interrupt.py": "raise KeyboardInterrupt\nprogram = None\n",
    "interrupted.py": "def program():\n    raise KeyboardInterrupt\n",
    "raises.py": "def program():\n    raise ValueError('no model today')\n",
    # the user's exception cannot say what it is: still their error, not xferlint's
    "unprintable.py": "class Odd(Exception):\n    def __str__(self):\n        raise RuntimeError\n"
                      "def program():\n    raise Odd()\n",
    # a message of megabytes, opening with a terminal escape: one short readable line
    "shouts.py": "def program():\n    raise ValueError('\\x1b[31mred\\x1b[0m ' + 'x' * 1_000_000)\n",
    "exits_long.py": "import sys\nsys.exit('bye ' * 100_000)\nprogram = None\n",
    "segfault.py": "import ctypes\nctypes.string_at(0)\nprogram = None\n",
    # What the OOM killer does to a process, without filling a shared machine's memory.
    "oom.py": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\nprogram = None\n",
    "hang.py": HANG,
}
BAD = {  # input -> what its one error line says
    "exits.py:program": "exited with status 3",
    "sysexit.py:program": "raised SystemExit: 4",
    # where, as for any other exception (a worker ignores SIGINT: only the user's code raises it)
    "interrupt.py:program": "importing it raised KeyboardInterrupt (at interrupt.py:1)",
    "interrupted.py:program": "calling `program` raised KeyboardInterrupt (at interrupted.py:2)",
    "raises.py:program": "ValueError: no model today",
    "unprintable.py:program": "calling `program` raised Odd (whose message could not be read: its __str__ raised) "
                              "(at unprintable.py:5)",
    "shouts.py:program": "calling `program` raised ValueError: \\x1b[31mred\\x1b[0m xxxx",
    "exits_long.py:program": "raised SystemExit: bye bye",
    "segfault.py:program": "crashed (SIGSEGV)",
    "oom.py:program": "killed (SIGKILL",
}


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    root = tmp_path_factory.mktemp("workers")
    for name, text in FILES.items():
        (root / name).write_text(text)
    return root


def _start(exe, *args, cwd, stderr=subprocess.PIPE):
    return subprocess.Popen([exe, "check", "--isolated", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=stderr,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _finish(proc):
    out, err = proc.communicate(timeout=600)
    err = (err or b"").decode()
    assert "Traceback" not in err, err[-3000:]
    return proc.returncode, out.decode(), err


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error: ")]


@pytest.fixture(scope="module")
def mixed(xferlint_exe, ws):
    """The same bad and good entry points under -j 1 and -j 2 (both runs at once)."""
    inputs = ["good.py", *[b.split(":")[0] for b in BAD], "staging.py"]
    runs = {jobs: _start(xferlint_exe, "-j", str(jobs), "--format", "json", *inputs, cwd=ws) for jobs in (1, 2)}
    return {jobs: _finish(proc) for jobs, proc in runs.items()}


def test_each_bad_entry_point_is_one_error_line_and_the_good_ones_are_reported(mixed):
    for code, out, err in mixed.values():
        assert code == 2
        report = json.loads(out)
        assert sorted((f["input"], f["code"]) for f in report["findings"]) == [
            ("good.py:program", "XF001"), ("staging.py:program", "XF002")]
        assert sorted(e["input"] for e in report["errors"]) == sorted(BAD)
        lines = _error_lines(err)
        assert len(lines) == len(BAD), err
        for label, problem in BAD.items():
            (line,) = [x for x in lines if x.startswith(f"error: {label}: ")]
            assert problem in line, line
            assert len(line) < 800, line[:200]
        assert "chatter from good.py" in err and "chatter from staging.py" in err  # never on stdout
        assert "chatter" not in out


def test_output_is_the_same_for_any_number_of_jobs(mixed):
    assert mixed[1][1] == mixed[2][1]  # the report, byte for byte
    assert mixed[1][2] == mixed[2][2]  # user output and errors too: workers' output is replayed in input order


def test_a_hanging_entry_point_times_out_and_progress_shows_on_a_terminal(xferlint_exe, ws):
    """--timeout: the hanging input is one error line, the others are reported; with
    stderr on a terminal the run (longer than a second) shows progress, erased at the end."""
    args = ("--timeout", "5", "--format", "json", "hang.py", "fast.py")
    plain = _start(xferlint_exe, "-j", "1", *args, cwd=ws)
    leader, follower = pty.openpty()
    tty = _start(xferlint_exe, "-j", "2", *args, cwd=ws, stderr=follower)
    os.close(follower)
    transcript = _read_terminal(leader)
    results = [_finish(plain), _finish(tty)]
    for code, out, _ in results:
        assert code == 2
        report = json.loads(out)
        assert [(f["input"], f["code"]) for f in report["findings"]] == [("fast.py:program", "XF003")]
        assert [e["message"] for e in report["errors"]] == ["hang.py:program: entry point did not finish within 5 s"]
    assert results[0][1] == results[1][1]
    assert _error_lines(results[0][2]) == ["error: hang.py:program: entry point did not finish within 5 s"]
    shown = transcript.decode(errors="replace").replace("\r\n", "\n")
    assert "xferlint: 1/2 inputs, lowering hang.py:program" in shown
    assert _screen(shown).strip() == "error: hang.py:program: entry point did not finish within 5 s"


def test_ctrl_c_stops_the_run_cleanly(xferlint_exe, tmp_path):
    (tmp_path / "hang.py").write_text(HANG)
    (tmp_path / "fast.py").write_text(FAST)
    proc = _start(xferlint_exe, "-j", "2", "-o", "report.json", "fast.py", "hang.py", cwd=tmp_path)
    pid_file = tmp_path / "hang.pid"
    while not (pid_file.exists() and pid_file.read_text()):  # the hanging model runs
        assert proc.poll() is None
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    code, out, err = _finish(proc)
    assert code == 130 and out == ""
    assert err.strip().splitlines()[-1] == "error: interrupted"
    assert _gone(int(pid_file.read_text()))
    # no report, no temporary file (`__pycache__` is Python's, for the user's modules, where it writes bytecode)
    assert sorted(n for n in os.listdir(tmp_path) if n != "__pycache__") == ["fast.py", "hang.pid", "hang.py"]


def test_progress_fits_wide_names_to_the_terminals_columns():
    """A name of CJK characters takes two columns a character: cut to the columns it
    takes, the line never wraps (a wrapped line is left behind by each redraw)."""
    import unicodedata

    from xferlint.progress import fit

    def columns(text):
        return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)

    for text in ("lowering 模型" * 8, "x" * 200, "ü" * 90, "模" * 40):
        for width in (10, 40, 79):
            cut = fit(text, width)
            assert columns(cut) <= width, (text, width, cut)
            assert cut == text or (cut.endswith("...") and text.startswith(cut[:-3]))
    assert fit("模" * 5, 10) == "模" * 5 and fit("short", 79) == "short"


def test_progress_cuts_a_long_name_and_keeps_the_counts_and_the_elapsed_time():
    """The name being lowered gives way first: cut at its start (the file and attribute are
    at its end), the counts, the other inputs in hand and the elapsed time stay on screen."""
    import unicodedata

    from xferlint.progress import Progress, fit_start

    progress = Progress(70, enabled=True)
    name = "/home/me/projects/models/cpu_delegate_splits_partition.py:program"
    line = progress.line(60, [name, "other.py:program"], 13.2, width=79)
    assert len(line) == 79
    assert line.startswith("xferlint: 60/70 inputs, lowering ...") and line.endswith(" (+1 more), 13 s")
    assert name.endswith(line.split("...", 1)[1].split(" (+")[0])
    assert progress.line(60, ["a.py:program"], 13.2, width=79) == "xferlint: 60/70 inputs, lowering a.py:program, 13 s"
    assert len(progress.line(60, ["x" * 200], 13.2, width=30)) <= 30  # no room for a name: the line is cut

    def columns(text):
        return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)

    for text in ("模型" * 20, "x" * 100, "ü" * 50):
        for width in (12, 40):
            cut = fit_start(text, width)
            assert columns(cut) <= width and cut.startswith("...") and text.endswith(cut[3:])
    assert fit_start("模" * 5, 10) == "模" * 5
