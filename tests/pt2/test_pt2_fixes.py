"""Fixes on `.pt2` archives: XF001 / XF003 / XF004 as on ExecuTorch programs, XF002 made
one direct device-to-device copy. The fixed archive loads with `torch.export.load` and
holds exactly the expected transfers; everything but the model JSON is unchanged; a fix
that cannot be proven leaves nothing written."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import zipfile

import pytest

from xferlint.cli import main
from xferlint.findings import Applicability
from xferlint.fixes.driver import fix_input
from xferlint.fixes.plan import FixPlan
from xferlint.fixes.planners import PLANNERS
from xferlint.frontends.pt2.view import load_pt2_file
from xferlint.rules.base import all_rules

RULES = [r() for r in all_rules()]
# name -> (the rule fixed, the devices of the `.to()` copies left, over every subgraph)
FIXED = {
    "round_trip": ("XF001", []),
    "staging": ("XF002", ["cuda:1"]),
    "dead_copy": ("XF003", []),
    "duplicate": ("XF004", ["cuda:0"]),
    "duplicate_peer": ("XF004", ["cuda:1"]),
    "cond_round_trip": ("XF001", []),
    "map_round_trip": ("XF001", []),
    "scan_round_trip": ("XF001", []),
    "while_round_trip": ("XF001", []),
}
COPY_TARGETS = ("aten._to_copy.default", "aten.to.dtype_layout", "aten.to.device")
CASES = [(n, d) for n in FIXED for d in (False, True) if not (n == "dead_copy" and d)]  # decomposition drops it


def _load(path: str):
    import torch

    logging.disable(logging.WARNING)  # torch.export.load warns about the fake sample inputs
    try:
        return torch.export.load(path)
    finally:
        logging.disable(logging.NOTSET)


def _copies(ep) -> list[tuple[str, str]]:
    """(device, operand) of every `.to()` copy in the program and its subgraphs."""
    found = []
    for _, module in ep.graph_module.named_modules():
        graph = getattr(module, "graph", None)
        for node in graph.nodes if graph is not None else ():
            if node.op == "call_function" and str(node.target) in COPY_TARGETS:
                found.append((str(node.kwargs.get("device")), node.args[0].name))
    return sorted(found)


@pytest.fixture(scope="session")
def fixed_pt2(pt2_file, tmp_path_factory):
    """`fixed_pt2(name, decomposed)`: (FixResult, path of the written archive), fixed once."""
    out = tmp_path_factory.mktemp("pt2-fixed")
    cache: dict = {}

    def get(name: str, decomposed: bool = False):
        if (name, decomposed) not in cache:
            result = fix_input(pt2_file(name, decomposed), RULES)
            path = os.path.join(out, f"{name}{'.decomposed' if decomposed else ''}.pt2")
            with open(path, "wb") as handle:
                handle.write(result.buffer)
            cache[name, decomposed] = (result, path)
        return cache[name, decomposed]

    return get


@pytest.mark.parametrize("name, decomposed", CASES, ids=[f"{n}-{'dec' if d else 'train'}" for n, d in CASES])
def test_fixed_pt2_loads_and_holds_the_expected_transfers(pt2_file, fixed_pt2, name, decomposed):
    code, left = FIXED[name]
    result, path = fixed_pt2(name, decomposed)
    assert [p.code for p in result.applied] == [code] and not result.skipped
    before, after = _copies(_load(pt2_file(name, decomposed))), _copies(_load(path))
    assert len(before) > len(after), "the fix removes copies"
    assert [device for device, _ in after] == left
    relinted = [f.code for f in _relint(path)]
    assert code not in relinted and relinted == [f.code for f in result.remaining]


def _relint(path):
    from xferlint.api import lint

    return lint(load_pt2_file(path).view)


def test_staging_becomes_one_direct_copy_from_the_device_value(fixed_pt2):
    for decomposed in (False, True):
        _, path = fixed_pt2("staging", decomposed)
        assert _copies(_load(path)) == [("cuda:1", "sin")]  # cuda:0 `sin` straight to cuda:1
        view = load_pt2_file(path).view
        kinds = [n.kind.value for n in view.methods[0].nodes if n.target.startswith(("aten._to_copy", "aten.to."))]
        assert kinds == ["to_device"]


def test_only_the_model_json_changes(pt2_file, fixed_pt2):
    _, path = fixed_pt2("round_trip")
    with zipfile.ZipFile(pt2_file("round_trip")) as a, zipfile.ZipFile(path) as b:
        before, after = a.infolist(), b.infolist()
        assert [i.filename for i in before] == [i.filename for i in after]
        assert [i.compress_type for i in before] == [i.compress_type for i in after]
        changed = [i.filename for i in before if a.read(i) != b.read(i.filename)]
    assert changed == ["round_trip/models/model.json"]


def test_a_deflated_archive_stays_deflated(pt2_file, tmp_path):
    deflated = tmp_path / "round_trip.pt2"
    with zipfile.ZipFile(pt2_file("round_trip")) as src, zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    result = fix_input(str(deflated), RULES)
    assert result.changed
    with zipfile.ZipFile(io.BytesIO(result.buffer)) as zf:
        assert {i.compress_type for i in zf.infolist()} == {zipfile.ZIP_DEFLATED}
    out = tmp_path / "fixed.pt2"
    out.write_bytes(result.buffer)
    assert _copies(_load(str(out))) == []


def test_a_fix_that_changes_the_dtype_is_refused_and_nothing_is_written(pt2_file, tmp_path, capsys):
    """`y.cpu().to(DEV, float16)`: reading `y` instead would drop the cast."""
    out = tmp_path / "out.pt2"
    code = main(["fix", pt2_file("round_trip_cast"), "-o", str(out), "--isolated"])
    printed = capsys.readouterr().out
    assert code == 1
    assert "XF001 not fixed" in printed and "differs from" in printed and "dtype" in printed
    assert "not written: nothing was fixed" in printed
    assert os.listdir(tmp_path) == [], "no output and no temporary file"
    assert main(["check", pt2_file("round_trip_cast"), "--isolated", "--output-format", "json"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)["findings"]
    assert finding["fixable"] is False and "dtype" in finding["fix_refused"]


@pytest.mark.parametrize("broken, reason", [
    (lambda ctx, f: _plan(f), "still reports"),  # changes nothing
    (lambda ctx, f: _plan(f, removes=(_step(f, "h2d"),)), "does not read back"),  # leaves a reader dangling
])
def test_a_fix_that_does_not_verify_is_not_applied(monkeypatch, pt2_file, broken, reason):
    monkeypatch.setitem(PLANNERS, "XF001", broken)
    result = fix_input(pt2_file("round_trip"), RULES)
    assert not result.changed
    (skipped,) = result.skipped
    assert reason in skipped.reason
    with open(pt2_file("round_trip"), "rb") as handle:
        assert result.buffer == handle.read()


def _plan(finding, **edits) -> FixPlan:
    return FixPlan(code=finding.code, name=finding.name, method=finding.method, finding=tuple(finding.nodes),
                   applicability=Applicability.SAFE, summary="broken", **edits)


def _step(finding, role: str) -> str:
    return next(s.node for s in finding.steps if s.role == role)


def test_cli_fix_check_fix_and_diff(pt2_file, tmp_path, capsys):
    staging = tmp_path / "staging.pt2"
    staging.write_bytes(open(pt2_file("staging"), "rb").read())
    original = staging.read_bytes()
    assert main(["fix", str(staging), "-o", str(tmp_path / "wrong.pte"), "--isolated"]) == 2
    assert "must be a .pt2 file" in capsys.readouterr().err
    assert main(["check", str(staging), "--diff", "--isolated"]) == 1
    captured = capsys.readouterr()
    assert "+to_1 = aten.to.dtype_layout(sin)  # cuda:1" in captured.out and "Would fix 1 finding" in captured.err
    assert staging.read_bytes() == original, "--diff writes nothing"
    assert main(["check", str(staging), "--fix", "--isolated"]) == 0
    assert "XF002 cross-device-staging: fixed 1" in capsys.readouterr().err
    assert staging.read_bytes() != original
    assert main(["check", str(staging), "--isolated"]) == 0
    out = tmp_path / "fixed.pt2"
    assert main(["fix", pt2_file("duplicate"), "-o", str(out), "--isolated"]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert _copies(_load(str(out))) == [("cuda:0", "h")]


_FIX_TORCH_FREE = r"""
import sys
from xferlint.cli import main
code = main(["fix", sys.argv[1], "-o", sys.argv[2], "--isolated"])
sys.exit(10 + code if "torch" not in sys.modules else 99)
"""


def test_fixing_a_pt2_imports_no_torch(pt2_file, tmp_path):
    done = subprocess.run([sys.executable, "-c", _FIX_TORCH_FREE, pt2_file("cond_round_trip"),
                           str(tmp_path / "o.pt2")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 10, done.stdout + done.stderr
    assert os.path.getsize(tmp_path / "o.pt2") > 0


def test_an_exported_program_entry_point_names_the_pt2_route(tmp_path, capsys):
    """An ExportedProgram in memory is not rewritten: its fixable findings say how to fix
    it (save it as .pt2), and carry no `[*]`."""
    entry = tmp_path / "exported.py"
    entry.write_text("from xferlint.testing.aten import export\n\n\ndef program():\n"
                     "    return export('round_trip')\n")
    assert main(["check", str(entry), "--isolated", "--output-format", "json"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)["findings"]
    assert finding["code"] == "XF001" and finding["fixable"] is False
    assert "torch.export.save" in finding["fix_refused"] and "fixed.pt2" in finding["fix_refused"]


_EXPORT_ROUND_TRIPS = r"""
import sys
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

