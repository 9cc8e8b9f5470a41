"""Findings come in program order: a `.pte` without debug info has no source line, so its
findings are ordered by the instructions they name, numerically (`instr 7` before
`instr 15`), in every format, not as strings (`instr 15` before `instr 7`)."""

from __future__ import annotations

import json

import pytest

from xferlint.cli import main
from xferlint.findings import node_order
from xferlint.testing import synthetic_pte as sp


@pytest.fixture(scope="module")
def ladder(tmp_path_factory):
    path = tmp_path_factory.mktemp("order") / "ladder.pte"
    path.write_bytes(sp.ladder(3))  # XF001 / XF005 at instructions 7, 15, 23: one and two digits
    return path


def _check(capfd, path, *args: str) -> str:
    assert main(["check", str(path), "--exit-zero", "--isolated", *args]) == 0
    return capfd.readouterr().out


def _first_instruction(names) -> int:
    return next(int(n.split()[1]) for n in names if n.startswith("instr "))


def _in_order(firsts: list[int]) -> None:
    assert len(firsts) >= 3 and firsts == sorted(firsts), firsts
    assert max(firsts) >= 10 > min(firsts)  # both widths, or the check proves nothing


@pytest.mark.parametrize("code", ["XF001", "XF005"])
def test_json_findings_come_in_instruction_order(capfd, ladder, code):
    report = json.loads(_check(capfd, ladder, "--format", "json"))
    _in_order([_first_instruction(f["nodes"]) for f in report["findings"] if f["code"] == code])


def test_text_and_sarif_findings_come_in_instruction_order(capfd, ladder):
    lines = [line for line in _check(capfd, ladder, "--output-format", "concise").splitlines() if " XF001 " in line]
    _in_order([int(line.split(":instr ")[1].split(":")[0]) for line in lines])
    sarif = json.loads(_check(capfd, ladder, "--format", "sarif"))
    steps = [r["codeFlows"][0]["threadFlows"][0]["locations"] for r in sarif["runs"][0]["results"]
             if r["ruleId"] == "XF001"]
    _in_order([_first_instruction([s["location"]["logicalLocations"][0]["name"] for s in flow]) for flow in steps])


def test_node_order_is_numeric_and_total():
    names = ["instr 103 (x)", "instr 15 (x)", "instr 9 (x)", "input 0 (v0)", "instr 15 (a)"]
    ordered = sorted(names, key=lambda n: node_order((n,)))
    assert ordered == ["input 0 (v0)", "instr 9 (x)", "instr 15 (a)", "instr 15 (x)", "instr 103 (x)"]
    assert node_order(("a1", "b")) < node_order(("a1", "c")) < node_order(("a2",))
