"""The transfer summary against what ExecuTorch's own graph holds (copy nodes and their
TensorSpecs, read without xferlint), the savings of fixable findings, the budget (XF009)
and where the summary shows up: JSON, text footer, CLI, config."""

from __future__ import annotations

import json
import math
import textwrap

import pytest
import torch

from xferlint.api import lint, lint_report
from xferlint.cli import main

# ExecuTorch warns about every program with a mutated buffer (mutable-buffer); not ours.
pytestmark = pytest.mark.filterwarnings("ignore:Mutation on a buffer:UserWarning")

# --------------------------------------------------------------------------- ground truth


def graph_traffic(built) -> dict:
    """Copies in a lowered program's final graph, from ExecuTorch's TensorSpecs."""
    graph = built.exported_program().graph_module.graph

    def device(node):
        spec = node.meta["spec"]
        return "cpu" if spec.device.name == "CPU" else f"{spec.device.name.lower()}:{int(spec.device_index or 0)}"

    def nbytes(node):
        spec = node.meta["spec"]
        return math.prod(spec.shape) * torch.empty((), dtype=spec.dtype).element_size()

    truth = {"h2d_copies": 0, "h2d_bytes": 0, "d2h_copies": 0, "d2h_bytes": 0, "pairs": {}}
    for node in graph.nodes:
        if node.op != "call_function" or "et_copy" not in str(node.target):
            continue
        kind = "h2d" if "_h2d_copy" in str(node.target) else "d2h"
        source = node.args[0] if node.args else node.kwargs["self"]
        truth[f"{kind}_copies"] += 1
        truth[f"{kind}_bytes"] += nbytes(node)
        pair = (device(source), device(node))
        count, total = truth["pairs"].get(pair, (0, 0))
        truth["pairs"][pair] = (count + 1, total + nbytes(node))
    return truth


def summary_traffic(report) -> dict:
    t = report.summary.transfers
    return {"h2d_copies": t.h2d_copies, "h2d_bytes": t.h2d_bytes, "d2h_copies": t.d2h_copies,
            "d2h_bytes": t.d2h_bytes, "pairs": {(p.source, p.target): (p.copies, p.bytes) for p in t.pairs}}


@pytest.mark.parametrize("key", ["split", "split-two-devices", "fan-in", "fan-out", "mixed-devices", "round-trip",
                                 "param-workaround", "mutable-buffer", "legacy", "planned", "skip-copies"])
def test_counts_and_bytes_match_executorchs_graph(program, key):
    built = program(key)
    report = lint_report(built)
    assert summary_traffic(report) == graph_traffic(built)
    t = report.summary.transfers
    assert t.bytes == t.h2d_bytes + t.d2h_bytes and t.symbolic_copies == 0
    [method] = t.methods
    assert method.method == "forward" and method.h2d_copies == t.h2d_copies


def test_random_models_match_executorchs_graph(lowered_once):
    from randmodels import generate, lower_spec

    checked = 0
    for seed in range(500, 508):
        spec = generate(seed, min_ops=5, max_ops=9, device_weights=(1, 4, 2 if seed % 2 else 0))
        try:
            built = lowered_once(f"rules_more:random:{spec.seed}", lambda spec=spec: lower_spec(spec))
        except Exception:  # noqa: BLE001 - a model ExecuTorch refuses is not one to check
            continue
        assert summary_traffic(lint_report(built)) == graph_traffic(built), spec.describe()
        checked += 1
    assert checked >= 5


def test_totals_add_up_over_programs(program):
    programs = {"a": program("split"), "b": program("split-two-devices")}
    report = lint_report(programs)
    t = report.summary.transfers
    assert [m.program for m in t.methods] == ["a", "b"]
    assert t.h2d_copies == sum(m.h2d_copies for m in t.methods)
    assert t.d2h_bytes == sum(m.d2h_bytes for m in t.methods)
    assert sum(p.bytes for p in t.pairs) == t.bytes


# --------------------------------------------------------------------------- savings


def _roundtrip_fanout():
    from xferlint.testing import lower

    class SharedResult(torch.nn.Module):
        def forward(self, x, y):
            a = x + y
            return torch.sin(a), a + y

    return lower(SharedResult(), (torch.randn(4, 4), torch.randn(4, 4)), ["cuda:0"], elide=False)


def test_a_round_trip_saves_both_copies(program):
    report = lint_report(program("round-trip"))
    [finding] = report.findings
    assert finding.code == "XF001" and finding.saves_bytes == 128 and len(finding.removes) == 2
    assert report.summary.transfers.fixable_savings == 128


