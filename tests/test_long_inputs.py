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


def _fx_copied_twice(k: int, reader: str):
    """An FX graph where each of k inputs is cloned twice and both clones are read by one
    `aten.cat` (reader "cat") or by the graph's output (reader OUTPUT), with the XF004
    plans that read the first clone for the second."""
    import torch
    import torch.fx

    from xferlint.fixes.plan import OUTPUT, new_plan, new_rewire

    graph = torch.fx.Graph()
    read = []
    for i in range(k):
        h = graph.placeholder(f"h{i}")
        read += [graph.call_function(torch.ops.aten.clone.default, (h,), name=f"to_{side}{i}") for side in "ab"]
    if reader == "cat":
        graph.output((graph.call_function(torch.ops.aten.cat.default, (read,), name="cat"),))
    else:
        graph.output(tuple(read))
    plans = [new_plan(code="XF004", name="duplicate-transfer", method="forward", finding=(f"to_a{i}", f"to_b{i}"),
                      applicability=Applicability.SAFE, summary="s",
                      rewires=(new_rewire(reader=OUTPUT if reader == "output" else reader, old=f"to_b{i}",
                                          new=f"to_a{i}"),),
                      removes=(f"to_b{i}",), removes_if_dead=(), copies=()) for i in range(k)]
    return torch.fx.GraphModule(torch.nn.Module(), graph), plans


@pytest.mark.parametrize("reader", ["cat", "output"])
def test_thousands_of_fx_rewires_of_one_reader_walk_its_arguments_a_few_times(monkeypatch, reader):
    # fixes/fx.apply_plans called Node.replace_input_with per rewire, and torch.fx walks every
    # argument of the reader each time (3,000 fixes into one cat: 8.4 s)
    import torch.fx

    from xferlint.fixes.fx import apply_plans

    walked = [0]
    for name in ("_update_args_kwargs", "_replace_input_with"):
        inner = getattr(torch.fx.Node, name)

        def counted(self, *args, _inner=inner):
            walked[0] += len(self._input_nodes)
            return _inner(self, *args)

        monkeypatch.setattr(torch.fx.Node, name, counted)

    def walks(k: int) -> int:
        gm, plans = _fx_copied_twice(k, reader)
        walked[0] = 0
        apply_plans(gm, plans)
        final = next(n for n in gm.graph.nodes if n.op == "output")
        read = final.args[0][0].args[0] if reader == "cat" else final.args[0]
        assert [n.name for n in read[:4]] == ["to_a0", "to_a0", "to_a1", "to_a1"] and len(read) == 2 * k
        assert not any(n.name.startswith("to_b") for n in gm.graph.nodes)
        return walked[0]

    assert walks(1_000) / 1_000 < 1.25 * walks(100) / 100


def test_fx_rewires_leave_the_graph_replace_input_with_leaves():
    # the batched rewires must leave each node's arguments, and the order of its users
    # (what later passes iterate), as one replace_input_with per rewire did
    import random

    import torch
    import torch.fx

    from xferlint.fixes.fx import FxIndex, apply_plans
    from xferlint.fixes.plan import OUTPUT, new_plan, new_rewire

    def graph(rnd: random.Random) -> torch.fx.GraphModule:
        g = torch.fx.Graph()
        nodes = [g.placeholder(f"p{i}") for i in range(5)]
        for i in range(12):
            ins = [rnd.choice(nodes) for _ in range(rnd.randint(1, 5))]
            if i % 3 == 0:
                node = g.call_function(torch.ops.aten.cat.default, (ins,), {"dim": 0}, name=f"n{i}")
            elif i % 3 == 1:
                node = g.call_function(torch.ops.aten.add.Tensor, (ins[0], ins[-1]), name=f"n{i}")
            else:
                node = g.call_function(torch.ops.aten.where.self, (ins[0],), {"other": ins[-1]}, name=f"n{i}")
            nodes.append(node)
        g.output(tuple(nodes[-4:]) + (nodes[2],))
        return torch.fx.GraphModule(torch.nn.Module(), g)

    def state(gm: torch.fx.GraphModule) -> list:
        return [(n.name, str(n.args), str(n.kwargs), [u.name for u in n.users]) for n in gm.graph.nodes]

    for seed in range(300):
        rnd = random.Random(seed)
        mine, theirs = graph(random.Random(seed)), graph(random.Random(seed))
        index = FxIndex(theirs)
        names = [n.name for n in theirs.graph.nodes if n.op != "output"]
        readers = [n.name for n in theirs.graph.nodes if n.op == "call_function"][-5:] + [OUTPUT]
        rewires = []
        for _ in range(rnd.randint(2, 10)):  # each rewire valid on the graph the ones before left
            name = rnd.choice(readers)
            reader = index.node(name)
            old = rnd.choice(reader.all_input_nodes)
            new = index.node(rnd.choice(names[:names.index(name)] if name in names else names))  # defined before
            rewire = new_rewire(reader=name, old=old.name, new=new.name)
            if rewire not in rewires:  # a plan's rewires are a set (fixes.plan.edits)
                rewires.append(rewire)
                reader.replace_input_with(old, new)
        plan = new_plan(code="XF004", name="duplicate-transfer", method="forward", finding=(), summary="s",
                        applicability=Applicability.SAFE, rewires=tuple(rewires), removes=(), removes_if_dead=(),
                        copies=())
        apply_plans(mine, [plan])
        assert state(mine) == state(theirs), seed
