"""Linear work in what surrounds the analysis: fix plans, noqa comments, written files.

Each test counts the work a growing input costs (comparisons, reads, directory listings),
not its time, at two sizes ten times apart: each of these was quadratic once, in a scan a
call count does not show (a list's `in`, a file read again per finding).
"""

from __future__ import annotations

import os

import pytest

from xferlint.findings import Applicability
from xferlint.testing.work import lines_run


def test_merging_thousands_of_fix_plans_compares_each_rewire_a_few_times(monkeypatch):
    # fixes/plan.edits kept its rewires in a list and asked `r not in rewires` per plan
    from xferlint.fixes.plan import FixPlan, Rewire, edits

    Rewire("a", "b", "c") == Rewire("a", "b", "d")  # noqa: B015 - compiles __eq__ (at its first call) first
    compared = [0]
    equal = Rewire.__eq__

    def counted(self, other):
        compared[0] += 1
        return equal(self, other)

    monkeypatch.setattr(Rewire, "__eq__", counted)

    def comparisons(n: int) -> int:
        plans = [FixPlan(code="XF001", name="redundant-round-trip", method="forward", finding=(f"d2h_{i}", f"h2d_{i}"),
                         applicability=Applicability.SAFE, summary="s",
                         rewires=(Rewire(reader=f"use_{i}", old=f"h2d_{i}", new=f"value_{i}"),) * 2,
                         removes=(f"d2h_{i}", f"h2d_{i}", f"d2h_{i}")) for i in range(n)]
        compared[0] = 0
        rewires, removes = edits(plans)
        assert len(rewires) == n and removes[:3] == ["d2h_0", "h2d_0", "d2h_1"] and len(removes) == 2 * n
        return compared[0]

    assert comparisons(2_000) <= 2 * 2_000, comparisons(2_000)


def _marked_model(tmp_path, lines: int) -> str:
    path = tmp_path / f"model_{lines}.py"
    path.write_text("".join(f"x{k} = {k}  # xferlint: noqa: XF001\n" for k in range(lines)))
    return str(path)


def _findings(path: str, n: int, code: str) -> list:
    """A finding of `code` on each of the file's first `n` lines."""
    from xferlint.findings import Finding, Location, Severity

    return [Finding(code=code, name="rule", severity=Severity.WARNING, message="m", input=path, program="program",
                    method="forward", nodes=[], devices=[], bytes=None, fixable=False,
                    location=Location(file=path, line=k + 1, column=1))
            for k in range(n)]


def test_findings_in_a_file_of_thousands_of_noqa_lines_each_read_their_own_line(tmp_path):
    # Record._covering scanned every directive of the file for each finding's line
    from xferlint.suppression_record import Record

    def lines(n: int) -> int:
        path = _marked_model(tmp_path, n)
        findings = _findings(path, n, "XF001")
        record = Record(root=str(tmp_path))
        count = lines_run(lambda: record.split(findings))
        assert len(record.suppressed) == n
        return count

    assert lines(2_000) / 2_000 < 1.25 * lines(200) / 200


def test_marking_thousands_of_lines_reads_each_lines_directives_once(tmp_path):
    # add_noqa looked up the directives of each line it marks among all the file's
    from xferlint.fixes import noqa

    def lines(n: int) -> int:
        path = _marked_model(tmp_path, n)
        findings = _findings(path, n, "XF005")
        count = lines_run(lambda: noqa.add_noqa(findings, root=str(tmp_path)))
        with open(path) as handle:
            assert all("XF001, XF005" in line for line in handle)
        return count

    assert lines(2_000) / 2_000 < 1.25 * lines(200) / 200


def test_unused_directives_read_their_file_once(tmp_path, monkeypatch):
    # XF100 read and decoded the whole file again for each unused directive's line
    from xferlint import suppression
    from xferlint.rules import unused_noqa

    reads = [0]
    real = suppression.read_source
    monkeypatch.setattr(suppression, "read_source", lambda path: reads.__setitem__(0, reads[0] + 1) or real(path))
    path = _marked_model(tmp_path, 2_000)
    texts = [unused_noqa._line_text(path, k + 1) for k in range(2_000)]
    assert texts[1_999] == "x1999 = 1999  # xferlint: noqa: XF001" and reads[0] == 1


def test_a_run_writing_thousands_of_files_into_one_directory_lists_it_once(tmp_path, monkeypatch):
    # write_atomic looked for dead runs' temporaries in the whole directory before each write
    from xferlint import fsutil

    listed = [0]
    real = os.listdir
    monkeypatch.setattr(fsutil.os, "listdir", lambda d: listed.__setitem__(0, listed[0] + 1) or real(d))
    monkeypatch.setattr(fsutil, "_SWEPT", set(), raising=False)
    for k in range(200):
        fsutil.write_atomic(str(tmp_path / f"fixed_{k}.pte"), b"bytes")
    assert listed[0] == 1 and len(os.listdir(tmp_path)) == 200


@pytest.fixture(autouse=True)
def _fresh_caches():
    from xferlint import suppression
    from xferlint.rules import unused_noqa

    yield
    for name in ("_file_directives", "_indexed"):
        getattr(suppression, name, None) and getattr(suppression, name).cache_clear()
    getattr(unused_noqa, "_lines", None) and unused_noqa._lines.cache_clear()


def _run_of(programs: int, tmp_path):
    """A CheckRun over `programs` programs of two findings each (an XF001 and an XF003),
    each program its own file."""
    from xferlint.analyzer.view import ProgramView
    from xferlint.findings import Finding, Severity
    from xferlint.frontends import LoadedProgram
    from xferlint.pipeline import CheckRun

    run = CheckRun(inputs=programs)
    for k in range(programs):
        path = str(tmp_path / f"p{k}.pte")
        view = ProgramView(input=path, name=f"p{k}", kind="pte", methods=(), file=path)
        run.loaded.append(LoadedProgram(view=view))
        run.findings += [Finding(code=code, name="rule", severity=Severity.WARNING, message="m", input=path,
                                 program=f"p{k}", method="forward", nodes=[], devices=[], bytes=None, fixable=False,
                                 file=path, location=None) for code in ("XF001", "XF003")]
    return run


def test_ignoring_a_rule_in_thousands_of_files_replaces_them_in_one_pass(tmp_path):
    # per-file-ignores (and a baseline, and check --fix) replaced each program's findings
    # in turn, each replacement rebuilding the whole run's findings and transfers
    from xferlint import per_file_ignores

    def lines(programs: int) -> int:
        run = _run_of(programs, tmp_path)
        count = lines_run(lambda: per_file_ignores.apply(run, {str(tmp_path / "*.pte"): ["XF003"]}))
        assert [f.code for f in run.findings] == ["XF001"] * programs
        assert run.findings_of(run.loaded[-1].view)[0].program == f"p{programs - 1}"
        return count

    assert lines(2_000) / 2_000 < 1.25 * lines(200) / 200