def test_a_d2h_shared_by_two_round_trips_is_saved_once(lowered_once):
    built = lowered_once("rules_more:roundtrip-fanout", _roundtrip_fanout)
    report = lint_report(built, select=["XF001"])
    assert len(report.findings) == 2
    d2h = {f.removes[-1] for f in report.findings}
    assert len(d2h) == 1  # both fixes remove the same D2H once its last reader is gone
    # two H2Ds and one D2H of 64 B each, not 2 x (64 + 64)
    assert report.summary.transfers.fixable_savings == 3 * 64


def test_a_dead_copy_saves_its_bytes(lowered_once):
    from xferlint.testing import lower
    from xferlint.testing.models import AddSin, example_inputs

    built = lowered_once("rules_more:dead-d2h",
                         lambda: lower(AddSin(), example_inputs(), ["cuda:0"], elide=False, rewire_without_dce=True))
    report = lint_report(built, select=["XF003"])
    [finding] = report.findings
    assert finding.saves_bytes == 64 and report.summary.transfers.fixable_savings == 64


def test_findings_that_fix_nothing_save_nothing(program):
    report = lint_report(program("split"))
    assert report.summary.by_code == {"XF005": 1}
    assert report.summary.transfers.fixable_savings == 0


# --------------------------------------------------------------------------- budget (XF009)


def test_the_budget_is_off_by_default(program):
    assert lint(program("split"), select=["XF009"]) == []


def test_a_method_over_its_budget_is_a_finding(program):
    built = program("split")  # x and y, then the cumsum result: 3 H2D; 2 D2H; 256 B each
    [finding] = lint(built, select=["XF009"], max_transfer_bytes=1000)
    assert finding.bytes == 1280
    assert "1.2 KiB" in finding.detail and "1000 bytes" in finding.detail
    assert "3 H2D: 768 B" in finding.detail and "2 D2H: 512 B" in finding.detail
    assert lint(built, select=["XF009"], max_transfer_bytes=1280) == []


def test_a_view_can_carry_its_own_budget(program):
    import dataclasses

    from xferlint.frontends.executorch import load_graph_program

    view = load_graph_program(program("split"), input="split", name="program", file=None).view
    assert len(lint(dataclasses.replace(view, max_transfer_bytes=512), select=["XF009"])) == 1
    # the program's own budget wins over the command line's
    assert lint(dataclasses.replace(view, max_transfer_bytes=4096), select=["XF009"], max_transfer_bytes=10) == []


@pytest.fixture(scope="module")
def entry(tmp_path_factory):
    """An entry point with a ready program (imported once per process, so the CLI runs
    below lower nothing again): stock ExecuTorch, sin(x + y) on cuda:0 over 4x4 floats,
    2 H2D + 1 D2H of 64 B, no findings."""
    directory = tmp_path_factory.mktemp("budget")
    path = directory / "model.py"
    path.write_text(textwrap.dedent("""
        import torch
        from xferlint.testing import lower
        from xferlint.testing.models import AddSin, example_inputs

        program = lower(AddSin(), example_inputs(), ["cuda:0"])
    """))
    return directory


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_budget(entry, capsys):
    model = str(entry / "model.py")
    code, out, _ = _run(capsys, "check", model, "--max-transfer-bytes", "1000")
    assert code == 0 and "All checks passed!" in out
    assert "Transfers per call in 1 method: 2 H2D (128 B), 1 D2H (64 B); cpu -> cuda:0 128 B, cuda:0 -> cpu 64 B." in out
    code, out, _ = _run(capsys, "check", model, "--max-transfer-bytes", "191")
    assert code == 1 and "XF009" in out and "moves 192 B per call" in out
    code, out, _ = _run(capsys, "check", model, "--max-transfer-bytes", "191", "--ignore", "XF009")
    assert code == 0


def test_cli_budget_from_config(entry, capsys):
    config = entry / "pyproject.toml"
    config.write_text("[tool.xferlint]\nmax-transfer-bytes = 100\n")
    code, out, _ = _run(capsys, "check", str(entry / "model.py"), "--config", str(config), "--format", "json")
    assert code == 1
    report = json.loads(out)
    assert [f["code"] for f in report["findings"]] == ["XF009"]
    transfers = report["summary"]["transfers"]
    assert transfers["h2d_copies"] == 2 and transfers["d2h_bytes"] == 64
    assert transfers["methods"][0]["method"] == "forward"
    assert transfers["pairs"] == [{"source": "cpu", "target": "cuda:0", "copies": 2, "bytes": 128},
                                  {"source": "cuda:0", "target": "cpu", "copies": 1, "bytes": 64}]


