"""Run tasks in forked worker processes: at most `jobs` at a time, each with an optional
deadline, every outcome collected and returned in task order.

A task is a zero-argument callable that runs in the child and returns picklable data.
Each task gets a fresh child forked from this (warm) process, so a child inherits what the
parent imported (torch, ExecuTorch) and whatever one task's user code does to its process
(module state, `os._exit()`, a segfault, SIGKILL from the OOM killer, an endless loop)
ends with that child: the task becomes `Failed` with one line saying what happened.

What a child prints (stdout and stderr, Python or C level) comes back through a pipe and
is written to this process's stderr in task order: the output of the earliest unfinished
task streams through, later tasks' output waits (bounded) until its turn, so stderr, like
the report, does not depend on `jobs`.

Children run in their own process group (a terminal's Ctrl-C reaches only the parent),
with stdin on /dev/null and SIGKILL as their parent-death signal. Leaving `run_tasks` by
an exception (KeyboardInterrupt, SIGTERM unwinding) kills and reaps every child first.
"""

from __future__ import annotations

import faulthandler
import math
import os
import pickle
import select
import signal
import sys
import time
from dataclasses import field
from typing import Any, Callable, Optional, Sequence

from xferlint.records import dataclass

MAX_HELD_OUTPUT = 4 << 20  # bytes of a waiting task's output kept until its turn
_READ = 1 << 16
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True, slots=True)
class Task:
    """One unit of work for a child: `label` names it in errors and progress."""

    label: str
    run: Callable[[], Any]


@dataclass(frozen=True, slots=True)
class Done:
    payload: Any


@dataclass(frozen=True, slots=True)
class _Raised:
    """What a child sends when the task itself raised (its own guard failed)."""

    message: str


@dataclass(frozen=True, slots=True)
class Failed:
    """The child ended without a result; `message` is one line naming the task."""

    message: str


Outcome = Done | Failed


@dataclass(slots=True)
class _Worker:
    index: int
    label: str
    pid: int
    result_fd: Optional[int]
    output_fd: Optional[int]
    pid_fd: Optional[int]
    started: float
    result: bytearray = field(default_factory=bytearray)


class _Output:
    """Children's output, written to stderr in task order."""

    def __init__(self, labels: list[str], write: Callable[[bytes], None]) -> None:
        count = len(labels)
        self.labels = labels
        self.held: list[bytearray] = [bytearray() for _ in range(count)]
        self.dropped = [0] * count
        self.finished = [False] * count
        self.head = 0
        self.write = write

    def add(self, index: int, data: bytes) -> None:
        if index == self.head:
            self.write(data)
            return
        room = MAX_HELD_OUTPUT - len(self.held[index])
        self.held[index] += data[:max(room, 0)]
        self.dropped[index] += max(len(data) - max(room, 0), 0)

    def finish(self, index: int) -> None:
        self.finished[index] = True
        while self.head < len(self.finished):
            i = self.head
            if self.held[i]:
                self.write(bytes(self.held[i]))
                self.held[i] = bytearray()
            if self.dropped[i]:
                self.write(f"({self.labels[i]}: {self.dropped[i]} more bytes of output dropped)\n".encode())
                self.dropped[i] = 0
            if not self.finished[i]:
                break
            self.head += 1


