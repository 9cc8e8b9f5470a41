"""A plain check's program files spread over worker processes (xferlint/workers/files.py):
the report is the same byte for byte whatever `-j`, per-file ignores and the fix trial
included; the workers take every file once, from one queue, largest first; a worker that
dies leaves its files to the parent; small runs stay in process."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import time

import pytest

import xferlint.workers.check as check_module
import xferlint.workers.pool as pool
from xferlint.cli import main
from xferlint.frontends.entrypoints import EntryPoint
from xferlint.testing import synthetic_pte
from xferlint.workers.files import MIN_FILES, Claims, workers_for

# real lowered programs: copies to remove (fixable), memory plans that refuse a fix, two
# devices, control flow, two methods; and synthetic ones of a few hundred instructions
REAL = ("addsin-noelide", "mixed-noelide", "mixed-two-devices", "addsin-noelide-naive", "mixed-noelide-naive",
        "cond-host", "map-nested", "two-methods", "linear-stack", "addsin-elided")


@pytest.fixture(scope="module")
def programs(pte_file, tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("spread")
    for name in REAL:
        shutil.copy(pte_file(name), folder / f"{name}.pte")
    (folder / "ladder.pte").write_bytes(synthetic_pte.ladder(300))
    (folder / "loops.pte").write_bytes(synthetic_pte.loops(40))
    (folder / "broken.pte").write_bytes(synthetic_pte.ladder(5)[:200])  # an error entry among them
    return str(folder)


def _check(path: str, out: str, *args: str) -> str:
    code = main(["check", path, "-o", out, "--exit-zero", *(args if "--config" in args else ("--isolated", *args))])
    assert code == 2  # broken.pte
    with open(out, encoding="utf-8") as handle:
        return handle.read()


@pytest.fixture
def spreads(monkeypatch):
    """How many workers each run_tasks call started (the spreading really happened)."""
    seen: list[int] = []
    real = pool.run_tasks

    def counting(tasks, jobs, *args, **kwargs):
        seen.append(len(tasks))
        return real(tasks, jobs, *args, **kwargs)

    monkeypatch.setattr(pool, "run_tasks", counting)
    return seen


@pytest.mark.parametrize("form", ["json", "full", "sarif", "html"])
def test_the_report_is_the_same_whatever_the_jobs(programs, tmp_path, spreads, form):
    one = _check(programs, str(tmp_path / "one"), "-j", "1", "--output-format", form)
    assert spreads == []
    two = _check(programs, str(tmp_path / "two"), "-j", "2", "--output-format", form)
    assert spreads == [2]
    assert one == two
    assert "XF001" in one


def test_fixability_and_per_file_ignores_settled_in_the_workers_as_here(programs, tmp_path, spreads):
    config = tmp_path / "pyproject.toml"  # patterns are relative to the configuration's folder
    config.write_text(f"[tool.xferlint.per-file-ignores]\n'{programs}/ladder.pte' = ['XF001']\n"
                      f"'{programs}/*naive*' = ['XF004']\n")
    ignores = ("--config", str(config))
    one = _check(programs, str(tmp_path / "one"), "-j", "1", "--format", "json", *ignores)
    two = _check(programs, str(tmp_path / "two"), "-j", "2", "--format", "json", *ignores)
    assert spreads == [2]
    assert one == two
    assert '"fixable": true' in one and '"fix_refused"' in one  # both kinds of fix decision made there
    plain = json.loads(_check(programs, str(tmp_path / "plain"), "-j", "2", "--format", "json"))
    kept = json.loads(two)
    assert any(_ignored(f) for f in plain["findings"]) and not any(_ignored(f) for f in kept["findings"])


def _ignored(finding: dict) -> bool:
    return (finding["code"] == "XF001" and finding["input"].endswith("ladder.pte")) or (
        finding["code"] == "XF004" and "naive" in finding["input"])


def test_a_worker_that_dies_leaves_its_files_to_the_parent(programs, tmp_path, monkeypatch, spreads):
    one = _check(programs, str(tmp_path / "one"), "-j", "1", "--format", "json")
    monkeypatch.setattr(check_module, "claim_task", lambda *args: (lambda: os._exit(3)))
    two = _check(programs, str(tmp_path / "two"), "-j", "2", "--format", "json")
    assert spreads == [2]
    assert one == two


def _dying_once(claim_task, record):
    """`claim_task` whose first child to start takes a batch of files, writes their
    positions to `record` and dies with them unreported; the other children work as usual."""

    def dying_once(here, claims, *args):
        task = claim_task(here, claims, *args)

        def run():
            try:
                with open(record, "x") as handle:
                    handle.write(json.dumps(claims.take()))
            except FileExistsError:
                return task()
            os._exit(3)

        return run

    return dying_once


def test_a_worker_that_dies_after_taking_files_leaves_them_to_the_parent(programs, tmp_path, monkeypatch, spreads):
    """One worker takes a batch of files from the queue and dies with them unreported: the
    other worker and the parent check the rest, and the parent those it took."""
    one = _check(programs, str(tmp_path / "one"), "-j", "1", "--format", "json")
    record = tmp_path / "taken"
    monkeypatch.setattr(check_module, "claim_task", _dying_once(check_module.claim_task, record))
    two = _check(programs, str(tmp_path / "two"), "-j", "2", "--format", "json")
    assert spreads == [2]
    assert json.loads(record.read_text())  # it took files
    assert one == two


class _Recorded:
    """A Progress that is always shown and records what it was told."""

    enabled = True

    def __init__(self, total, **_):
        self.total, self.updates = total, []
        _Recorded.last = self

    def update(self, done, running=(), action="lowering"):
        self.updates.append((done, list(running), action))

    @contextlib.contextmanager
    def ticking(self):  # the real one redraws from a thread: this one only records
        yield

    def clear(self):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def test_progress_counts_the_files_as_the_workers_take_them(programs, tmp_path, monkeypatch, spreads):
    """The workers' results come back when each ends; the progress line counts the files
    as the children say they finish them, names one they have in hand, and never counts
    more than are done."""
    monkeypatch.setattr(check_module, "Progress", _Recorded)
    slow = check_module.check_entry

    def slowly(part, slot, *args):  # long enough for the parent to look at the queue in between
        time.sleep(0.15)
        return slow(part, slot, *args)

    monkeypatch.setattr(check_module, "check_entry", slowly)
    _check(programs, str(tmp_path / "out"), "-j", "2", "--format", "json")
    assert spreads == [2]
    updates = _Recorded.last.updates
    files = len(os.listdir(programs))
    named = [(done, running[0]) for done, running, action in updates if running and action == "checking"]
    assert named and all(name.endswith(".pte") and os.path.dirname(name) == programs for _, name in named)
    counts = [done for done, _, _ in updates]
    assert counts == sorted(counts) and counts[-1] == files  # never back, all at the end
    assert any(0 < done < files for done in counts)  # files counted before the workers ended


def test_progress_goes_on_counting_when_the_parent_checks_a_dead_workers_files(programs, tmp_path, monkeypatch,
                                                                               spreads):
    """A worker dies with a batch it took: the parent checks those files after the workers
    end, and the line counts on from the files the workers reported (it started again from
    none)."""
    monkeypatch.setattr(check_module, "Progress", _Recorded)
    record = tmp_path / "taken"
    monkeypatch.setattr(check_module, "claim_task", _dying_once(check_module.claim_task, record))
    _check(programs, str(tmp_path / "out"), "-j", "2", "--format", "json")
    taken = json.loads(record.read_text())
    assert spreads == [2] and taken
    counts = [done for done, _, _ in _Recorded.last.updates]
    # the last update: the parent about to check the last of the dead worker's files
    assert counts == sorted(counts) and counts[-1] == len(os.listdir(programs)) - 1


@pytest.mark.parametrize("failing", ["fork", "pipe"])
def test_no_process_or_pipe_to_spare_checks_the_files_here(programs, tmp_path, monkeypatch, spreads, failing):
    """A fork that fails (EAGAIN: the process limit) or a pipe that cannot be made (EMFILE)
    is not an error of any input: the files are checked here, the report as with -j 1."""
    one = _check(programs, str(tmp_path / "one"), "-j", "1", "--format", "json")
    real = getattr(os, failing)

    def refused(*args):
        if failing == "pipe" or refused.calls:  # a fork refused after the first child started
            raise OSError(errno.EAGAIN if failing == "fork" else errno.EMFILE, "no more")
        refused.calls += 1
        return real(*args)

    refused.calls = 0
    monkeypatch.setattr(os, failing, refused)
    two = _check(programs, str(tmp_path / "two"), "-j", "2", "--format", "json")
    monkeypatch.setattr(os, failing, real)
    assert one == two


def test_no_pipe_for_the_progress_tally_checks_the_files_here(programs, tmp_path, monkeypatch, spreads):
    """With the progress line drawn, the children say which files they start and finish
    through a second pipe; when that one cannot be made (EMFILE), the files are checked
    here, as when the queue's cannot, and the queue's pipe is closed again."""
    one = _check(programs, str(tmp_path / "one"), "-j", "1", "--format", "json")
    monkeypatch.setattr(check_module, "Progress", _Recorded)
    refused = []

    def no_pipe():
        refused.append(True)
        raise OSError(errno.EMFILE, "no more")

    monkeypatch.setattr(check_module, "Tally", no_pipe)
    before = len(os.listdir("/proc/self/fd"))
    two = _check(programs, str(tmp_path / "two"), "-j", "2", "--format", "json")
    assert len(os.listdir("/proc/self/fd")) == before  # the queue's pipe closed again
    assert refused and spreads == []  # no worker started: every file checked here
    assert one == two


def test_fix_runs_keep_the_files_here(programs, tmp_path, spreads):
    main(["check", programs, "--diff", "--isolated", "-j", "2", "-o", str(tmp_path / "diff")])
    assert spreads == []


def _baseline(programs: str, path, jobs: str) -> dict:
    main(["check", programs, "--write-baseline", str(path), "--isolated", "-j", jobs])
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def half_baseline(programs, tmp_path_factory) -> str:
    """A baseline accepting every other finding of `programs`."""
    folder = tmp_path_factory.mktemp("baseline")
    recorded = _baseline(programs, folder / "all.json", "1")
    recorded["entries"] = recorded["entries"][::2]
    half = folder / "half.json"
    half.write_text(json.dumps(recorded), encoding="utf-8")
    return str(half)


def test_write_baseline_spreads_and_records_what_it_records_here(programs, tmp_path, spreads):
    spread = _baseline(programs, tmp_path / "two.json", "2")
    assert spreads == [2]
    assert spread == _baseline(programs, tmp_path / "one.json", "1")


@pytest.mark.parametrize("form", ["json", "full", "sarif"])
def test_a_baseline_run_spreads_and_counts_what_it_leaves_as_here(programs, half_baseline, tmp_path, spreads, form):
    """The workers send the programs back without their methods; the baseline drops
    findings after the merge, and the summary's flagged bytes and savings are counted
    again from the copies the remaining findings name, as here from the methods."""
    accepting = ("--baseline", half_baseline, "--output-format", form)
    one = _check(programs, str(tmp_path / "one"), "-j", "1", *accepting)
    assert spreads == []
    two = _check(programs, str(tmp_path / "two"), "-j", "2", *accepting)
    assert spreads == [2]
    assert one == two
    if form == "json":  # the figures the baseline changed: the accepted findings' copies are not counted
        everything = json.loads(_check(programs, str(tmp_path / "all"), "-j", "2", "--format", "json"))
        left = json.loads(two)
        assert 0 < left["summary"]["findings"] < everything["summary"]["findings"]
        assert 0 < left["summary"]["bytes_flagged"] < everything["summary"]["bytes_flagged"]
        assert left["summary"]["transfers"]["fixable_savings"] < everything["summary"]["transfers"]["fixable_savings"]


def _slots(sizes: list[int], tmp_path) -> list:
    out = []
    for i, size in enumerate(sizes):
        path = tmp_path / f"p{i}.pte"
        path.write_bytes(b"x" * size)
        out.append((i, EntryPoint(label=str(path), file=str(path))))
    return out


def _taken(claims: Claims) -> list[list[int]]:
    try:
        return list(iter(claims.take, []))
    finally:
        claims.close()


def test_the_queue_gives_every_file_once_largest_first(tmp_path):
    slots = _slots([1000] * 6 + [6000] + [1000] * 4 + [3000], tmp_path)
    batches = _taken(Claims(slots))
    assert batches == [[6], [11], [0], [1], [2], [3], [4], [5], [7], [8], [9], [10]]  # ties in input order


def test_a_long_queue_is_taken_in_batches_that_fit_one_pipe_page(tmp_path, monkeypatch):
    monkeypatch.setattr(Claims, "TOKENS", 4)
    slots = _slots([100] * 10, tmp_path)
    batches = _taken(Claims(slots))
    assert batches == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert Claims.TOKENS * 4 <= 4096  # the real limit: the tokens fit the smallest pipe buffer


def test_a_queue_that_cannot_be_filled_leaves_no_descriptor_open(tmp_path, monkeypatch):
    """The caller then checks the files itself: both ends of the pipe must be closed."""
    slots = _slots([100] * 3, tmp_path)
    made: list[int] = []
    real_pipe = os.pipe

    def pipe():
        fds = real_pipe()
        made.extend(fds)
        return fds

    def refuse(fd, data):
        raise OSError(errno.EIO, "write refused")

    monkeypatch.setattr(os, "pipe", pipe)
    monkeypatch.setattr(os, "write", refuse)
    with pytest.raises(OSError):
        Claims(slots)
    monkeypatch.undo()
    assert len(made) == 2
    for fd in made:
        with pytest.raises(OSError):
            os.fstat(fd)


def test_workers_take_from_one_queue_each_batch_once(tmp_path):
    """Two processes reading the queue at once: every batch is taken by exactly one."""
    slots = _slots([100] * 400, tmp_path)
    claims = Claims(slots)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        mine = [k for batch in iter(claims.take, []) for k in batch]
        os.write(write, json.dumps(mine).encode())
        os._exit(0)
    os.close(write)
    here = [k for batch in iter(claims.take, []) for k in batch]
    os.waitpid(pid, 0)
    with os.fdopen(read) as handle:
        there = json.loads(handle.read())
    claims.close()
    assert sorted(here + there) == list(range(400))


def test_small_runs_and_a_file_named_twice_stay_here(tmp_path):
    few = _slots([100] * (MIN_FILES - 1), tmp_path)
    assert workers_for(few, 2) == 0
    assert workers_for(_slots([100] * MIN_FILES, tmp_path), 2) == 2
    assert workers_for(_slots([100] * MIN_FILES, tmp_path), 1) == 0
    assert workers_for(few + few[:1], 2) == 0
    assert workers_for(_slots([100] * 3, tmp_path), 8) == 0  # few and small
    assert workers_for(_slots([1 << 20] * 3, tmp_path), 8) == 3  # few but large: one worker each at most