def test_cli_rejects_a_negative_budget(entry, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["check", str(entry / "model.py"), "--max-transfer-bytes", "-5"])
    assert exit_info.value.code == 2
    assert "cannot be negative" in capsys.readouterr().err


@pytest.mark.parametrize("size", ["191", "191 B", "0.1865234375 KiB", "0.191kB"])
def test_a_budget_takes_a_unit(entry, capsys, size):
    """191 bytes, written as the reports write sizes or in SI units: the same budget."""
    code, out, _ = _run(capsys, "check", str(entry / "model.py"), "--max-transfer-bytes", size)
    assert code == 1 and "XF009" in out and "moves 192 B per call" in out


def test_a_budget_in_the_configuration_takes_a_unit(entry, capsys):
    config = entry / "pyproject.toml"
    config.write_text('[tool.xferlint]\nmax-transfer-bytes = "1 KiB"\n')
    code, out, _ = _run(capsys, "check", str(entry / "model.py"), "--config", str(config))
    assert code == 0 and "All checks passed!" in out
    config.write_text('[tool.xferlint]\nmax-transfer-bytes = "0.1 KiB"\n')
    code, out, err = _run(capsys, "check", str(entry / "model.py"), "--config", str(config))
    assert code == 2 and err.strip().endswith("max-transfer-bytes: 0.1 KiB is not a whole number of bytes (102.4)")


@pytest.mark.parametrize("size, why", [("0.5 KiB", None), ("1.25", "not a whole number of bytes (1.25)"),
                                       ("12 XB", "expected a number of bytes"), ("KiB", "expected a number of bytes"),
                                       ("1.2.3", "expected a number of bytes"), ("-1 KiB", "cannot be negative (-1 KiB)")])
def test_a_budget_that_is_no_byte_size_is_one_error(entry, capsys, size, why):
    if why is None:  # 512 bytes: a size, whole, and more than the model's 192
        assert _run(capsys, "check", str(entry / "model.py"), "--max-transfer-bytes", size)[0] == 0
        return
    with pytest.raises(SystemExit) as exit_info:
        main(["check", str(entry / "model.py"), f"--max-transfer-bytes={size}"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert why in err and err.count("\n") == 1, err


def test_byte_sizes_read_as_the_reports_write_them():
    from xferlint.config import parse_bytes

    assert [parse_bytes(t) for t in ("65536", "65_536", "64 KiB", "64kib", "1.5MiB", "2 GB", "3 B", ".5 KiB")] == [
        65536, 65536, 65536, 65536, 1572864, 2 * 10**9, 3, 512]


def test_the_json_schema_describes_the_summary(capsys):
    code, out, _ = _run(capsys, "schema")
    schema = json.loads(out)
    assert code == 0 and "transfers" in schema["$defs"]["Summary"]["properties"]
    assert {"h2d_copies", "d2h_bytes", "pairs", "fixable_savings", "methods"} <= set(
        schema["$defs"]["TransferSummary"]["properties"])


def test_the_rules_page_documents_every_rule(repo_root):
    """docs/rules.md is generated (docs/gen_rules.py); regenerate it when a rule changes."""
    import os
    import subprocess
    import sys

    from xferlint.rules.base import all_rules

    with open(os.path.join(repo_root, "docs", "rules.md"), encoding="utf-8") as handle:
        page = handle.read()
    for rule in all_rules():
        assert f"## {rule.name} ({rule.code})" in page, f"{rule.code}: run `python docs/gen_rules.py`"
        assert rule.summary() in page
    done = subprocess.run([sys.executable, os.path.join(repo_root, "docs", "gen_rules.py"), "/dev/stdout"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "## The transfer summary" in done.stdout


# --------------------------------------------------------------------------- .pte parity


@pytest.mark.parametrize("key", ["split", "fan-in", "two-paths", "mixed-devices", "param-workaround", "ones",
                                 "mutable-buffer", "cond-nested", "legacy", "skip-copies"])
def test_the_pte_file_gives_the_same_findings_and_traffic(program, key):
    """The emitted .pte (read torch-free, over its instruction CFG) and the graph it came
    from agree on XF005-XF007 and on the transfer summary."""
    from xferlint.frontends.pte.view import load_pte_bytes

    built = program(key)
    mine = ["XF005", "XF006", "XF007"]
    graph = lint_report(built, select=mine)
    pte = lint_report(load_pte_bytes(bytes(built.buffer), label=f"{key}.pte").view, select=mine)
    assert pte.summary.by_code == graph.summary.by_code
    assert summary_traffic(pte) == summary_traffic(graph)
