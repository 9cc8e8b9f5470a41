"""The text reporter's line format, on findings built directly."""

from xferlint.findings import Finding, Location, Severity
from xferlint.report import build_report
from xferlint.reporters import ReportOptions
from xferlint.reporters.text import emit


def _finding(input_label: str, method: str = "forward", located: bool = True) -> Finding:
    return Finding(
        code="XF006", name="constant-transfer", severity=Severity.WARNING, message="copies `w` every call.",
        input=input_label, program="edge", method=method, nodes=["w", "h2d"], devices=["cpu", "cuda:0"],
        bytes=64, location=Location(file="/abs/model.py", line=3, column=5) if located else None, fixable=False,
    )


def test_two_programs_of_one_dict_read_differently_on_the_same_line():
    report = build_report([_finding("m.py:program[edge]"), _finding("m.py:program[workaround]")], [], 1, 2)
    lines = emit(report, ReportOptions(project_root="/abs")).splitlines()
    assert lines[0] == "model.py:3:5: XF006 copies `w` every call. (in program[edge])"
    assert lines[1] == "model.py:3:5: XF006 copies `w` every call. (in program[workaround])"


def test_a_method_other_than_forward_is_named():
    report = build_report([_finding("m.py:program", method="decode")], [], 1, 1)
    assert emit(report, ReportOptions(project_root="/abs")).splitlines()[0].endswith("(in method decode)")


def test_a_finding_without_source_is_shown_at_input_method_node():
    report = build_report([_finding("m.pte", method="forward", located=False)], [], 1, 1)
    assert emit(report, ReportOptions()).splitlines()[0] == "m.pte:forward:w: XF006 copies `w` every call."
