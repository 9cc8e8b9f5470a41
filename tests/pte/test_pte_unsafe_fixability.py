"""A `.pte` finding whose fix is unsafe is marked fixable only where `xferlint fix
--unsafe-fixes` applies it (its trial decides, as for safe fixes), and the text says
that `xferlint fix` needs that option for it. The programs return a copy (hand-built:
ExecuTorch inserts copies for delegate inputs and outputs, and never returns two copies
of one delegate result)."""

from __future__ import annotations

import json
import os

from xferlint.cli import main
from xferlint.fixes.pte.fix import fix_pte_loaded
from xferlint.frontends.pte.view import load_pte_bytes
from xferlint.selection import select_rules
from xferlint.testing import synthetic_pte as sp


def _write(tmp_path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def _check(capsys, *args: str) -> tuple[int, str]:
    code = main(["check", *args, "--isolated"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out


def _fixed_with_unsafe(data: bytes) -> set[tuple]:
    result = fix_pte_loaded(load_pte_bytes(data, label="p.pte"), select_rules(), unsafe_fixes=True)
    return {p.key for p in result.applied}


def test_an_unsafe_fix_the_memory_plan_refuses_is_not_fixable(tmp_path, capsys):
    data = sp.returned_copy_of_a_reused_slot()
    path = _write(tmp_path, "reused.pte", data)
    assert not _fixed_with_unsafe(data), "even --unsafe-fixes cannot apply it"
    _, out = _check(capsys, path, "--output-format", "json")
    (finding,) = json.loads(out)["findings"]
    assert finding["code"] == "XF004" and not finding["fixable"]
    assert finding["fix_refused"].startswith("the memory plan would break")
    assert json.loads(out)["summary"]["fixable"] == 0
    _, text = _check(capsys, path)
    assert "[*]" not in text and "fixable" not in text


def test_fixable_unsafe_findings_are_those_fix_applies_with_unsafe_fixes(tmp_path, capsys):
    safe_slots, shared = sp.returned_copies(4, own_bytes=True), sp.returned_copy_of_a_reused_slot()
    paths = [_write(tmp_path, "own.pte", safe_slots), _write(tmp_path, "reused.pte", shared)]
    _, out = _check(capsys, *paths, "--output-format", "json")
    report = json.loads(out)
    fixable = {(os.path.basename(f["input"]), f["code"], f["method"], tuple(f["nodes"]))
               for f in report["findings"] if f["fixable"]}
    applied = {(os.path.basename(path), *key) for path, data in zip(paths, (safe_slots, shared))
               for key in _fixed_with_unsafe(data)}
    assert len(report["findings"]) == 4 and len(applied) == 3 and fixable == applied
    assert report["summary"]["fixable"] == 3
    assert {f["fix_applicability"] for f in report["findings"] if f["fixable"]} == {"unsafe"}


def test_the_text_says_which_fixes_need_unsafe_fixes(tmp_path, capsys):
    path = _write(tmp_path, "own.pte", sp.returned_copies(4, own_bytes=True))
    _, text = _check(capsys, path)
    assert "[*] 3 fixable with `xferlint fix` (3 of them only with `--unsafe-fixes`)." in text.splitlines()
    _, full = _check(capsys, path, "--output-format", "full")
    helps = [line.strip() for line in full.splitlines() if line.strip().startswith("help:")]
    assert helps == ["help: `xferlint rule XF004` (fixable with `xferlint fix --unsafe-fixes`)"] * 3
    _, enabled = _check(capsys, path, "--unsafe-fixes")
    assert "[*] 3 fixable with `xferlint fix`." in enabled.splitlines()


def test_an_unsafe_trial_that_fails_refuses_only_the_unsafe_fixes(tmp_path, capsys, monkeypatch):
    from xferlint.errors import FixError
    from xferlint.fixes import driver

    real = driver.fix_loaded

    def failing_with_unsafe(loaded, rules, *, unsafe_fixes=False, **kwargs):
        if unsafe_fixes:
            raise FixError("the unsafe trial failed")
        return real(loaded, rules, unsafe_fixes=unsafe_fixes, **kwargs)

    monkeypatch.setattr(driver, "fix_loaded", failing_with_unsafe)
    path = _write(tmp_path, "both.pte", sp.returned_copies(3, own_bytes=True, round_trip=True))
    _, out = _check(capsys, path, "--output-format", "json")
    by_code = {code: [f for f in json.loads(out)["findings"] if f["code"] == code] for code in ("XF001", "XF004")}
    assert len(by_code["XF004"]) == 2 and len(by_code["XF001"]) == 1
    assert all(not f["fixable"] and f["fix_refused"] == "the unsafe trial failed" for f in by_code["XF004"])
    (round_trip,) = by_code["XF001"]
    assert round_trip["fixable"] and round_trip["fix_applicability"] == "safe", "the safe trial's decision stands"
