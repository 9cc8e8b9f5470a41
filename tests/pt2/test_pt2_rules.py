"""The rules on torch.export ATen programs: `.pt2` files read torch-free and the same
ExportedPrograms given in-process find the same anti-patterns, at the same lines, with
the same bytes; negative twins are clean."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from xferlint.api import lint
from xferlint.frontends.pt2.view import load_pt2_file
from xferlint.testing.aten import JSON_EDITED, export

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXPECTED = {
    "round_trip": ["XF001"], "staging": ["XF002"], "dead_copy": ["XF003"], "dead_copy_ok": [],
    "duplicate_peer": ["XF004"], "cond_round_trip": ["XF001"], "duplicate": ["XF004"], "host_split": ["XF005"],
    "buffer_move": ["XF006"], "item": ["XF012"], "nonzero": ["XF012"], "mask": ["XF012"],
    "round_trip_ok": [], "staging_ok": [], "duplicate_ok": [], "host_split_ok": [], "buffer_move_ok": [],
    "item_ok": [], "nonzero_ok": [],
    "round_trip_cast": ["XF001"], "map_round_trip": ["XF001"], "scan_round_trip": ["XF001"],
    "while_round_trip": ["XF001"], "loops_ok": [],
}
# run_decompositions() eliminates dead code: the dead `.cpu()` is gone after it.
DECOMPOSED = {**EXPECTED, "dead_copy": []}
BYTES = {"cond_round_trip": 256, "dead_copy": 128, "duplicate_peer": 128, "round_trip": 256, "staging": 256, "duplicate": 128, "host_split": 256, "buffer_move": 32,
         # f32 down, f16 back; map: one (8,) slice per iteration, both ways; loops: (4, 8) both ways
         "round_trip_cast": 192, "map_round_trip": 64, "scan_round_trip": 256, "while_round_trip": 256}


def _summary(findings):
    return sorted((f.code, f.bytes, f.location.line if f.location else None) for f in findings)


@pytest.mark.parametrize("decomposed", [False, True], ids=["training", "decomposed"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_pt2_findings(pt2_file, name, decomposed):
    findings = lint(load_pt2_file(pt2_file(name, decomposed)).view)
    expected = (DECOMPOSED if decomposed else EXPECTED)[name]
    assert sorted(f.code for f in findings) == expected
    for f in findings:
        assert f.location is not None and f.location.file.endswith("aten_models.py")
    if name in BYTES and expected:
        assert [f.bytes for f in findings] == [BYTES[name]]


@pytest.mark.parametrize("decomposed", [False, True], ids=["training", "decomposed"])
@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if n not in JSON_EDITED))
def test_exported_program_matches_pt2(pt2_file, name, decomposed):
    """The entry-point ExportedProgram and its saved .pt2 give the same findings."""
    in_process = lint(export(name, decomposed))
    from_file = lint(load_pt2_file(pt2_file(name, decomposed)).view)
    assert _summary(in_process) == _summary(from_file)
    assert sorted(f.code for f in in_process) == (DECOMPOSED if decomposed else EXPECTED)[name]


def test_pt2_check_never_imports_torch(pt2_dir):
    script = (
        "import sys\n"
        "from xferlint.pipeline import check_paths\n"
        "from xferlint.rules.base import all_rules\n"
        f"run = check_paths([{pt2_dir!r}], [r() for r in all_rules()])\n"
        "assert not run.errors, run.errors\n"
        "print(len(run.findings))\n"
        "sys.exit(0 if 'torch' not in sys.modules else 99)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) == sum(len(v) for v in EXPECTED.values()) + sum(
        len(v) for v in DECOMPOSED.values())


def test_bundled_samples_are_current(pt2_dir):
    """sample_models/pt2 holds the training-IR exports the builder writes today: the same
    graph, and findings at the same source lines (an archive exported before
    aten_models.py changed points `make demo` users at the wrong line)."""
    import zipfile

    bundled = os.path.join(REPO, "sample_models", "pt2")
    for name in EXPECTED:
        def graph(path):
            with zipfile.ZipFile(path) as zf:
                model = json.loads(zf.read(next(n for n in zf.namelist() if n.endswith("models/model.json"))))
            return [n["target"] for n in model["graph_module"]["graph"]["nodes"]]
        ours, fresh = os.path.join(bundled, f"{name}.pt2"), os.path.join(pt2_dir, f"{name}.pt2")
        assert graph(ours) == graph(fresh), name
        where = [(f.code, f.location.line, f.location.column) for f in lint(load_pt2_file(fresh).view)]
        assert [(f.code, f.location.line, f.location.column) for f in lint(load_pt2_file(ours).view)] == where, name


def test_values_on_one_device_share_its_device_object(pt2_file):
    """A `.pt2` names a tensor's device per tensor; the view keeps one Device object per
    device, so that rules grouping by object see a few devices, not one per value."""
    view = load_pt2_file(pt2_file("host_split")).view
    devices = [v.declared_device for m in view.methods for v in m.values.values() if v.declared_device is not None]
    assert len({str(d) for d in devices}) == 2
    assert len({id(d) for d in devices}) == 2


@pytest.mark.parametrize("from_file", [False, True], ids=["exported-program", "pt2"])
def test_a_loop_carried_value_is_said_to_be_one(pt2_file, from_file):
    """The `while_loop` body's `v` is moved in on entry and back by every turn: two writers,
    so no one expression computes it. The message says it is the loop's carry (at the
    loop's line) rather than `a value`."""
    program = load_pt2_file(pt2_file("while_round_trip")).view if from_file else export("while_round_trip", False)
    (finding,) = lint(program)
    assert finding.message == "a loop-carried value round-trips cuda:0 -> cpu -> cuda:0: 256 B per call"
    assert "while_loop(" in finding.location.code
