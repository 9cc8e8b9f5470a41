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


def _pt2_copied_twice(k: int) -> bytes:
    """A `.pt2` (an archive holding only its model JSON) where each of `k` host inputs is
    copied to cuda:0 twice and one `aten.cat` reads all 2k copies: k XF004 fixes, each
    rewiring the cat from its second copy to its first."""
    import io
    import json
    import zipfile

    def meta(device):
        return {"dtype": 7, "sizes": [{"as_int": 4}], "requires_grad": False, "device": device,
                "strides": [{"as_int": 1}], "storage_offset": {"as_int": 0}, "layout": 7}

    cpu, cuda = {"type": "cpu", "index": None}, {"type": "cuda", "index": 0}
    nodes, values, inputs = [], {"cat": meta(cuda)}, []
    for i in range(k):
        inputs.append({"as_tensor": {"name": f"h{i}"}})
        values[f"h{i}"] = meta(cpu)
        for copy in ("a", "b"):
            name = f"to_{copy}{i}"
            values[name] = meta(cuda)
            nodes.append({"target": "torch.ops.aten.to.dtype_layout", "name": name, "metadata": {},
                          "inputs": [{"name": "self", "arg": {"as_tensor": {"name": f"h{i}"}}, "kind": 1},
                                     {"name": "device", "arg": {"as_device": cuda}, "kind": 2}],
                          "outputs": [{"as_tensor": {"name": name}}]})
    copies = [{"name": f"to_{copy}{i}"} for i in range(k) for copy in ("a", "b")]
    nodes.append({"target": "torch.ops.aten.cat.default", "name": "cat", "metadata": {},
                  "inputs": [{"name": "tensors", "arg": {"as_tensors": copies}, "kind": 1}],
                  "outputs": [{"as_tensor": {"name": "cat"}}]})
    outputs = [{"as_tensor": {"name": "cat"}}]
    model = {"graph_module": {"graph": {"inputs": inputs, "outputs": outputs, "nodes": nodes, "tensor_values": values},
                              "signature": {"input_specs": [{"user_input": {"arg": i}} for i in inputs],
                                            "output_specs": [{"user_output": {"arg": o}} for o in outputs]}},
             "schema_version": {"major": 8, "minor": 0}}
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        archive.writestr("m/archive_format", "pt2")
        archive.writestr("m/archive_version", "0")
        archive.writestr("m/models/model.json", json.dumps(model))
    return data.getvalue()


def test_thousands_of_rewires_of_one_reader_in_a_pt2_rename_in_linear_work():
    # each rewire of the cat once walked all of its 2k operands for the name it renames
    from xferlint.fixes.engine import plan_method
    from xferlint.fixes.pt2.graph import apply_plans
    from xferlint.frontends.pt2.view import load_pt2_bytes
    from xferlint.selection import select_rules

    def lines(k: int) -> int:
        loaded = load_pt2_bytes(_pt2_copied_twice(k))
        method = loaded.view.methods[0]
        plans = plan_method(loaded.view, method, select_rules(select=["XF004"]), False, exclude=set()).plans
        assert len(plans) == k
        fixed = {}
        count = lines_run(lambda: fixed.update(apply_plans(loaded.native.archive.model, method, plans)))
        read = fixed["graph_module"]["graph"]["nodes"][-1]["inputs"][0]["arg"]["as_tensors"]
        assert [r["name"] for r in read[:4]] == ["to_a0", "to_a0", "to_a1", "to_a1"]
        return count

    assert lines(1_000) / 1_000 < 1.25 * lines(100) / 100