def write_stderr(data: bytes) -> None:
    sys.stderr.flush()
    buffer = getattr(sys.stderr, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:  # a text-only stream (an embedding program, pytest's capsys)
        sys.stderr.write(data.decode("utf-8", "replace"))
        sys.stderr.flush()


def run_tasks(tasks: Sequence[Task], jobs: int, timeout: Optional[float] = None,
              on_change: Optional[Callable[[int, list[str]], None]] = None,
              write: Callable[[bytes], None] = write_stderr,
              timeout_message: Optional[Callable[[str, float], str]] = None) -> list[Outcome]:
    """Run every task in its own child, `jobs` at a time; outcomes in task order.

    `on_change(done, running_labels)` is called when a task starts or ends and about ten
    times a second while any runs (progress display); `timeout` (seconds) bounds each task.
    """
    if timeout is not None and not math.isfinite(timeout):
        timeout = None
    outcomes: list[Optional[Outcome]] = [None] * len(tasks)
    output = _Output([t.label for t in tasks], write)
    running: dict[int, _Worker] = {}
    pending = list(range(len(tasks)))[::-1]
    done = 0
    say_timeout = timeout_message or (lambda label, seconds: f"{label}: did not finish within {seconds:g} s")
    try:
        while pending or running:
            while pending and len(running) < max(jobs, 1):
                index = pending.pop()
                try:
                    worker = _start(index, tasks[index], [w for w in running.values()])
                except OSError as exc:  # the process limit (EAGAIN), no descriptors left (EMFILE)
                    outcomes[index] = Failed(f"{tasks[index].label}: no process could be started to run it "
                                             f"({exc.strerror or exc})")
                    output.finish(index)
                    done += 1
                    continue
                running[worker.pid] = worker
                if on_change:
                    on_change(done, _labels(running))
            _wait(running, timeout, tick=on_change is not None)
            now = time.monotonic()
            for worker in list(running.values()):
                outcome = _poll(worker, output, now, timeout, say_timeout)
                if outcome is None:
                    continue
                del running[worker.pid]
                outcomes[worker.index] = outcome
                output.finish(worker.index)
                done += 1
            if on_change:
                on_change(done, _labels(running))
    finally:
        for worker in running.values():
            _kill(worker)
    return [o if o is not None else Failed(f"{t.label}: not run") for o, t in zip(outcomes, tasks)]


def _labels(running: dict[int, _Worker]) -> list[str]:
    return [w.label for w in sorted(running.values(), key=lambda w: w.index)]


# --------------------------------------------------------------------------- parent side


def _start(index: int, task: Task, others: list[_Worker]) -> _Worker:
    fds: list[int] = []
    try:
        result_r, result_w = os.pipe()
        fds += (result_r, result_w)
        output_r, output_w = os.pipe()
        fds += (output_r, output_w)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
    except OSError:
        for fd in fds:
            _close_quietly(fd)
        raise
    if pid == 0:  # the child never returns from here
        os.close(result_r)
        os.close(output_r)
        for other in others:
            for fd in (other.result_fd, other.output_fd, other.pid_fd):
                if fd is not None:
                    _close_quietly(fd)
        _child(task, result_w, output_w)
    os.close(result_w)
    os.close(output_w)
    try:
        os.setpgid(pid, pid)  # also done in the child: whichever runs first
    except OSError:
        pass
    pid_fd = None
    if hasattr(os, "pidfd_open"):
        try:
            pid_fd = os.pidfd_open(pid)
        except OSError:
            pid_fd = None
    for fd in (result_r, output_r):
        os.set_blocking(fd, False)
    return _Worker(index=index, label=task.label, pid=pid, result_fd=result_r, output_fd=output_r, pid_fd=pid_fd,
                   started=time.monotonic())


_LONGEST_WAIT = 3600.0  # seconds one select may block when a deadline is set


def _wait(running: dict[int, _Worker], timeout: Optional[float], tick: bool) -> None:
    """Block until a child has something to say, has ended, or a deadline/tick is due."""
    if not running:
        return
    fds = [fd for w in running.values() for fd in (w.result_fd, w.output_fd, w.pid_fd) if fd is not None]
    waits = []
    if tick:
        waits.append(0.1)
    if any(w.pid_fd is None for w in running.values()):
        waits.append(0.05)  # no pidfd to wake us when a child ends: poll
    if timeout is not None:
        now = time.monotonic()
        waits.append(max(0.0, min(w.started + timeout for w in running.values()) - now))
    try:
        # at most an hour at a time: select refuses a wait past what time_t holds
        # (`--timeout 1e308`), and the loop comes round to wait again
        select.select(fds, [], [], min(*waits, _LONGEST_WAIT) if waits else None)
    except InterruptedError:
        pass


def _poll(worker: _Worker, output: _Output, now: float, timeout: Optional[float],
          say_timeout: Callable[[str, float], str]) -> Optional[Outcome]:
    """Read what the child sent; its outcome once it has ended (or overrun its time)."""
    _drain(worker, output)
    try:
        pid, status = os.waitpid(worker.pid, os.WNOHANG)
    except ChildProcessError:  # reaped elsewhere (an embedding program's SIGCHLD handler)
        pid, status = worker.pid, 0
    if pid == 0:
        if timeout is not None and now - worker.started >= timeout:
            _kill(worker)
            return Failed(say_timeout(worker.label, timeout))
        return None
    _drain(worker, output)  # everything it wrote before ending is in the pipes
    _kill_group(worker.pid)  # anything it left behind in its group
    _close(worker)
    return _outcome(worker, status)


def _drain(worker: _Worker, output: _Output) -> None:
    for name in ("result_fd", "output_fd"):
        fd = getattr(worker, name)
        while fd is not None:
            try:
                data = os.read(fd, _READ)
            except BlockingIOError:
                break
            except OSError:
                data = b""
            if not data:
                os.close(fd)
                setattr(worker, name, None)
                break
            if name == "result_fd":
                worker.result += data
            else:
                output.add(worker.index, data)


def _outcome(worker: _Worker, status: int) -> Outcome:
    if os.WIFSIGNALED(status):
        return Failed(f"{worker.label}: {_signal_text(os.WTERMSIG(status))}")
    code = os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else -1
    if code == 0 and worker.result:
        try:
            payload = pickle.loads(bytes(worker.result))
        except Exception as exc:  # noqa: BLE001 - a result cut short or not unpicklable here
            return Failed(f"{worker.label}: its worker's result could not be read ({type(exc).__name__}: {exc})")
        return Failed(payload.message) if isinstance(payload, _Raised) else Done(payload)
    return Failed(f"{worker.label}: the process running it exited with status {code} before it was analysed "
                  "(os._exit() in the entry point?)")


def _signal_text(signum: int) -> str:
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    if signum == signal.SIGKILL:
        return f"the process running it was killed ({name}; out of memory?)"
    return f"the process running it crashed ({name})"


def _kill(worker: _Worker) -> None:
    _kill_group(worker.pid)
    try:
        os.kill(worker.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(worker.pid, 0)
    except ChildProcessError:
        pass
    _close(worker)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _close(worker: _Worker) -> None:
    for name in ("result_fd", "output_fd", "pid_fd"):
        fd = getattr(worker, name)
        if fd is not None:
            _close_quietly(fd)
            setattr(worker, name, None)


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


# --------------------------------------------------------------------------- child side


def _child(task: Task, result_w: int, output_w: int) -> None:
    """Run `task` and send its pickled result; always ends the process (never returns)."""
    code = 70
    try:
        _settle_child(output_w)
        try:
            data = pickle.dumps(task.run(), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:  # noqa: BLE001 - the task's own guard failed (or its result
            # does not pickle): one line for the parent
            first = (str(exc).strip().splitlines() or [""])[0]
            data = pickle.dumps(_Raised(f"{task.label}: internal error in its worker ({type(exc).__name__}: "
                                        f"{first}); please report it"))
        sys.stdout.flush()
        sys.stderr.flush()
        view = memoryview(data)
        while view:
            view = view[os.write(result_w, view):]
        code = 0
    except BaseException:  # noqa: BLE001
        code = 70
    finally:
        os._exit(code)


def _settle_child(output_w: int) -> None:
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    _die_with_parent()
    _first_to_go()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and kills us
    for name in ("SIGTERM", "SIGHUP", "SIGPIPE"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(output_w, 1)
    os.dup2(output_w, 2)
    os.close(output_w)
    # Python-level streams on those descriptors, whatever the parent had put there (a
    # test runner's capture, an embedding program's objects).
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
    if faulthandler.is_enabled():  # on a descriptor of the parent's: dump into our own stderr
        faulthandler.enable(file=sys.stderr)


def _first_to_go() -> None:
    """Linux: make this child the OOM killer's first choice. A model that exhausts memory
    is then the process killed (one error line for its input, the run goes on), not the
    parent holding every other input's results, which is as large once torch is loaded,
    nor some other program on the machine. Raising one's own score needs no privilege."""
    try:
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write("1000")
    except OSError:  # not Linux, or /proc not mounted: the kernel's own choice
        pass


def _die_with_parent() -> None:
    """Linux: SIGKILL this child when the parent dies (a parent killed with SIGKILL
    cannot clean up); elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        parent = os.getppid()
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(70)
    except (OSError, AttributeError):
        pass