count, path = int(sys.argv[1]), sys.argv[2]


class RoundTrips(torch.nn.Module):
    def forward(self, x):
        for _ in range(count):
            x = torch.sin(x).cpu().to("cuda:0")
        return x


with FakeTensorMode(allow_non_fake_inputs=True):
    x = torch.randn(8, 8).to("cuda:0")
    with torch.no_grad():
        program = torch.export.export(RoundTrips().eval(), (x,))
torch.export.save(program, path)
"""


def test_fixing_many_round_trips_costs_the_same_work_per_round_trip(tmp_path):
    """Each plan was checked against the model JSON read again (every graph walked, each
    node found by a scan): the fix of n round trips was quadratic (3,000: 88 s)."""
    import cProfile
    import pstats

    from xferlint.fixes.pt2.fix import fix_pt2_loaded

    def calls_per_round_trip(count: int) -> float:
        path = tmp_path / f"round_trips_{count}.pt2"
        done = subprocess.run([sys.executable, "-c", _EXPORT_ROUND_TRIPS, str(count), str(path)],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        loaded = load_pt2_file(str(path))
        profile = cProfile.Profile()
        result = profile.runcall(fix_pt2_loaded, loaded, RULES)
        # all but the last: its copy back is the method's output (an unsafe fix)
        assert sum(p.code == "XF001" for m in result.methods for p in m.applied) == count - 1
        return pstats.Stats(profile).total_calls / count

    small, large = calls_per_round_trip(40), calls_per_round_trip(400)
    assert large < 1.25 * small, (small, large)
