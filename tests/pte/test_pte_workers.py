"""A plain check's program files spread over worker processes (xferlint/workers/files.py):
the report is the same byte for byte whatever `-j`, per-file ignores and the fix trial
included; a worker that dies leaves its files to the parent; small runs stay in process."""

from __future__ import annotations

import json
import os
import shutil

import pytest

import xferlint.workers.check as check_module
import xferlint.workers.pool as pool
from xferlint.cli import main
from xferlint.frontends.entrypoints import EntryPoint
from xferlint.testing import synthetic_pte
from xferlint.workers.files import MIN_FILES, chunks

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
    """How many runs of files each run_tasks call got (the spreading really happened)."""
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
    monkeypatch.setattr(check_module, "run_task", lambda *args: (lambda: os._exit(3)))
    two = _check(programs, str(tmp_path / "two"), "-j", "2", "--format", "json")
    assert spreads == [2]
    assert one == two


def test_fix_and_baseline_runs_keep_the_files_here(programs, tmp_path, spreads):
    baseline = str(tmp_path / "baseline.json")
    main(["check", programs, "--write-baseline", baseline, "--isolated", "-j", "2"])
    main(["check", programs, "--baseline", baseline, "--isolated", "-j", "2", "-o", str(tmp_path / "out")])
    main(["check", programs, "--diff", "--isolated", "-j", "2", "-o", str(tmp_path / "diff")])
    assert spreads == []


def _slots(sizes: list[int], tmp_path) -> list:
    out = []
    for i, size in enumerate(sizes):
        path = tmp_path / f"p{i}.pte"
        path.write_bytes(b"x" * size)
        out.append((i, EntryPoint(label=str(path), file=str(path))))
    return out


def test_runs_are_consecutive_and_about_equal_in_bytes(tmp_path):
    def run_bytes(runs):
        return [sum(os.path.getsize(slot.file) for _, slot in run) for run in runs]

    even = _slots([1000] * 12, tmp_path)
    assert run_bytes(chunks(even, 2)) == [6000, 6000] and run_bytes(chunks(even, 3)) == [4000] * 3
    slots = _slots([1000] * 6 + [6000] + [1000] * 5, tmp_path)
    runs = chunks(slots, 2)
    assert [item for run in runs for item in run] == slots  # every file once, in order
    assert run_bytes(runs) == [6000, 11000]  # the large file goes where its middle byte falls
    assert len(chunks(slots, 5)) == 5


def test_small_runs_and_a_file_named_twice_stay_here(tmp_path):
    few = _slots([100] * (MIN_FILES - 1), tmp_path)
    assert chunks(few, 2) is None
    assert chunks(_slots([100] * MIN_FILES, tmp_path), 2) is not None
    assert chunks(_slots([100] * MIN_FILES, tmp_path), 1) is None
    assert chunks(few + few[:1], 2) is None
