"""`xferlint fix model.pte -o fixed.pte`: XF001 / XF003 / XF004 at the instruction level.

A fix is applied only where the memory plan stays valid. ExecuTorch's default (greedy)
planner reuses a dead tensor's bytes at once, so making a device tensor live until the
next delegate (XF001) usually collides with what that delegate writes: refused, with the
reason and the entry-point route. With the `naive` planner (no reuse) the same fixes are
valid and applied. Fixed files must deserialize with ExecuTorch, keep their data segments
byte for byte, lint clean for the fixed rules, and be a fixed point of `fix`.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from xferlint.frontends.pte import program as pp
from xferlint.fixes.pte.fix import _kept_by_position, _kept_instructions, fix_pte_bytes
from xferlint.frontends.pte.view import PteMethodMap
from xferlint.selection import select_rules

FIXED_CODES = ("XF001", "XF003", "XF004")


def _rules():
    return select_rules()


def _fixable(findings):
    return sorted(f.code for f in findings if f.code in FIXED_CODES)


def _deserialize(data: bytes):
    from executorch.exir._serialize._program import deserialize_pte_binary

    return deserialize_pte_binary(data)


@pytest.fixture(scope="module")
def fixed(pte_bytes):
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = fix_pte_bytes(pte_bytes(name), _rules(), label=f"{name}.pte")
        return cache[name]

    return get


@pytest.mark.parametrize("name, applied, refused", [
    ("addsin-noelide-naive", ["XF001"], []),
    ("addsin-rewired", ["XF003"], []),
    ("mixed-rewired", ["XF003", "XF003"], ["XF004"]),  # greedy plan: the shared copy's bytes are reused
    ("mixed-noelide-naive", ["XF001", "XF001", "XF001", "XF001", "XF004"], []),
    ("shared-input-naive", ["XF004", "XF004", "XF004"], []),
    ("cond-after-dead-copy", ["XF003"], []),
])
def test_fixes_apply_and_the_file_lints_clean(pte_bytes, fixed, name, applied, refused):
    before = pte_bytes(name)
    result = fixed(name)
    assert sorted(p.code for p in result.applied) == applied
    assert sorted(s.code for s in result.skipped) == refused
    assert all("memory plan would break" in s.reason for s in result.skipped)
    assert _fixable(result.remaining) == refused
    # ExecuTorch reads the fixed file; the data segments and everything else stay as they were
    ours, ref_before, ref_after = pp.read_program(result.buffer), _deserialize(before), _deserialize(result.buffer)
    assert len(result.buffer) == len(before)
    removed = sum(len(p.copies) for p in result.applied) + sum(
        max(0, len(p.removes) - len(p.copies)) for p in result.applied)
    n_before = sum(len(c.instructions) for p in ref_before.program.execution_plan for c in p.chains)
    n_after = sum(len(c.instructions) for p in ref_after.program.execution_plan for c in p.chains)
    assert n_after == n_before - removed
    assert ref_after.program.segments == ref_before.program.segments
    assert ref_after.program.backend_delegate_data == ref_before.program.backend_delegate_data
    assert [p.values for p in ref_after.program.execution_plan] == [p.values for p in ref_before.program.execution_plan]
    assert pp.read_program(result.buffer, fast=False) == ours
    # a second fix has nothing left to do
    again = fix_pte_bytes(result.buffer, _rules(), label="again.pte")
    assert not again.changed and again.buffer == result.buffer


def test_round_trip_fix_reads_the_device_tensor(fixed):
    result = fixed("addsin-noelide-naive")
    plan = pp.read_program(result.buffer).plans[0]
    kinds = [(i.kind, plan.operators[i.index][0] if i.kind == pp.KERNEL else None) for i in plan.chains[0].instructions]
    assert kinds.count((pp.KERNEL, "et_copy::_d2h_copy")) == 1  # only the final D2H to the output stays
    delegates = [i for i in plan.chains[0].instructions if i.kind == pp.DELEGATE]
    first_out = delegates[0].args[-1]
    assert delegates[1].args[0] == first_out  # the second delegate reads the first one's device result


def test_fix_that_would_break_the_memory_plan_is_refused(pte_bytes, fixed):
    before = pte_bytes("addsin-noelide")
    result = fixed("addsin-noelide")
    assert not result.changed and result.buffer == before
    (skip,) = result.skipped
    assert skip.code == "XF001"
    assert "memory plan would break" in skip.reason
    assert "buffer" in skip.reason and "would have to stay alive" in skip.reason
    assert "xferlint fix model.py:program -o model.pte" in skip.reason
    assert _fixable(result.remaining) == ["XF001"]


def test_removed_instructions_renumber_jumps(pte_bytes, fixed):
    before = pp.read_program(pte_bytes("cond-after-dead-copy")).plans[0].chains[0].instructions
    after = pp.read_program(fixed("cond-after-dead-copy").buffer).plans[0].chains[0].instructions
    assert len(after) == len(before) - 1
    gone = next(k for k in range(len(before)) if k >= len(after) or before[k] != after[k])

    def target(ins, instructions):
        return instructions[ins.destination] if ins.destination < len(instructions) else "end"

    jumps_before = [(k, i) for k, i in enumerate(before) if i.kind == pp.JUMP_FALSE]
    jumps_after = [(k, i) for k, i in enumerate(after) if i.kind == pp.JUMP_FALSE]
    assert len(jumps_before) == len(jumps_after) == 2
    assert all(k > gone for k, _ in jumps_before)
    for (_, jb), (_, ja) in zip(jumps_before, jumps_after):
        assert ja.destination == jb.destination - 1
        assert target(ja, after) == target(jb, before)  # the same instruction, one place earlier


def test_the_patcher_rewrites_a_move_and_a_jump_operand_in_place():
    """A fix that makes a MoveCall or a JumpFalseCall read another value overwrites that one
    field in the bytes (found through the table's vtable); the rest reads back the same, and
    a field that no longer holds the value it is asked to replace is refused."""
    from executorch.exir import schema as s

    from xferlint.errors import FixError
    from xferlint.fixes.pte.patch import Patcher
    from xferlint.testing.synthetic_pte import PlanBuilder, serialize

    b = PlanBuilder()
    b.int_(7)  # value 0: a field holding its default (0) is not stored, so cannot be rewritten
    x, y, out = b.input(), b.input(), b.tensor()
    flag, other = b.bool_(False), b.bool_(True)
    b.instructions.append(s.Instruction(instr_args=s.MoveCall(move_from=x, move_to=out)))
    b.jump_false(flag, 0)
    b.outputs.append(out)
    data = serialize([b.plan()])
    patcher = Patcher(data, pp.read_program(data))
    patcher.rewire_field(0, 0, 0, pp._MOVE_FROM, x, y)
    patcher.rewire_field(0, 0, 1, pp._JF_COND, flag, other)
    with pytest.raises(FixError, match="does not store value"):
        patcher.rewire_field(0, 0, 0, pp._MOVE_FROM, x, y)  # it holds y now
    before = pp.read_program(data).plans[0].chains[0].instructions
    after = pp.read_program(patcher.data()).plans[0].chains[0].instructions
    assert (after[0].move_from, after[0].move_to) == (y, out)
    assert (after[1].cond, after[1].destination) == (other, before[1].destination)
    assert len(patcher.data()) == len(data)


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "xferlint.cli", *args], capture_output=True, text=True,
                          timeout=180, cwd=cwd)


def test_cli_fix_writes_the_fixed_program(pte_file, tmp_path):
    out = tmp_path / "fixed.pte"
    done = _cli("fix", pte_file("addsin-noelide-naive"), "-o", str(out), "--isolated", "--diff")
    assert done.returncode == 0, done.stderr
    assert "XF001 redundant-round-trip: fixed 1" in done.stdout
    assert "-v6 = et_copy._h2d_copy.out(v5)" in done.stdout
    check = _cli("check", str(out), "--isolated", "--select", "XF001,XF003,XF004")
    assert check.returncode == 0, check.stdout + check.stderr
    assert _deserialize(out.read_bytes()).program.execution_plan


def test_cli_fix_reports_refusals_and_check_fix_rewrites_in_place(pte_bytes, tmp_path):
    refused = tmp_path / "refused.pte"
    refused.write_bytes(pte_bytes("addsin-noelide"))
    out = tmp_path / "out.pte"
    done = _cli("fix", str(refused), "-o", str(out), "--isolated")
    assert done.returncode == 1  # a fixable finding was not fixed
    assert "XF001 not fixed" in done.stdout and "memory plan would break" in done.stdout
    assert f"{out} not written: nothing was fixed" in done.stdout
    assert not out.exists(), "no copy of the input is written when nothing was fixed"
    dead = tmp_path / "dead.pte"
    dead.write_bytes(pte_bytes("addsin-rewired"))
    done = _cli("check", str(dead), "--fix", "--isolated", "--select", "XF001,XF002,XF003,XF004")
    assert done.returncode == 0, done.stdout + done.stderr
    assert dead.read_bytes() != pte_bytes("addsin-rewired")
    assert _cli("check", str(dead), "--isolated", "--select", "XF003").returncode == 0


_FIX_TORCH_FREE = r"""
import sys
from xferlint.cli import main
code = main(["fix", sys.argv[1], "-o", sys.argv[2], "--isolated"])
sys.exit(10 + code if "torch" not in sys.modules else 99)
"""


def test_fixing_a_pte_imports_no_torch(pte_file, tmp_path):
    done = subprocess.run([sys.executable, "-c", _FIX_TORCH_FREE, pte_file("addsin-rewired"), str(tmp_path / "o.pte")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 10, done.stdout + done.stderr
    assert os.path.getsize(tmp_path / "o.pte") > 0


def _json(done):
    import json

    return json.loads(done.stdout)


def test_a_refused_fix_is_not_marked_fixable_anywhere(pte_bytes, tmp_path):
    """The memory-plan proof refuses the fix: no `[*]`, no "fixable", no savings; the JSON
    says why, and --diff prints the reason, not just "No fixes available"."""
    refused = tmp_path / "refused.pte"
    refused.write_bytes(pte_bytes("addsin-noelide"))
    text = _cli("check", str(refused), "--isolated")
    assert text.returncode == 1
    assert "XF001" in text.stdout and "[*]" not in text.stdout
    assert "fixable" not in text.stdout and "Fixes would save" not in text.stdout
    report = _json(_cli("check", str(refused), "--isolated", "--output-format", "json"))
    (finding,) = [f for f in report["findings"] if f["code"] == "XF001"]
    assert finding["fixable"] is False and finding["saves_bytes"] is None
    assert "memory plan would break" in finding["fix_refused"]
    assert report["summary"]["fixable"] == 0 and report["summary"]["transfers"]["fixable_savings"] == 0
    diff = _cli("check", str(refused), "--isolated", "--diff")
    assert diff.returncode == 0 and diff.stdout == ""
    assert "XF001 not fixed" in diff.stderr and "memory plan would break" in diff.stderr
    assert "No fixes available." in diff.stderr


def test_check_fix_reports_the_program_after_the_fix(pte_bytes, tmp_path):
    """Text and JSON after --fix describe the rewritten file: the same as checking it anew."""
    dead = tmp_path / "dead.pte"
    dead.write_bytes(pte_bytes("addsin-rewired"))
    before = _json(_cli("check", str(dead), "--isolated", "--output-format", "json"))
    after_fix = _json(_cli("check", str(dead), "--isolated", "--fix", "--output-format", "json"))
    fresh = _json(_cli("check", str(dead), "--isolated", "--output-format", "json"))
    assert before["summary"]["transfers"]["d2h_copies"] == fresh["summary"]["transfers"]["d2h_copies"] + 1
    assert after_fix["summary"] == fresh["summary"]
    assert after_fix["findings"] == fresh["findings"]
    text = _cli("check", str(dead), "--isolated")
    assert "Fixes would save" not in text.stdout


def test_check_fix_on_a_read_only_pte_is_an_error_for_that_input(pte_bytes, tmp_path):
    locked, other = tmp_path / "locked.pte", tmp_path / "other.pte"
    locked.write_bytes(pte_bytes("addsin-rewired"))
    other.write_bytes(pte_bytes("addsin-rewired"))
    os.chmod(locked, 0o444)
    done = _cli("check", str(locked), str(other), "--isolated", "--fix")
    assert done.returncode == 2
    assert f"error: {locked}: cannot write the fixed program (the file is read-only)" in done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert locked.read_bytes() == pte_bytes("addsin-rewired"), "a read-only file is not replaced"
    assert other.read_bytes() != pte_bytes("addsin-rewired"), "the other input is still fixed"
    assert sorted(os.listdir(tmp_path)) == ["locked.pte", "other.pte"]


def test_the_instructions_a_patch_keeps_are_paired_alike_by_position_and_by_lookup():
    # After a patch, each kept instruction's old node is paired with its new one, for the
    # renames that carry findings over. Counted by position where the chains lost exactly
    # what was removed (what a patch leaves); looked up in the maps otherwise.
    old = PteMethodMap(0, 3, (5, 4))  # nodes 3-7: chain 0; nodes 8-11: chain 1
    removed = {0: {1, 3}, 1: {0}}  # nodes 4, 6 and 8
    new = PteMethodMap(0, 3, (3, 3))
    kept = [(3, 3), (5, 4), (7, 5), (9, 6), (10, 7), (11, 8)]
    assert list(_kept_instructions(old, new, removed)) == kept == _kept_by_position(old, new, removed)
    odd = PteMethodMap(0, 3, (4, 3))  # chain 0 one instruction longer than the patch leaves
    assert list(_kept_instructions(old, odd, removed)) == [(3, 3), (5, 4), (7, 5), (9, 7), (10, 8), (11, 9)]
