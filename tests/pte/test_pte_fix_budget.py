"""The fix trial's walk budget (`xferlint.fixes.pte.memory.WalkBudget`): proving that a
memory plan stays valid walks each fix's live range, and n fixes whose live ranges span
the same n nodes walk n**2 of them. Past the budget the rest are refused, with the reason,
so that `check` stays linear; `check` and `fix` agree on what is fixable, and `fix` run
again proves more. Ordinary programs never come near it (tests/test_scaling.py, and every
other fix test, run under the real budget)."""

from __future__ import annotations

import json

import pytest

from xferlint.cli import main
from xferlint.fixes.pte import memory
from xferlint.testing import synthetic_pte as sp

ROUND_TRIPS = 20


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "outputs.pte"
    path.write_bytes(sp.output_round_trips(ROUND_TRIPS))
    return path


def _check(path, capsys) -> list[dict]:
    main(["check", str(path), "--isolated", "--output-format", "json", "--exit-zero"])
    return [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "XF001"]


def test_fixes_within_the_budget_are_all_proved(program, capsys):
    findings = _check(program, capsys)
    assert len(findings) == ROUND_TRIPS
    assert all(f["fixable"] for f in findings)


def test_past_the_budget_the_rest_is_refused_and_fix_agrees_with_check(program, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(memory, "WALK_BUDGET", 0)
    monkeypatch.setattr(memory, "WALK_BUDGET_PER_NODE", 4)  # a few of the 20 live ranges
    findings = _check(program, capsys)
    fixable = [f for f in findings if f["fixable"]]
    refused = [f for f in findings if not f["fixable"]]
    assert fixable and refused
    assert all("work budget" in f["fix_refused"] and "run again" in f["fix_refused"] for f in refused)

    out = tmp_path / "fixed.pte"
    code = main(["fix", str(program), "-o", str(out), "--isolated"])
    text = capsys.readouterr().out
    assert code == 1  # fixable-looking findings were left: the refused ones
    assert f"fixed {len(fixable)}" in text and "work budget" in text
    left = _check(out, capsys)
    assert len(left) == len(refused)  # exactly what check called fixable was fixed

    again = tmp_path / "again.pte"
    main(["fix", str(out), "-o", str(again), "--isolated"])
    capsys.readouterr()
    assert len(_check(again, capsys)) < len(left)  # a fresh budget proves more


def test_past_the_planners_budget_dead_copies_are_left_with_the_reason(tmp_path, capsys, monkeypatch):
    """A chain of dead copies: each XF003 plan walks the rest of the chain. Past the
    planners' budget the rest are not planned (`fix_refused` says why); what was planned is
    fixed, and the fixed program is checked again as any other."""
    from xferlint.fixes import planners

    path = tmp_path / "dead.pte"
    path.write_bytes(sp.dead_copies(ROUND_TRIPS))

    def dead(findings_path):
        main(["check", str(findings_path), "--isolated", "--output-format", "json", "--exit-zero"])
        return [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "XF003"]

    assert all(f["fixable"] for f in dead(path))  # the real budget: every one planned
    monkeypatch.setattr(planners, "DEAD_WALK_BUDGET", 0)
    monkeypatch.setattr(planners, "DEAD_WALK_PER_NODE", 1)  # about one plan's walk
    findings = dead(path)
    refused = [f for f in findings if not f["fixable"]]
    assert refused and len(refused) < len(findings)
    assert all("work budget" in f["fix_refused"] and "run again" in f["fix_refused"] for f in refused)
    out = tmp_path / "fixed.pte"
    main(["fix", str(path), "-o", str(out), "--isolated"])
    capsys.readouterr()
    assert len(dead(out)) < len(findings)
