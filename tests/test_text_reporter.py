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
    # the program qualifier comes first in the message, path:line:col stay in front
    assert lines[0] == "model.py:3:5: XF006 program[edge]: copies `w` every call."
    assert lines[1] == "model.py:3:5: XF006 program[workaround]: copies `w` every call."


def test_a_method_other_than_forward_is_named():
    report = build_report([_finding("m.py:program", method="decode")], [], 1, 1)
    assert emit(report, ReportOptions(project_root="/abs")).splitlines()[0] == (
        "model.py:3:5: XF006 decode(): copies `w` every call.")


def test_a_finding_without_source_is_shown_at_input_method_node():
    report = build_report([_finding("m.pte", method="forward", located=False)], [], 1, 1)
    assert emit(report, ReportOptions()).splitlines()[0] == "m.pte:forward:w: XF006 copies `w` every call."


def test_a_pte_finding_is_shown_at_its_instruction_without_the_operator():
    import dataclasses

    finding = dataclasses.replace(_finding("m.pte", located=False), nodes=["constant v0", "instr 3 (et_copy::_h2d_copy.out)"],
                                  copies=["instr 3 (et_copy::_h2d_copy.out)"])
    report = build_report([finding], [], 1, 1)
    assert emit(report, ReportOptions()).splitlines()[0] == "m.pte:forward:instr 3: XF006 copies `w` every call."


def test_a_program_read_from_an_archive_names_it_before_the_message():
    import dataclasses

    finding = dataclasses.replace(_finding("pt2/round_trip.pt2"), file="/abs/pt2/round_trip.pt2")
    report = build_report([finding], [], 1, 1)
    assert emit(report, ReportOptions(project_root="/abs")).splitlines()[0] == (
        "model.py:3:5: XF006 round_trip.pt2: copies `w` every call.")


def test_byte_counts_beyond_a_float_stay_exact_and_print():
    """A tensor of 33 dims of 2**31-1 float32 elements: sizes are integers end to end, the
    text report shows them, JSON carries the exact number."""
    import json

    from xferlint.analyzer.lattice import CPU, Device
    from xferlint.analyzer.view import MethodView, Node, OpKind, ProgramView, TensorMeta, Value
    from xferlint.api import lint_report
    from xferlint.reporters import ReportOptions, emit

    shape = (2**31 - 1,) * 33
    huge = 4 * (2**31 - 1) ** 33
    meta = TensorMeta(shape=shape, dtype="float32", nbytes=huge)
    cuda = Device("cuda", 0)
    values = {"x": Value(id="x", tensor=meta, declared_device=CPU), "d": Value(id="d", tensor=meta, declared_device=cuda),
              "h": Value(id="h", tensor=meta, declared_device=CPU)}
    nodes = (Node(0, "x", OpKind.INPUT, "input", outputs=("x",)),
             Node(1, "h2d", OpKind.H2D, "et_copy._h2d_copy.default", inputs=("x",), outputs=("d",), device=cuda),
             Node(2, "d2h", OpKind.D2H, "et_copy._d2h_copy.default", inputs=("d",), outputs=("h",)))
    view = ProgramView(input="huge", name="program", kind="graph",
                       methods=(MethodView(name="forward", nodes=nodes, values=values, outputs=("d",)),))
    report = lint_report(view, select=["XF003"])
    [finding] = report.findings
    assert finding.bytes == huge
    text = emit(report, "text", ReportOptions())
    assert "EiB" in text and "Found 1 finding" in text
    data = json.loads(emit(report, "json", ReportOptions()))
    assert data["findings"][0]["bytes"] == huge
    emit(report, "sarif", ReportOptions())


def test_the_concise_footer_says_where_the_remedy_is_and_full_does_not_repeat_it():
    report = build_report([_finding("model.py")], [], 1, 1)
    concise = emit(report, ReportOptions()).splitlines()
    assert "What to do: `xferlint rule XF006` (any code), or --output-format full." in concise
    full = emit(report, ReportOptions(full=True))
    assert "What to do:" not in full and "help: `xferlint rule XF006`" in full
    assert "What to do:" not in emit(build_report([], [], 1, 1), ReportOptions())  # nothing found, no hint
