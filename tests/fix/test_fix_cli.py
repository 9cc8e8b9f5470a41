"""`xferlint fix` and `check --fix/--diff` as a user runs them.

Most cases call the CLI's `main()` in-process (one torch import for the whole module);
one runs the installed console script, as CI would.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from xferlint.cli import main

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "sample_models")
DUPLICATE = os.path.join(SAMPLES, "duplicate_transfer.py")
ROUND_TRIP = os.path.join(SAMPLES, "redundant_round_trip.py")
ELIDED = os.path.join(SAMPLES, "same_device_elided.py")
FIXABLE = "XF001,XF003,XF004"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _h2d_count_in_pte(path):
    from xferlint.frontends.pte.view import load_pte_file

    view = load_pte_file(str(path), label=str(path)).view
    return sum(1 for m in view.methods for n in m.nodes if n.kind.value == "h2d")


def test_fix_writes_the_fixed_program(tmp_path, capsys):
    out = tmp_path / "qk.pte"
    code, stdout, _ = run(capsys, "fix", DUPLICATE, "-o", out)
    assert code == 0
    assert "XF004 duplicate-transfer: fixed 1, removed 1 copy, 16.0 KiB per call saved" in stdout
    assert f"wrote {out}" in stdout
    assert sorted(os.listdir(tmp_path)) == ["qk.pte"], "written atomically, nothing else left behind"
    assert _h2d_count_in_pte(out) == 1, "x is copied to cuda:0 once"
    code, stdout, _ = run(capsys, "check", out, "--select", FIXABLE)
    assert code == 0 and "All checks passed!" in stdout


def test_fix_with_nothing_to_fix_still_writes_the_program(tmp_path, capsys):
    out = tmp_path / "elided.pte"
    code, stdout, _ = run(capsys, "fix", ELIDED, "-o", out, "--select", FIXABLE)
    assert code == 0 and "nothing to fix" in stdout and out.exists()


def test_check_diff_shows_the_copies_that_go_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = run(capsys, "check", ROUND_TRIP, "--diff", "--select", FIXABLE)
    assert code == 1
    removed = [line for line in stdout.splitlines() if line.startswith("-") and "et_copy" in line]
    assert "-_h2d_copy_default_1 = et_copy._h2d_copy.out(_d2h_copy_default)  # cuda:0" in removed
    assert len(removed) == 4, "two round trips: two H2D and two D2H copies"
    assert any(line.startswith("+") and "executorch_call_delegate(getitem" in line for line in stdout.splitlines())
    assert "Would fix 2 findings." in stderr
    assert os.listdir(tmp_path) == []


def test_check_diff_exits_0_when_there_is_nothing_to_fix(capsys):
    code, stdout, stderr = run(capsys, "check", ELIDED, "--diff", "--select", FIXABLE)
    assert code == 0 and stdout == "" and "No fixes available." in stderr


def test_check_fix_on_an_entry_point_changes_nothing_and_says_so(capsys):
    """An entry point is code: --fix cannot rewrite it, so the report is the program as it
    is (still failing the gate) and the way to write the fixed program is named."""
    code, stdout, stderr = run(capsys, "check", ROUND_TRIP, "--fix", "--select", FIXABLE)
    assert code == 1 and "All checks passed!" not in stdout
    assert "Found 2 findings (2 XF001)" in stdout
    assert "not fixed: an entry point is code" in stderr and "xferlint fix " in stderr


@pytest.fixture
def broken_entry(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("def program():\n    raise ValueError('boom')\n")
    return path


@pytest.fixture
def exported_entry(tmp_path):
    path = tmp_path / "exported.py"
    path.write_text("import torch\n\ndef program():\n"
                    "    return torch.export.export(torch.nn.ReLU(), (torch.randn(2),))\n")
    return path


@pytest.mark.parametrize("case", ["missing", "not-pte", "no-dir", "directory", "raises", "exported", "pte-input"])
def test_bad_input_is_one_line_exit_2_and_no_output(tmp_path, capsys, broken_entry, exported_entry, case):
    pte_input = tmp_path / "in.pte"
    pte_input.write_bytes(b"not really a program")
    out = tmp_path / "out.pte"
    argv = {
        "missing": ["fix", tmp_path / "nope.py", "-o", out],
        "not-pte": ["fix", DUPLICATE, "-o", tmp_path / "out.py"],
        "no-dir": ["fix", DUPLICATE, "-o", tmp_path / "missing" / "out.pte"],
        "directory": ["fix", SAMPLES, "-o", out],
        "raises": ["fix", broken_entry, "-o", out],
        "exported": ["fix", exported_entry, "-o", out],
        "pte-input": ["fix", pte_input, "-o", pte_input],
    }[case]
    code, stdout, stderr = run(capsys, *argv)
    assert code == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr and stdout == ""
    assert not out.exists() and not (tmp_path / "out.py").exists()
    assert pte_input.read_bytes() == b"not really a program", "the input is never overwritten"
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".xferlint-")]


def test_the_console_script_fails_cleanly(tmp_path, xferlint_exe):
    """The installed script, as CI runs it: a bad input is one line on stderr, exit 2."""
    out = tmp_path / "out.pte"
    proc = subprocess.run([xferlint_exe, "fix", str(tmp_path / "nope.py"), "-o", str(out)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"error: {tmp_path / 'nope.py'}: no such file"]
    assert proc.stdout == "" and not out.exists()
